// Command scheduler is the Scheduler Lambda, invoked by the state table's
// stream (to claim Pending steps) and by the response queue (to apply
// agents' replies).
package main

import (
	"context"
	"crypto/rand"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/alerting"
	"orderly/internal/config"
	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/scheduler"
	"orderly/internal/sns"
	"orderly/internal/sqs"
)

func main() {
	log := config.Logger("scheduler")
	env := config.FromOS()
	ordersTable := env.Required(resources.EnvOrdersTable)
	stateTable := env.Required(resources.EnvStateTable)
	topicARN := env.Required(resources.EnvAlertTopicARN)
	workflow := order.OrderWorkflow(env.Timing())
	queues := map[string]string{}
	for _, agent := range workflow.Agents() {
		queues[agent] = env.Required(resources.EnvRequestQueueURL(agent))
	}
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
	store := dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), ordersTable, stateTable)
	alerter := sns.NewAlerter(awssns.NewFromConfig(awsCfg), topicARN)
	svc := scheduler.New(scheduler.Config{
		// One execution environment is one Scheduler instance.
		InstanceID: os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME") + "/" + rand.Text()[:8],
		Store:      store,
		Requests:   sqs.NewRequests(awssqs.NewFromConfig(awsCfg), queues),
		Notifier:   alerting.NewNotifier(alerter, store, time.Now),
		Workflow:   workflow,
		Now:        time.Now,
		Log:        log,
		Metrics:    metrics.New(os.Stdout, "scheduler"),
	})
	lambda.Start(svc.Handle)
}
