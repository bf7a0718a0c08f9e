// Command submit is the submission Lambda behind API Gateway: POST /orders
// and GET /orders/{id}.
package main

import (
	"context"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"orderly/internal/api"
	"orderly/internal/config"
	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
)

func main() {
	log := config.Logger("submit")
	env := config.FromOS()
	ordersTable := env.Required(resources.EnvOrdersTable)
	stateTable := env.Required(resources.EnvStateTable)
	timing := env.Timing()
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
	store := dynamo.NewStore(dynamodb.NewFromConfig(awsCfg), ordersTable, stateTable)
	svc := api.NewService(store, order.OrderWorkflow(timing), time.Now, log, metrics.New(os.Stdout, "submit"))
	lambda.Start(svc.Handle)
}
