package scheduler_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second}

var someOrder = order.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}}

func TestRacingSchedulersClaimOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	ev := w.StreamEvent(t, id, order.StepReserveInventory)

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

	reqs := w.Requests(t, order.AgentInventory)
	if len(reqs) != 1 {
		t.Fatalf("got %d requests sent, want exactly 1: %s", len(reqs), testenv.Describe(reqs))
	}
	st := w.Step(t, id, order.StepReserveInventory)
	if st.ProcessState != order.Processing || st.Attempt != 1 || !slices.Contains(ids, st.LockedBy) {
		t.Errorf("got step %s attempt %d locked by %q, want Processing attempt 1 locked by one racer", st.ProcessState, st.Attempt, st.LockedBy)
	}
	want := w.Clock.Now().Add(timing.Allowance)
	if !st.CompleteBy.Equal(want.Truncate(time.Millisecond)) || !reqs[0].CompleteBy.Equal(st.CompleteBy) {
		t.Errorf("got CompleteBy %s in store and %s in request, want %s", st.CompleteBy, reqs[0].CompleteBy, want)
	}
	if reqs[0].IdempotencyKey != order.IdempotencyKeyFor(id, order.StepReserveInventory) || reqs[0].Attempt != 1 {
		t.Errorf("got request %+v, want stable idempotency key and attempt 1", reqs[0])
	}
}

func TestStaleAndDuplicateRepliesAreIgnored(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	step := order.StepReserveInventory

	// Attempt 1 times out; the Supervisor resets it; attempt 2 is claimed.
	mustHandleStream(t, s, w, id, step)
	w.Clock.Advance(timing.Allowance + time.Millisecond)
	if r, err := w.Supervisor().Run(ctx); err != nil || r.Retried != 1 {
		t.Fatalf("supervisor: report %+v, error %v; want one retry", r, err)
	}
	mustHandleStream(t, s, w, id, step)
	if st := w.Step(t, id, step); st.Attempt != 2 || st.ProcessState != order.Processing {
		t.Fatalf("got attempt %d %s, want attempt 2 Processing", st.Attempt, st.ProcessState)
	}

	reply := func(attempt int) order.StepReply {
		return order.StepReply{OrderID: id, Step: step, Attempt: attempt, Outcome: order.Succeeded, Reference: fmt.Sprint("ref-", attempt)}
	}
	// The late reply of attempt 1 must not complete attempt 2.
	mustApplyReplies(t, s, reply(1))
	if st := w.Step(t, id, step); st.ProcessState != order.Processing || st.Attempt != 2 {
		t.Fatalf("after stale reply: got %s attempt %d, want still Processing attempt 2", st.ProcessState, st.Attempt)
	}
	if next := w.Step(t, id, order.StepChargePayment); next.ProcessState != order.NotStarted {
		t.Fatalf("after stale reply: next step is %s, want NotStarted", next.ProcessState)
	}

	mustApplyReplies(t, s, reply(2))
	// A duplicate delivery of the same reply changes nothing.
	mustApplyReplies(t, s, reply(2))
	done, next := w.Step(t, id, step), w.Step(t, id, order.StepChargePayment)
	if done.ProcessState != order.Processed || done.LockedBy != "" {
		t.Errorf("got step %s locked by %q, want Processed and unlocked", done.ProcessState, done.LockedBy)
	}
	if next.ProcessState != order.Pending || next.Attempt != 0 {
		t.Errorf("got next step %s attempt %d, want Pending attempt 0 (advanced exactly once)", next.ProcessState, next.Attempt)
	}
	o, err := w.Store.Order(ctx, id)
	if err != nil || o.Status != order.StatusProcessing {
		t.Errorf("got order status %s (error %v), want Processing", o.Status, err)
	}
}

func TestMalformedReplyDoesNotBlockItsBatch(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	a, b := w.Submit(t, someOrder), w.Submit(t, someOrder)
	mustHandleStream(t, s, w, a, order.StepReserveInventory)
	mustHandleStream(t, s, w, b, order.StepReserveInventory)

	ok := func(id string) order.StepReply {
		return order.StepReply{OrderID: id, Step: order.StepReserveInventory, Attempt: 1, Outcome: order.Succeeded}
	}
	ev := testenv.ReplyEvent(ok(a), "{not json", map[string]any{"orderId": "nope", "attempt": 1}, ok(b),
		order.StepReply{OrderID: a, Step: "no-such-step", Attempt: 1, Outcome: order.Succeeded})
	resp, err := s.HandleReplies(context.Background(), ev)
	if err != nil {
		t.Fatalf("HandleReplies: %v", err)
	}
	var failed []string
	for _, f := range resp.BatchItemFailures {
		failed = append(failed, f.ItemIdentifier)
	}
	if want := []string{"msg-1", "msg-2", "msg-4"}; !slices.Equal(failed, want) {
		t.Errorf("got batch item failures %v, want %v (only the malformed ones)", failed, want)
	}
	for _, id := range []string{a, b} {
		if st := w.Step(t, id, order.StepReserveInventory); st.ProcessState != order.Processed {
			t.Errorf("order %s: got %s, want Processed despite malformed batch-mates", id, st.ProcessState)
		}
	}
}

func TestPermanentFaultFailsOrderAndAlertsOperators(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	mustHandleStream(t, s, w, id, order.StepReserveInventory)
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: order.StepReserveInventory, Attempt: 1,
		Outcome: order.Failed, Reason: "sku out of stock"})

	st := w.Step(t, id, order.StepReserveInventory)
	if st.ProcessState != order.Error || st.LastError != "sku out of stock" || st.AlertPending {
		t.Errorf("got step %s, last error %q, alert pending %v; want Error with the reason and the alert sent", st.ProcessState, st.LastError, st.AlertPending)
	}
	o, err := w.Store.Order(context.Background(), id)
	if err != nil || o.Status != order.StatusError {
		t.Errorf("got order status %s (error %v), want Error", o.Status, err)
	}
	alert := w.Alerts.Await(t, id, 10*time.Second)
	if alert.Kind != order.AlertStepFailed || alert.Step != order.StepReserveInventory || alert.Reason != "sku out of stock" {
		t.Errorf("got alert %+v, want StepFailed for reserve-inventory with the reason", alert)
	}
	if next := w.Step(t, id, order.StepChargePayment); next.ProcessState != order.NotStarted {
		t.Errorf("got next step %s, want NotStarted after a failure", next.ProcessState)
	}
}

func TestRepliesDriveAnOrderToProcessed(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	for _, def := range w.Workflow.Steps {
		mustHandleStream(t, s, w, id, def.Name)
		reqs := w.Requests(t, def.Agent)
		if len(reqs) != 1 || reqs[0].Step != def.Name {
			t.Fatalf("step %s: got requests %s, want one to agent %s", def.Name, testenv.Describe(reqs), def.Agent)
		}
		mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: def.Name, Attempt: reqs[0].Attempt, Outcome: order.Succeeded})
	}
	o, steps, err := w.Store.GetOrder(context.Background(), id)
	if err != nil || o.Status != order.StatusProcessed {
		t.Fatalf("got order status %s (error %v), want Processed", o.Status, err)
	}
	for _, st := range steps {
		if st.ProcessState != order.Processed || st.Attempt != 1 || st.FailureCount != 0 {
			t.Errorf("step %s: got %s attempt %d failures %d, want Processed on attempt 1", st.Step, st.ProcessState, st.Attempt, st.FailureCount)
		}
	}
}

func mustHandleStream(t *testing.T, s interface {
	HandleStream(context.Context, streamEvent) (streamResponse, error)
}, w *testenv.World, orderID, step string) {
	t.Helper()
	resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, orderID, step))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: response %+v, error %v", resp, err)
	}
}

func mustApplyReplies(t *testing.T, s interface {
	HandleReplies(context.Context, replyEvent) (replyResponse, error)
}, replies ...order.StepReply) {
	t.Helper()
	bodies := make([]any, len(replies))
	for i, r := range replies {
		bodies[i] = r
	}
	resp, err := s.HandleReplies(context.Background(), testenv.ReplyEvent(bodies...))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: response %+v, error %v", resp, err)
	}
}
