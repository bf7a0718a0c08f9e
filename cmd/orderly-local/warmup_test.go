package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/local/engine"
	"orderly/internal/local/provision"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// The warm-up runs real orders, then leaves nothing behind: no table,
// queue, event bus, rule, topic or secret of its stage, and none of the
// user's stage either (it must not create that one).
func TestWarmUpRunsOrdersAndLeavesNoTrace(t *testing.T) {
	awsCfg := testenv.AWS(t)
	stage := testenv.Stage(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	cfg := engine.Config{Stage: stage, Timing: order.DefaultTiming, SupervisorEvery: engine.DefaultSupervisorEvery, Schedulers: 1}
	res, err := warmUp(ctx, awsCfg, cfg, 10*time.Second)
	if err != nil {
		t.Fatalf("warmUp: %v", err)
	}
	if res.Rounds < 1 || res.Orders < warmUpRound.Orders {
		t.Errorf("warmUp ran %d rounds, %d orders; want at least 1 round of %d orders", res.Rounds, res.Orders, warmUpRound.Orders)
	}

	// Every name of a stage starts with this prefix, the warm-up's too:
	// checked, so that the listings below cannot pass by looking elsewhere.
	prefix := "orderly-" + stage
	warm := resources.New(stage+"-warmup", ordertest.Built(order.DefaultTiming).Agents())
	for _, name := range []string{warm.Orders.Name, warm.History.Name, warm.ResponseQueue.Name, warm.StatusQueue.Name, warm.EventBus, warm.AlertTopic, warm.PageTokenSecret, warm.CallbackSecret} {
		if !strings.HasPrefix(name, prefix) {
			t.Fatalf("warm-up resource %q does not start with %q", name, prefix)
		}
	}

	clients := provision.NewClients(awsCfg)
	var left []string
	tables, err := clients.DynamoDB.ListTables(ctx, &dynamodb.ListTablesInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tables.TableNames {
		if strings.HasPrefix(n, prefix) {
			left = append(left, "table "+n)
		}
	}
	for _, c := range []*sqs.Client{clients.SQS, clients.Deliveries} {
		queues, err := c.ListQueues(ctx, &sqs.ListQueuesInput{QueueNamePrefix: aws.String(prefix)})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range queues.QueueUrls {
			left = append(left, "queue "+u)
		}
	}
	buses, err := clients.EventBridge.ListEventBuses(ctx, &eventbridge.ListEventBusesInput{NamePrefix: aws.String(prefix)})
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range buses.EventBuses {
		left = append(left, "event bus "+aws.ToString(b.Name))
	}
	topics, err := clients.SNS.ListTopics(ctx, &sns.ListTopicsInput{})
	if err != nil {
		t.Fatal(err)
	}
	for _, tp := range topics.Topics {
		if strings.Contains(aws.ToString(tp.TopicArn), ":"+prefix) {
			left = append(left, "topic "+aws.ToString(tp.TopicArn))
		}
	}
	secrets, err := clients.SecretsManager.ListSecrets(ctx, &secretsmanager.ListSecretsInput{
		Filters: []smtypes.Filter{{Key: smtypes.FilterNameStringTypeName, Values: []string{prefix}}}})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range secrets.SecretList {
		left = append(left, "secret "+aws.ToString(s.Name))
	}
	if len(left) > 0 {
		t.Errorf("the warm-up left behind: %s", strings.Join(left, ", "))
	}
}
