// Command submit is the submission Lambda behind API Gateway: POST /orders
// stores an order with its first step claimed and sends that step's
// request; GET /orders/{id} shows an order and its steps; GET /orders
// searches them.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/actor/control"
	"orderly/internal/actor/dispatch"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/secret"
	"orderly/internal/adapter/sqs"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/pagetoken"
	"orderly/internal/resources"
)

func main() { config.Main("submit", run) }

func run(log *slog.Logger, env *config.Env) error {
	retention := env.Retention()
	ordersTable := env.Required(resources.EnvOrdersTable)
	historyTable := env.Required(resources.EnvHistoryTable)
	anonymous := env.String(resources.EnvAnonymousCaller, "")
	keyName := env.Required(resources.EnvPageTokenSecret)
	names, def := env.Workflows()
	workflows, err := definition.DeployedAs(env.Timing(), names, def, env.String(config.EnvWorkflowsDigest, ""))
	if err != nil {
		// The workflow's files are built in: a broken build, or the
		// stage's timing at odds with a step's own.
		return fmt.Errorf("workflows: %w", err)
	}
	workflow := workflows.Latest()
	// Submission only ever sends a first step's request.
	queues := env.RequestQueueURLs(workflows.FirstAgents())
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		return err
	}
	// The key of the search pages' cursors, the same for every instance,
	// read at the first search: a key that cannot be read fails searches
	// (503), never a submission.
	secrets := secretsmanager.NewFromConfig(awsCfg)
	pages := pagetoken.Loaded(func(ctx context.Context) ([]byte, error) {
		return secret.Key(ctx, secrets, keyName, pagetoken.MinKeyBytes)
	})
	m := env.Metrics(os.Stdout, "submit")
	db := dynamodb.NewFromConfig(awsCfg)
	store := dynamo.NewStore(db, ordersTable).Retain(retention)
	requests := sqs.NewRequests(awssqs.NewFromConfig(awsCfg), queues)
	svc, err := api.NewService(api.Config{
		InstanceID: config.InstanceID("submit"),
		Store:      store.As("submit"),
		Controls:   control.New(store.As(control.ByClientCancel), store.As(control.ByOperatorRedrive), workflows, time.Now),
		History:    dynamo.NewHistory(db, historyTable),
		Dispatcher: dispatch.New(requests, store.As("submit"), workflow.ClaimWithin, time.Now, log, m),
		Workflows:  workflows,
		Now:        time.Now,
		Log:        log,
		Metrics:    m,
		// Empty in AWS, where the IAM authorizer names every caller.
		AnonymousCaller: anonymous,
		PageTokens:      pages,
	})
	if err != nil {
		return fmt.Errorf("submission API: %w", err)
	}
	lambda.Start(svc.Handle)
	return nil
}
