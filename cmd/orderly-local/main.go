// Command orderly-local runs the whole engine in one process against the
// AWS endpoints the SDK is configured for (the local emulators under
// `make run`): the API on ORDERLY_API_ADDR, the simulated remote services,
// SQS and stream pollers that invoke the same handlers the Lambdas run, and
// the Supervisor on a ticker.
package main

import (
	"context"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"orderly/internal/config"
	"orderly/internal/engine"
)

func main() {
	log := config.Logger("") // the engine names each component's records
	if err := run(log); err != nil {
		log.Error("orderly-local stopped", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	env := config.FromOS()
	timing := env.Timing()
	cfg := engine.Config{
		Stage:           env.String("ORDERLY_STAGE", "local"),
		APIAddr:         env.String("ORDERLY_API_ADDR", "127.0.0.1:8080"),
		SimulatorAddr:   env.String("ORDERLY_SIMULATOR_ADDR", "127.0.0.1:8081"),
		RemoteURL:       env.String("REMOTE_URL", ""),
		Timing:          timing,
		SupervisorEvery: env.Duration("SUPERVISOR_EVERY", engine.DefaultSupervisorEvery),
		Schedulers:      env.Int("SCHEDULERS", 2),
		// Locally a failed message should come back soon, but not while an
		// agent may still be working on it.
		QueueVisibility: env.Duration("QUEUE_VISIBILITY", timing.MaxAllowance+30*time.Second),
		// Stream checkpoints: a restart resumes the stream, not replays it.
		StateDir: env.String("ORDERLY_STATE_DIR", ".local/state"),
		Log:      log,
	}
	// EMF metric lines matter in CloudWatch; locally they would drown the
	// logs, so they are printed only on request.
	if env.String("ORDERLY_EMF", "") == "1" {
		cfg.Metrics = os.Stdout
	}
	if err := env.Err(); err != nil {
		return err
	}
	awsCfg, err := config.AWS(ctx)
	if err != nil {
		return err
	}
	e, err := engine.New(ctx, awsCfg, cfg)
	if err != nil {
		return err
	}
	return e.Run(ctx)
}
