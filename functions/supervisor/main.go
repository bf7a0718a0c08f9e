// Command supervisor is the Supervisor Lambda, invoked on a schedule by
// EventBridge.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/alerting"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/sns"
	"orderly/internal/adapter/sqs"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/resources"
)

func main() { config.Main("supervisor", run) }

func run(log *slog.Logger, env *config.Env) error {
	retention := env.Retention()
	ordersTable := env.Required(resources.EnvOrdersTable)
	topicARN := env.Required(resources.EnvAlertTopicARN)
	names, def := env.Workflows()
	workflows, err := definition.DeployedAs(env.Timing(), names, def, env.String(config.EnvWorkflowsDigest, ""))
	if err != nil {
		// The workflow's files are built in: a broken build, or the
		// stage's timing at odds with a step's own.
		return fmt.Errorf("workflows: %w", err)
	}
	// The Supervisor asks the agents' queues for their backlog, to tell
	// queue wait from a timeout.
	queues := env.RequestQueueURLs(workflows.Agents())
	responses := env.Required(resources.EnvResponseQueueURL)
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		return err
	}
	store := dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), ordersTable).As("supervisor").Retain(retention)
	alerter := sns.NewAlerter(awssns.NewFromConfig(awsCfg), topicARN)
	svc := supervisor.New(supervisor.Config{
		Store:     store,
		Notifier:  alerting.NewNotifier(alerter, store, time.Now),
		Backlogs:  sqs.NewBacklogs(awssqs.NewFromConfig(awsCfg), queues, responses),
		Workflows: workflows,
		Now:       time.Now,
		Log:       log,
		Metrics:   env.Metrics(os.Stdout, "supervisor"),
	})
	lambda.Start(svc.Handle)
	return nil
}
