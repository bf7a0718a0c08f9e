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
)

func main() { config.Main(resources.FunctionRecorder, run) }

func run(log *slog.Logger, env *config.Env) error {
	f, err := compose.FromEnv(context.Background(), log, env, resources.FunctionRecorder)
	if err != nil {
		return err
	}
	lambda.Start(compose.Recorder(f).HandleStream)
	return nil
}
