// Command supervisor is the Supervisor Lambda, invoked on a schedule by
// EventBridge.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"

	"orderly/internal/alerting"
	"orderly/internal/config"
	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/sns"
	"orderly/internal/supervisor"
)

func main() {
	log := config.Logger("supervisor")
	env := config.FromOS()
	ordersTable := env.Required(resources.EnvOrdersTable)
	topicARN := env.Required(resources.EnvAlertTopicARN)
	timing := env.Timing()
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
	store := dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), ordersTable)
	alerter := sns.NewAlerter(awssns.NewFromConfig(awsCfg), topicARN)
	svc := supervisor.New(supervisor.Config{
		Store:    store,
		Notifier: alerting.NewNotifier(alerter, store, time.Now),
		Workflow: order.OrderWorkflow(timing),
		Now:      time.Now,
		Log:      log,
		Metrics:  metrics.New(os.Stdout, "supervisor"),
	})
	lambda.Start(svc.Handle)
}
