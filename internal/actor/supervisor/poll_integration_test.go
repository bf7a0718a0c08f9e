package supervisor_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// polledFirst is the World's shipped workflow with its first step's
// service polled (within an hour, every minute by default), which the
// World then runs.
func polledFirst(t *testing.T, w *testenv.World) order.Workflow {
	t.Helper()
	wf := w.Workflow
	wf.Steps = slices.Clone(wf.Steps)
	wf.Steps[0].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	w.Run(t, wf)
	return wf
}

// reply applies an agent's reply to the first step of order id.
func reply(t *testing.T, w *testenv.World, rep order.StepReply) {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleReplies(context.Background(), testenv.ReplyEvent(rep))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
}

// A polled step's accepted call waits with nothing running until its
// first check is due; the Supervisor then sends one check to the agent
// and moves the next look on by the check's window, so a second run
// sends none, and a check lost in between is sent again once the window
// ends. A "working" answer sets the next check (and a moved status URL),
// "done" completes the step and claims the next, and a late answer of an
// earlier check changes nothing.
func TestAPolledStepIsCheckedOnTheSupervisorsSchedule(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	wf := polledFirst(t, w)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	const statusURL = "https://inventory.example/status/1?sig=s3cr3t"
	accepted := order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, StatusURL: statusURL, RetryAfterMs: 30_000}
	reply(t, w, accepted)
	now := w.Clock.Now().Truncate(time.Millisecond)
	o, steps := w.Records(t, id)
	st := steps[0]
	if o.Status != order.StatusWaiting || st.ProcessState != order.Waiting || st.Attempt != 1 || st.StatusURL != statusURL ||
		!st.CompleteBy.Equal(now.Add(time.Hour)) || !st.DueAt.Equal(now.Add(30*time.Second)) {
		t.Fatalf("accepted: %s %+v, want Waiting on attempt 1 for an hour, its first check in 30s", o.Status, st)
	}
	noRequests(t, w, "before the first check")

	w.Clock.Advance(30*time.Second + timing.SkewGrace + time.Second)
	if r := run(t, w); r.Polled != 1 {
		t.Fatalf("at the first check: report %+v, want one check sent", r)
	}
	checks := w.Requests(t, wf.Steps[0].Agent)
	if len(checks) != 1 || checks[0].Poll != statusURL || checks[0].Attempt != 1 || checks[0].AllowanceMs != 0 {
		t.Fatalf("checks sent %+v, want one of %s on attempt 1, with no allowance to move", checks, statusURL)
	}
	sent := w.Step(t, id, first)
	if want := w.Clock.Now().Truncate(time.Millisecond).Add(wf.Steps[0].Allowance); !sent.DueAt.Equal(want) || !checks[0].CompleteBy.Equal(want) {
		t.Errorf("after the check: next look %s, check's deadline %s; want both at the check's window's end %s", sent.DueAt, checks[0].CompleteBy, want)
	}
	if r := run(t, w); r.Polled != 0 {
		t.Errorf("again at once: report %+v, want no second check", r)
	}
	// The check is lost: made again when its window ends.
	w.Clock.Advance(wf.Steps[0].Allowance + timing.SkewGrace + time.Second)
	if r := run(t, w); r.Polled != 1 || len(w.Requests(t, wf.Steps[0].Agent)) != 1 {
		t.Fatalf("after a lost check's window: report %+v, want it sent again", r)
	}

	working := order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, Poll: true, Checked: statusURL,
		StatusURL: "https://inventory.example/status/2", RetryAfterMs: 10_000}
	reply(t, w, working)
	st = w.Step(t, id, first)
	if now := w.Clock.Now().Truncate(time.Millisecond); st.ProcessState != order.Waiting || st.StatusURL != working.StatusURL || !st.DueAt.Equal(now.Add(10*time.Second)) {
		t.Fatalf("working: %+v, want Waiting at the moved status URL, checked again in 10s", st)
	}

	done := order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded, Poll: true, Checked: working.StatusURL, Reference: "res-1"}
	reply(t, w, done)
	o, steps = w.Records(t, id)
	if o.Status != order.StatusProcessing || steps[0].ProcessState != order.Processed || steps[0].Reference != "res-1" || steps[0].StatusURL != "" ||
		steps[1].ProcessState != order.Processing {
		t.Fatalf("done: %s %s %+v, want the step Processed without its status URL and the next claimed", o.Status, testenv.Describe(testenv.States(steps)), steps[0])
	}
	if next := w.Requests(t, wf.Steps[1].Agent); len(next) != 1 {
		t.Errorf("the next step's requests: %+v, want one sent at once", next)
	}
	// A late answer of an earlier check, and the done answer again.
	reply(t, w, working)
	reply(t, w, done)
	if _, again := w.Records(t, id); again[0].ProcessState != order.Processed || again[1].Attempt != 1 {
		t.Errorf("after late answers: %s, want nothing changed", testenv.Describe(testenv.States(again)))
	}
}

// A polled step whose status never says done by its deadline times out
// like any step: its call is made again with the same key, up to the
// failure threshold; a check that says it failed undoes the order's work
// before it (it did none itself).
func TestAPolledStepThatNeverFinishesTimesOut(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	polledFirst(t, w)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	reply(t, w, order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, StatusURL: "https://inventory.example/s/1"})
	w.Clock.Advance(time.Hour + timing.SkewGrace + time.Second)
	if r := run(t, w); r.Retried != 1 || r.Polled != 0 {
		t.Fatalf("past the deadline: report %+v, want the call retried, no check", r)
	}
	st := w.Step(t, id, first)
	if st.ProcessState != order.Pending || st.FailureCount != 1 || st.StatusURL != "" {
		t.Fatalf("retried: %+v, want Pending with one failure and no status URL", st)
	}

	failed := w.Submit(t, someOrder)
	takeRequests(t, w)
	reply(t, w, order.StepReply{OrderID: failed, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, StatusURL: "https://inventory.example/s/2"})
	reply(t, w, order.StepReply{OrderID: failed, Step: first, Attempt: 1, Outcome: order.OutcomeFailed, Poll: true, Checked: "https://inventory.example/s/2", Reason: "sku out of stock"})
	if o, steps := w.Records(t, failed); o.Status != order.StatusFailed || steps[0].ProcessState != order.Failed {
		t.Errorf("a check that says failed: %s %s, want the order Failed (nothing before it to undo)", o.Status, testenv.Describe(testenv.States(steps)))
	}
}

// A check's answer counts only while the status URL it checked is the
// step's: once the service moved it, a late answer of a check of the old
// one (a duplicate message, a slow agent) changes nothing, even one that
// says the work failed, which the old URL may well say of a job moved on.
func TestALateCheckOfAMovedStatusURLChangesNothing(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	polledFirst(t, w)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	const old, moved = "https://inventory.example/status/1", "https://inventory.example/status/2"
	reply(t, w, order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, StatusURL: old})
	reply(t, w, order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, Poll: true, Checked: old, StatusURL: moved})
	for _, late := range []order.StepReply{
		{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeFailed, Poll: true, Checked: old, Reason: "gone"},
		{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeAccepted, Poll: true, Checked: old, StatusURL: "https://inventory.example/status/3"},
		{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded, Poll: true, Checked: old, Reference: "res-old"},
	} {
		reply(t, w, late)
		if st := w.Step(t, id, first); st.ProcessState != order.Waiting || st.StatusURL != moved {
			t.Fatalf("after a late %s of the old status URL: %+v, want Waiting at the moved one", late.Outcome, st)
		}
	}
	reply(t, w, order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded, Poll: true, Checked: moved, Reference: "res-1"})
	if st := w.Step(t, id, first); st.ProcessState != order.Processed || st.Reference != "res-1" {
		t.Errorf("after the moved URL's done: %+v, want Processed", st)
	}
}
