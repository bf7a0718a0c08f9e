// Command scheduler is the Scheduler Lambda, invoked by the response queue
// (to apply agents' replies and claim each next step at once) and by the
// orders table's stream (to claim steps that wait for a claim after a
// retry or a released claim).
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
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/sns"
	"orderly/internal/adapter/sqs"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/resources"
)

func main() { config.Main("scheduler", run) }

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
	queues := env.RequestQueueURLs(workflows.Agents())
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		return err
	}
	m := env.Metrics(os.Stdout, "scheduler")
	// One execution environment is one Scheduler instance.
	id := config.InstanceID("scheduler")
	store := dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), ordersTable).As("scheduler " + id).Retain(retention)
	alerter := sns.NewAlerter(awssns.NewFromConfig(awsCfg), topicARN)
	requests := sqs.NewRequests(awssqs.NewFromConfig(awsCfg), queues)
	svc := scheduler.New(scheduler.Config{
		InstanceID: id,
		Store:      store,
		Dispatcher: dispatch.New(requests, store, workflows.Latest().ClaimWithin, time.Now, log, m),
		Notifier:   alerting.NewNotifier(alerter, store, time.Now),
		Workflows:  workflows,
		Now:        time.Now,
		Log:        log,
		Metrics:    m,
	})
	lambda.Start(svc.Handle)
	return nil
}
