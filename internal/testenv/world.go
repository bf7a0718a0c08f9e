package testenv

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/alerting"
	"orderly/internal/api"
	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/provision"
	"orderly/internal/resources"
	"orderly/internal/scheduler"
	"orderly/internal/sns"
	"orderly/internal/sqs"
	"orderly/internal/supervisor"
)

// Clock is a settable clock shared by the actors of a World, so a test can
// move time past a deadline instead of waiting for it.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// Now returns the clock's time.
func (c *Clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }

// Advance moves the clock forward.
func (c *Clock) Advance(d time.Duration) { c.mu.Lock(); defer c.mu.Unlock(); c.now = c.now.Add(d) }

// World is a provisioned throwaway stack with the real actors wired to it,
// for tests that drive the pattern one step at a time.
type World struct {
	Stack    provision.Stack
	Clients  provision.Clients
	Store    *dynamo.Store
	Workflow order.Workflow
	Clock    *Clock
	API      *api.Service
	Alerts   *AlertInbox
	Log      *slog.Logger
}

// NewWorld provisions a stack for the shipped workflow with the given timing.
func NewWorld(t testing.TB, timing order.Timing) *World {
	t.Helper()
	cfg := AWS(t)
	wf := order.OrderWorkflow(timing)
	stack, clients := Provision(t, cfg, resources.New(Stage(t), wf.Agents()))
	w := &World{
		Stack: stack, Clients: clients, Workflow: wf,
		Store: dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name, stack.Catalog.State.Name),
		Clock: &Clock{now: time.Now().UTC()},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		w.Log = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	w.API = api.NewService(w.Store, wf, w.Clock.Now, w.Log, metrics.Discard())
	w.Alerts = SubscribeAlerts(t, clients, stack.AlertTopicARN)
	return w
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Submit posts an order through the API handler and returns its id.
func (w *World) Submit(t testing.TB, sub order.Submission) string {
	t.Helper()
	body, _ := json.Marshal(sub)
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: string(body),
	})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: status %d, error %v, body %s", resp.StatusCode, err, resp.Body)
	}
	var out struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		t.Fatalf("submit response: %v", err)
	}
	return out.OrderID
}

// Scheduler returns a Scheduler instance with the given id.
func (w *World) Scheduler(id string) *scheduler.Service {
	alerter := sns.NewAlerter(w.Clients.SNS, w.Stack.AlertTopicARN)
	return scheduler.New(scheduler.Config{
		InstanceID: id, Store: w.Store,
		Requests: sqs.NewRequests(w.Clients.SQS, w.Stack.RequestQueueURLs()),
		Notifier: alerting.NewNotifier(alerter, w.Store, w.Clock.Now),
		Workflow: w.Workflow, Now: w.Clock.Now, Log: w.Log, Metrics: metrics.Discard(),
	})
}

// Supervisor returns a Supervisor.
func (w *World) Supervisor() *supervisor.Service {
	alerter := sns.NewAlerter(w.Clients.SNS, w.Stack.AlertTopicARN)
	return supervisor.New(supervisor.Config{
		Store: w.Store, Notifier: alerting.NewNotifier(alerter, w.Store, w.Clock.Now), Publisher: alerter,
		Workflow: w.Workflow, Now: w.Clock.Now, Log: w.Log, Metrics: metrics.Discard(),
	})
}

// Step returns a step's current state.
func (w *World) Step(t testing.TB, orderID, step string) order.StepState {
	t.Helper()
	st, err := w.Store.GetStep(context.Background(), orderID, step)
	if err != nil {
		t.Fatalf("get step: %v", err)
	}
	return st
}

// StreamEvent is the stream record Lambda would deliver for the step's
// current state, with the attributes the Scheduler reads.
func (w *World) StreamEvent(t testing.TB, orderID, step string) events.DynamoDBEvent {
	t.Helper()
	st := w.Step(t, orderID, step)
	image := map[string]events.DynamoDBAttributeValue{
		resources.AttrOrderID: events.NewStringAttribute(st.OrderID),
		resources.AttrStep:    events.NewStringAttribute(st.Step),
		"StepIndex":           events.NewNumberAttribute(strconv.Itoa(st.Index)),
		"Agent":               events.NewStringAttribute(st.Agent),
		"ProcessState":        events.NewStringAttribute(string(st.ProcessState)),
		"FailureCount":        events.NewNumberAttribute(strconv.Itoa(st.FailureCount)),
		"Attempt":             events.NewNumberAttribute(strconv.Itoa(st.Attempt)),
		"Nudges":              events.NewNumberAttribute(strconv.Itoa(st.Nudges)),
		"UpdatedAt":           events.NewNumberAttribute(strconv.FormatInt(st.UpdatedAt.UnixMilli(), 10)),
	}
	if !st.CompleteBy.IsZero() {
		image[resources.AttrCompleteBy] = events.NewNumberAttribute(strconv.FormatInt(st.CompleteBy.UnixMilli(), 10))
	}
	if st.LockedBy != "" {
		image["LockedBy"] = events.NewStringAttribute(st.LockedBy)
	}
	return events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{
		EventName: "MODIFY", EventSource: "aws:dynamodb",
		Change: events.DynamoDBStreamRecord{NewImage: image, SequenceNumber: strconv.FormatInt(time.Now().UnixNano(), 10)},
	}}}
}

// Requests drains an agent's request queue and returns what was there.
func (w *World) Requests(t testing.TB, agent string) []order.StepRequest {
	t.Helper()
	var reqs []order.StepRequest
	for {
		out, err := w.Clients.SQS.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.Stack.RequestQueues[agent].URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 0,
		})
		if err != nil {
			t.Fatalf("receive requests: %v", err)
		}
		if len(out.Messages) == 0 {
			return reqs
		}
		for _, m := range out.Messages {
			var r order.StepRequest
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &r); err != nil {
				t.Fatalf("request is not JSON: %v", err)
			}
			reqs = append(reqs, r)
			w.Clients.SQS.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{
				QueueUrl: aws.String(w.Stack.RequestQueues[agent].URL), ReceiptHandle: m.ReceiptHandle,
			})
		}
	}
}

// ReplyEvent wraps replies into the SQS event Lambda would deliver.
func ReplyEvent(bodies ...any) events.SQSEvent {
	var ev events.SQSEvent
	for i, b := range bodies {
		s, ok := b.(string)
		if !ok {
			data, _ := json.Marshal(b)
			s = string(data)
		}
		ev.Records = append(ev.Records, events.SQSMessage{
			MessageId: "msg-" + strconv.Itoa(i), Body: s, EventSource: "aws:sqs",
			Attributes: map[string]string{"ApproximateReceiveCount": "1"},
		})
	}
	return ev
}
