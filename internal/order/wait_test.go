package order_test

import (
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
				if got := wf.StartStatus(); got != tt.wantStat {
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
