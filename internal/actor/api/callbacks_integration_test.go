package api_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/callbacktoken"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// callingBack is a World whose payment service calls back (within an
// hour, at most two), with the API opening callback tokens sealed by key.
type callingBack struct {
	*testenv.World
	sealer *callbacktoken.Sealer
}

func newCallingBack(t *testing.T) callingBack {
	t.Helper()
	w := testenv.NewWorld(t, timing)
	wf := w.Workflow
	wf.Steps = slices.Clone(wf.Steps)
	wf.Steps[1].Callback = &order.CallbackWait{Timeout: time.Hour, MaxTimeout: 2 * time.Hour}
	w.Run(t, wf)
	sealer, err := callbacktoken.New(bytes.Repeat([]byte{9}, callbacktoken.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	w.API = w.NewAPI(t, func(c *api.Config) { c.CallbackTokens = callbacktoken.Fixed(sealer) })
	return callingBack{w, sealer}
}

// charging is an order whose payment call was made (attempt 1) and, when
// accepted, accepted by its service: it waits for the callback.
func (w callingBack) charging(t *testing.T, accepted bool) string {
	t.Helper()
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	reply := func(r order.StepReply) {
		resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(r))
		if err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("HandleReplies: %+v, %v", resp, err)
		}
	}
	reply(order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
	if accepted {
		reply(order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1, Outcome: order.OutcomeAccepted})
	}
	return id
}

// token is the callback token of the payment's attempt of order id.
func (w callingBack) token(t *testing.T, id string, attempt int) string {
	t.Helper()
	tok, err := w.sealer.Seal(callbacktoken.Claim{OrderID: id, Record: 1, Step: ordertest.StepChargePayment, Attempt: attempt,
		ExpiresAt: w.Clock.Now().Add(3 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	return tok.Reveal()
}

// call posts a callback with the Authorization header auth ("": none).
func (w callingBack) call(t *testing.T, auth, body string) (int, map[string]any) {
	t.Helper()
	headers := map[string]string{"Content-Type": "application/json"}
	if auth != "" {
		headers["Authorization"] = auth
	}
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: http.MethodPost, Path: "/callbacks",
		Body: body, Headers: headers})
	if err != nil {
		t.Fatalf("POST /callbacks: %v", err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	if resp.StatusCode == http.StatusUnauthorized && resp.Headers["WWW-Authenticate"] != "Orderly-Callback" {
		t.Errorf("401 without WWW-Authenticate: Orderly-Callback: %v", resp.Headers)
	}
	return resp.StatusCode, out
}

const charged = `{"outcome":"succeeded","result":{"id":"ch-1","amount":12}}`

// A callback is taken only with its attempt's token, while its step
// waits, with a body and an answer it can read: every other gets a 4xx
// naming what is wrong and writes nothing. A duplicate of the one taken
// answers as it did; another, different, is refused.
func TestACallbackIsTakenOnceWithItsToken(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := newCallingBack(t)
	id := w.charging(t, true)
	o, steps := w.Records(t, id)
	if o.Status != order.StatusWaiting || steps[1].ProcessState != order.Waiting || steps[1].Attempt != 1 {
		t.Fatalf("accepted: %s %s, want the payment Waiting on attempt 1", o.Status, testenv.Describe(testenv.States(steps)))
	}
	good := "Orderly-Callback " + w.token(t, id, 1)
	other, _ := callbacktoken.New(bytes.Repeat([]byte{8}, callbacktoken.MinKeyBytes))
	foreign, _ := other.Seal(callbacktoken.Claim{OrderID: id, Record: 1, Step: ordertest.StepChargePayment, Attempt: 1, ExpiresAt: w.Clock.Now().Add(time.Hour)})
	altered := []byte(good)
	altered[len(altered)-3] ^= 1
	for _, tt := range []struct {
		name, auth, body string
		status           int
		code             string
	}{
		{"no Authorization", "", charged, 401, "invalid_token"},
		{"another scheme", "Bearer " + w.token(t, id, 1), charged, 401, "invalid_token"},
		{"an altered token", string(altered), charged, 401, "invalid_token"},
		{"another stage's token", "Orderly-Callback " + foreign.Reveal(), charged, 401, "invalid_token"},
		{"an attempt that is not the step's", "Orderly-Callback " + w.token(t, id, 2), charged, 409, "invalid_state"},
		{"an unknown outcome", good, `{"outcome":"done"}`, 400, "invalid_request"},
		{"a success without a reference", good, `{"outcome":"succeeded","result":{"amount":12}}`, 400, "invalid_request"},
		{"a reference that is not printable", good, `{"outcome":"succeeded","result":{"id":"ch\u0007"}}`, 400, "invalid_request"},
		{"a token in the body", good, `{"outcome":"working","token":"x"}`, 400, "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := w.Records(t, id)
			if got, out := w.call(t, tt.auth, tt.body); got != tt.status || out["error"] != tt.code {
				t.Errorf("got %d %v, want %d %s", got, out, tt.status, tt.code)
			}
			if after, _ := w.Records(t, id); !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Error("the order changed")
			}
		})
	}

	// Working: the wait moves on by the timeout.
	w.Clock.Advance(10 * time.Minute)
	got, out := w.call(t, good, `{"outcome":"working"}`)
	_, steps = w.Records(t, id)
	if want := w.Clock.Now().Truncate(time.Millisecond).Add(time.Hour); got != 200 || !steps[1].CompleteBy.Equal(want) || out["completeBy"] == nil {
		t.Errorf("working: got %d %v, deadline %s; want 200 and the deadline at %s", got, out, steps[1].CompleteBy, want)
	}
	// Succeeded: the step is done, the next one announced.
	if got, out := w.call(t, good, charged); got != 200 || out["status"] != string(order.StatusProcessing) {
		t.Fatalf("succeeded: got %d %v, want 200 Processing", got, out)
	}
	o, steps = w.Records(t, id)
	if steps[1].ProcessState != order.Processed || steps[1].Reference != "ch-1" || steps[2].ProcessState != order.Pending {
		t.Fatalf("after the callback: %s %s, want the payment Processed with ch-1, shipping Pending", o.Status, testenv.Describe(testenv.States(steps)))
	}
	before := o
	if got, _ := w.call(t, good, `{"outcome":"succeeded","result":{"amount":12, "id":"ch-1"}}`); got != 200 {
		t.Errorf("the same success again: got %d, want 200", got)
	}
	if got, out := w.call(t, good, `{"outcome":"succeeded","result":{"id":"ch-2"}}`); got != 409 {
		t.Errorf("another success: got %d %v, want 409", got, out)
	}
	if got, out := w.call(t, good, `{"outcome":"failed","error":"declined"}`); got != 409 {
		t.Errorf("a failure after the success: got %d %v, want 409", got, out)
	}
	if after, _ := w.Records(t, id); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Error("a second callback changed the order")
	}
}

// A failure callback undoes the steps before it (the service did no
// work); one after the wait ended is too late, and writes nothing; one
// that comes before the agent's reply that the call was accepted is
// taken all the same.
func TestCallbacksThatFailComeLateOrEarly(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := newCallingBack(t)
	failed, late, early := w.charging(t, true), w.charging(t, true), w.charging(t, false)

	if got, out := w.call(t, "Orderly-Callback "+w.token(t, failed, 1), `{"outcome":"failed","error":"card declined"}`); got != 200 {
		t.Fatalf("failed: got %d %v, want 200", got, out)
	}
	o, steps := w.Records(t, failed)
	if o.Status != order.StatusCompensating || steps[1].ProcessState != order.Failed || len(steps) != 4 || steps[3].Step != ordertest.StepReserveInventory ||
		!strings.Contains(o.LastError, "card declined") {
		t.Errorf("after the failure: %s %s %q, want Compensating, the reservation undone, the service's reason", o.Status, testenv.Describe(testenv.States(steps)), o.LastError)
	}

	if got, out := w.call(t, "Orderly-Callback "+w.token(t, early, 1), charged); got != 200 {
		t.Fatalf("early: got %d %v, want 200", got, out)
	}
	if _, steps := w.Records(t, early); steps[1].ProcessState != order.Processed || steps[2].ProcessState != order.Pending {
		t.Errorf("early: %s, want the payment Processed, shipping Pending", testenv.Describe(testenv.States(steps)))
	}

	w.Clock.Advance(time.Hour + time.Second)
	before, _ := w.Records(t, late)
	if got, out := w.call(t, "Orderly-Callback "+w.token(t, late, 1), charged); got != 410 || out["error"] != "too_late" {
		t.Errorf("late: got %d %v, want 410 too_late", got, out)
	}
	if after, _ := w.Records(t, late); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Error("a late callback changed the order")
	}
	// The Supervisor makes the call again, with the same key, a new attempt.
	w.Clock.Advance(timing.SkewGrace)
	if _, err := w.Supervisor().Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, steps := w.Records(t, late); steps[1].ProcessState != order.Pending || steps[1].FailureCount != 1 {
		t.Errorf("after the timeout: %s, want the payment Pending with one failure", testenv.Describe(testenv.States(steps)))
	}
}

// callIAM posts a callback on POST /callbacks/iam, signed (as API Gateway
// names its caller) by caller ("": unsigned), with the token in the
// Orderly-Callback-Token header, once per value of tokens.
func (w callingBack) callIAM(t *testing.T, caller string, tokens []string, body string) (int, map[string]any) {
	t.Helper()
	req := events.APIGatewayProxyRequest{HTTPMethod: http.MethodPost, Path: "/callbacks/iam", Body: body,
		// The SigV4 signature API Gateway checked is the Authorization.
		MultiValueHeaders: map[string][]string{"Content-Type": {"application/json"},
			"Authorization": {"AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/20261128/us-east-1/execute-api/aws4_request, SignedHeaders=host, Signature=00"}},
		RequestContext: testenv.As(caller)}
	if len(tokens) > 0 {
		req.MultiValueHeaders[api.CallbackTokenHeader] = tokens
	}
	resp, err := w.API.Handle(context.Background(), req)
	if err != nil {
		t.Fatalf("POST /callbacks/iam: %v", err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

// A service inside AWS calls back on POST /callbacks/iam, signed with its
// role (API Gateway's IAM authorization), the token in its own header:
// the same callback, taken by the same rules, with the same answers as on
// POST /callbacks; a duplicate answers as the first on either route. A
// request with no caller, or without exactly one token of this stage's
// attempt in that header, is refused and writes nothing.
func TestACallbackOverIAMIsTheSameCallback(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := newCallingBack(t)
	id := w.charging(t, true)
	good := w.token(t, id, 1)
	altered := []byte(good)
	altered[len(altered)-3] ^= 1
	const service = "AROASERVICEROLE000001:payment-worker"
	for _, tt := range []struct {
		name   string
		caller string
		tokens []string
		body   string
		status int
		code   string
	}{
		{"unsigned", "", []string{good}, charged, 403, "forbidden"},
		{"no token header", service, nil, charged, 401, "invalid_token"},
		{"two tokens", service, []string{good, good}, charged, 401, "invalid_token"},
		{"the token with the callback scheme", service, []string{"Orderly-Callback " + good}, charged, 401, "invalid_token"},
		{"an altered token", service, []string{string(altered)}, charged, 401, "invalid_token"},
		{"an attempt that is not the step's", service, []string{w.token(t, id, 2)}, charged, 409, "invalid_state"},
		{"an unknown outcome", service, []string{good}, `{"outcome":"done"}`, 400, "invalid_request"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			before, _ := w.Records(t, id)
			if got, out := w.callIAM(t, tt.caller, tt.tokens, tt.body); got != tt.status || out["error"] != tt.code {
				t.Errorf("got %d %v, want %d %s", got, out, tt.status, tt.code)
			}
			if after, _ := w.Records(t, id); !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Error("the order changed")
			}
		})
	}

	w.Clock.Advance(10 * time.Minute)
	got, out := w.callIAM(t, service, []string{good}, `{"outcome":"working"}`)
	_, steps := w.Records(t, id)
	if want := w.Clock.Now().Truncate(time.Millisecond).Add(time.Hour); got != 200 || !steps[1].CompleteBy.Equal(want) || out["completeBy"] == nil {
		t.Errorf("working: got %d %v, deadline %s; want 200 and the deadline at %s", got, out, steps[1].CompleteBy, want)
	}
	got, first := w.callIAM(t, service, []string{good}, charged)
	if got != 200 || first["status"] != string(order.StatusProcessing) || first["orderId"] != id || first["step"] != ordertest.StepChargePayment {
		t.Fatalf("succeeded: got %d %v, want 200 Processing for the order's payment", got, first)
	}
	o, steps := w.Records(t, id)
	if steps[1].ProcessState != order.Processed || steps[1].Reference != "ch-1" {
		t.Fatalf("after the callback: %s, want the payment Processed with ch-1", testenv.Describe(testenv.States(steps)))
	}
	// The duplicate, on either route, answers as the first; another
	// outcome is refused; nothing is written.
	if got, out := w.callIAM(t, service, []string{good}, charged); got != 200 || out["status"] != first["status"] {
		t.Errorf("the same success again: got %d %v, want 200 as the first", got, out)
	}
	if got, out := w.call(t, "Orderly-Callback "+good, charged); got != 200 || out["status"] != first["status"] {
		t.Errorf("the same success on POST /callbacks: got %d %v, want 200 as the first", got, out)
	}
	if got, out := w.callIAM(t, service, []string{good}, `{"outcome":"failed","error":"declined"}`); got != 409 || out["error"] != "invalid_state" {
		t.Errorf("a failure after the success: got %d %v, want 409 invalid_state", got, out)
	}
	if after, _ := w.Records(t, id); !after.UpdatedAt.Equal(o.UpdatedAt) {
		t.Error("a second callback changed the order")
	}
}
