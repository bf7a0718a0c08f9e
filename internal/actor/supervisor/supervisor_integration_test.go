package supervisor_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/sqs"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second}

var someOrder = ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}

const first = ordertest.StepReserveInventory

// claim has a Scheduler claim the first step from its stream record.
func claim(t *testing.T, w *testenv.World, id string) order.StepState {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleStream(context.Background(), w.StreamEvent(t, id))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: %+v, %v", resp, err)
	}
	st := w.Step(t, id, first)
	if st.ProcessState != order.Processing {
		t.Fatalf("got %s after claim, want Processing", st.ProcessState)
	}
	return st
}

// expire moves the clock just past the first step's deadline, plus the
// grace, after an agent took the step's request and went silent.
func expire(t *testing.T, w *testenv.World, id string) {
	t.Helper()
	takeRequests(t, w)
	st := w.Step(t, id, first)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
}

// takeRequests empties every agent's queue, as agents that took the
// requests and then went silent would: no backlog is left.
func takeRequests(t *testing.T, w *testenv.World) {
	t.Helper()
	for _, agent := range w.Workflow.Agents() {
		w.Requests(t, agent)
	}
}

// announce hands the order's stream record to a Scheduler, as the stream
// does when a record waits for a claim.
func announce(t *testing.T, w *testenv.World, id string) {
	t.Helper()
	resp, err := w.Scheduler("s1").HandleStream(context.Background(), w.StreamEvent(t, id))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: response %+v, error %v", resp, err)
	}
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
	id := w.Submit(t, someOrder) // submission claims attempt 1

	// Attempt 1 times out: reset to Pending, unlocked, one failure counted.
	expire(t, w, id)
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
	takeRequests(t, w) // an agent took it and went silent
	if got, want := st.CompleteBy.Sub(w.Clock.Now()), 2*timing.Allowance; got < want-time.Millisecond || got > want {
		t.Errorf("retry allowance: got %s, want %s (backoff)", got, want)
	}
	w.Clock.Advance(2*timing.Allowance - time.Second)
	if r := run(t, w); r.Failed != 0 || r.Retried != 0 {
		t.Fatalf("inside the window: report %+v, want nothing done", r)
	}
	w.Clock.Advance(time.Second + time.Millisecond)
	if r := run(t, w); r.Compensated != 1 || r.Alerted != 0 {
		t.Fatalf("second timeout: report %+v, want the order compensated, no alert", r)
	}
	// The step timed out, so its work may be done: it is undone, by an undo
	// record announced for a Scheduler.
	o, steps := w.Records(t, id)
	if o.Status != order.StatusCompensating || len(steps) != 4 || steps[0].ProcessState != order.Failed || steps[0].FailureCount != 2 ||
		!steps[3].Undo || steps[3].Step != first || steps[3].ProcessState != order.Pending {
		t.Fatalf("got %s %s, want Compensating, the step Failed with 2 failures, its undo Pending", o.Status, testenv.Describe(steps))
	}
	announce(t, w, id)
	reqs := w.Requests(t, ordertest.AgentInventory)
	if len(reqs) != 1 || !reqs[0].Undo || reqs[0].Record != 3 {
		t.Fatalf("requests %s, want the undo of record 3", testenv.Describe(reqs))
	}
	undo := testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first, Undo: true, Record: 3, Attempt: 1, Outcome: order.OutcomeSucceeded})
	if resp, err := w.Scheduler("s1").HandleReplies(context.Background(), undo); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("undo reply: %+v, %v", resp, err)
	}
	if o, steps = w.Records(t, id); o.Status != order.StatusFailed || steps[0].ProcessState != order.Undone {
		t.Errorf("got %s %s, want Failed with the step Undone", o.Status, testenv.Describe(steps))
	}
	if a, ok := w.Alerts.Next(id, time.Second); ok {
		t.Errorf("alert %s, want none: the order ended Failed, nothing for an operator", testenv.Describe(a))
	}
	// Nothing is left for the next run to do.
	w.Clock.Advance(time.Hour)
	if r := run(t, w); r.Examined != 0 {
		t.Errorf("after the end: next run examined %d steps, want 0", r.Examined)
	}
}

// An undo that times out FailureThreshold times puts the order in Error
// with an alert: an operator must act.
func TestUndoTimingOutEndsInErrorAndAlerts(t *testing.T) {
	once := order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 1, ClaimWithin: 5 * time.Second}
	w := testenv.NewWorld(t, once)
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	expire(t, w, id)
	if r := run(t, w); r.Compensated != 1 {
		t.Fatalf("timeout: report %+v, want the order compensated", r)
	}
	announce(t, w, id)
	takeRequests(t, w) // the agent took the undo and went silent
	_, steps := w.Records(t, id)
	w.Clock.Advance(steps[3].CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Failed != 1 || r.Alerted != 1 {
		t.Fatalf("undo timeout: report %+v, want a failure alerted", r)
	}
	o, steps := w.Records(t, id)
	if o.Status != order.StatusError || steps[3].ProcessState != order.Error {
		t.Errorf("got %s %s, want Error on the undo record", o.Status, testenv.Describe(steps))
	}
	alert := w.Alerts.Await(t, id, 10*time.Second)
	if alert.Kind != order.AlertUndoTimedOut || !alert.Undo || alert.Step != first {
		t.Errorf("alert %s, want UndoTimedOut for the undo of %s", testenv.Describe(alert), first)
	}
}

func TestStepInsideItsWindowIsNeverFailed(t *testing.T) {
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 1, ClaimWithin: 5 * time.Second})
	id := w.Submit(t, someOrder)
	st := w.Step(t, id, first)
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
	takeRequests(t, w)
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

// A run drains a shard page by page, not just its first page.
func TestRunDrainsEveryPage(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	const orders = 7
	for range orders {
		w.Submit(t, someOrder)
	}
	takeRequests(t, w)
	w.Clock.Advance(timing.Allowance + time.Millisecond)
	r, err := w.Supervisor(func(c *supervisor.Config) { c.PageSize = 1 }).Run(context.Background())
	if err != nil || r.Retried != orders {
		t.Fatalf("report %+v, error %v; want all %d orders retried in one run of one-order pages", r, err, orders)
	}
}

// Completions leave DueAt alone, so it lags a later step's deadline; the
// Supervisor then moves it on without touching the step.
func TestLaggingDueAtIsMovedOn(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	ctx := context.Background()
	id := w.Submit(t, someOrder)
	submittedDue := w.Step(t, id, first).DueAt
	w.Clock.Advance(timing.Allowance / 2)
	reply := testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded})
	if resp, err := s.HandleReplies(ctx, reply); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply: %+v, %v", resp, err)
	}
	next := w.Step(t, id, ordertest.StepChargePayment)
	if !next.DueAt.Equal(submittedDue) || !next.CompleteBy.After(next.DueAt) {
		t.Fatalf("got DueAt %s and CompleteBy %s, want DueAt left at submission's %s, before CompleteBy", next.DueAt, next.CompleteBy, submittedDue)
	}

	w.Clock.Advance(submittedDue.Sub(w.Clock.Now()) + time.Millisecond)
	if r := run(t, w); r.Rescheduled != 1 || r.Retried+r.Failed+r.Nudged != 0 {
		t.Fatalf("report %+v, want the order rescheduled and nothing else", r)
	}
	moved := w.Step(t, id, ordertest.StepChargePayment)
	if moved.ProcessState != order.Processing || moved.Attempt != 1 || !moved.DueAt.Equal(moved.CompleteBy) {
		t.Fatalf("got %s attempt %d due %s, want Processing attempt 1 due at its CompleteBy %s", moved.ProcessState, moved.Attempt, moved.DueAt, moved.CompleteBy)
	}
	takeRequests(t, w) // an agent took it and went silent
	w.Clock.Advance(moved.CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	if r := run(t, w); r.Retried != 1 {
		t.Fatalf("report %+v, want the timed-out step retried at its deadline", r)
	}
}

// After a retry with a doubled allowance DueAt is later than the next
// step's deadline; the completion lowers it, so no timeout is seen late.
func TestDueAtIsLoweredAfterALongRetry(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	expire(t, w, id)
	run(t, w)
	long := claim(t, w, id) // attempt 2: twice the allowance
	if !long.DueAt.Equal(long.CompleteBy) {
		t.Fatalf("got DueAt %s, want the claim's CompleteBy %s", long.DueAt, long.CompleteBy)
	}
	reply := testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first, Attempt: 2, Outcome: order.OutcomeSucceeded})
	if resp, err := w.Scheduler("s1").HandleReplies(context.Background(), reply); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply: %+v, %v", resp, err)
	}
	next := w.Step(t, id, ordertest.StepChargePayment)
	if !next.CompleteBy.Before(long.CompleteBy) || !next.DueAt.Equal(next.CompleteBy) {
		t.Fatalf("got next CompleteBy %s and DueAt %s, want DueAt lowered to CompleteBy (before %s)", next.CompleteBy, next.DueAt, long.CompleteBy)
	}
}

// pendingUnclaimed leaves the first step Pending after a retry, with no
// Scheduler ever seeing it.
func pendingUnclaimed(t *testing.T, w *testenv.World) string {
	t.Helper()
	id := w.Submit(t, someOrder)
	expire(t, w, id)
	if r := run(t, w); r.Retried != 1 {
		t.Fatalf("report %+v, want one retry", r)
	}
	return id
}

// nudgeRound moves the clock past the step's claim deadline and runs the
// Supervisor once.
func nudgeRound(t *testing.T, w *testenv.World, id string) supervisor.Report {
	t.Helper()
	st := w.Step(t, id, first)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	return run(t, w)
}

// Findings 5 and 6 of the reliability review: a Pending step was only ever
// re-announced, every ClaimWithin, forever, and its alert had no outbox.
// Now the re-announcements back off, operators are alerted once (recorded
// with the nudge, so a failed publish is retried), and after
// UnclaimedGiveUpAfter the order ends in Error with an alert.
func TestUnclaimedStepIsNudgedWithBackoffAlertedOnceThenGivenUp(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := pendingUnclaimed(t, w)
	if r := run(t, w); r.Nudged != 0 {
		t.Fatalf("within the claim window: report %+v, want nothing done", r)
	}
	alerts := 0
	for n := 1; n <= order.UnclaimedGiveUpAfter; n++ {
		r := nudgeRound(t, w, id)
		alerts += r.Alerted
		if r.Nudged != 1 {
			t.Fatalf("round %d: report %+v, want one nudge", n, r)
		}
		st := w.Step(t, id, first)
		window, got := timing.ClaimWithin<<min(n-1, order.MaxNudgeBackoff), st.CompleteBy.Sub(w.Clock.Now())
		if st.Nudges != n || st.ProcessState != order.Pending || st.AlertPending || got < window-time.Millisecond || got > window {
			t.Fatalf("round %d: got %s, %d nudges, alert pending %v, next deadline in %s; want Pending, %d nudges, alert sent, a %s window",
				n, st.ProcessState, st.Nudges, st.AlertPending, got, n, window)
		}
	}
	if alerts != 1 {
		t.Errorf("%d unclaimed alerts over %d nudges, want exactly 1", alerts, order.UnclaimedGiveUpAfter)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepUnclaimed || a.Step != first || a.Reason == "" {
		t.Errorf("got alert %s, want StepUnclaimed with a reason", testenv.Describe(a))
	}

	// The bound: the next deadline gives the order up, with an alert.
	if r := nudgeRound(t, w, id); r.Failed != 1 || r.Alerted != 1 {
		t.Fatalf("after %d nudges: report %+v, want the step failed and alerted", order.UnclaimedGiveUpAfter, r)
	}
	st := w.Step(t, id, first)
	o, err := w.Store.Order(context.Background(), id)
	if err != nil || o.Status != order.StatusError || st.ProcessState != order.Error || st.AlertPending || !st.DueAt.IsZero() {
		t.Fatalf("got order %s (%v), step %s, alert pending %v, due %s; want both Error, alerted, out of the due index",
			o.Status, err, st.ProcessState, st.AlertPending, st.DueAt)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepAbandoned {
		t.Errorf("got alert %s, want StepAbandoned", testenv.Describe(a))
	}
	// Nothing is left to watch.
	w.Clock.Advance(time.Hour)
	if r := run(t, w); r.Examined != 0 {
		t.Errorf("after giving up: a run examined %d orders, want 0", r.Examined)
	}
}

// The unclaimed alert is recorded with its nudge: when publishing fails,
// the next run that finds the order sends it, and a nudge still re-announces
// the step, so a Scheduler can still claim it.
func TestUnclaimedAlertSurvivesAFailedPublish(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := pendingUnclaimed(t, w)
	for n := 1; n < order.UnclaimedAlertAfter; n++ {
		nudgeRound(t, w, id)
	}
	// The alerting nudge, with SNS down: the nudge is written, the alert
	// stays pending.
	st := w.Step(t, id, first)
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	broken := w.Supervisor(func(c *supervisor.Config) { c.Notifier = failingNotifier{} })
	if r, err := broken.Run(context.Background()); err == nil || r.Nudged != 1 || r.Alerted != 0 {
		t.Fatalf("report %+v, error %v; want the nudge made and the alert failed", r, err)
	}
	if st := w.Step(t, id, first); !st.AlertPending || st.AlertKind != order.AlertStepUnclaimed {
		t.Fatalf("alert pending %v of kind %q, want a pending StepUnclaimed alert", st.AlertPending, st.AlertKind)
	}
	if r := nudgeRound(t, w, id); r.Alerted != 1 {
		t.Fatalf("next run: report %+v, want the pending alert sent", r)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepUnclaimed {
		t.Errorf("got alert %s, want StepUnclaimed", testenv.Describe(a))
	}
	// The step is still Pending and marked for a claim.
	claim(t, w, id)
}

type failingNotifier struct{}

func (failingNotifier) Notify(context.Context, order.StepState) error {
	return errors.New("sns: Publish: service unavailable")
}

func (failingNotifier) Publish(context.Context, order.Alert) error {
	return errors.New("sns: Publish: service unavailable")
}

func TestSchedulerCrashAfterClaimIsRecovered(t *testing.T) {
	patient := timing
	patient.FailureThreshold = 3
	w := testenv.NewWorld(t, patient)
	id := w.Submit(t, someOrder)
	w.Requests(t, ordertest.AgentInventory) // lost with the crashed submission
	expire(t, w, id)
	run(t, w)
	// A Scheduler claimed the step again and died before sending the request.
	now := w.Clock.Now()
	seen := w.Step(t, id, first)
	if _, _, err := w.Store.Apply(context.Background(), order.Claim(seen, "crashed", now.Add(timing.Allowance), now)); err != nil {
		t.Fatalf("claim: %v", err)
	}
	expire(t, w, id)
	if r := run(t, w); r.Retried != 1 {
		t.Fatalf("report %+v, want one retry", r)
	}
	claim(t, w, id)
	reqs := w.Requests(t, ordertest.AgentInventory)
	if len(reqs) != 1 || reqs[0].Attempt != 3 {
		t.Fatalf("got requests %s, want one for attempt 3", testenv.Describe(reqs))
	}
}

func TestAlertLostInACrashIsResent(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	// The failure was recorded, then the Scheduler died before alerting.
	if _, _, err := w.Store.Apply(context.Background(), order.FailReply(w.Step(t, id, first), "card declined", w.Clock.Now())); err != nil {
		t.Fatalf("fail step: %v", err)
	}
	// The alert was leased to the Scheduler; when the lease is over, the
	// Supervisor sends it.
	w.Clock.Advance(order.AlertLease + w.Workflow.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Alerted != 1 {
		t.Fatalf("report %+v, want the pending alert sent", r)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepFailed || a.Reason != "card declined" {
		t.Errorf("got alert %s, want StepFailed with the reason", testenv.Describe(a))
	}
	if st := w.Step(t, id, first); st.AlertPending || !st.DueAt.IsZero() {
		t.Errorf("alert pending %v, due %s after it was sent; want neither", st.AlertPending, st.DueAt)
	}
}

// Finding 12 of the reliability review: the Supervisor logged the failure
// count from before its own write, one lower than the stored value.
func TestRetryLogsTheStoredFailureCount(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	expire(t, w, id)
	var logs bytes.Buffer
	sup := w.Supervisor(func(c *supervisor.Config) { c.Log = slog.New(slog.NewJSONHandler(&logs, nil)) })
	if r, err := sup.Run(context.Background()); err != nil || r.Retried != 1 {
		t.Fatalf("report %+v, error %v; want one retry", r, err)
	}
	stored := w.Step(t, id, first).FailureCount
	found := false
	for line := range strings.Lines(logs.String()) {
		var rec struct {
			Msg          string `json:"msg"`
			FailureCount *int   `json:"failure_count"`
		}
		if json.Unmarshal([]byte(line), &rec) != nil || rec.Msg != "timed-out step reset to Pending" {
			continue
		}
		found = true
		if rec.FailureCount == nil || *rec.FailureCount != stored {
			t.Errorf("logged %s, want failure_count %d as stored", strings.TrimSpace(line), stored)
		}
	}
	if !found {
		t.Fatalf("no retry logged: %s", logs.String())
	}
}

// Finding 1 of the reliability review: the agent may work until
// CompleteBy and the Supervisor failed the step a millisecond after it, so
// a success inside the window, still in the response queue, lost: on the
// last attempt the order ended in Error with the remote work done. The
// Supervisor now waits out a grace (the allowed clock skew and reply
// latency) past CompleteBy, and the agent stops a margin before it.
func TestSuccessInsideItsWindowIsNotLostToTheSupervisor(t *testing.T) {
	lastChance := order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 1,
		ClaimWithin: 5 * time.Second, SkewGrace: 2 * time.Second}
	w := testenv.NewWorld(t, lastChance)
	id := w.Submit(t, someOrder)
	st := w.Step(t, id, first)
	// The agent's success came in just inside the window; the Supervisor,
	// whose clock runs a second ahead, runs before the reply is applied.
	w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Second)
	if r := run(t, w); r.Failed != 0 || r.Retried != 0 {
		t.Fatalf("inside the grace: report %+v, want nothing done", r)
	}
	reply := testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded})
	if resp, err := w.Scheduler("s1").HandleReplies(context.Background(), reply); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply: %+v, %v", resp, err)
	}
	if got := w.Step(t, id, first); got.ProcessState != order.Processed {
		t.Fatalf("got %s, want the success applied", got.ProcessState)
	}
	// Past the grace, a step with no reply is failed as before.
	takeRequests(t, w) // an agent took the next request and went silent
	next := w.Step(t, id, ordertest.StepChargePayment)
	w.Clock.Advance(next.CompleteBy.Sub(w.Clock.Now()) + lastChance.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Compensated != 1 {
		t.Fatalf("past the grace: report %+v, want the silent step failed and compensated", r)
	}
}

// Review finding: a completion left DueAt where it was and lowered it in
// a second, best-effort write; a crash between the two left DueAt later
// than the new step's deadline. The completion now keeps the invariant in
// its own write.
func TestCompletionAfterALongRetryNeverLeavesDueAtLate(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	expire(t, w, id)
	run(t, w)
	long := claim(t, w, id) // attempt 2: twice the allowance
	next, _ := w.Workflow.Step(ordertest.StepChargePayment)
	// The completion write alone, as if the Scheduler died right after
	// it: refused while DueAt is later than the new deadline, then made
	// again as the domain decides, with DueAt.
	ctx, now := context.Background(), w.Clock.Now()
	c := order.Completion{Step: long, Next: &next, NextIndex: 1, Owner: "s1", NextCompleteBy: now.Add(next.Allowance)}
	_, claimed, err := w.Store.Apply(ctx, c.Transition(now))
	if err != nil {
		if c, err = c.Again(err, now); err != nil {
			t.Fatal(err)
		}
		_, claimed, err = w.Store.Apply(ctx, c.Transition(now))
	}
	if err != nil {
		t.Fatal(err)
	}
	if claimed.DueAt.After(claimed.CompleteBy) {
		t.Fatalf("DueAt %s is after the new deadline %s", claimed.DueAt, claimed.CompleteBy)
	}
}

// Issue 7's back-pressure: a request still waiting in its agent's queue
// (agents at their concurrency cap) is not a failure. Its deadline moves
// on, with no failure counted and no alert; once the queue has no backlog,
// a step past its deadline is a timeout as before.
func TestQueueWaitIsBackPressureNotAFailure(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder) // its request waits in the inventory queue
	w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	r := run(t, w)
	st := w.Step(t, id, first)
	if r.Deferred != 1 || r.Retried+r.Failed+r.Alerted != 0 || st.ProcessState != order.Processing ||
		st.FailureCount != 0 || st.Deferrals != 1 || !st.CompleteBy.After(w.Clock.Now()) {
		t.Fatalf("report %+v; step %s, %d failures, %d deferrals, until %s; want the deadline moved on, nothing counted",
			r, st.ProcessState, st.FailureCount, st.Deferrals, st.CompleteBy)
	}
	// An agent takes the request and hangs: no backlog any more, so the
	// next expiry is a timeout.
	expire(t, w, id)
	if r := run(t, w); r.Retried != 1 || r.Deferred != 0 {
		t.Fatalf("without a backlog: report %+v, want a retry", r)
	}
	if st := w.Step(t, id, first); st.FailureCount != 1 {
		t.Errorf("got %d failures, want 1", st.FailureCount)
	}
}

// A reply waiting in the response queue is queue wait too: the agent
// answered inside the window, and the Scheduler has not caught up.
func TestReplyWaitingInTheResponseQueueIsBackPressure(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	takeRequests(t, w) // the agent took the request...
	reply, _ := json.Marshal(order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded})
	if _, err := w.Clients.SQS.SendMessage(context.Background(), &awssqs.SendMessageInput{
		QueueUrl: aws.String(w.Stack.ResponseQueue.URL), MessageBody: aws.String(string(reply)),
	}); err != nil { // ...and replied; the reply waits
		t.Fatal(err)
	}
	w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + time.Millisecond)
	if r := run(t, w); r.Deferred != 1 || r.Retried != 0 {
		t.Fatalf("report %+v, want the deadline moved on while the reply waits", r)
	}
}

// Finding 7 of the reliability review: a failed step became due at once (its
// order's DueAt lags behind deadlines), so a Supervisor run re-sent the
// alert the Scheduler that recorded the failure was still sending. The
// failure write now leases the alert to its writer: the Supervisor sends it
// only if the lease runs out, after a crash, and two Supervisors that find
// the same unsent alert send it once.
func TestAlertBeingSentIsNotSentAgain(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	id := w.Submit(t, someOrder)
	// The first step succeeds and the second is claimed in the same write;
	// the order's DueAt stays at the first step's deadline.
	w.Clock.Advance(timing.Allowance / 2)
	reply := testenv.ReplyEvent(order.StepReply{OrderID: id, Step: first, Attempt: 1, Outcome: order.OutcomeSucceeded})
	if resp, err := w.Scheduler("s1").HandleReplies(ctx, reply); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply: %+v, %v", resp, err)
	}
	w.Clock.Advance(timing.Allowance/2 + w.Workflow.SkewGrace + time.Millisecond) // past the lagging DueAt
	// A permanent fault is recorded; its Scheduler is sending the alert.
	second := w.Step(t, id, ordertest.StepChargePayment)
	if _, _, err := w.Store.Apply(ctx, order.FailReply(second, "card declined", w.Clock.Now())); err != nil {
		t.Fatalf("fail step: %v", err)
	}
	if r := run(t, w); r.Alerted != 0 {
		t.Fatalf("report %+v: the Supervisor sent an alert its writer is still sending", r)
	}

	// The writer crashed: once its lease has run out, exactly one of two
	// racing Supervisors sends the alert.
	w.Clock.Advance(order.AlertLease + w.Workflow.SkewGrace + time.Millisecond)
	var (
		wg      sync.WaitGroup
		reports [2]supervisor.Report
	)
	for i := range reports {
		wg.Go(func() { reports[i] = run(t, w) })
	}
	wg.Wait()
	if got := reports[0].Alerted + reports[1].Alerted; got != 1 {
		t.Fatalf("reports %+v, %+v: %d alerts sent, want 1", reports[0], reports[1], got)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepFailed || a.Reason != "card declined" {
		t.Errorf("got alert %s, want StepFailed with the reason", testenv.Describe(a))
	}
	if st := w.Step(t, id, ordertest.StepChargePayment); st.AlertPending || !st.DueAt.IsZero() {
		t.Errorf("alert pending %v, due %s after it was sent; want neither", st.AlertPending, st.DueAt)
	}
}

// An agent's heartbeat moves its attempt's deadline on, so the Supervisor
// leaves a long call alone; it is fenced on the attempt and limited per
// step.
func TestHeartbeatsKeepALongCallFromTimingOut(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	id := w.Submit(t, someOrder)
	takeRequests(t, w) // an agent took the request and is on a long call
	st := w.Step(t, id, first)
	const maxHeartbeats = 2
	// beat is the agent's heartbeat: the write, and the domain's reading
	// of a refusal.
	heartbeat := func(completeBy time.Time) (order.StepState, error) {
		tr := order.Heartbeat(st, completeBy, maxHeartbeats, w.Clock.Now())
		_, got, err := w.Store.Apply(ctx, tr)
		if errors.Is(err, order.ErrStale) {
			return order.HeartbeatRefused(tr, err)
		}
		return got, err
	}

	// Two heartbeats, each a full allowance from its now.
	for beat := 1; beat <= maxHeartbeats; beat++ {
		w.Clock.Advance(timing.Allowance / 2)
		want := w.Clock.Now().Add(timing.Allowance)
		got, err := heartbeat(want)
		if err != nil || !got.CompleteBy.Equal(want.Truncate(time.Millisecond)) || got.Heartbeats != beat {
			t.Fatalf("heartbeat %d: got deadline %s, %d heartbeats, %v; want %s, %d", beat, got.CompleteBy, got.Heartbeats, err, want, beat)
		}
	}
	// Past the first deadline and its grace: the step is in its window.
	if r := run(t, w); r.Retried+r.Failed+r.Deferred != 0 {
		t.Fatalf("report %+v, want the heartbeating step left alone", r)
	}
	// An earlier deadline (a late, duplicate heartbeat) changes nothing.
	before := w.Step(t, id, first).CompleteBy
	if got, err := heartbeat(before.Add(-time.Second)); err != nil || !got.CompleteBy.Equal(before) {
		t.Errorf("earlier deadline: got %s, %v; want %s kept, no error", got.CompleteBy, err, before)
	}
	// The step's limit: the attempt keeps the deadline it has.
	got, err := heartbeat(before.Add(time.Minute))
	if !errors.Is(err, order.ErrHeartbeatLimit) || !got.CompleteBy.Equal(before) {
		t.Errorf("over the limit: got %s, %v; want ErrHeartbeatLimit and %s kept", got.CompleteBy, err, before)
	}
	// After the last deadline the attempt times out and is retried; its
	// agent's next heartbeat learns that the attempt is over.
	w.Clock.Advance(before.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Retried != 1 {
		t.Fatalf("report %+v, want the step retried after its last deadline", r)
	}
	if _, err := heartbeat(w.Clock.Now().Add(time.Minute)); !errors.Is(err, order.ErrStale) {
		t.Errorf("heartbeat of a retried attempt: %v, want ErrStale", err)
	}
	// The next claim starts with no heartbeats used.
	if next := claim(t, w, id); next.Heartbeats != 0 || next.Attempt != 2 {
		t.Errorf("claim after the retry: attempt %d with %d heartbeats, want attempt 2 with 0", next.Attempt, next.Heartbeats)
	}
}

// A request an agent held back while its circuit breaker was open waits in
// its queue, delayed: that is back-pressure too, so an outage of a remote
// service spends no attempts.
func TestRequestHeldByAnOpenCircuitIsBackPressure(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	reqs := w.Requests(t, ordertest.AgentInventory) // the agent took the request...
	if len(reqs) != 1 {
		t.Fatalf("got requests %s, want one", testenv.Describe(reqs))
	}
	holder := sqs.NewRequests(w.Clients.SQS, w.Stack.RequestQueueURLs())
	if err := holder.HoldRequest(context.Background(), ordertest.AgentInventory, reqs[0], time.Minute); err != nil {
		t.Fatal(err) // ...and held it back, the circuit being open
	}
	w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Deferred != 1 || r.Retried+r.Failed != 0 {
		t.Fatalf("report %+v, want the deadline moved on while the request is held", r)
	}
}

// A long outage behind an open circuit (a remote service that is down, or
// one that refuses the agent's configuration until someone fixes it)
// holds the step's request in its queue however long it lasts. Held is not
// queue wait that may hide a lost request: the agent holds it on purpose
// and probes the service meanwhile, so the deadline moves on with no limit
// of deferrals and no failure counted, and the order is never failed or
// compensated for the outage. Once the agent takes the request (the
// circuit closed) and goes silent, a timeout counts again.
func TestLongOutageBehindAnOpenCircuitSpendsNoAttempts(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	reqs := w.Requests(t, ordertest.AgentInventory)
	if len(reqs) != 1 {
		t.Fatalf("got requests %s, want one", testenv.Describe(reqs))
	}
	holder := sqs.NewRequests(w.Clients.SQS, w.Stack.RequestQueueURLs())
	if err := holder.HoldRequest(context.Background(), ordertest.AgentInventory, reqs[0], sqs.MaxHold); err != nil {
		t.Fatal(err)
	}
	for i := range order.MaxDeferrals + 3 {
		w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
		r := run(t, w)
		st := w.Step(t, id, first)
		if r.Deferred != 1 || r.Retried+r.Failed+r.Compensated != 0 || st.FailureCount != 0 || st.Attempt != 1 {
			t.Fatalf("expiry %d while the request is held: report %+v, step attempt %d with %d failures; want the deadline moved on, nothing counted",
				i+1, r, st.Attempt, st.FailureCount)
		}
		if !strings.Contains(st.LastError, "holds requests") {
			t.Errorf("expiry %d: LastError %q, want it to say the agent holds requests", i+1, st.LastError)
		}
	}
	// The circuit closed and the agent took the request, then hung.
	if _, err := w.Clients.SQS.PurgeQueue(context.Background(), &awssqs.PurgeQueueInput{QueueUrl: aws.String(w.Stack.RequestQueues[ordertest.AgentInventory].URL)}); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	if r := run(t, w); r.Retried != 1 || r.Deferred != 0 {
		t.Fatalf("once nothing is held: report %+v, want a timeout counted", r)
	}
}

// A rollback to a build without the order's workflow version drops the
// requests its agents take (they neither call nor reply), and the
// Supervisor parks the order. When the version is back, the step is sent
// again once its deadline passes, even while its agent's queue has a
// backlog (other orders' requests), which would otherwise keep deferring
// a request that is not there; and the rollback is not counted as the
// step's failure. The soak found orders deferred for minutes this way.
func TestStepDroppedDuringARollbackIsSentAgainDespiteABacklog(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	takeRequests(t, w) // an agent of the build without version 1 took it and dropped it
	w.Clock.Advance(w.Step(t, id, first).CompleteBy.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	other := w.Workflow
	other.Version = "2"
	rolledBack := w.Supervisor(func(c *supervisor.Config) { c.Workflows = order.MustVersions(other) })
	if r, err := rolledBack.Run(context.Background()); err != nil || r.Parked != 1 {
		t.Fatalf("the build without version 1: report %+v, error %v; want the order parked", r, err)
	}

	w.Submit(t, someOrder) // another order's request waits in the same queue: a backlog
	w.Clock.Advance(supervisor.DefaultParkFor + time.Millisecond)
	run(t, w)
	st := w.Step(t, id, first)
	if st.ProcessState != order.Pending || st.FailureCount != 0 || st.Deferrals != 0 || !strings.Contains(st.LastError, "no failure counted") {
		t.Fatalf("with version 1 back: step %s, %d failures, %d deferrals, %q; want it sent again with no failure counted",
			st.ProcessState, st.FailureCount, st.Deferrals, st.LastError)
	}
}

// The same drop, when the version is back before the step's deadline
// passes, so that no Supervisor of the rolled-back build parked the
// order: the agent that dropped the request parked it (see
// agent.Service.park), and the step is sent again, no failure counted,
// despite the backlog. Before, the Supervisor deferred it while the queue
// had a backlog, and the 200-order soak lost an order to its bound.
func TestStepDroppedByAnAgentWithoutItsVersionIsSentAgainDespiteABacklog(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	other := w.Workflow
	other.Version = "2"
	build := order.MustVersions(other)
	dropper := agent.New(agent.Config{
		Name: ordertest.AgentInventory, Remote: remote.NewClient("http://127.0.0.1:9", nil, build),
		Replies: sqs.NewReplies(w.Clients.SQS, w.Stack.ResponseQueue.URL), Deadlines: w.Store.As("agent inventory"),
		Workflows: build, Now: w.Clock.Now, Log: w.Log, Metrics: metrics.Discard(),
	})
	reqs := w.Requests(t, ordertest.AgentInventory)
	if len(reqs) != 1 {
		t.Fatalf("got requests %s, want one", testenv.Describe(reqs))
	}
	if err := dropper.Process(context.Background(), reqs[0]); err != nil {
		t.Fatal(err)
	}
	if st := w.Step(t, id, first); st.Parked != w.Workflow.Version || !st.AlertPending || st.AlertKind != order.AlertVersionUnknown {
		t.Fatalf("after the drop: parked %q, alert pending %v (%s); want parked for version %s with a VersionUnknown alert",
			st.Parked, st.AlertPending, st.AlertKind, w.Workflow.Version)
	}

	// Version 1 is back; another order's request waits in the queue.
	w.Submit(t, someOrder)
	if r := run(t, w); r.Alerted != 1 {
		t.Fatalf("report %+v, want the VersionUnknown alert sent", r)
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertVersionUnknown {
		t.Errorf("alert %+v, want %s", a, order.AlertVersionUnknown)
	}
	// Past its deadline, and the lease of the alert's sending: the
	// Supervisor's next look at the order.
	sent := w.Step(t, id, first)
	next := sent.CompleteBy
	if sent.DueAt.After(next) {
		next = sent.DueAt
	}
	w.Clock.Advance(next.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	run(t, w)
	st := w.Step(t, id, first)
	if st.ProcessState != order.Pending || st.FailureCount != 0 || st.Deferrals != 0 || !strings.Contains(st.LastError, "no failure counted") {
		t.Fatalf("past the deadline: step %s, %d failures, %d deferrals, %q; want it sent again with no failure counted",
			st.ProcessState, st.FailureCount, st.Deferrals, st.LastError)
	}
}

// The agent that drops a request of a version its build lacks while
// another alert of the order waits to be sent (the Supervisor's own
// VersionUnknown, which a success's claim of the next step leaves
// pending) still marks the order parked, without a second alert: without
// the mark, the build with the version back would defer the step for
// its queue's backlog, again and again, for a request that is not there.
// Found by the 200-order soak, which lost such an order to its bound.
func TestStepDroppedWhileAnAlertWaitsIsSentAgainDespiteABacklog(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	id := w.Submit(t, someOrder)
	takeRequests(t, w)
	// A build without the order's version parked it at step 0 and
	// recorded its alert; then a build with the version applied step 0's
	// success, which claimed step 1 and cleared the park, not the alert.
	st := w.Step(t, id, first)
	if _, _, err := w.Store.Apply(ctx, order.Park(st, w.Clock.Now(), true, "not in this build", w.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	o, claimed, err := w.Store.Apply(ctx, w.Workflow.Completion(st, "res-1", nil, "s1", w.Clock.Now()).Transition(w.Clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	if claimed.Parked != "" || !claimed.AlertPending {
		t.Fatalf("after the success: parked %q, alert pending %v; want the park cleared and the alert pending", claimed.Parked, claimed.AlertPending)
	}
	other := w.Workflow
	other.Version = "2"
	build := order.MustVersions(other)
	dropper := agent.New(agent.Config{
		Name: claimed.Agent, Remote: remote.NewClient("http://127.0.0.1:9", nil, build),
		Replies: sqs.NewReplies(w.Clients.SQS, w.Stack.ResponseQueue.URL), Deadlines: w.Store.As("agent " + claimed.Agent),
		Workflows: build, Now: w.Clock.Now, Log: w.Log, Metrics: metrics.Discard(),
	})
	if err := dropper.Process(ctx, order.NewRequest(o, claimed)); err != nil {
		t.Fatal(err)
	}
	if st := w.Step(t, id, claimed.Step); st.Parked != w.Workflow.Version || st.AlertKind != order.AlertVersionUnknown {
		t.Fatalf("after the drop: parked %q, alert %s; want parked for version %s, the pending alert as it was", st.Parked, st.AlertKind, w.Workflow.Version)
	}
	// The version is back; another order's request waits in the queue.
	w.Submit(t, someOrder)
	run(t, w) // sends the pending alert
	sent := w.Step(t, id, claimed.Step)
	next := sent.CompleteBy
	if sent.DueAt.After(next) {
		next = sent.DueAt
	}
	w.Clock.Advance(next.Sub(w.Clock.Now()) + w.Workflow.SkewGrace + time.Millisecond)
	run(t, w)
	if st := w.Step(t, id, claimed.Step); st.ProcessState != order.Pending || st.FailureCount != 0 || st.Deferrals != 0 {
		t.Fatalf("past the deadline: step %s, %d failures, %d deferrals, %q; want it sent again with no failure counted",
			st.ProcessState, st.FailureCount, st.Deferrals, st.LastError)
	}
}
