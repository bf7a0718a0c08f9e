package scheduler_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}

// dispatchReleasesBeforeBackoff mirrors dispatch.ReleasesBeforeBackoff.
const dispatchReleasesBeforeBackoff = dispatch.ReleasesBeforeBackoff

var someOrder = ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}}

// timeOut lets the first step's attempt expire and has the Supervisor
// reset it to Pending, waiting for a Scheduler's claim.
func timeOut(t *testing.T, w *testenv.World, id string) {
	t.Helper()
	w.Requests(t, ordertest.AgentInventory) // the submission's request is lost
	st := w.Step(t, id, ordertest.StepReserveInventory)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
		t.Fatalf("supervisor: report %+v, error %v; want one retry", r, err)
	}
	if st := w.Step(t, id, ordertest.StepReserveInventory); st.ProcessState != order.Pending || st.LockedBy != "" {
		t.Fatalf("after the retry: got %s locked by %q, want Pending and unlocked", st.ProcessState, st.LockedBy)
	}
}

func TestRacingSchedulersClaimOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	timeOut(t, w, id)
	ev := w.StreamEvent(t, id)

	const racers = 8
	ids := make([]string, racers)
	var wg sync.WaitGroup
	for i := range racers {
		ids[i] = fmt.Sprintf("scheduler-%d", i)
		s := w.Scheduler(ids[i])
		wg.Go(func() {
			resp, err := s.HandleStream(context.Background(), ev)
			if err != nil || len(resp.BatchItemFailures) > 0 {
				t.Errorf("racer %d: response %+v, error %v; want a lost race to be a normal outcome", i, resp, err)
			}
		})
	}
	wg.Wait()

	reqs := w.Requests(t, ordertest.AgentInventory)
	if len(reqs) != 1 {
		t.Fatalf("got %d requests sent, want exactly 1: %s", len(reqs), testenv.Describe(reqs))
	}
	st := w.Step(t, id, ordertest.StepReserveInventory)
	if st.ProcessState != order.Processing || st.Attempt != 2 || !slices.Contains(ids, st.LockedBy) {
		t.Errorf("got step %s attempt %d locked by %q, want Processing attempt 2 locked by one racer", st.ProcessState, st.Attempt, st.LockedBy)
	}
	// After one timeout the allowance doubles.
	want := w.Clock.Now().Add(2 * timing.Allowance).Truncate(time.Millisecond)
	if !st.CompleteBy.Equal(want) || !reqs[0].CompleteBy.Equal(st.CompleteBy) || !st.DueAt.Equal(st.CompleteBy) {
		t.Errorf("got CompleteBy %s in store, %s in request, DueAt %s; want %s for all", st.CompleteBy, reqs[0].CompleteBy, st.DueAt, want)
	}
	if o, _ := w.Records(t, id); reqs[0].IdempotencyKey != o.RemoteKey(ordertest.StepReserveInventory) || reqs[0].Attempt != 2 {
		t.Errorf("got request %+v, want stable idempotency key and attempt 2", reqs[0])
	}
	var input ordertest.Submission
	if err := json.Unmarshal(reqs[0].Input, &input); err != nil || input.CustomerID != someOrder.CustomerID || !slices.Equal(input.Lines, someOrder.Lines) {
		t.Errorf("got request %+v, want the order's customer and lines, read from the stream image", reqs[0])
	}
}

func TestSuccessClaimsTheNextStepInTheSameWrite(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	first := w.Requests(t, ordertest.AgentInventory)
	if len(first) != 1 || first[0].Attempt != 1 {
		t.Fatalf("got first requests %s, want the submission's one on attempt 1", testenv.Describe(first))
	}
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1,
		Outcome: order.OutcomeSucceeded, Reference: "res-1"})

	done, next := w.Step(t, id, ordertest.StepReserveInventory), w.Step(t, id, ordertest.StepChargePayment)
	if done.ProcessState != order.Processed || done.Reference != "res-1" || done.LockedBy != "" {
		t.Errorf("got done step %s ref %q locked by %q, want Processed with the reference, unlocked", done.ProcessState, done.Reference, done.LockedBy)
	}
	if next.ProcessState != order.Processing || next.Attempt != 1 || next.LockedBy != "s1" {
		t.Errorf("got next step %s attempt %d locked by %q, want Processing attempt 1 locked by s1", next.ProcessState, next.Attempt, next.LockedBy)
	}
	reqs := w.Requests(t, ordertest.AgentPayment)
	if len(reqs) != 1 || reqs[0].Attempt != 1 || !reqs[0].CompleteBy.Equal(next.CompleteBy) {
		t.Fatalf("got payment requests %s, want one on attempt 1 until %s", testenv.Describe(reqs), next.CompleteBy)
	}
	// The completion's stream record waits for no claim: a Scheduler
	// given it does nothing.
	mustHandleStream(t, w.Scheduler("s2"), w.StreamEvent(t, id))
	if again := w.Requests(t, ordertest.AgentPayment); len(again) != 0 {
		t.Errorf("a completion's stream record sent %d more requests, want none", len(again))
	}
}

func TestStaleAndDuplicateRepliesAreIgnored(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	step := ordertest.StepReserveInventory

	// Attempt 1 times out; the Supervisor resets it; attempt 2 is claimed.
	timeOut(t, w, id)
	mustHandleStream(t, s, w.StreamEvent(t, id))
	if st := w.Step(t, id, step); st.Attempt != 2 || st.ProcessState != order.Processing {
		t.Fatalf("got attempt %d %s, want attempt 2 Processing", st.Attempt, st.ProcessState)
	}
	w.Requests(t, ordertest.AgentInventory)

	reply := func(attempt int) order.StepReply {
		return order.StepReply{OrderID: id, Step: step, Attempt: attempt, Outcome: order.OutcomeSucceeded, Reference: fmt.Sprint("ref-", attempt)}
	}
	// The late reply of attempt 1 must not complete attempt 2.
	mustApplyReplies(t, s, reply(1))
	if st := w.Step(t, id, step); st.ProcessState != order.Processing || st.Attempt != 2 {
		t.Fatalf("after stale reply: got %s attempt %d, want still Processing attempt 2", st.ProcessState, st.Attempt)
	}
	if next := w.Step(t, id, ordertest.StepChargePayment); next.ProcessState != order.NotStarted {
		t.Fatalf("after stale reply: next step is %s, want NotStarted", next.ProcessState)
	}

	// The same reply delivered to two Schedulers at once, then again:
	// the workflow advances exactly once and one request goes out.
	var wg sync.WaitGroup
	for _, sched := range []*scheduler.Service{s, w.Scheduler("s2")} {
		wg.Go(func() { mustApplyReplies(t, sched, reply(2)) })
	}
	wg.Wait()
	mustApplyReplies(t, s, reply(2))
	done, next := w.Step(t, id, step), w.Step(t, id, ordertest.StepChargePayment)
	if done.ProcessState != order.Processed || done.Reference != "ref-2" {
		t.Errorf("got step %s ref %q, want Processed with attempt 2's reference", done.ProcessState, done.Reference)
	}
	if next.ProcessState != order.Processing || next.Attempt != 1 {
		t.Errorf("got next step %s attempt %d, want Processing attempt 1 (advanced exactly once)", next.ProcessState, next.Attempt)
	}
	if reqs := w.Requests(t, ordertest.AgentPayment); len(reqs) != 1 {
		t.Errorf("got %d payment requests, want exactly 1: %s", len(reqs), testenv.Describe(reqs))
	}
	o, err := w.Store.Order(context.Background(), id)
	if err != nil || o.Status != order.StatusProcessing {
		t.Errorf("got order status %s (error %v), want Processing", o.Status, err)
	}
}

func TestUnsentRequestReleasesTheClaim(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	w.Requests(t, ordertest.AgentInventory)
	broken := w.Scheduler("broken", func(c *scheduler.Config) { c.Dispatcher = w.BrokenDispatcher() })
	mustApplyReplies(t, broken, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded})

	next := w.Step(t, id, ordertest.StepChargePayment)
	if next.ProcessState != order.Pending || next.LockedBy != "" || next.FailureCount != 0 ||
		!strings.Contains(next.LastError, "request not sent") {
		t.Fatalf("got next step %s locked by %q, %d failures, last error %q; want Pending, unlocked, no failure counted, the reason kept",
			next.ProcessState, next.LockedBy, next.FailureCount, next.LastError)
	}
	if !next.CompleteBy.Equal(w.Clock.Now().Add(timing.ClaimWithin).Truncate(time.Millisecond)) || !next.DueAt.Equal(next.CompleteBy) {
		t.Errorf("got CompleteBy %s, DueAt %s; want both the claim window's end", next.CompleteBy, next.DueAt)
	}
	// The release is a stream record that invokes a Scheduler at once.
	mustHandleStream(t, w.Scheduler("s1"), w.StreamEvent(t, id))
	reqs := w.Requests(t, ordertest.AgentPayment)
	if len(reqs) != 1 || reqs[0].Attempt != 2 {
		t.Fatalf("got payment requests %s, want one on attempt 2", testenv.Describe(reqs))
	}
}

func TestMalformedReplyDoesNotBlockItsBatch(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	a, b := w.Submit(t, someOrder), w.Submit(t, someOrder)

	ok := func(id string) order.StepReply {
		return order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded}
	}
	ev := testenv.ReplyEvent(ok(a), "{not json", map[string]any{"orderId": "nope", "attempt": 1}, ok(b),
		order.StepReply{OrderID: a, Step: "no-such-step", Attempt: 1, Outcome: order.OutcomeSucceeded})
	resp, err := s.HandleReplies(context.Background(), ev)
	if err != nil {
		t.Fatalf("HandleReplies: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	slices.Sort(failed) // replies of a batch are applied in parallel
	if want := []string{"msg-1", "msg-2", "msg-4"}; !slices.Equal(failed, want) {
		t.Errorf("got batch item failures %v, want %v (only the malformed ones)", failed, want)
	}
	for _, id := range []string{a, b} {
		if st := w.Step(t, id, ordertest.StepReserveInventory); st.ProcessState != order.Processed {
			t.Errorf("order %s: got %s, want Processed despite malformed batch-mates", id, st.ProcessState)
		}
	}
}

func succeeded(id, step string, attempt int) order.StepReply {
	return order.StepReply{OrderID: id, Step: step, Attempt: attempt, Outcome: order.OutcomeSucceeded, Reference: "ref-" + step}
}

func undone(id, step string, record, attempt int) order.StepReply {
	return order.StepReply{OrderID: id, Step: step, Undo: true, Record: record, Attempt: attempt, Outcome: order.OutcomeSucceeded, Reference: "undo-" + step}
}

func refused(r order.StepReply, reason string) order.StepReply {
	r.Outcome, r.Reason, r.Reference = order.OutcomeFailed, reason, ""
	return r
}

// A permanent fault at the third step undoes the second, then the first,
// each claimed and requested like a step, and the order ends Failed with
// no alert: nothing is left for an operator.
func TestPermanentFaultUndoesDoneStepsInReverse(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	mustApplyReplies(t, s, succeeded(id, ordertest.StepReserveInventory, 1))
	mustApplyReplies(t, s, succeeded(id, ordertest.StepChargePayment, 1))
	w.Requests(t, ordertest.AgentInventory)
	w.Requests(t, ordertest.AgentPayment)
	mustApplyReplies(t, s, refused(succeeded(id, ordertest.StepArrangeShipping, 1), "address undeliverable"))

	o, steps := w.Records(t, id)
	want := []string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Failed",
		"undo charge-payment:Processing", "undo reserve-inventory:NotStarted"}
	if got := testenv.States(steps); !slices.Equal(got, want) || o.Status != order.StatusCompensating {
		t.Fatalf("after the fault: %s %v, want Compensating %v", o.Status, got, want)
	}
	if reqs := w.Requests(t, ordertest.AgentPayment); len(reqs) != 1 || !reqs[0].Undo || reqs[0].Record != 3 ||
		reqs[0].IdempotencyKey != o.RemoteKey(ordertest.StepChargePayment) {
		t.Errorf("payment requests %+v, want one undo of record 3 with the charge's own key", reqs)
	}

	// A late reply of the forward step changes nothing now.
	mustApplyReplies(t, s, succeeded(id, ordertest.StepArrangeShipping, 1))
	mustApplyReplies(t, s, undone(id, ordertest.StepChargePayment, 3, 1))
	if reqs := w.Requests(t, ordertest.AgentInventory); len(reqs) != 1 || !reqs[0].Undo || reqs[0].Record != 4 {
		t.Errorf("inventory requests %+v, want one undo of record 4", reqs)
	}
	mustApplyReplies(t, s, undone(id, ordertest.StepReserveInventory, 4, 1))

	o, steps = w.Records(t, id)
	want = []string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:Failed",
		"undo charge-payment:Processed", "undo reserve-inventory:Processed"}
	if got := testenv.States(steps); !slices.Equal(got, want) || o.Status != order.StatusFailed {
		t.Errorf("at the end: %s %v, want Failed %v", o.Status, got, want)
	}
	if due := steps[4].DueAt; !due.IsZero() {
		t.Errorf("a Failed order is still due at %s", due)
	}
	if !strings.Contains(o.LastError, "address undeliverable") {
		t.Errorf("order last error %q, want the fault's reason", o.LastError)
	}
	if a, ok := w.Alerts.Next(id, 2*time.Second); ok {
		t.Errorf("alert %+v for an order that ended Failed, want none", a)
	}
}

// A permanent fault at the first step has nothing to undo: Failed at once.
func TestPermanentFaultAtTheFirstStepFailsAtOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	mustApplyReplies(t, s, refused(succeeded(id, ordertest.StepReserveInventory, 1), "sku out of stock"))
	o, steps := w.Records(t, id)
	want := []string{"reserve-inventory:Failed", "charge-payment:NotStarted", "arrange-shipping:NotStarted"}
	if got := testenv.States(steps); !slices.Equal(got, want) || o.Status != order.StatusFailed {
		t.Errorf("got %s %v, want Failed %v", o.Status, got, want)
	}
	if steps[0].LastError != "sku out of stock" {
		t.Errorf("step last error %q, want the reason", steps[0].LastError)
	}
}

// An undo refused for good puts the order in Error, with an alert naming
// the stuck undo and what was already undone.
func TestUndoRefusedPutsTheOrderInError(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	mustApplyReplies(t, s, succeeded(id, ordertest.StepReserveInventory, 1))
	mustApplyReplies(t, s, succeeded(id, ordertest.StepChargePayment, 1))
	mustApplyReplies(t, s, refused(succeeded(id, ordertest.StepArrangeShipping, 1), "address undeliverable"))
	mustApplyReplies(t, s, undone(id, ordertest.StepChargePayment, 3, 1))
	mustApplyReplies(t, s, refused(undone(id, ordertest.StepReserveInventory, 4, 1), "reservation already picked"))

	o, steps := w.Records(t, id)
	if o.Status != order.StatusError || steps[4].ProcessState != order.Error || steps[1].ProcessState != order.Undone ||
		steps[0].ProcessState != order.Processed {
		t.Errorf("got %s %v, want Error with the payment undone and the reservation in place", o.Status, testenv.States(steps))
	}
	alert := w.Alerts.Await(t, id, 10*time.Second)
	if alert.Kind != order.AlertUndoFailed || !alert.Undo || alert.Step != ordertest.StepReserveInventory ||
		!slices.Equal(alert.Undone, []string{ordertest.StepChargePayment}) || !strings.Contains(alert.Reason, "reservation already picked") {
		t.Errorf("alert %+v, want UndoFailed for reserve-inventory, the payment already undone, with the reason", alert)
	}
}

func TestRepliesDriveAnOrderToProcessed(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	for _, def := range w.Workflow.Steps {
		reqs := w.Requests(t, def.Agent)
		if len(reqs) != 1 || reqs[0].Step != def.Name {
			t.Fatalf("step %s: got requests %s, want one to agent %s", def.Name, testenv.Describe(reqs), def.Agent)
		}
		mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: def.Name, Attempt: reqs[0].Attempt, Outcome: order.OutcomeSucceeded})
	}
	o, steps, err := w.Store.GetOrder(context.Background(), id)
	if err != nil || o.Status != order.StatusProcessed {
		t.Fatalf("got order status %s (error %v), want Processed", o.Status, err)
	}
	for _, st := range steps {
		if st.ProcessState != order.Processed || st.Attempt != 1 || st.FailureCount != 0 || !st.DueAt.IsZero() {
			t.Errorf("step %s: got %s attempt %d failures %d due %s, want Processed on attempt 1, out of the due index",
				st.Step, st.ProcessState, st.Attempt, st.FailureCount, st.DueAt)
		}
	}
}

func mustHandleStream(t *testing.T, s *scheduler.Service, ev events.DynamoDBEvent) {
	t.Helper()
	resp, err := s.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: response %+v, error %v", resp, err)
	}
}

func mustApplyReplies(t *testing.T, s *scheduler.Service, replies ...order.StepReply) {
	t.Helper()
	bodies := make([]any, len(replies))
	for i, r := range replies {
		bodies[i] = r
	}
	resp, err := s.HandleReplies(context.Background(), testenv.ReplyEvent(bodies...))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Errorf("HandleReplies: response %+v, error %v", resp, err)
	}
}

// Finding 9 of the reliability review: a claim took its allowance from the
// stream image's failure count, so a redelivered old record shortened the
// retry's window. Now an image whose count is stale claims nothing; the
// record of the latest reset claims with the right allowance.
func TestStaleStreamImageClaimsNothing(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	timeOut(t, w, id) // Pending after 1 failure
	stale := w.StreamEvent(t, id)
	mustHandleStream(t, s, stale)
	w.Requests(t, ordertest.AgentInventory)
	// Attempt 2 times out too: Pending after 2 failures.
	st := w.Step(t, id, ordertest.StepReserveInventory)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
		t.Fatalf("supervisor: report %+v, error %v; want one retry", r, err)
	}
	fresh := w.StreamEvent(t, id)

	mustHandleStream(t, s, stale) // redelivered
	if got := w.Step(t, id, ordertest.StepReserveInventory); got.ProcessState != order.Pending {
		t.Fatalf("the stale record claimed the step: %s attempt %d until %s", got.ProcessState, got.Attempt, got.CompleteBy)
	}
	mustHandleStream(t, s, fresh)
	got := w.Step(t, id, ordertest.StepReserveInventory)
	def, _ := w.Workflow.Step(ordertest.StepReserveInventory)
	want := w.Clock.Now().Add(def.AllowanceFor(2)).Truncate(time.Millisecond)
	if got.ProcessState != order.Processing || got.Attempt != 3 || !got.CompleteBy.Equal(want) {
		t.Errorf("got %s attempt %d until %s, want Processing attempt 3 until %s (the allowance after 2 failures)",
			got.ProcessState, got.Attempt, got.CompleteBy, want)
	}
}

// Review finding: a send that keeps failing released the claim, which the
// stream re-claimed at once, for ever, with no alert. After a few
// releases the step is left to the Supervisor's re-announcements, which
// back off, alert and finally give the order up.
func TestASendThatKeepsFailingStopsBeingReannouncedAtOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	w.Requests(t, ordertest.AgentInventory)
	broken := w.Scheduler("broken", func(c *scheduler.Config) { c.Dispatcher = w.BrokenDispatcher() })
	mustApplyReplies(t, broken, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded})
	for round := 1; ; round++ {
		ev := w.StreamEvent(t, id)
		st := w.Step(t, id, ordertest.StepChargePayment)
		if _, unclaimed := ev.Records[0].Change.NewImage["Unclaimed"]; !unclaimed {
			if st.ProcessState != order.Pending || st.Releases != dispatchReleasesBeforeBackoff || st.FailureCount != 0 {
				t.Fatalf("after %d releases: step %s with %d failures, want Pending, no failure, left to the Supervisor after %d releases",
					st.Releases, st.ProcessState, st.FailureCount, dispatchReleasesBeforeBackoff)
			}
			return
		}
		if round > 10 {
			t.Fatalf("still re-announced at once after %d failed sends", round)
		}
		mustHandleStream(t, broken, ev)
	}
}

// Review finding: an unclaimed alert whose step was claimed before the
// alert went out stayed pending and followed the order to later steps.
// A claim drops it: the step is claimed, so the alert has nothing to say.
func TestAClaimDropsAPendingUnclaimedAlert(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	timeOut(t, w, id)
	st := w.Step(t, id, ordertest.StepReserveInventory)
	now := w.Clock.Now()
	w.Clock.Advance(st.CompleteBy.Sub(now) + time.Millisecond)
	nudge := order.Recovery{Action: order.Nudge, CompleteBy: w.Clock.Now().Add(timing.ClaimWithin), Reason: "unclaimed", AlertOperators: true}
	tr, _ := nudge.Transition(st, w.Clock.Now())
	if _, _, err := w.Store.Apply(context.Background(), tr); err != nil {
		t.Fatal(err)
	}
	mustHandleStream(t, w.Scheduler("s1"), w.StreamEvent(t, id))
	if got := w.Step(t, id, ordertest.StepReserveInventory); got.ProcessState != order.Processing || got.AlertPending {
		t.Fatalf("got %s with alert pending %v, want Processing with no alert left", got.ProcessState, got.AlertPending)
	}
}
