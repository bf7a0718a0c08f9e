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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/api"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/services"
	"orderly/internal/compose"
	"orderly/internal/local/provision"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
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
	aws      aws.Config
}

// NewWorld provisions a stack for the shipped workflow with the given timing.
func NewWorld(t testing.TB, timing order.Timing) *World {
	t.Helper()
	cfg := AWS(t)
	// The shipped workflow as the functions load it: from its file.
	wf := ordertest.Built(timing).Latest()
	stack, clients := Provision(t, cfg, resources.New(Stage(t), wf.Agents()))
	w := &World{
		Stack: stack, Clients: clients, Workflow: wf, aws: cfg,
		Store: dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name),
		Clock: &Clock{now: time.Now().UTC()},
		Log:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		w.Log = slog.New(slog.NewTextHandler(testWriter{t}, nil))
	}
	w.API = w.NewAPI(t)
	w.Alerts = SubscribeAlerts(t, clients, stack.AlertTopicARN)
	return w
}

// Run makes wf the World's one workflow version in place of the shipped
// one (a test's own steps, under the same name and version, so it runs on
// the stack provisioned for the shipped workflow's agents): the API is
// built again, and every actor built after it runs wf.
func (w *World) Run(t testing.TB, wf order.Workflow) {
	t.Helper()
	w.Workflow = wf
	w.API = w.NewAPI(t)
}

// Versions is the World's one workflow version, as the functions get it.
func (w *World) Versions() order.Versions { return order.MustVersions(w.Workflow) }

// CallbackURL is where the World's agents tell services that call back
// to call: the World's API has no address (tests call its handler), so a
// name that resolves nowhere (RFC 2606's .test).
const CallbackURL = "https://api.orderly.test/callbacks"

// Function is a function of the World's stage as its Lambda is built
// (package compose), with the World's clock and id as its instance's.
func (w *World) Function(id string) compose.Function {
	stage := w.Stack.Stage(w.Versions(), 0)
	stage.CallbackURL = CallbackURL
	return compose.Function{
		Stage: stage,
		ID:    id, Log: w.Log, Metrics: metrics.Discard(), Now: w.Clock.Now, AWS: w.aws,
	}
}

// NewAPI is the World's submission API, as its Lambda is built; tweaks
// adjust its configuration first.
func (w *World) NewAPI(t testing.TB, tweaks ...func(*api.Config)) *api.Service {
	t.Helper()
	svc, err := compose.Submit(w.Function("submit-test"), tweaks...)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) { w.t.Log(string(p)); return len(p), nil }

// Caller is the principal the World's requests come from, as API Gateway
// names an IAM role's session in requestContext.identity.caller.
const Caller = "AROATESTCALLER0000001:orderly-tests"

// As is the request context of a request signed by caller.
func As(caller string) events.APIGatewayProxyRequestContext {
	return events.APIGatewayProxyRequestContext{Identity: events.APIGatewayRequestIdentity{Caller: caller, User: caller}}
}

// Submit posts an order through the API handler and returns its id.
func (w *World) Submit(t testing.TB, sub ordertest.Submission) string {
	t.Helper()
	body, _ := json.Marshal(sub)
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: string(body),
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: As(Caller),
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

// Agent returns the agent of the World's workflow called name, as its
// Lambda is built, calling its service at url without a credential
// (a loopback test server).
func (w *World) Agent(name, url string) *agent.Service {
	return compose.Agent(w.Function("agent-"+name), compose.AgentSettings{Name: name,
		Service: services.Service{URL: url, Auth: services.Auth{Type: services.AuthNone}}})
}

// Dispatcher returns the dispatcher the World's actors send requests with.
func (w *World) Dispatcher() *dispatch.Dispatcher {
	return compose.Dispatcher(w.Function("dispatcher-test"), "dispatcher")
}

// BrokenDispatcher is a dispatcher whose every send fails, the way an SQS
// outage would: its sender knows no queue.
func (w *World) BrokenDispatcher() *dispatch.Dispatcher {
	f := w.Function("dispatcher-test")
	f.Stage.RequestQueues = nil
	return compose.Dispatcher(f, "dispatcher")
}

// Scheduler returns a Scheduler instance with the given id; tweaks adjust
// its configuration.
func (w *World) Scheduler(id string, tweaks ...func(*scheduler.Config)) *scheduler.Service {
	return compose.Scheduler(w.Function(id), tweaks...)
}

// Supervisor returns a Supervisor; tweaks adjust its configuration.
func (w *World) Supervisor(tweaks ...func(*supervisor.Config)) *supervisor.Service {
	return compose.Supervisor(w.Function("supervisor-test"), tweaks...)
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

// Records returns an order and all its records: the workflow's steps, then
// any undo records.
func (w *World) Records(t testing.TB, orderID string) (order.Order, []order.StepState) {
	t.Helper()
	o, steps, err := w.Store.GetOrder(context.Background(), orderID)
	if err != nil {
		t.Fatalf("get order: %v", err)
	}
	return o, steps
}

// States lists each record's step and state, undo records marked:
// "charge-payment:Processed", "undo charge-payment:Processing".
func States(steps []order.StepState) []string {
	var out []string
	for _, st := range steps {
		name := st.Step
		if st.Undo {
			name = "undo " + name
		}
		out = append(out, name+":"+string(st.ProcessState))
	}
	return out
}

// StreamEvent is the stream record Lambda would deliver for the order's
// current item.
func (w *World) StreamEvent(t testing.TB, orderID string) events.DynamoDBEvent {
	t.Helper()
	out, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.Stack.Catalog.Orders.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: orderID}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("read order %s for its stream record: %v", orderID, err)
	}
	return events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{
		EventName: "MODIFY", EventSource: "aws:dynamodb", EventID: "ev-" + orderID,
		Change: events.DynamoDBStreamRecord{
			Keys:           map[string]events.DynamoDBAttributeValue{resources.AttrOrderID: events.NewStringAttribute(orderID)},
			NewImage:       StreamImage(out.Item),
			SequenceNumber: strconv.FormatInt(time.Now().UnixNano(), 10),
		},
	}}}
}

// StreamImage converts an item to the form Lambda's stream events carry.
func StreamImage(item map[string]types.AttributeValue) map[string]events.DynamoDBAttributeValue {
	image := make(map[string]events.DynamoDBAttributeValue, len(item))
	for k, v := range item {
		image[k] = streamValue(v)
	}
	return image
}

func streamValue(v types.AttributeValue) events.DynamoDBAttributeValue {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value)
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value)
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value)
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value)
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute()
	case *types.AttributeValueMemberL:
		list := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, e := range v.Value {
			list[i] = streamValue(e)
		}
		return events.NewListAttribute(list)
	case *types.AttributeValueMemberM:
		return events.NewMapAttribute(StreamImage(v.Value))
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value)
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value)
	}
	return events.NewNullAttribute()
}

// Requests drains an agent's request queue and returns the distinct
// requests that were there. SQS delivers at least once, and the SDK resends
// a send whose answer was lost (a busy emulator drops connections), so the
// same body can be queued twice; the engine's decisions are what tests
// count, so a second copy of a body is logged and left out.
func (w *World) Requests(t testing.TB, agent string) []order.StepRequest {
	t.Helper()
	var reqs []order.StepRequest
	seen := map[string]bool{}
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
			body := aws.ToString(m.Body)
			var r order.StepRequest
			if err := json.Unmarshal([]byte(body), &r); err != nil {
				t.Fatalf("request is not JSON: %v", err)
			}
			if seen[body] {
				t.Logf("a second copy of request %s: the SDK resent a send whose answer the emulator lost", Describe(r))
			} else {
				seen[body] = true
				reqs = append(reqs, r)
			}
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
