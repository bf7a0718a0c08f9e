package agent_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/callbacktoken"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// callbackTiming gives each attempt a minute: the agent's window runs on
// the World's clock, which stands still while the test sets up.
var callbackTiming = order.Timing{Allowance: time.Minute, MaxAllowance: 4 * time.Minute, FailureThreshold: 2, ClaimWithin: 5 * time.Second}

// takenCall is the request a fake service took.
type takenCall struct {
	method, path, key string
	body              []byte
}

// The agent of a step whose service calls back sends the stage's callback
// URL with a token the stage's key opens to the attempt's claim; the
// service's 202 is replied accepted, and the Scheduler writes the record
// Waiting for the callback on the same attempt, until the step's timeout,
// the order Waiting.
func TestAnAcceptedCallWaitsForItsCallback(t *testing.T) {
	w := testenv.NewWorld(t, callbackTiming)
	wf := w.Workflow
	wf.Steps = slices.Clone(wf.Steps)
	index, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[index].Callback = &order.CallbackWait{Timeout: time.Hour}
	w.Run(t, wf)
	ctx := context.Background()

	var mu sync.Mutex
	var calls []takenCall
	service := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, takenCall{r.Method, r.URL.Path, r.Header.Get("Idempotency-Key"), body})
		mu.Unlock()
		rw.WriteHeader(http.StatusAccepted)
	}))
	defer service.Close()

	id := w.Submit(t, ordertest.Submission{CustomerID: "c-callback", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	first := w.Requests(t, ordertest.AgentInventory)
	if len(first) != 1 {
		t.Fatalf("requests to inventory: %+v, want the first step's", first)
	}
	if resp, err := w.Scheduler("s1").HandleReplies(ctx, testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first[0].Step,
		Attempt: first[0].Attempt, Outcome: order.OutcomeSucceeded, Reference: "res-1"})); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
	reqs := w.Requests(t, ordertest.AgentPayment)
	if len(reqs) != 1 || reqs[0].Step != ordertest.StepChargePayment {
		t.Fatalf("requests to payment: %+v, want charge-payment's", reqs)
	}
	req := reqs[0]
	if err := w.Agent(ordertest.AgentPayment, service.URL).Process(ctx, req); err != nil {
		t.Fatalf("Process: %v", err)
	}

	// The call: the step's, with the callback.
	mu.Lock()
	defer mu.Unlock()
	def := wf.Steps[index]
	if len(calls) != 1 || calls[0].method != def.Call.Method || calls[0].path != def.Call.Path || calls[0].key != req.IdempotencyKey {
		t.Fatalf("calls %+v, want one %s %s with the step's key", calls, def.Call.Method, def.Call.Path)
	}
	var body struct {
		OrderID  string `json:"orderId"`
		Callback struct {
			URL, Token string
			ExpiresAt  time.Time
		}
	}
	if err := json.Unmarshal(calls[0].body, &body); err != nil {
		t.Fatalf("body %s: %v", calls[0].body, err)
	}
	expires := w.Clock.Now().Add(time.Hour + callbackTiming.Allowance).Truncate(time.Second)
	if body.OrderID != id || body.Callback.URL != testenv.CallbackURL || !body.Callback.ExpiresAt.Equal(expires) {
		t.Errorf("body %s, want the order, the callback URL %s, and expiry %s", calls[0].body, testenv.CallbackURL, expires)
	}
	key, err := w.Clients.SecretsManager.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(w.Stack.Catalog.CallbackSecret)})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := callbacktoken.New([]byte(aws.ToString(key.SecretString)))
	if err != nil {
		t.Fatal(err)
	}
	claim, err := sealer.Open(body.Callback.Token, w.Clock.Now())
	want := callbacktoken.Claim{OrderID: id, Record: index, Step: def.Name, Attempt: req.Attempt, ExpiresAt: expires}
	if err != nil || claim != want {
		t.Errorf("the token opens with the stage's key to %+v, %v; want %+v", claim, err, want)
	}

	// The reply: accepted, and applied.
	replies := responses(t, w)
	if len(replies) != 1 {
		t.Fatalf("replies %v, want one", replies)
	}
	rep, err := order.DecodeReply([]byte(replies[0]))
	if err != nil || rep.Outcome != order.OutcomeAccepted || rep.Attempt != req.Attempt || rep.Reference != "" {
		t.Fatalf("reply %+v, %v; want accepted on attempt %d", rep, err, req.Attempt)
	}
	if resp, err := w.Scheduler("s1").HandleReplies(ctx, testenv.ReplyEvent(replies[0])); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
	o, steps := w.Records(t, id)
	st := steps[index]
	now := w.Clock.Now().Truncate(time.Millisecond)
	if o.Status != order.StatusWaiting || st.ProcessState != order.Waiting || st.Attempt != req.Attempt || st.LockedBy != "" ||
		!st.CompleteBy.Equal(now.Add(time.Hour)) || !st.DueAt.Equal(st.CompleteBy) {
		t.Errorf("after the reply: order %s, step %+v; want both Waiting on attempt %d until %s", o.Status, st, req.Attempt, now.Add(time.Hour))
	}
	for _, agent := range wf.Agents() {
		if reqs := w.Requests(t, agent); len(reqs) > 0 {
			t.Errorf("requests to %s while waiting: %+v, want none", agent, reqs)
		}
	}
}

// responses drains the World's response queue and returns its messages.
func responses(t *testing.T, w *testenv.World) []string {
	t.Helper()
	var out []string
	for {
		got, err := w.Clients.SQS.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(w.Stack.ResponseQueue.URL), MaxNumberOfMessages: 10})
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Messages) == 0 {
			return out
		}
		for _, m := range got.Messages {
			out = append(out, aws.ToString(m.Body))
			w.Clients.SQS.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(w.Stack.ResponseQueue.URL), ReceiptHandle: m.ReceiptHandle})
		}
	}
}
