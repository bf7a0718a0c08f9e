package main

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/config"
	"orderly/internal/local/localrun"
	"orderly/internal/operator/console"
)

func (a *app) consoleCmd() *cobra.Command {
	var addr, hosts string
	cmd := &cobra.Command{
		Use:                   "console [--addr 127.0.0.1:8082] [--host NAME[:PORT],...]",
		DisableFlagsInUseLine: true,
		Short:                 "Serve the web console for the stage on loopback",
		Long: `Serve the web console for the stage, on loopback only: it acts with your AWS
credentials. make run serves the local stage's console on 127.0.0.1:8082
already. Ctrl-C stops it.`,
		Example: "  orderly --stage prod console",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			ln, err := localrun.ListenLoopback(addr)
			if err != nil {
				return fmt.Errorf("console: %w (make run serves the local stage's console on 127.0.0.1:8082 already; --addr picks another loopback address)", err)
			}
			// A pause or resume made on it names the AWS identity of your
			// credentials, as orderly pause does.
			con := console.New(stage.Name, stage, config.Logger("console")).WithHosts(strings.Split(hosts, ",")...).WithWho(a.whoami)
			srv := &http.Server{Handler: con, ReadHeaderTimeout: 5 * time.Second}
			go func() {
				<-cmd.Context().Done()
				srv.Close()
			}()
			fmt.Fprintf(a.out, "orderly console for stage %s: http://%s/ (Ctrl-C stops it)\n", stage.Name, ln.Addr())
			if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return fmt.Errorf("console: %w", err)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&addr, "addr", "127.0.0.1:8082", "where to listen, on loopback only: the console acts with your AWS credentials")
	cmd.Flags().StringVar(&hosts, "host", "", "names the console answers under besides loopback with its port (an SSH tunnel's, a proxy's), comma-separated; any other Host is refused (421)")
	return cmd
}
