package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/sqs"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// Account details an AWS error names: the account id and a role's ARN.
const (
	account = "123456789012"
	roleARN = "arn:aws:sts::" + account + ":assumed-role/orderly-prod-scheduler/orderly-prod-scheduler"
)

// denied fails every SQS call the way AWS refuses one the role may not
// make: an AccessDenied naming the role's session and the queue's ARN, as
// the SDK returns it.
func denied(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("access-denied",
		func(context.Context, middleware.InitializeInput, middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.OperationError{ServiceID: "SQS", OperationName: "SendMessage",
				Err: &smithyhttp.ResponseError{Response: &smithyhttp.Response{Response: &http.Response{StatusCode: http.StatusForbidden}},
					Err: &smithy.GenericAPIError{Code: "AccessDenied", Message: "User: " + roleARN +
						" is not authorized to perform: sqs:sendmessage on resource: arn:aws:sqs:us-east-1:" + account + ":orderly-prod-payment-requests"}}}
		}), middleware.Before)
}

// rawItem is the order's item as stored, every attribute.
func rawItem(t *testing.T, w *testenv.World, id string) string {
	t.Helper()
	out, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.Stack.Catalog.Orders.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil || out.Item == nil {
		t.Fatalf("read order %s: %v", id, err)
	}
	data, err := json.Marshal(out.Item)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// An AWS error is the engine's problem and may name the account and its
// roles: what clients read says the request was not sent, and the error
// itself goes to the logs only.
func TestAnAWSErrorNeverReachesWhatClientsRead(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	o := watch(t, w, id)
	oneRequest(t, w, ordertest.AgentInventory)

	refusing := awssqs.NewFromConfig(testenv.AWS(t), func(o *awssqs.Options) { o.APIOptions = append(o.APIOptions, denied) })
	var logs strings.Builder
	log := slog.New(slog.NewJSONHandler(&logs, nil))
	broken := w.Scheduler("s1", func(c *scheduler.Config) {
		c.Dispatcher = dispatch.New(sqs.NewRequests(refusing, w.Stack.RequestQueueURLs()), w.Store, w.Workflow.ClaimWithin, w.Clock.Now, log, metrics.Discard())
	})
	mustApplyReplies(t, broken, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
	o.record(t)

	next := w.Step(t, id, ordertest.StepChargePayment)
	if next.ProcessState != order.Pending || !strings.Contains(next.LastError, "request not sent") {
		t.Fatalf("got payment %s, last error %q; want it released to Pending with the reason", next.ProcessState, next.LastError)
	}
	if !strings.Contains(logs.String(), account) {
		t.Errorf("the logs do not carry the AWS error, so nothing was refused:\n%s", logs.String())
	}
	shown := o.shown(t)
	shown["the order's item"] = rawItem(t, w, id)
	for where, body := range shown {
		if strings.Contains(body, account) || strings.Contains(body, "arn:aws") || strings.Contains(body, "AccessDenied") {
			t.Errorf("%s shows the AWS error: %s", where, body)
		}
	}
}

// replies is an agent.Replier that keeps what it is given.
type replies struct {
	mu   sync.Mutex
	sent []order.StepReply
}

func (r *replies) SendReply(_ context.Context, rep order.StepReply) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.sent = append(r.sent, rep)
	return nil
}

// A remote service's own words are kept, bounded: a refusal with an error
// body of 64 KiB (the most an agent reads) is stored cut to a few hundred
// bytes, in the step's last error and in the order's; so is the reason of
// a reply from an agent that did not bound it.
func TestARemoteServicesLongErrorIsStoredCut(t *testing.T) {
	// The body is just under the 64 KiB an agent reads, so it is read
	// whole: the service's words are 64 KiB less the JSON around them.
	long := strings.Repeat("card declined ", (64<<10-16)/14)
	service := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, _ *http.Request) {
		rw.Header().Set("Content-Type", "application/json")
		rw.WriteHeader(http.StatusPaymentRequired)
		json.NewEncoder(rw).Encode(map[string]string{"error": long})
	}))
	t.Cleanup(service.Close)

	tests := []struct {
		name  string
		reply func(t *testing.T, req order.StepRequest) order.StepReply
		// want is the start of the reason stored.
		want string
	}{
		{"the agent's reply", func(t *testing.T, req order.StepRequest) order.StepReply {
			var sent replies
			a := agent.New(agent.Config{Name: ordertest.AgentPayment, Remote: remote.NewClient(service.URL, service.Client(), shipped), Replies: &sent,
				Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
			req.CompleteBy = time.Now().Add(10 * time.Second) // the agent's clock is real
			if err := a.Process(context.Background(), req); err != nil || len(sent.sent) != 1 {
				t.Fatalf("agent: %v, replies %+v; want one", err, sent.sent)
			}
			return sent.sent[0]
		}, "remote service payment refused the request: card declined card declined"},
		{"a reply that carries the whole body", func(t *testing.T, req order.StepRequest) order.StepReply {
			return order.StepReply{OrderID: req.OrderID, Version: req.Version, Step: req.Step, Attempt: req.Attempt, Outcome: order.OutcomeFailed,
				Reason: fmt.Sprintf("payment: POST /payment/charges: status 402: %s: permanent fault", long)}
		}, "payment: POST /payment/charges: status 402: card declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testenv.NewWorld(t, timing)
			s := w.Scheduler("s1")
			id := w.Submit(t, someOrder)
			oneRequest(t, w, ordertest.AgentInventory)
			mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
			mustApplyReplies(t, s, tt.reply(t, oneRequest(t, w, ordertest.AgentPayment)))

			o, steps := w.Records(t, id)
			pay := steps[1]
			if pay.ProcessState != order.Failed || o.Status != order.StatusCompensating {
				t.Fatalf("got %s, payment %s; want Compensating, payment Failed", o.Status, pay.ProcessState)
			}
			for what, reason := range map[string]string{"the step's last error": pay.LastError, "the order's last error": o.LastError} {
				if len(reason) > 600 || !utf8.ValidString(reason) || !strings.Contains(reason, tt.want) {
					t.Errorf("%s is %d bytes: %.300q; want at most 600 bytes of UTF-8 with %q", what, len(reason), reason, tt.want)
				}
			}
		})
	}
}
