package recorder_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/recorder"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/eventbridge"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// Every pause and resume is an audit record and an event: the recorder
// turns the pause item's stream records into its history (who, why,
// until when), kept under the pause's key, and an event "Pause paused" /
// "Pause resumed" on the bus. A pause item is no poison to it.
func TestAPauseAndItsResumeAreHistoryAndEvents(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second})
	ctx := context.Background()
	history := dynamo.NewHistory(w.Clients.DynamoDB, w.Stack.Catalog.History.Name)
	var emf strings.Builder
	rec := recorder.New(history, eventbridge.NewPublisher(w.Clients.EventBridge, w.Stack.Catalog.EventBus),
		slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New(&emf, "test"))
	key := order.PauseKey(order.PauseService, ordertest.AgentPayment)
	// Operators' events are not on the source clients' rules match (the
	// stage's status queue): a rule of the operators' own takes them.
	operators := testenv.BusQueue(t, w.Clients, w.Stack.Catalog.EventBus, resources.OperatorEventSource)

	p, err := order.PlanPause(order.PauseRequest{Kind: order.PauseService, Name: ordertest.AgentPayment, For: 2 * time.Hour,
		Reason: "PSP maintenance", By: "arn:aws:iam::1:user/ana"}, ordertest.Built(order.DefaultTiming), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Store.Pause(ctx, p); err != nil {
		t.Fatal(err)
	}
	paused := w.StreamEvent(t, key)
	paused.Records[0].EventName = "INSERT"
	if resp, err := rec.HandleStream(ctx, paused); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("pause recorded: %+v, %v", resp, err)
	}
	if _, err := w.Store.Resume(ctx, order.PauseService, ordertest.AgentPayment, "arn:aws:iam::1:user/bo", "window over"); err != nil {
		t.Fatal(err)
	}
	resumed := w.StreamEvent(t, key)
	resumed.Records[0].Change.OldImage = paused.Records[0].Change.NewImage
	if resp, err := rec.HandleStream(ctx, resumed); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatalf("resume recorded: %+v, %v", resp, err)
	}
	if strings.Contains(emf.String(), metrics.PoisonMessages) {
		t.Errorf("a pause item counted as poison: %s", emf.String())
	}

	entries, err := history.List(ctx, key, time.Time{})
	if err != nil || len(entries) != 2 {
		t.Fatalf("history of the pause = %+v, %v; want two entries", entries, err)
	}
	if e := entries[0]; e.Event != order.PausedEvent || e.By != p.By || e.Reason != "PSP maintenance" || e.To != p.Until.UTC().Format(time.RFC3339) {
		t.Errorf("first entry = %+v; want paused by %s until %s, with the reason", e, p.By, p.Until)
	}
	if e := entries[1]; e.Event != order.ResumedEvent || e.By != "arn:aws:iam::1:user/bo" || e.Reason != "window over" {
		t.Errorf("second entry = %+v; want resumed by bo, with the reason", e)
	}

	got := map[string]order.PauseChange{}
	for deadline := time.Now().Add(10 * time.Second); len(got) < 2 && time.Now().Before(deadline); {
		out, err := w.Clients.Deliveries.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(operators), MaxNumberOfMessages: 10, WaitTimeSeconds: 2})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range out.Messages {
			var ev struct {
				DetailType string            `json:"detail-type"`
				Detail     order.PauseChange `json:"detail"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil {
				t.Fatal(err)
			}
			got[ev.DetailType] = ev.Detail
		}
	}
	if e, ok := got[resources.PauseEventTypePrefix+order.PausedEvent]; !ok || e.Pause.Name != ordertest.AgentPayment || e.Pause.By != p.By || !e.Pause.On() {
		t.Errorf("events %+v: want a pause event naming the service and who paused it", got)
	}
	if e, ok := got[resources.PauseEventTypePrefix+order.ResumedEvent]; !ok || e.Pause.ResumedBy != "arn:aws:iam::1:user/bo" || e.PausedSince.IsZero() {
		t.Errorf("events %+v: want a resume event naming who resumed and when the pause began", got)
	}
}
