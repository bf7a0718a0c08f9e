package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/definition"
	"orderly/internal/expr"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// reviewed is the World's shipped workflow with a manual review after
// its first step: it waits up to an hour for the event "review", whose
// data says approve or reject.
func reviewed(t *testing.T, w *testenv.World) order.Workflow {
	t.Helper()
	wf := w.Workflow
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), 1, order.StepDef{Name: "manual-review", Wait: &order.Wait{
		Event: "review", Timeout: time.Hour,
		Schema: json.RawMessage(`{"type":"object","required":["decision"],"additionalProperties":false,` +
			`"properties":{"decision":{"enum":["approve","reject"]},"note":{"type":"string","maxLength":200}}}`),
	}})
	w.Run(t, wf)
	return wf
}

// sendEvent posts an event to the order as caller, on the operator's
// route when operator.
func sendEvent(t *testing.T, w *testenv.World, caller, id, name, body string, operator bool) (int, map[string]any) {
	t.Helper()
	path := "/orders/" + id + "/events/" + name
	if operator {
		path = "/ops" + path
	}
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Path: path, Body: body,
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(caller),
	})
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

// succeedFirst applies the success of the order's first step, as its
// agent's reply.
func succeedFirst(t *testing.T, w *testenv.World, id string) {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(order.StepReply{
		OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"}))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
}

// An event reaches the step that waits for it only while it waits, from
// the order's client or an operator, with data its schema takes: every
// other send gets a 4xx naming what is wrong, and writes nothing. The
// same event sent again answers as the first did.
func TestAnEventIsTakenOnlyWhileItsStepWaits(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	reviewed(t, w)
	sub := ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}
	id := w.Submit(t, sub)
	approve := `{"decision":"approve","note":"looks fine"}`
	unchanged := func(t *testing.T, before order.Order) {
		t.Helper()
		if after, _ := w.Records(t, id); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("the order changed: %s at %s, was %s at %s", after.Status, after.UpdatedAt, before.Status, before.UpdatedAt)
		}
	}
	refused := func(t *testing.T, caller, name, body string, operator bool, status int, code, says string) {
		t.Helper()
		before, _ := w.Records(t, id)
		got, out := sendEvent(t, w, caller, id, name, body, operator)
		// What is wrong is in the message, or in the fields named.
		said, _ := json.Marshal([]any{out["message"], out["fields"]})
		if got != status || out["error"] != code || !strings.Contains(string(said), says) {
			t.Errorf("%s %s: got %d %v, want %d %s saying %q", name, body, got, out, status, code, says)
		}
		unchanged(t, before)
	}

	// Before the order reaches the review.
	refused(t, testenv.Caller, "review", approve, false, 409, "invalid_state", "not waiting for event review yet")

	succeedFirst(t, w, id)
	o, steps := w.Records(t, id)
	if o.Status != order.StatusWaiting || steps[1].ProcessState != order.Waiting {
		t.Fatalf("after the first step: %s %s, want Waiting in the review", o.Status, testenv.Describe(testenv.States(steps)))
	}
	for _, tt := range []struct {
		name, caller, event, body string
		operator                  bool
		status                    int
		code, says                string
	}{
		{"data its schema refuses", testenv.Caller, "review", `{"decision":"maybe"}`, false, 400, "invalid_request", "decision"},
		{"a field its schema does not have", testenv.Caller, "review", `{"decision":"approve","by":"me"}`, false, 400, "invalid_request", "by"},
		{"data that is not an object", testenv.Caller, "review", `["approve"]`, false, 400, "invalid_request", "JSON object"},
		{"no data", testenv.Caller, "review", ``, false, 400, "invalid_request", "JSON object"},
		{"an event the workflow has not", testenv.Caller, "approval", approve, false, 400, "invalid_request", `approval`},
		{"a name no event may have", testenv.Caller, "Review!", approve, false, 400, "invalid_request", "event"},
		{"another caller's order", "AIDAOTHERCALLER0000001", "review", approve, false, 404, "not_found", "no order"},
		{"data over what the step keeps", testenv.Caller, "review", `{"decision":"approve","note":"` + strings.Repeat("x", 5<<10) + `"}`, false, 413, "too_large", "keeps at most"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			refused(t, tt.caller, tt.event, tt.body, tt.operator, tt.status, tt.code, tt.says)
		})
	}

	if got, out := sendEvent(t, w, testenv.Caller, id, "review", approve, false); got != http.StatusAccepted || out["status"] != string(order.StatusProcessing) {
		t.Fatalf("the review: got %d %v, want 202 Processing", got, out)
	}
	o, steps = w.Records(t, id)
	if steps[1].ProcessState != order.Processed || !order.SameJSON(steps[1].Result, json.RawMessage(approve)) ||
		steps[2].ProcessState != order.Pending || o.Results["manual-review"] == nil {
		t.Fatalf("after the review: %s %s, result %s; want the review Processed with its data, the next step Pending", o.Status, testenv.Describe(testenv.States(steps)), steps[1].Result)
	}
	// Sent again (a lost answer): the same answer, nothing written.
	again := `{"note":"looks fine","decision":"approve"}`
	before, _ := w.Records(t, id)
	if got, out := sendEvent(t, w, testenv.Caller, id, "review", again, false); got != http.StatusAccepted || out["orderId"] != id {
		t.Errorf("the same review again: got %d %v, want 202 for the order", got, out)
	}
	unchanged(t, before)
	refused(t, testenv.Caller, "review", `{"decision":"reject"}`, false, 409, "invalid_state", "already, with other data")
}

// A review whose data its rejectWhen says is a rejection fails the step:
// the data is kept, the steps before it are undone, and the same
// rejection again answers as the first did.
func TestARejectedEventFailsItsStep(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	wf := reviewed(t, w)
	env, err := expr.NewEnv(expr.Schemas{Event: wf.Steps[1].Wait.Schema})
	if err != nil {
		t.Fatal(err)
	}
	prg, err := env.Compile(`event.decision == 'reject'`, expr.Bool)
	if err != nil {
		t.Fatal(err)
	}
	wf.Steps = slices.Clone(wf.Steps)
	review := *wf.Steps[1].Wait
	review.RejectWhen = definition.AsExpr(prg)
	wf.Steps[1].Wait = &review
	w.Run(t, wf)
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	succeedFirst(t, w, id)
	reject := `{"decision":"reject","note":"stolen card"}`
	if got, out := sendEvent(t, w, testenv.Caller, id, "review", reject, false); got != http.StatusAccepted || out["status"] != string(order.StatusCompensating) {
		t.Fatalf("the rejection: got %d %v, want 202 Compensating", got, out)
	}
	o, steps := w.Records(t, id)
	if steps[1].ProcessState != order.Failed || !order.SameJSON(steps[1].Result, json.RawMessage(reject)) || len(steps) != 5 ||
		steps[4].Step != ordertest.StepReserveInventory || !strings.Contains(o.LastError, "rejected") {
		t.Errorf("after the rejection: %s %s %q, want the review Failed with its data, the reservation undone", o.Status, testenv.Describe(testenv.States(steps)), o.LastError)
	}
	if got, _ := sendEvent(t, w, testenv.Caller, id, "review", reject, false); got != http.StatusAccepted {
		t.Errorf("the same rejection again: got %d, want 202", got)
	}
	if got, _ := sendEvent(t, w, testenv.Caller, id, "review", `{"decision":"approve"}`, false); got != http.StatusConflict {
		t.Errorf("an approval after the rejection: got %d, want 409", got)
	}
}

// An event after its wait ended gets 410 and writes nothing, before and
// after the Supervisor fails the step; an operator's event reaches any
// caller's order.
func TestAnEventAfterItsWaitIsTooLate(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	reviewed(t, w)
	sub := ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}
	late, byOperator := w.Submit(t, sub), w.Submit(t, sub)
	succeedFirst(t, w, late)
	succeedFirst(t, w, byOperator)
	if got, out := sendEvent(t, w, "AROAOPERATOR000000001:alice", byOperator, "review", `{"decision":"approve"}`, true); got != http.StatusAccepted {
		t.Errorf("an operator's review: got %d %v, want 202", got, out)
	}
	w.Clock.Advance(time.Hour + time.Millisecond)
	for _, when := range []string{"before the Supervisor", "after the Supervisor"} {
		before, _ := w.Records(t, late)
		got, out := sendEvent(t, w, testenv.Caller, late, "review", `{"decision":"approve"}`, false)
		if got != http.StatusGone || out["error"] != "too_late" {
			t.Errorf("%s: got %d %v, want 410 too_late", when, got, out)
		}
		if after, _ := w.Records(t, late); !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("%s: the order changed", when)
		}
		w.Clock.Advance(timing.SkewGrace + time.Second)
		if _, err := w.Supervisor().Run(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	// The review did no work: the stock reserved before it is released.
	o, steps := w.Records(t, late)
	if o.Status != order.StatusCompensating || steps[1].ProcessState != order.Failed || len(steps) != 5 || steps[4].Step != ordertest.StepReserveInventory {
		t.Errorf("after the timeout: %s %s, want Compensating, the review Failed, the reservation undone", o.Status, testenv.Describe(testenv.States(steps)))
	}
	if !strings.Contains(o.LastError, `no event "review"`) {
		t.Errorf("last error %q, want it to say which event did not arrive", o.LastError)
	}
}
