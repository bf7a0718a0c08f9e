// Command submit is the submission Lambda behind API Gateway: POST /orders
// stores an order with its first step claimed and sends that step's
// request; GET /orders/{id} shows an order and its steps; GET /orders
// searches them (internal/actor/api has every route). Package compose
// builds it.
package main

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/resources"
	"orderly/internal/tracing"
)

func main() { config.Main(resources.FunctionSubmit, run) }

func run(log *slog.Logger, env *config.Env) error {
	f, err := compose.FromEnv(context.Background(), log, env, resources.FunctionSubmit)
	if err != nil {
		return err
	}
	svc, err := compose.Submit(f)
	if err != nil {
		return fmt.Errorf("submission API: %w", err)
	}
	// Spans are flushed as each invocation ends: Lambda may freeze the
	// environment before the batch is exported.
	lambda.Start(tracing.Flushing(f.Tracing, svc.Handle))
	return nil
}
