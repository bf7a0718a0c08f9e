// Command agent is an agent Lambda. One binary serves every agent; each
// deployed function names its agent (inventory, payment, shipping) in
// AGENT_NAME, and its remote service's base URL and authentication in
// ORDERLY_SERVICE_URL and ORDERLY_SERVICE_AUTH (package services): it
// reads a header's secret and signs SigV4 calls with its own role. Its one
// write to the orders table is a heartbeat: moving its attempt's deadline
// on. While its circuit breaker is open it sends requests back to its own
// queue.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/services"
	"orderly/internal/adapter/sqs"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/resources"
)

func main() { config.Main("agent", run) }

func run(log *slog.Logger, env *config.Env) error {
	name := env.Required("AGENT_NAME")
	serviceURL, serviceAuth := env.Required(services.EnvURL), env.Required(services.EnvAuth)
	responseQueue := env.Required(resources.EnvResponseQueueURL)
	margin := env.Duration(config.EnvReplyMargin, agent.DefaultReplyMargin)
	tryTimeout := env.Duration(config.EnvTryTimeout, agent.DefaultTryTimeout)
	table := env.Required(resources.EnvOrdersTable)
	ownQueue := env.Required(resources.EnvRequestQueueURL(name))
	names, def := env.Workflows()
	workflows, err := definition.DeployedAs(env.Timing(), names, def, env.String(config.EnvWorkflowsDigest, ""))
	if err != nil {
		// The workflow's files are built in: a broken build, or the
		// stage's timing at odds with a step's own.
		return fmt.Errorf("workflows: %w", err)
	}
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		return err
	}
	service, err := services.ParseService(serviceURL, serviceAuth)
	if err != nil {
		return fmt.Errorf("remote service: %w", err)
	}
	sqsClient := awssqs.NewFromConfig(awsCfg)
	svc := agent.New(agent.Config{
		Name:        name,
		Remote:      remote.NewClientFor(remote.ServicesFrom(services.Config{name: service}, awsCfg), &http.Client{}, workflows),
		Replies:     sqs.NewReplies(sqsClient, responseQueue),
		ReplyMargin: margin,
		TryTimeout:  tryTimeout,
		Deadlines:   dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), table).As("agent " + name),
		Workflows:   workflows,
		// Requests wait in their own queue while the circuit is open.
		Holder:  sqs.NewRequests(sqsClient, map[string]string{name: ownQueue}),
		Now:     time.Now,
		Log:     log,
		Metrics: env.Metrics(os.Stdout, name+"-agent"),
	})
	lambda.Start(svc.Handle)
	return nil
}
