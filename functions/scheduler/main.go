// Command scheduler is the Scheduler Lambda, invoked by the response queue
// (to apply agents' replies and claim each next step at once) and by the
// orders table's stream (to claim steps that wait for a claim after a
// retry or a released claim). One execution environment is one Scheduler
// instance. Package compose builds it.
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

func main() { config.Main(resources.FunctionScheduler, run) }

func run(log *slog.Logger, env *config.Env) error {
	f, err := compose.FromEnv(context.Background(), log, env, resources.FunctionScheduler)
	if err != nil {
		return err
	}
	// Spans are flushed as each invocation ends: Lambda may freeze the
	// environment before the batch is exported.
	lambda.Start(tracing.Flushing(f.Tracing, compose.Scheduler(f).Handle))
	return nil
}
