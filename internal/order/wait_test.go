package order_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// withTimer is the shipped workflow with a timer step of d inserted at
// index at.
func withTimer(at int, d time.Duration) order.Workflow {
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), at, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: d}})
	return wf
}

func TestAStepThatWaitsStartsWaiting(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		at        int
		done      int // the step whose success starts the next; -1: the submission
		owner     string
		wantState order.ProcessState
		wantUntil time.Time
		wantOwner string
		wantStat  order.Status
	}{
		{"first step", 0, -1, "api", order.Waiting, now.Add(time.Hour), "", order.StatusWaiting},
		{"after a success", 1, 0, "s1", order.Waiting, now.Add(time.Hour), "", order.StatusWaiting},
		{"a step after the timer, its wait ended", 1, 1, "", order.Pending, now.Add(order.DefaultTiming.ClaimWithin), "", order.StatusProcessing},
		{"a service step after a success", 3, 0, "s1", order.Processing, now.Add(order.DefaultTiming.Allowance), "s1", order.StatusProcessing},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wf := withTimer(tt.at, time.Hour)
			if tt.done < 0 {
				states := wf.NewStates("o-1", tt.owner, now)
				first := states[0]
				if first.ProcessState != tt.wantState || !first.CompleteBy.Equal(tt.wantUntil) || first.LockedBy != tt.wantOwner ||
					first.Attempt != 1 || !first.Since.Equal(now) {
					t.Errorf("first record %+v, want %s until %s by %q on attempt 1 since now", first, tt.wantState, tt.wantUntil, tt.wantOwner)
				}
				if got := wf.StartStatus(states); got != tt.wantStat {
					t.Errorf("StartStatus() = %s, want %s", got, tt.wantStat)
				}
				return
			}
			done := order.StepState{OrderID: "o-1", Step: wf.Steps[tt.done].Name, Index: tt.done, Attempt: 1, ProcessState: order.Processing}
			c := wf.Completion(done, "ref", nil, tt.owner, now)
			if wf.Steps[tt.done].Waits() {
				done.ProcessState, done.CompleteBy = order.Waiting, now.Add(-time.Second)
				c = wf.WaitEnded(done, now)
			}
			tr := c.Transition(now)
			n := tr.Change.Next
			if n == nil {
				t.Fatalf("no next record: %+v", tr.Change)
			}
			if n.State != tt.wantState || !n.CompleteBy.Equal(tt.wantUntil) || n.Owner != tt.wantOwner || n.Step != wf.Steps[tt.done+1].Name {
				t.Errorf("next %+v, want %s of %s until %s by %q", *n, tt.wantState, wf.Steps[tt.done+1].Name, tt.wantUntil, tt.wantOwner)
			}
			if tr.Change.Status != tt.wantStat {
				t.Errorf("status %s, want %s", tr.Change.Status, tt.wantStat)
			}
			// The Supervisor's look moves with a wait or a claim window;
			// a claim's lags, as before.
			if moved := !tr.Change.DueAt.IsZero(); moved != (tt.wantState != order.Processing) {
				t.Errorf("DueAt %s, moved %t, want moved only when the next record is not claimed", tr.Change.DueAt, moved)
			}
		})
	}
}

func TestTheSupervisorEndsAWaitAtItsTime(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wf := withTimer(1, time.Hour)
	waiting := order.StepState{OrderID: "o-1", Step: "cool-off", Index: 1, Attempt: 1, ProcessState: order.Waiting, CompleteBy: now}
	tests := []struct {
		name string
		st   func(order.StepState) order.StepState
		at   time.Time
		want order.Action
	}{
		{"before its time", func(s order.StepState) order.StepState { return s }, now.Add(-time.Millisecond), order.Leave},
		{"at its time, to the millisecond", func(s order.StepState) order.StepState { return s }, now, order.Leave},
		// No skew grace: nothing is on its way.
		{"just after its time", func(s order.StepState) order.StepState { return s }, now.Add(time.Millisecond), order.EndWait},
		{"a step the workflow lacks", func(s order.StepState) order.StepState { s.Step = "gone"; return s }, now.Add(time.Second), order.Fail},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := wf.Assess(tt.st(waiting), tt.at, order.NoBacklog); got.Action != tt.want {
				t.Errorf("Assess = %s, want %s", got.Action, tt.want)
			}
		})
	}
	// The end of the wait holds only past the deadline, on the attempt
	// found, and leaves a wait that another writer ended alone.
	end := wf.WaitEnded(waiting, now.Add(time.Second)).Transition(now.Add(time.Second))
	found := func(st order.StepState) order.Found {
		steps := make([]order.StepState, len(wf.Steps))
		for i, d := range wf.Steps {
			steps[i] = order.StepState{OrderID: "o-1", Step: d.Name, Index: i, ProcessState: order.NotStarted}
		}
		steps[0].ProcessState, steps[1] = order.Processed, st
		return order.Found{Status: order.StatusWaiting, Active: 1, Steps: steps}
	}
	if !end.Holds(found(waiting)) {
		t.Error("the end of a wait found as decided does not hold")
	}
	later := waiting
	later.CompleteBy = now.Add(time.Hour)
	again := waiting
	again.Attempt = 2
	for name, st := range map[string]order.StepState{"a later deadline": later, "another attempt": again} {
		if end.Holds(found(st)) {
			t.Errorf("the end of a wait holds on %s", name)
		}
	}
}

func TestAClientsCancelStopsAWaitAtOnce(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wf := withTimer(2, time.Hour)
	waiting := order.StepState{OrderID: "o-1", Step: "cool-off", Index: 2, Attempt: 1, ProcessState: order.Waiting, CompleteBy: now.Add(time.Hour)}
	u := wf.UndoCancelledWait(waiting, now)
	tr, err := u.Transition(now)
	if err != nil {
		t.Fatal(err)
	}
	var undone []string
	for _, r := range tr.Change.Append {
		undone = append(undone, r.Step)
	}
	// The timer has nothing to undo; the two steps before it are undone
	// in reverse, before its deadline.
	if want := []string{wf.Steps[1].Name, wf.Steps[0].Name}; !slices.Equal(undone, want) {
		t.Errorf("undone %v, want %v", undone, want)
	}
	if tr.Change.State != order.Cancelled || !tr.Change.Cancel || tr.Change.Status != order.StatusCancelling || tr.Guard.Expired {
		t.Errorf("change %+v, guard %+v: want the step Cancelled, the cancel recorded, the order Cancelling, at once", tr.Change, tr.Guard)
	}
	if got := order.ClientReason(order.StatusCancelled, tr.Change.OrderReason); got != "the order was cancelled while step cool-off waited" {
		t.Errorf("client reason %q", got)
	}
}

// A step whose condition did not hold is skipped, and passed by when the
// order's work is undone: the write that starts undoing, refused for a
// plan with the skipped step, is made again without it, and the undo
// before it goes on to the next undo record the order has.
func TestASkippedStepIsNotUndone(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	wf.Steps = slices.Clone(wf.Steps)
	wf.Steps[1].When = never{}
	states := wf.NewStates("o-1", "s1", now)
	f := order.Found{Status: order.StatusPending, Active: 0, Steps: states}
	apply := func(tr order.Transition) {
		t.Helper()
		if !tr.Holds(f) {
			t.Fatalf("%s does not hold on %s", tr.Name, testenvStates(f))
		}
		f = ordertest.AppliedTo(tr, f)
	}
	// The reservation succeeds; the payment is skipped; shipping starts.
	c, err := wf.Completion(states[0], "res-1", nil, "s1", now).On(order.ExprVars{}, now)
	if err != nil || !slices.Equal(c.Skip, []int{1}) || c.NextIndex != 2 {
		t.Fatalf("completion %+v, %v: want the payment skipped, shipping next", c, err)
	}
	apply(c.Transition(now))
	// Shipping times out for good: its work may be done, so it is undone,
	// then the reservation; not the payment.
	f.Steps[2].CompleteBy = now.Add(-time.Hour)
	ship, _ := f.Record()
	u := wf.UndoRecovery(ship, order.Recovery{Action: order.Compensate, MayHaveRun: true, Reason: "timed out"}, now).ClaimedBy("s1", now)
	tr, _ := u.Transition(now)
	if tr.Holds(f) {
		t.Fatal("a plan that undoes the skipped payment holds")
	}
	if fenced := tr.Guard; func() bool { fenced.Processed = nil; return !fenced.Holds(ship, now, f) }() {
		t.Fatal("the plan is refused for another reason than the skipped payment")
	}
	u, err = u.Again(&order.StaleWrite{Found: f}, now)
	if err != nil {
		t.Fatal(err)
	}
	tr, _ = u.Transition(now)
	apply(tr)
	var undos []string
	for _, r := range f.Steps[len(wf.Steps):] {
		undos = append(undos, r.Step)
	}
	if want := []string{wf.Steps[2].Name, wf.Steps[0].Name}; !slices.Equal(undos, want) {
		t.Fatalf("undo records %v, want %v", undos, want)
	}
	// The shipping's undo succeeds: the workflow says the payment's undo
	// is next, the order has the reservation's.
	first, _ := f.Record()
	c = wf.Completion(first, "", nil, "s1", now)
	if c.Transition(now).Holds(f) {
		t.Fatal("a completion that claims the payment's undo holds")
	}
	if c, err = c.Again(&order.StaleWrite{Found: f}, now); err != nil {
		t.Fatal(err)
	}
	apply(c.Transition(now))
	last, _ := f.Record()
	if last.Step != wf.Steps[0].Name || !last.Undo || last.ProcessState != order.Processing {
		t.Fatalf("after the first undo: %+v, want the reservation's undo claimed", last)
	}
	// And its success ends the order Failed.
	apply(wf.Completion(last, "", nil, "s1", now).Transition(now))
	if f.Status != order.StatusFailed || f.Steps[1].ProcessState != order.Skipped {
		t.Errorf("at the end: %s, payment %s; want Failed, the payment Skipped", f.Status, f.Steps[1].ProcessState)
	}
}

// never is a condition that never holds.
type never struct{}

func (never) Bool(order.ExprVars) (bool, error)      { return false, nil }
func (never) Time(order.ExprVars) (time.Time, error) { return time.Time{}, nil }
func (never) Results() []string                      { return nil }
func (never) String() string                         { return "false" }

func testenvStates(f order.Found) string {
	var out []string
	for _, r := range f.Steps {
		out = append(out, fmt.Sprintf("%s:%s", r.Step, r.ProcessState))
	}
	return fmt.Sprint(out)
}
