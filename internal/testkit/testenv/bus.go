package testenv

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/local/provision"
)

// BusQueue makes a queue, and a rule on the stage's bus that sends it
// every event of the given sources, as a consumer of the bus would; both
// go when the test ends. It returns the queue's URL.
func BusQueue(t testing.TB, c provision.Clients, bus string, sources ...string) string {
	t.Helper()
	ctx := context.Background()
	name := "test-bus-" + strings.ToLower(fmt.Sprint(time.Now().UnixNano()%1e9))
	q, err := c.Deliveries.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	attrs, err := c.Deliveries.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue arn: %v", err)
	}
	pattern, _ := json.Marshal(map[string]any{"source": sources})
	if _, err := c.EventBridge.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(bus),
		EventPattern: aws.String(string(pattern))}); err != nil {
		t.Fatalf("put rule: %v", err)
	}
	if _, err := c.EventBridge.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus),
		Targets: []ebtypes.Target{{Id: aws.String("queue"), Arn: aws.String(attrs.Attributes["QueueArn"])}}}); err != nil {
		t.Fatalf("put targets: %v", err)
	}
	t.Cleanup(func() {
		c.EventBridge.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(name), EventBusName: aws.String(bus), Ids: []string{"queue"}})
		c.EventBridge.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(name), EventBusName: aws.String(bus)})
		c.Deliveries.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: q.QueueUrl})
	})
	return aws.ToString(q.QueueUrl)
}
