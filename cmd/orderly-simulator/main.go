// Command orderly-simulator serves the simulated remote services
// (inventory, payment, shipping and their undos, with the test values
// README lists) on their own, for a deployed stack to call: `make
// deploy-local` starts it for the stack on LocalStack, whose agents run as
// host processes and reach it on the loopback address.
//
// ORDERLY_SIMULATOR_ADDR is the address to listen on (default
// 127.0.0.1:8091); ORDERLY_SIM_LEDGER, when set, is a file that records
// every remote effect and undo.
package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"orderly/internal/config"
	"orderly/internal/localrun"
	"orderly/internal/simulator"
)

func main() {
	log := config.Logger("simulator")
	if err := run(log); err != nil {
		log.Error("orderly-simulator stopped", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := config.FromOS()
	addr := env.String("ORDERLY_SIMULATOR_ADDR", "127.0.0.1:8091")
	opts := []simulator.Option{simulator.WithLogger(log)}
	if ledger := env.String("ORDERLY_SIM_LEDGER", ""); ledger != "" {
		opts = append(opts, simulator.WithLedger(ledger))
	}
	sim, err := simulator.New(opts...)
	if err != nil {
		return err
	}
	defer sim.Close()
	ln, err := localrun.ListenLoopback(addr)
	if err != nil {
		return fmt.Errorf("ORDERLY_SIMULATOR_ADDR: %w", err)
	}
	srv := &http.Server{Handler: sim, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shutdown)
	}()
	log.Info("simulator listening", "url", "http://"+addr)
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
