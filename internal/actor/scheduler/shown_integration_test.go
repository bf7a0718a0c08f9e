package scheduler_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/actor/recorder"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/eventbridge"
	"orderly/internal/metrics"
	"orderly/internal/testkit/testenv"
)

// watcher follows one order the way the recorder does (history and status
// events from its stream records) and reads everything clients and
// operators are shown of it.
type watcher struct {
	w    *testenv.World
	id   string
	rec  *recorder.Service
	last map[string]events.DynamoDBAttributeValue
	// events are the bodies of the status events published so far.
	events []string
}

// watch records the order's submission.
func watch(t *testing.T, w *testenv.World, id string) *watcher {
	t.Helper()
	o := &watcher{w: w, id: id, rec: recorder.New(dynamo.NewHistory(w.Clients.DynamoDB, w.Stack.Catalog.History.Name),
		eventbridge.NewPublisher(w.Clients.EventBridge, w.Stack.Catalog.EventBus), slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.Discard())}
	o.record(t)
	return o
}

// record records the order's change since the last one recorded, as its
// stream record would deliver it.
func (o *watcher) record(t *testing.T) {
	t.Helper()
	ev := o.w.StreamEvent(t, o.id)
	r := &ev.Records[0]
	r.EventName, r.Change.OldImage = "MODIFY", o.last
	if o.last == nil {
		r.EventName = "INSERT"
	}
	o.last = r.Change.NewImage
	resp, err := o.rec.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("record the change of order %s: %+v, %v", o.id, resp, err)
	}
}

// shown returns, by where it is shown, what clients and operators read of
// the order: its views and histories through the API (the console and
// the CLI show the same views), and its status events.
func (o *watcher) shown(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, resource := range []string{api.ResourceOrder, api.ResourceOperatorOrder, api.ResourceHistory, api.ResourceOperatorHistory} {
		resp, err := o.w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
			HTTPMethod: http.MethodGet, Resource: resource, Path: strings.Replace(resource, "{id}", o.id, 1),
			PathParameters: map[string]string{"id": o.id}, RequestContext: testenv.As(testenv.Caller),
		})
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s of order %s: status %d, %v", resource, o.id, resp.StatusCode, err)
		}
		out["GET "+resource] = resp.Body
	}
	for {
		msgs, err := o.w.Clients.Deliveries.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(o.w.Stack.StatusQueue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive status events: %v", err)
		}
		if len(msgs.Messages) == 0 {
			break
		}
		for _, m := range msgs.Messages {
			o.events = append(o.events, aws.ToString(m.Body))
			_, _ = o.w.Clients.Deliveries.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{
				QueueUrl: aws.String(o.w.Stack.StatusQueue.URL), ReceiptHandle: m.ReceiptHandle})
		}
	}
	if len(o.events) == 0 {
		t.Fatalf("no status event of order %s was published", o.id)
	}
	out["status events"] = strings.Join(o.events, "\n")
	return out
}
