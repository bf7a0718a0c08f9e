package supervisor_test

import (
	"context"
	"encoding/json"
	"slices"
	"testing"
	"time"

	"orderly/internal/actor/control"
	"orderly/internal/actor/supervisor"
	"orderly/internal/definition"
	"orderly/internal/expr"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// timed is the World's shipped workflow with a timer of d at index at,
// which the World then runs.
func timed(t *testing.T, w *testenv.World, at int, d time.Duration) order.Workflow {
	t.Helper()
	wf := w.Workflow
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), at, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: d}})
	w.Run(t, wf)
	return wf
}

// succeed applies the success of the step's attempt as its agent's reply.
func succeed(t *testing.T, w *testenv.World, id, step string, attempt int) {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(
		order.StepReply{OrderID: id, Step: step, Attempt: attempt, Outcome: order.OutcomeSucceeded, Reference: "ref-" + step}))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
}

// noRequests fails when any agent's queue holds a request.
func noRequests(t *testing.T, w *testenv.World, when string) {
	t.Helper()
	for _, agent := range w.Workflow.Agents() {
		if reqs := w.Requests(t, agent); len(reqs) > 0 {
			t.Errorf("%s: %d requests to %s, want none: a waiting order sends nothing", when, len(reqs), agent)
		}
	}
}

// A timer holds an order, with nothing running, until its time; then the
// Supervisor ends the wait, the next step is claimed through the stream,
// and the order runs to its end. A Supervisor that finds the wait ended
// already changes nothing.
func TestATimerHoldsTheOrderUntilItsTimeThenItRunsOn(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	wf := timed(t, w, 1, time.Hour)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	succeed(t, w, id, first, 1)
	o, steps := w.Records(t, id)
	wait := steps[1]
	if o.Status != order.StatusWaiting || wait.ProcessState != order.Waiting || wait.Attempt != 1 || wait.LockedBy != "" ||
		!wait.CompleteBy.Equal(w.Clock.Now().Truncate(time.Millisecond).Add(time.Hour)) || wait.DueAt != wait.CompleteBy || !wait.Since.Equal(w.Clock.Now().Truncate(time.Millisecond)) {
		t.Fatalf("after the first step: %s %+v, want Waiting for an hour from now, in the due index at its end", o.Status, wait)
	}
	noRequests(t, w, "while waiting")

	w.Clock.Advance(59 * time.Minute)
	if r := run(t, w); r != (supervisor.Report{}) {
		t.Errorf("inside the wait: report %+v, want nothing looked at", r)
	}
	w.Clock.Advance(time.Minute + timing.SkewGrace + time.Second)
	if r := run(t, w); r.WaitsEnded != 1 || r.Examined != 1 {
		t.Fatalf("at its time: report %+v, want the wait ended", r)
	}
	if r := run(t, w); r.WaitsEnded != 0 {
		t.Errorf("again: report %+v, want nothing ended twice", r)
	}
	o, steps = w.Records(t, id)
	if o.Status != order.StatusProcessing || steps[1].ProcessState != order.Processed || steps[2].ProcessState != order.Pending {
		t.Fatalf("after the wait: %s %s, want Processing, the timer Processed, the next step Pending", o.Status, testenv.Describe(testenv.States(steps)))
	}
	announce(t, w, id)
	for _, d := range wf.Steps[2:] {
		reqs := w.Requests(t, d.Agent)
		if len(reqs) != 1 || reqs[0].Step != d.Name {
			t.Fatalf("requests to %s: %+v, want one for %s", d.Agent, reqs, d.Name)
		}
		succeed(t, w, id, d.Name, reqs[0].Attempt)
	}
	if o, _ = w.Records(t, id); o.Status != order.StatusProcessed {
		t.Errorf("at the end: %s, want Processed", o.Status)
	}
}

// An order whose first step waits starts Waiting, and its submission
// sends no request.
func TestAnOrderCanStartWithATimer(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	timed(t, w, 0, 10*time.Minute)
	id := w.Submit(t, someOrder)
	o, steps := w.Records(t, id)
	if o.Status != order.StatusWaiting || steps[0].ProcessState != order.Waiting || steps[0].Step != "cool-off" {
		t.Fatalf("submitted: %s %s, want Waiting in the timer", o.Status, testenv.Describe(testenv.States(steps)))
	}
	noRequests(t, w, "after the submission")
	w.Clock.Advance(10*time.Minute + timing.SkewGrace + time.Second)
	if r := run(t, w); r.WaitsEnded != 1 {
		t.Fatalf("report %+v, want the wait ended", r)
	}
	announce(t, w, id)
	if reqs := w.Requests(t, ordertest.AgentInventory); len(reqs) != 1 || reqs[0].Step != first {
		t.Errorf("after the wait: requests %+v, want the first service step's", reqs)
	}
}

// A client's cancel stops a wait at once: the timer ends Cancelled, the
// work done before it is undone in reverse, and the Supervisor, at the
// timer's old time, has nothing to end.
func TestACancelStopsAWaitAtOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	timed(t, w, 2, time.Hour)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	succeed(t, w, id, first, 1)
	payment := w.Requests(t, ordertest.AgentPayment)
	if len(payment) != 1 {
		t.Fatalf("requests to payment: %+v, want one", payment)
	}
	succeed(t, w, id, ordertest.StepChargePayment, payment[0].Attempt)
	if o, _ := w.Records(t, id); o.Status != order.StatusWaiting {
		t.Fatalf("before the cancel: %s, want Waiting", o.Status)
	}
	o, err := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now).Cancel(context.Background(), order.Principal{ID: testenv.Caller}, id)
	if err != nil {
		t.Fatal(err)
	}
	_, steps := w.Records(t, id)
	if o.Status != order.StatusCancelling || steps[2].ProcessState != order.Cancelled || len(steps) != 6 ||
		steps[4].Step != ordertest.StepChargePayment || steps[5].Step != first || steps[4].ProcessState != order.Pending {
		t.Fatalf("after the cancel: %s %s, want Cancelling, the timer Cancelled, the payment then the stock undone", o.Status, testenv.Describe(testenv.States(steps)))
	}
	w.Clock.Advance(time.Hour + timing.SkewGrace + time.Second)
	takeRequests(t, w)
	if r := run(t, w); r.WaitsEnded != 0 {
		t.Errorf("at the timer's old time: report %+v, want no wait ended", r)
	}
}

// A timer until a time from an earlier step's result waits until then,
// bounded by its max; one whose time the result lacks waits the max.
func TestATimerWaitsUntilATimeTheOrderGives(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	env, err := expr.NewEnv(expr.Schemas{Results: map[string]json.RawMessage{first: nil}})
	if err != nil {
		t.Fatal(err)
	}
	prg, err := env.Compile(`timestamp(results['`+first+`'].heldUntil)`, expr.Timestamp)
	if err != nil {
		t.Fatal(err)
	}
	wf := w.Workflow
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), 1, order.StepDef{Name: "hold", Wait: &order.Wait{Until: definition.AsExpr(prg), Max: 48 * time.Hour}})
	w.Run(t, wf)
	now := w.Clock.Now().Truncate(time.Millisecond)
	for _, tt := range []struct {
		name, result string
		want         time.Time
	}{
		{"a time in a day", `{"id":"r-1","heldUntil":"` + now.Add(24*time.Hour).Format(time.RFC3339Nano) + `"}`, now.Add(24 * time.Hour)},
		{"past its max", `{"id":"r-1","heldUntil":"` + now.Add(100*time.Hour).Format(time.RFC3339Nano) + `"}`, now.Add(48 * time.Hour)},
		{"already past", `{"id":"r-1","heldUntil":"2020-01-01T00:00:00Z"}`, now},
		{"no time", `{"id":"r-1"}`, now.Add(48 * time.Hour)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := w.Submit(t, someOrder)
			takeRequests(t, w)
			resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(order.StepReply{
				OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "r-1", Result: json.RawMessage(tt.result)}))
			if err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("HandleReplies: %+v, %v", resp, err)
			}
			_, steps := w.Records(t, id)
			if steps[1].ProcessState != order.Waiting || !steps[1].CompleteBy.Equal(tt.want) {
				t.Errorf("hold: %s until %s, want Waiting until %s", steps[1].ProcessState, steps[1].CompleteBy, tt.want)
			}
		})
	}
}

// A step whose condition does not hold for the order is skipped: the
// step before it is completed, and the one after it claimed and
// requested, in one write; a compensation passes it by.
func TestAStepWhoseConditionDoesNotHoldIsSkipped(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	env, err := expr.NewEnv(expr.Schemas{Input: w.Workflow.Input})
	if err != nil {
		t.Fatal(err)
	}
	prg, err := env.Compile(`size(input.lines) > 1`, expr.Bool)
	if err != nil {
		t.Fatal(err)
	}
	wf := w.Workflow
	wf.Steps = slices.Clone(wf.Steps)
	wf.Steps[1].When = definition.AsExpr(prg)
	w.Run(t, wf)
	id := w.Submit(t, someOrder) // one line: no payment
	takeRequests(t, w)
	succeed(t, w, id, first, 1)
	_, steps := w.Records(t, id)
	if steps[1].ProcessState != order.Skipped || steps[2].ProcessState != order.Processing {
		t.Fatalf("after the reservation: %s, want the payment Skipped, shipping Processing", testenv.Describe(testenv.States(steps)))
	}
	reqs := w.Requests(t, wf.Steps[2].Agent)
	if len(reqs) != 1 || len(w.Requests(t, ordertest.AgentPayment)) != 0 {
		t.Fatalf("requests to shipping %+v, want one and none to payment", reqs)
	}
	// Shipping is refused: the reservation is undone, not the payment.
	resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(order.StepReply{OrderID: id, Step: wf.Steps[2].Name,
		Attempt: reqs[0].Attempt, Outcome: order.OutcomeFailed, Reason: "no courier"}))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
	o, steps := w.Records(t, id)
	var undone []string
	for _, r := range steps[len(wf.Steps):] {
		undone = append(undone, r.Step)
	}
	if o.Status != order.StatusCompensating || !slices.Equal(undone, []string{first}) {
		t.Errorf("after the refusal: %s, undo records %v; want Compensating, the reservation's alone", o.Status, undone)
	}
}
