// Command recorder is the recorder Lambda, invoked by the orders table's
// stream: it writes each order's history and publishes its status events.
package main

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awseventbridge "github.com/aws/aws-sdk-go-v2/service/eventbridge"

	"orderly/internal/actor/recorder"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/eventbridge"
	"orderly/internal/config"
	"orderly/internal/resources"
)

func main() { config.Main("recorder", run) }

func run(log *slog.Logger, env *config.Env) error {
	retention := env.Retention()
	historyTable := env.Required(resources.EnvHistoryTable)
	bus := env.Required(resources.EnvEventBus)
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		return err
	}
	svc := recorder.New(
		dynamo.NewHistory(dynamodb.NewFromConfig(awsCfg), historyTable),
		eventbridge.NewPublisher(awseventbridge.NewFromConfig(awsCfg), bus),
		log, env.Metrics(os.Stdout, "recorder")).Retain(retention)
	lambda.Start(svc.HandleStream)
	return nil
}
