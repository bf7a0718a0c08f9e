package testenv

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/recorder"
	"orderly/internal/compose"
)

// Recording follows one order the way the recorder does: each Record hands
// the recorder the order's change since the last one recorded, as its
// stream record would deliver it, so its history is written and its status
// events published.
type Recording struct {
	w   *World
	id  string
	rec *recorder.Service
	// last is the item as the recorder saw it last, the old image of the
	// next change (nil before the submission is recorded).
	last map[string]events.DynamoDBAttributeValue
}

// Follow follows order id; nothing is recorded until Record.
func (w *World) Follow(id string) *Recording {
	f := w.Function("recorder-test")
	f.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	return &Recording{w: w, id: id, rec: compose.Recorder(f)}
}

// Record records the order's change since the last one recorded (the
// first call, its submission).
func (r *Recording) Record(t testing.TB) {
	t.Helper()
	ev := r.w.StreamEvent(t, r.id)
	rec := &ev.Records[0]
	rec.EventName, rec.Change.OldImage = "MODIFY", r.last
	if r.last == nil {
		rec.EventName = "INSERT"
	}
	r.last = rec.Change.NewImage
	if resp, err := r.rec.HandleStream(context.Background(), ev); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("record the change of order %s: %+v, %v", r.id, resp, err)
	}
}

// StatusEvents takes the status events delivered so far from the bus's
// queue, as a client's rule would receive them: their bodies, in order.
func (w *World) StatusEvents(t testing.TB) []string {
	t.Helper()
	var out []string
	for {
		msgs, err := w.Clients.Deliveries.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.Stack.StatusQueue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive status events: %v", err)
		}
		if len(msgs.Messages) == 0 {
			return out
		}
		for _, m := range msgs.Messages {
			out = append(out, aws.ToString(m.Body))
			if _, err := w.Clients.Deliveries.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{
				QueueUrl: aws.String(w.Stack.StatusQueue.URL), ReceiptHandle: m.ReceiptHandle}); err != nil {
				t.Fatalf("delete a status event: %v", err)
			}
		}
	}
}
