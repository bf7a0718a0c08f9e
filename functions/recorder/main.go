// Command recorder is the recorder Lambda, invoked by the orders table's
// stream: it writes each order's history and publishes its status events.
// Package compose builds it.
package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/resources"
	"orderly/internal/tracing"
)

func main() { config.Main(resources.FunctionRecorder, run) }

func run(log *slog.Logger, env *config.Env) error {
	f, err := compose.FromEnv(context.Background(), log, env, resources.FunctionRecorder)
	if err != nil {
		return err
	}
	// Spans are flushed as each invocation ends: Lambda may freeze the
	// environment before the batch is exported.
	lambda.Start(tracing.Flushing(f.Tracing, compose.Recorder(f).HandleStream))
	return nil
}
