// Command orderly-simulator serves the simulated remote services
// (inventory, payment, shipping, the examples' fraud and warehouse, and
// their undos, with the test values docs/remote-services.md lists; a call
// that carries a callback object is answered 202 and called back) on their own, for a deployed stack to call: `make
// deploy-local` starts it for the stack on LocalStack, whose agents run as
// host processes and reach it on the loopback address.
//
// ORDERLY_SIMULATOR_ADDR is the address to listen on (default
// 127.0.0.1:8091); ORDERLY_SIM_LEDGER, when set, is a file that records
// every remote effect and undo; ORDERLY_SIM_CALLBACK_DELAY (2s) is how long
// a service that calls back takes.
//
//	orderly-simulator [-require-header SERVICE=HEADER=$VARIABLE|@FILE]...
//
// -require-header makes a service answer 401 to a call without the header
// (e.g. fraud=Authorization=$FRAUD_AUTH), so that a stage's credential
// for it is checked end to end; the value comes from the variable or the
// file, never from the command line.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"orderly/internal/config"
	"orderly/internal/local/localrun"
	"orderly/internal/local/simulator"
)

func main() {
	log := config.Logger("simulator")
	if err := run(log, os.Args[1:]); err != nil {
		log.Error("orderly-simulator stopped", "error", err)
		var usage usageError
		if errors.Is(err, flag.ErrHelp) || errors.As(err, &usage) {
			os.Exit(2)
		}
		os.Exit(1)
	}
}

// usageError is a wrong command line: exit status 2.
type usageError struct{ error }

// specs collects a repeatable flag's values. They are parsed after the
// flags, not by Set: the flag package would quote a refused value in its
// error, and a -require-header value given by mistake may be a secret.
type specs []string

func (r *specs) String() string { return fmt.Sprint(len(*r), " values") }

func (r *specs) Set(spec string) error {
	*r = append(*r, spec)
	return nil
}

func run(log *slog.Logger, args []string) error {
	fs := flag.NewFlagSet("orderly-simulator", flag.ContinueOnError)
	var requireHeader specs
	fs.Var(&requireHeader, "require-header", "SERVICE=HEADER=$VARIABLE or SERVICE=HEADER=@FILE: the service answers 401 to a call without the header's value (repeatable)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Errorf("unexpected arguments %q", fs.Args())}
	}
	var required []simulator.RequiredHeader
	for _, spec := range requireHeader {
		h, err := simulator.ParseRequiredHeader(spec, os.LookupEnv)
		if err != nil {
			return usageError{err}
		}
		required = append(required, h)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	env := config.FromOS()
	addr := env.String("ORDERLY_SIMULATOR_ADDR", "127.0.0.1:8091")
	opts := []simulator.Option{simulator.WithLogger(log)}
	for _, h := range required {
		opts = append(opts, h.Option())
		log.Info("service requires a header", "remote_service", h.Service, "header", h.Name)
	}
	if ledger := env.String("ORDERLY_SIM_LEDGER", ""); ledger != "" {
		opts = append(opts, simulator.WithLedger(ledger))
	}
	opts = append(opts, simulator.WithCallbackDelay(env.Duration("ORDERLY_SIM_CALLBACK_DELAY", simulator.DefaultCallbackDelay)))
	if err := env.Err(); err != nil {
		return usageError{err}
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
