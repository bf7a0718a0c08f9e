// Command agent is an agent Lambda. One binary serves every agent; each
// deployed function names its agent (inventory, payment, shipping) in
// AGENT_NAME, and its remote service's base URL and authentication in
// ORDERLY_SERVICE_URL and ORDERLY_SERVICE_AUTH (package services): it
// reads a header's secret and signs SigV4 calls with its own role. Its one
// write to the orders table is a heartbeat: moving its attempt's deadline
// on. While its circuit breaker is open it sends requests back to its own
// queue. Package compose builds it.
package main

import (
	"context"
	"log/slog"

	"github.com/aws/aws-lambda-go/lambda"

	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/tracing"
)

func main() { config.Main("agent", run) }

func run(log *slog.Logger, env *config.Env) error {
	f, a, err := compose.AgentFromEnv(context.Background(), log, env)
	if err != nil {
		return err
	}
	// Spans are flushed as each invocation ends: Lambda may freeze the
	// environment before the batch is exported.
	lambda.Start(tracing.Flushing(f.Tracing, compose.Agent(f, a).Handle))
	return nil
}
