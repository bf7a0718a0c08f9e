package provision_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/local/provision"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A stage made by an older version, whose tables lack an index declared
// since, gets the index when provisioned again: `make run` keeps its
// tables across upgrades.
func TestProvisionAddsIndexesAnOlderVersionLacks(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	cfg := testenv.AWS(t)
	clients := testenv.Clients(cfg)
	cat := resources.New(testenv.Stage(t), ordertest.OrderWorkflow(order.DefaultTiming).Agents())
	old := cat
	old.History.Indexes = nil
	stack, err := provision.Create(context.Background(), clients, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.Cleanup(t, clients, stack) })
	if _, err := provision.Create(context.Background(), clients, cat); err != nil {
		t.Fatalf("provision again: %v", err)
	}
	out, err := clients.DynamoDB.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(cat.History.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Table.GlobalSecondaryIndexes); n != 1 || aws.ToString(out.Table.GlobalSecondaryIndexes[0].IndexName) != resources.AlertIndexName ||
		out.Table.GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" {
		t.Errorf("history table's indexes after the upgrade: %+v, want %s, active", out.Table.GlobalSecondaryIndexes, resources.AlertIndexName)
	}
	// Both tables expire items by their ExpiresAt (retention).
	for _, table := range cat.Tables() {
		ttl, err := clients.DynamoDB.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table.Name)})
		if err != nil {
			t.Fatal(err)
		}
		if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != resources.AttrExpiresAt || d.TimeToLiveStatus != dbtypes.TimeToLiveStatusEnabled {
			t.Errorf("table %s TTL %+v, want enabled on %s", table.Name, d, resources.AttrExpiresAt)
		}
	}
}

// The local status queue's rule routes every status's events, or only the
// statuses the catalog names (the soak reads only the terminal ones, and
// a queue on moto is slow to read once deep).
func TestStatusQueueGetsTheStatusesItIsGiven(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	cfg := testenv.AWS(t)
	clients := testenv.Clients(cfg)
	for _, tt := range []struct {
		name     string
		statuses []string
		want     []string
	}{
		{"every status", nil, []string{"Order Pending", "Order Processed"}},
		{"only those named", []string{"Processed", "Failed"}, []string{"Order Processed"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			cat := resources.New(testenv.Stage(t), ordertest.OrderWorkflow(order.DefaultTiming).Agents()).WithoutTableTTL()
			cat.StatusEvents = tt.statuses
			stack, err := provision.Create(ctx, clients, cat)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { testenv.Cleanup(t, clients, stack) })
			var entries []ebtypes.PutEventsRequestEntry
			for _, s := range []string{"Pending", "Processed"} {
				entries = append(entries, ebtypes.PutEventsRequestEntry{EventBusName: aws.String(cat.EventBus), Source: aws.String(resources.EventSource),
					DetailType: aws.String(resources.EventTypePrefix + s), Detail: aws.String(`{"orderId":"o-1","status":"` + s + `"}`)})
			}
			if out, err := clients.EventBridge.PutEvents(ctx, &eventbridge.PutEventsInput{Entries: entries}); err != nil || out.FailedEntryCount != 0 {
				t.Fatalf("put events: %v, %+v", err, out)
			}
			var got []string
			// Two quiet polls once every wanted event came; up to ten
			// before (moto delivers late on a busy machine).
			for quiet := 0; quiet < 2 || len(got) < len(tt.want) && quiet < 10; {
				out, err := clients.Deliveries.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: aws.String(stack.StatusQueue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				if len(out.Messages) == 0 {
					quiet++
				}
				for _, m := range out.Messages {
					var ev struct {
						DetailType string `json:"detail-type"`
					}
					if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
						t.Fatalf("event %s: %v", aws.ToString(m.Body), err)
					}
					got = append(got, ev.DetailType)
				}
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("the status queue got %v, want %v", got, tt.want)
			}
		})
	}
}
