// Command supervisor is the Supervisor Lambda, invoked on a schedule by
// EventBridge. Package compose builds it.
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

func main() { config.Main(resources.FunctionSupervisor, run) }

func run(log *slog.Logger, env *config.Env) error {
	f, err := compose.FromEnv(context.Background(), log, env, resources.FunctionSupervisor)
	if err != nil {
		return err
	}
	// Spans are flushed as each invocation ends: Lambda may freeze the
	// environment before the batch is exported.
	lambda.Start(tracing.Flushing(f.Tracing, compose.Supervisor(f).Handle))
	return nil
}
