package recorder_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/recorder"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/eventbridge"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// crashing fails every publish while down, as a recorder that crashed
// between the history write and the publish would.
type crashing struct {
	recorder.Publisher
	down bool
}

func (c *crashing) Publish(ctx context.Context, s order.StatusChange) error {
	if c.down {
		return errors.New("recorder crashed before the publish")
	}
	return c.Publisher.Publish(ctx, s)
}

// A change whose event was not published is delivered again, with its
// history written once: the stream is the outbox.
func TestAStatusEventSurvivesACrashBeforeItsPublish(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second})
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	history := dynamo.NewHistory(w.Clients.DynamoDB, w.Stack.Catalog.History.Name)
	pub := &crashing{Publisher: eventbridge.NewPublisher(w.Clients.EventBridge, w.Stack.Catalog.EventBus), down: true}
	rec := recorder.New(history, pub, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.Discard())

	ev := w.StreamEvent(t, id)
	ev.Records[0].EventName, ev.Records[0].Change.OldImage = "INSERT", nil
	resp, err := rec.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != ev.Records[0].Change.SequenceNumber {
		t.Fatalf("first delivery: %+v, %v; want the record reported failed", resp, err)
	}
	pub.down = false
	if resp, err = rec.HandleStream(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("redelivery: %+v, %v; want it recorded", resp, err)
	}
	ts, err := history.List(context.Background(), id, time.Time{})
	if err != nil || len(ts) != 2 || ts[0].To != string(order.StatusPending) || ts[0].By != "submit" {
		t.Errorf("history %+v, %v: want the submission once (2 transitions), by submit", ts, err)
	}
	out, err := w.Clients.Deliveries.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
		QueueUrl: aws.String(w.Stack.StatusQueue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 5})
	if err != nil || len(out.Messages) == 0 {
		t.Fatalf("status events: %d, %v; want the one published on redelivery", len(out.Messages), err)
	}
	// A PutEvents the SDK resent after a busy moto lost its answer may
	// deliver the event twice (EventBridge delivers at least once), so
	// every message must be that event.
	for _, m := range out.Messages {
		var got struct {
			Detail order.StatusChange `json:"detail"`
		}
		if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &got); err != nil || got.Detail.OrderID != id || got.Detail.Status != order.StatusPending {
			t.Errorf("event %s: want order %s Pending", aws.ToString(m.Body), id)
		}
	}
}
