// Command orderly-load is `make load`: it measures a running orderly (the
// API of `make run` by default) as a client sees it, through the public
// API only (see internal/measure/loadgen). It prints a short table, or the report
// as JSON with -json, and exits non-zero when anything failed, timed out
// or slowed down with age.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"orderly/internal/measure/loadgen"
)

func main() {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("service", "load")
	err := run(os.Args[1:], os.Stdout, log)
	switch {
	case errors.Is(err, flag.ErrHelp):
	case err != nil:
		log.Error("load failed", "error", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer, log *slog.Logger) error {
	flags := flag.NewFlagSet("orderly-load", flag.ContinueOnError)
	defaults := loadgen.Defaults()
	var (
		baseURL    = flags.String("url", "http://127.0.0.1:8080", "the API's base URL (that of make run by default)")
		path       = flags.String("path", loadgen.DefaultPath, "where orders are submitted, e.g. /workflows/checkout/orders for the body of a workflow of yours")
		bodyFile   = flags.String("body", "", "file holding the JSON body to submit (default: "+loadgen.DefaultBody+")")
		orders     = flags.Int("orders", 1000, "orders in the burst (0: no burst)")
		clients    = flags.Int("clients", 20, "concurrent clients submitting the burst")
		sequential = flags.Int("sequential", 100, "orders submitted one at a time before the burst and after it (0: none)")
		timeout    = flags.Duration("timeout", defaults.Timeout, "bound on the burst, from its first submission until every order is terminal")
		perOrder   = flags.Duration("order-timeout", defaults.OrderTimeout, "bound on each sequential order")
		pollers    = flags.Int("pollers", defaults.Pollers, "pollers reading the burst's orders")
		pollEvery  = flags.Duration("poll-every", defaults.PollEvery, "each burst poller's pace: one read this often")
		maxFails   = flags.Int("max-failures", 10, "failed submissions (or reads) a phase tolerates before it stops")
		slowdown   = flags.Float64("max-slowdown", defaults.MaxSlowdown, "bound on the sequential p50 after the burst over the one before it")
		asJSON     = flags.Bool("json", false, "print the report as JSON")
	)
	if err := flags.Parse(args); err != nil {
		return err
	}
	if flags.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q: every setting is a flag (-help lists them)", flags.Args())
	}
	body := []byte(loadgen.DefaultBody)
	if *bodyFile != "" {
		var err error
		if body, err = os.ReadFile(*bodyFile); err != nil {
			return fmt.Errorf("read -body: %w", err)
		}
	}
	cfg := loadgen.Config{
		Orders: *orders, Clients: *clients, Sequential: *sequential, Pollers: *pollers, PollEvery: *pollEvery,
		Timeout: *timeout, OrderTimeout: *perOrder, MaxFailures: *maxFails, MaxSlowdown: *slowdown, Log: log,
	}
	if err := cfg.Validate(); err != nil {
		return err
	}
	client, err := loadgen.NewClient(*baseURL, *path, body, nil, *clients+*pollers)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := client.Reachable(ctx); err != nil {
		return fmt.Errorf("%w (is `make run` running in another shell?)", err)
	}
	report, err := loadgen.Run(ctx, client, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(report); err != nil {
			return err
		}
	} else {
		report.Print(stdout)
	}
	if !report.OK() {
		return fmt.Errorf("problems (%d), the first: %s", len(report.Problems), report.Problems[0])
	}
	return nil
}
