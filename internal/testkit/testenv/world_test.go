package testenv_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// A body queued twice (the SDK resending a send whose answer was lost) is
// one request to the tests, and both copies leave the queue.
func TestRequestsCountsABodyQueuedTwiceOnce(t *testing.T) {
	w := testenv.NewWorld(t, order.DefaultTiming)
	agent := w.Workflow.Steps[0].Agent
	url := w.Stack.RequestQueues[agent].URL
	send := func(r order.StepRequest) {
		t.Helper()
		if _, err := w.Clients.SQS.SendMessage(context.Background(), &sqs.SendMessageInput{
			QueueUrl: aws.String(url), MessageBody: jsonBody(t, r),
		}); err != nil {
			t.Fatalf("send: %v", err)
		}
	}
	first := order.StepRequest{OrderID: "o-1", Version: "1", Step: w.Workflow.Steps[0].Name, Attempt: 1}
	second := first
	second.Attempt = 2
	send(first)
	send(first)
	send(second)

	if got := w.Requests(t, agent); len(got) != 2 || got[0].Attempt == got[1].Attempt {
		t.Errorf("got requests %s, want attempts 1 and 2 once each", testenv.Describe(got))
	}
	if again := w.Requests(t, agent); len(again) != 0 {
		t.Errorf("the queue still held %s, want it drained", testenv.Describe(again))
	}
}

// An alert published twice with the same body (a copy made in delivery) is
// one alert; one sent again later is another; an alert about another order
// that came in the same batch waits for its own test, not for a
// visibility timeout.
func TestAlertInboxDropsCopiesAndKeepsBatchMates(t *testing.T) {
	w := testenv.NewWorld(t, order.DefaultTiming)
	at := time.Now().UTC()
	publish := func(a order.Alert) {
		t.Helper()
		if _, err := w.Clients.SNS.Publish(context.Background(), &sns.PublishInput{
			TopicArn: aws.String(w.Stack.AlertTopicARN), Message: jsonBody(t, a),
		}); err != nil {
			t.Fatalf("publish: %v", err)
		}
	}
	first := order.Alert{Kind: order.AlertUndoFailed, OrderID: "A", Step: "s", Attempt: 1, At: at}
	again := first
	again.At = at.Add(time.Second)
	other := order.Alert{Kind: order.AlertUndoFailed, OrderID: "B", Step: "s", Attempt: 1, At: at}
	for _, a := range []order.Alert{first, first, other, again} {
		publish(a)
	}

	var got []time.Time
	for {
		a, ok := w.Alerts.Next("A", 3*time.Second)
		if !ok {
			break
		}
		got = append(got, a.At)
	}
	if len(got) != 2 || got[0].Equal(got[1]) {
		t.Errorf("alerts about A published at %v, want two: the first and the one sent again", got)
	}
	if b, ok := w.Alerts.Next("B", time.Second); !ok || b.OrderID != "B" {
		t.Errorf("the alert about B was not kept from A's batches")
	}
}

// jsonBody is v as a message body.
func jsonBody(t *testing.T, v any) *string {
	t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return aws.String(string(data))
}
