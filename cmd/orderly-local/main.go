// Command orderly-local runs the whole engine in one process against the
// AWS endpoints the SDK is configured for (the local emulators under
// `make run`): the API on ORDERLY_API_ADDR, the operator's web console on
// ORDERLY_CONSOLE_ADDR, the simulated remote services, SQS and stream
// pollers that invoke the same handlers the Lambdas run, and the
// Supervisor on a ticker.
//
// The simulator also plays the people and partners who send the
// fulfilment example's events, its fraud analyst and its carrier
// (ORDERLY_PARTIES, ORDERLY_PARTY_AFTER; see simulator.Parties).
//
// Every service is called at the simulator, unless ORDERLY_SERVICES names
// a file of services (the shape of CDK context "services", see package
// services) that says otherwise for the services it lists, or
// ORDERLY_SERVICES_DEFAULTS one for the services the named workflows call
// that ORDERLY_SERVICES leaves out; REMOTE_URL, a loopback URL, replaces
// the simulator for the rest.
//
// With OTEL_EXPORTER_OTLP_ENDPOINT set it exports every function's spans
// there over OTLP/HTTP, ORDERLY_TRACE_SAMPLE of the orders (package
// tracing; docs/operations.md, "Tracing").
//
// For the chaos soak it also takes faults to inject into the functions' AWS
// calls (ORDERLY_FAULTS, see internal/local/faults), a simulator ledger
// (ORDERLY_SIM_LEDGER), a remote outage (ORDERLY_SIM_OUTAGE), several
// Supervisors (SUPERVISORS), skewed clocks (ORDERLY_CLOCK_SKEW) and
// callback waits of seconds in place of the definitions' hours
// (ORDERLY_CALLBACK_WAIT).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/local/engine"
	"orderly/internal/local/faults"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

func main() {
	log := config.Logger("") // the engine names each component's records
	if err := run(log); err != nil {
		log.Error("orderly-local stopped", "error", err)
		// And as plain lines for the person at the terminal: a workflow
		// definition's problems are one a line.
		fmt.Fprintf(os.Stderr, "orderly-local stopped: %v\n", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env := config.FromOS()
	// With OTEL_EXPORTER_OTLP_ENDPOINT set, every function's spans go
	// there; what is batched is exported as the engine stops. It has no
	// AWS credentials to sign X-Ray's exports with: ORDERLY_TRACE_XRAY is
	// refused.
	traces, err := tracing.FromEnv(ctx, "orderly-local", func(name string) string { return env.String(name, "") }, aws.Config{})
	if err != nil {
		return err
	}
	defer func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := traces.Shutdown(flush); err != nil {
			log.Warn("spans not exported", "error", err)
		}
	}()
	timing := env.Timing()
	cfg := engine.Config{
		Stage:           env.String("ORDERLY_STAGE", "local"),
		APIAddr:         env.String("ORDERLY_API_ADDR", "127.0.0.1:8080"),
		ConsoleAddr:     consoleAddr(env.String("ORDERLY_CONSOLE_ADDR", "127.0.0.1:8082")),
		ConsoleHosts:    strings.Split(env.String("ORDERLY_CONSOLE_HOSTS", ""), ","),
		SimulatorAddr:   env.String("ORDERLY_SIMULATOR_ADDR", "127.0.0.1:8081"),
		RemoteURL:       env.String("REMOTE_URL", ""),
		Timing:          timing,
		SupervisorEvery: env.Duration("SUPERVISOR_EVERY", engine.DefaultSupervisorEvery),
		Schedulers:      env.Int("SCHEDULERS", 2),
		Supervisors:     env.Int("SUPERVISORS", 1),
		ClockSkew:       env.Span("ORDERLY_CLOCK_SKEW", 0),
		// The simulated services keep their work across restarts, as real
		// ones would: what was reserved, charged or refused stays so.
		SimulatorLedger: env.String("ORDERLY_SIM_LEDGER", filepath.Join(env.String("ORDERLY_STATE_DIR", ".local/state"), "simulator-ledger.jsonl")),
		// Locally a failed message should come back soon, but not while an
		// agent may still be working on it.
		QueueVisibility: env.Duration("QUEUE_VISIBILITY", timing.MaxAllowance+30*time.Second),
		// Stream checkpoints: a restart resumes the stream, not replays it.
		StateDir: env.String("ORDERLY_STATE_DIR", ".local/state"),
		Log:      log,
	}
	// The workflows to run: ORDERLY_WORKFLOWS names them (`make run`
	// adds the checkout example), every one under workflows/ when unset.
	names, def := env.Workflows()
	workflows, err := definition.Deployed(timing, names, def, "")
	if err != nil {
		return fmt.Errorf("workflows: %w", err)
	}
	// The soak shortens the waits of steps whose services call back, as
	// the fulfilment test does in Go: their hours would outlast a run.
	if wait := env.Span("ORDERLY_CALLBACK_WAIT", 0); wait > 0 {
		workflows = shortenCallbackWaits(workflows, wait)
	}
	cfg.Workflows = workflows
	// A rehearsal of a version change: the default workflow's latest
	// version with a step renamed and its allowances doubled, as its new
	// latest.
	if env.String("ORDERLY_REHEARSE_VERSION", "") == "1" {
		cfg.Workflows = order.WithRehearsal(workflows)
	}
	cfg.ParkFor = env.Duration("PARK_FOR", 0)
	// The simulated services that call back take a moment, and the
	// fulfilment example's fraud analyst and carrier answer a few seconds
	// after an order starts waiting for them (ORDERLY_PARTIES=0: nobody
	// does, and events are sent by hand).
	cfg.CallbackDelay = env.Duration("ORDERLY_SIM_CALLBACK_DELAY", simulator.DefaultCallbackDelay)
	if env.String("ORDERLY_PARTIES", "1") != "0" {
		cfg.Parties = &simulator.PartyConfig{After: env.Span("ORDERLY_PARTY_AFTER", 5*time.Second)}
	}
	// A reader of the local status queue that needs only some statuses
	// (the soak: the terminal ones) keeps moto's queue shallow.
	if cfg.StatusEvents, err = statusEvents(env.String("ORDERLY_STATUS_EVENTS", "")); err != nil {
		return err
	}
	// EMF metric lines matter in CloudWatch; locally they would drown the
	// logs, so they are printed only on request.
	if env.String("ORDERLY_EMF", "") == "1" {
		cfg.Metrics = os.Stdout
	}
	if err := env.Err(); err != nil {
		return err
	}
	// A header-authenticated service at the simulator gets its secret
	// made in the emulators' Secrets Manager if it has none yet, and the
	// simulator checks it (see engine.Config.LocalSecrets).
	cfg.LocalSecrets = true
	cfg.Services, err = localServices(env.String("ORDERLY_SERVICES", ""), env.String("ORDERLY_SERVICES_DEFAULTS", ""), cfg.Workflows.Agents())
	if err != nil {
		return err
	}
	if spec := env.String("ORDERLY_SIM_OUTAGE", ""); spec != "" {
		o, err := parseOutage(spec)
		if err != nil {
			return err
		}
		cfg.Outages = append(cfg.Outages, o)
	}
	rates, err := faults.Parse(env.String("ORDERLY_FAULTS", ""))
	if err != nil {
		return fmt.Errorf("ORDERLY_FAULTS: %w", err)
	}
	if len(rates) > 0 {
		seed := uint64(time.Now().UnixNano())
		log.Warn("injecting faults into the functions' AWS calls", "rates", rates.String(), "seed", seed)
		cfg.APIOptions = []func(*middleware.Stack) error{faults.New(rates, seed, log.With("service", "faults")).AddTo}
	}
	awsCfg, err := config.AWS(ctx)
	if err != nil {
		return err
	}
	if err := config.CheckEndpoints(ctx, awsCfg); err != nil {
		return err
	}
	// `make run` asks for a warm-up (see warmUp); a failed one leaves the
	// first orders slower, nothing worse.
	if env.String("ORDERLY_WARMUP", "") == "1" {
		fmt.Fprintf(os.Stderr, "warming up the emulators with throwaway orders (stage %s-warmup, deleted after)...\n", cfg.Stage)
		res, err := warmUp(ctx, awsCfg, cfg, warmUpBudget)
		if ctx.Err() != nil {
			return nil
		}
		if err != nil {
			log.Warn("warm-up failed: the first orders may be slower", "error", err)
		} else {
			log.Info("emulators warmed up", "rounds", res.Rounds, "orders", res.Orders,
				"sequential_p50_ms", res.P50.Milliseconds(), "took_ms", res.Took.Milliseconds())
		}
	}
	e, err := engine.New(ctx, awsCfg, cfg)
	if err != nil {
		return err
	}
	// Ready is said once the engine serves, not before it starts.
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	if !awaitServing(ctx, e.URL(), done) {
		return <-done
	}
	fmt.Fprintf(os.Stderr, "\norderly is running on stage %s\n  API:     %s\n  console: %s\n  remote:  %s\nCtrl-C stops it.\n\n",
		cfg.Stage, e.URL(), e.ConsoleURL(), e.RemoteURL())
	return <-done
}

// awaitServing waits until the API answers its description. It is false
// when the engine stopped first (its result put back in done) or ctx ended.
func awaitServing(ctx context.Context, url string, done chan error) bool {
	client := &http.Client{Timeout: time.Second}
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url+"/openapi.json", nil)
		if err != nil {
			return false
		}
		if resp, err := client.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return true
			}
		}
		select {
		case err := <-done:
			done <- err
			return false
		case <-ctx.Done():
			return false
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// shortenCallbackWaits returns the versions with every step whose
// service calls back waiting wait, and at most wait, for its callback.
func shortenCallbackWaits(v order.Versions, wait time.Duration) order.Versions {
	var out []order.Workflow
	for _, w := range v.Workflows() {
		w.Steps = slices.Clone(w.Steps)
		for i, st := range w.Steps {
			if st.Callback != nil {
				w.Steps[i].Callback = &order.CallbackWait{Timeout: wait, MaxTimeout: wait}
			}
		}
		out = append(out, w)
	}
	// The same workflows in the same order: the first is still the default.
	return order.MustVersions(out...)
}

// consoleAddr is where the console listens; "off" starts none.
func consoleAddr(v string) string {
	if v == "off" {
		return ""
	}
	return v
}

// parseOutage reads "service,from,till[,status]" with RFC 3339 times and
// an HTTP status (503 when absent).
func parseOutage(spec string) (simulator.Outage, error) {
	parts := strings.Split(spec, ",")
	if len(parts) != 3 && len(parts) != 4 {
		return simulator.Outage{}, fmt.Errorf("ORDERLY_SIM_OUTAGE %q: want service,from,till[,status]", spec)
	}
	from, err1 := time.Parse(time.RFC3339, parts[1])
	till, err2 := time.Parse(time.RFC3339, parts[2])
	if err1 != nil || err2 != nil || !till.After(from) {
		return simulator.Outage{}, fmt.Errorf("ORDERLY_SIM_OUTAGE %q: want RFC 3339 times, from before till", spec)
	}
	o := simulator.Outage{Service: parts[0], From: from, Till: till}
	if len(parts) == 4 {
		status, err := strconv.Atoi(parts[3])
		if err != nil || status < 300 || status > 599 {
			return simulator.Outage{}, fmt.Errorf("ORDERLY_SIM_OUTAGE %q: status %q: want an HTTP status from 300 to 599", spec, parts[3])
		}
		o.Status = status
	}
	return o, nil
}

// statusEvents reads ORDERLY_STATUS_EVENTS: a comma-separated list of
// order statuses, or nothing for every status.
func statusEvents(list string) ([]order.Status, error) {
	if list == "" {
		return nil, nil
	}
	var out []order.Status
	for name := range strings.SplitSeq(list, ",") {
		s := order.Status(strings.TrimSpace(name))
		if !slices.Contains(order.Statuses, s) {
			return nil, fmt.Errorf("ORDERLY_STATUS_EVENTS: %q is not an order status (one of %v)", name, order.Statuses)
		}
		out = append(out, s)
	}
	return out, nil
}
