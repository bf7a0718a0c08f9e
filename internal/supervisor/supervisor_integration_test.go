package supervisor_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/supervisor"
	"orderly/internal/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second}

var someOrder = order.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}

const first = order.StepReserveInventory

func claim(t *testing.T, w *testenv.World, id string) order.StepState {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleStream(context.Background(), w.StreamEvent(t, id, first))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: %+v, %v", resp, err)
	}
	st := w.Step(t, id, first)
	if st.ProcessState != order.Processing {
		t.Fatalf("got %s after claim, want Processing", st.ProcessState)
	}
	return st
}

func run(t *testing.T, w *testenv.World) supervisor.Report {
	t.Helper()
	r, err := w.Supervisor().Run(context.Background())
	if err != nil {
		t.Fatalf("supervisor run: %v", err)
	}
	return r
}

func TestRepeatedTimeoutsFailTheOrderAndAlert(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)

	// Attempt 1 times out: reset to Pending, unlocked, one failure counted.
	claim(t, w, id)
	w.Clock.Advance(timing.Allowance + time.Millisecond)
	if r := run(t, w); r.Retried != 1 || r.Failed != 0 {
		t.Fatalf("first timeout: report %+v, want one retry", r)
	}
	st := w.Step(t, id, first)
	if st.ProcessState != order.Pending || st.LockedBy != "" || st.FailureCount != 1 || st.LastError == "" {
		t.Fatalf("after reset: got %s locked by %q, %d failures, last error %q; want Pending, unlocked, 1 failure, a reason",
			st.ProcessState, st.LockedBy, st.FailureCount, st.LastError)
	}

	// Attempt 2 gets twice the allowance, then times out too: threshold 2.
	st = claim(t, w, id)
	if got, want := st.CompleteBy.Sub(w.Clock.Now()), 2*timing.Allowance; got < want-time.Millisecond || got > want {
		t.Errorf("retry allowance: got %s, want %s (backoff)", got, want)
	}
	w.Clock.Advance(2*timing.Allowance - time.Second)
	if r := run(t, w); r.Failed != 0 || r.Retried != 0 {
		t.Fatalf("inside the window: report %+v, want nothing done", r)
	}
	w.Clock.Advance(time.Second + time.Millisecond)
	if r := run(t, w); r.Failed != 1 || r.Alerted != 1 {
		t.Fatalf("second timeout: report %+v, want one failure alerted", r)
	}
	st = w.Step(t, id, first)
	if st.ProcessState != order.Error || st.FailureCount != 2 || st.AlertPending {
		t.Errorf("got %s with %d failures, alert pending %v; want Error, 2 failures, alert sent", st.ProcessState, st.FailureCount, st.AlertPending)
	}
	o, err := w.Store.Order(context.Background(), id)
	if err != nil || o.Status != order.StatusError {
		t.Errorf("got order status %s (%v), want Error", o.Status, err)
	}
	alert := w.Alerts.Await(t, id, 10*time.Second)
	if alert.Kind != order.AlertStepTimedOut || alert.Step != first || alert.FailureCount != 2 || alert.Reason == "" {
		t.Errorf("got alert %s, want StepTimedOut for %s with 2 failures and a reason", testenv.Describe(alert), first)
	}
	// Nothing is left for the next run to do.
	if r := run(t, w); r.Examined != 0 {
		t.Errorf("after failure: next run examined %d steps, want 0", r.Examined)
	}
}

func TestStepInsideItsWindowIsNeverFailed(t *testing.T) {
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 1, ClaimWithin: 5 * time.Second})
	id := w.Submit(t, someOrder)
	st := claim(t, w, id)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now())) // exactly at CompleteBy: not yet expired
	if r := run(t, w); r.Failed != 0 || r.Retried != 0 {
		t.Fatalf("at CompleteBy: report %+v, want nothing done", r)
	}
	if got := w.Step(t, id, first); got.ProcessState != order.Processing {
		t.Fatalf("got %s, want Processing", got.ProcessState)
	}
}

func TestRacingSupervisorsRecoverOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ids := []string{w.Submit(t, someOrder), w.Submit(t, someOrder), w.Submit(t, someOrder)}
	for _, id := range ids {
		claim(t, w, id)
	}
	w.Clock.Advance(timing.Allowance + time.Millisecond)

	const racers = 4
	reports := make([]supervisor.Report, racers)
	var wg sync.WaitGroup
	for i := range racers {
		sup := w.Supervisor()
		wg.Go(func() {
			r, err := sup.Run(context.Background())
			if err != nil {
				t.Errorf("supervisor %d: %v", i, err)
			}
			reports[i] = r
		})
	}
	wg.Wait()
	retried := 0
	for _, r := range reports {
		retried += r.Retried
	}
	if retried != len(ids) {
		t.Errorf("got %d retries in all, want %d (one per step): %+v", retried, len(ids), reports)
	}
	for _, id := range ids {
		if st := w.Step(t, id, first); st.FailureCount != 1 || st.ProcessState != order.Pending {
			t.Errorf("order %s: got %s with %d failures, want Pending with exactly 1", id, st.ProcessState, st.FailureCount)
		}
	}
}

func TestUnclaimedPendingStepIsNudgedThenReported(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder) // no Scheduler ever sees it

	if r := run(t, w); r.Nudged != 0 {
		t.Fatalf("within the claim window: report %+v, want nothing done", r)
	}
	for n := 1; n <= order.UnclaimedAlertAfter; n++ {
		w.Clock.Advance(timing.ClaimWithin + time.Millisecond)
		r := run(t, w)
		if r.Nudged != 1 {
			t.Fatalf("round %d: report %+v, want one nudge", n, r)
		}
		st := w.Step(t, id, first)
		if st.Nudges != n || st.ProcessState != order.Pending || !st.CompleteBy.After(w.Clock.Now()) {
			t.Fatalf("round %d: got %s with %d nudges, CompleteBy %s; want Pending, %d nudges, a new deadline", n, st.ProcessState, st.Nudges, st.CompleteBy, n)
		}
	}
	alert := w.Alerts.Await(t, id, 10*time.Second)
	if alert.Kind != order.AlertStepUnclaimed || alert.Step != first {
		t.Errorf("got alert %s, want StepUnclaimed", testenv.Describe(alert))
	}
	// A nudge is a write, so the stream announces the step again and a
	// Scheduler claims it.
	claim(t, w, id)
}

func TestSchedulerCrashAfterClaimIsRecovered(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	now := w.Clock.Now()
	// The Scheduler claimed the step and died before sending the request.
	if _, err := w.Store.ClaimStep(context.Background(), id, first, "crashed", now.Add(timing.Allowance), now); err != nil {
		t.Fatalf("claim: %v", err)
	}
	w.Clock.Advance(timing.Allowance + time.Millisecond)
	if r := run(t, w); r.Retried != 1 {
		t.Fatalf("report %+v, want one retry", r)
	}
	claim(t, w, id)
	reqs := w.Requests(t, order.AgentInventory)
	if len(reqs) != 1 || reqs[0].Attempt != 2 {
		t.Fatalf("got requests %s, want one for attempt 2", testenv.Describe(reqs))
	}
}

func TestAlertLostInACrashIsResent(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	claim(t, w, id)
	// The failure was recorded, then the Scheduler died before alerting.
	if err := w.Store.FailStep(context.Background(), id, first, 1, "card declined", w.Clock.Now()); err != nil {
		t.Fatalf("fail step: %v", err)
	}
	if r := run(t, w); r.Alerted != 1 {
		t.Fatalf("report %+v, want the pending alert sent", r)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepFailed || a.Reason != "card declined" {
		t.Errorf("got alert %s, want StepFailed with the reason", testenv.Describe(a))
	}
	if st := w.Step(t, id, first); st.AlertPending {
		t.Errorf("alert still pending after it was sent")
	}
}
