package order_test

import (
	"errors"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// stored is an order of the shipped workflow as stored: its workflow
// steps, the one at active in state ps and the others as a run that got
// there leaves them, with f applied to the active record.
func stored(active int, ps order.ProcessState, f func(*order.StepState)) order.Found {
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	steps := make([]order.StepState, len(wf.Steps))
	for i, d := range wf.Steps {
		steps[i] = order.StepState{OrderID: "o-1", Step: d.Name, Index: i, Agent: d.Agent, ProcessState: order.NotStarted}
		if i < active {
			steps[i].ProcessState, steps[i].Attempt = order.Processed, 1
		}
	}
	a := &steps[active]
	a.ProcessState, a.Attempt = ps, 2
	if ps == order.Processing {
		a.LockedBy = "s1"
	}
	if f != nil {
		f(a)
	}
	return order.Found{Status: order.StatusProcessing, Version: "1", Active: active, Steps: steps}
}

func TestGuardHolds(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	processing := stored(1, order.Processing, func(s *order.StepState) { s.CompleteBy, s.DueAt = now.Add(-time.Second), now })
	fence, _ := processing.Record()
	other := func(f func(*order.StepState)) order.StepState { s := fence; f(&s); return s }
	cancelled := stored(1, order.Processing, func(s *order.StepState) { s.CancelRequested = true })
	tests := []struct {
		name  string
		guard order.Guard
		fence order.StepState
		found order.Found
		want  bool
	}{
		{"the fence as found", order.Guard{State: order.Processing}, fence, processing, true},
		{"another attempt", order.Guard{State: order.Processing}, other(func(s *order.StepState) { s.Attempt = 1 }), processing, false},
		{"another record", order.Guard{State: order.Processing}, other(func(s *order.StepState) { s.Index = 2 }), processing, false},
		{"another state", order.Guard{State: order.Pending}, fence, processing, false},
		{"an ended order", order.Guard{State: order.Processing}, fence, order.Found{Active: -1, Steps: processing.Steps}, false},
		{"deadline passed", order.Guard{State: order.Processing, Expired: true}, fence, processing, true},
		{"deadline not passed", order.Guard{State: order.Processing, Expired: true}, fence, stored(1, order.Processing, func(s *order.StepState) { s.CompleteBy = now }), false},
		{"a later deadline asked", order.Guard{State: order.Processing, EarlierThan: now}, fence, processing, true},
		{"a deadline as late", order.Guard{State: order.Processing, EarlierThan: now.Add(-time.Second)}, fence, processing, false},
		{"claimed by the writer", order.Guard{State: order.Processing, LockedBy: "s1"}, fence, processing, true},
		{"claimed by another", order.Guard{State: order.Processing, LockedBy: "s2"}, fence, processing, false},
		{"claimed, unlocked asked", order.Guard{State: order.Processing, Unlocked: true}, fence, processing, false},
		{"failures as seen", order.Guard{State: order.Processing, SameFailures: true}, fence, processing, true},
		{"failures moved on", order.Guard{State: order.Processing, SameFailures: true}, other(func(s *order.StepState) { s.FailureCount = 1 }), processing, false},
		{"heartbeats left", order.Guard{State: order.Processing, BeatsBelow: 1}, fence, processing, true},
		{"heartbeats used", order.Guard{State: order.Processing, BeatsBelow: 1}, fence, stored(1, order.Processing, func(s *order.StepState) { s.Heartbeats = 1 }), false},
		{"not cancelled asked, cancelled", order.Guard{State: order.Processing, NotCancelled: true}, fence, cancelled, false},
		{"cancelled asked, cancelled", order.Guard{State: order.Processing, Cancelled: true}, fence, cancelled, true},
		{"cancelled asked, not cancelled", order.Guard{State: order.Processing, Cancelled: true}, fence, processing, false},
		{"parked for another version", order.Guard{State: order.Processing, NotParkedFor: "2"}, fence, stored(1, order.Processing, func(s *order.StepState) { s.Parked = "1" }), true},
		{"parked for this version", order.Guard{State: order.Processing, NotParkedFor: "2"}, fence, stored(1, order.Processing, func(s *order.StepState) { s.Parked = "2" }), false},
		{"an alert waits, none asked", order.Guard{State: order.Processing, NoAlertPending: true}, fence, stored(1, order.Processing, func(s *order.StepState) { s.AlertPending = true }), false},
		{"an alert waits, the park mark alone asked", order.Guard{State: order.Processing, NotParkedFor: "2"}, fence, stored(1, order.Processing, func(s *order.StepState) { s.AlertPending = true }), true},
		{"no alert pending", order.Guard{State: order.Processing, AlertPending: true}, fence, processing, false},
		{"DueAt as found", order.Guard{State: order.Processing, SameDueAt: true}, fence, processing, true},
		{"DueAt moved", order.Guard{State: order.Processing, SameDueAt: true}, other(func(s *order.StepState) { s.DueAt = now.Add(time.Second) }), processing, false},
		{"DueAt no later", order.Guard{State: order.Processing, DueBy: now}, fence, processing, true},
		{"DueAt later", order.Guard{State: order.Processing, DueBy: now.Add(-time.Second)}, fence, processing, false},
		{"DueAt unset", order.Guard{State: order.Processing, DueBy: now.Add(-time.Second)}, fence, stored(1, order.Processing, nil), true},
		{"the records counted", order.Guard{State: order.Processing, Records: len(processing.Steps)}, fence, processing, true},
		{"an undo record appended since", order.Guard{State: order.Processing, Records: len(processing.Steps) - 1}, fence, processing, false},
		{"the undo floor moved", order.Guard{State: order.Processing, SameUndoFloor: true}, fence, stored(1, order.Processing, func(s *order.StepState) { s.UndoFloor = 3 }), false},
		{"the status asked", order.Guard{State: order.Processing, Status: order.StatusError}, fence, processing, false},
		{"the version asked, no fence", order.Guard{Version: "1"}, order.StepState{OrderID: "o-1"}, order.Found{Version: "1", Active: -1}, true},
		{"another version", order.Guard{Version: "2"}, order.StepState{OrderID: "o-1"}, processing, false},
		{"the next record NotStarted", order.Guard{State: order.Processing, Other: &order.RecordGuard{Index: 2, Step: processing.Steps[2].Step, State: order.NotStarted}}, fence, processing, true},
		{"the next record another step", order.Guard{State: order.Processing, Other: &order.RecordGuard{Index: 2, Step: "other", State: order.NotStarted}}, fence, processing, false},
		{"no such record", order.Guard{State: order.Processing, Other: &order.RecordGuard{Index: 9, State: order.NotStarted}}, fence, processing, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.guard.Holds(tt.fence, now, tt.found); got != tt.want {
				t.Errorf("holds %v, want %v", got, tt.want)
			}
		})
	}
}

// A refused success is made again only when the cancel or DueAt were
// other than its replier knew.
func TestCompletionAgain(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	found := stored(1, order.Processing, func(s *order.StepState) { s.DueAt = now.Add(time.Hour) })
	replied, _ := found.Record()
	c := wf.Completion(replied, "ref-1", nil, "s1", now)
	refused := func(f order.Found) error { return &order.StaleWrite{Found: f} }
	if again, err := c.Again(refused(found), now); err != nil || !again.MoveDue {
		t.Errorf("DueAt later than the next deadline: %+v, %v; want the write made again, setting DueAt", again, err)
	}
	cancelled := stored(1, order.Processing, func(s *order.StepState) { s.CancelRequested = true })
	if _, err := c.Again(refused(cancelled), now); !errors.Is(err, order.ErrCancelRequested) {
		t.Errorf("a cancelled order's success: %v, want ErrCancelRequested", err)
	}
	moved := stored(1, order.Pending, nil)
	if _, err := c.Again(refused(moved), now); !errors.Is(err, order.ErrStale) {
		t.Errorf("a record moved on: %v, want ErrStale", err)
	}
	boom := errors.New("throttled")
	if _, err := c.Again(boom, now); err != boom {
		t.Errorf("another error: %v, want it as it is", err)
	}
	// The last undo ends the order Cancelled or Failed, as the order is.
	undoFound := stored(1, order.Processing, func(s *order.StepState) { s.CancelRequested = true })
	undoFound.Steps[1].Undo, undoFound.Steps[1].Step = true, wf.Steps[0].Name
	lastUndo := wf.Completion(undoFound.Steps[1], "", nil, "s1", now)
	if lastUndo.Next != nil {
		t.Fatalf("the first step's undo claims %s next, want the order ended", lastUndo.Next.Name)
	}
	if again, err := lastUndo.Again(refused(undoFound), now); err != nil || !again.Cancelled {
		t.Errorf("the last undo of a cancelled order: %+v, %v; want it made again as cancelled", again, err)
	}
}

// A refused start of undoing is made again only when the cancel or the
// undo floor were other than its actor knew.
func TestUndoingAgain(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	found := stored(1, order.Processing, func(s *order.StepState) { s.CancelRequested, s.UndoFloor = true, 4 })
	st, _ := found.Record()
	st.CancelRequested, st.UndoFloor = false, 0
	refused := func(f order.Found) error { return &order.StaleWrite{Found: f} }
	again, err := wf.UndoFault(st, "declined", now).Again(refused(found), now)
	if err != nil || !again.Cancelled || again.Step.UndoFloor != 4 {
		t.Errorf("cancel and floor moved: %+v, %v; want the write made again, cancelled, on floor 4", again, err)
	}
	if _, err := wf.UndoUnclaimed(st, true, now).Again(refused(stored(1, order.Pending, func(s *order.StepState) { s.CancelRequested = true })), now); !errors.Is(err, order.ErrStale) {
		t.Errorf("a client's cancel of a cancelled order: %v, want ErrStale", err)
	}
	if _, err := wf.UndoFault(st, "declined", now).Again(refused(stored(1, order.Processing, func(s *order.StepState) { s.Attempt = 3 })), now); !errors.Is(err, order.ErrStale) {
		t.Errorf("another attempt: %v, want ErrStale", err)
	}
}

// A refused heartbeat says why: the attempt is over, a deadline as late
// is stored, or the limit is reached.
func TestHeartbeatRefused(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	found := stored(1, order.Processing, func(s *order.StepState) { s.CompleteBy, s.Heartbeats = now.Add(time.Minute), 2 })
	st, _ := found.Record()
	refused := func(f order.Found) error { return &order.StaleWrite{Found: f} }
	if got, err := order.HeartbeatRefused(order.Heartbeat(st, now.Add(30*time.Second), 5, now), refused(found)); err != nil || !got.CompleteBy.Equal(now.Add(time.Minute)) {
		t.Errorf("a deadline as late: %s, %v; want it, no error", got.CompleteBy, err)
	}
	if got, err := order.HeartbeatRefused(order.Heartbeat(st, now.Add(2*time.Minute), 2, now), refused(found)); !errors.Is(err, order.ErrHeartbeatLimit) || !got.CompleteBy.Equal(now.Add(time.Minute)) {
		t.Errorf("at the limit: %s, %v; want the stored deadline and ErrHeartbeatLimit", got.CompleteBy, err)
	}
	over := stored(1, order.Pending, nil)
	if _, err := order.HeartbeatRefused(order.Heartbeat(st, now.Add(2*time.Minute), 5, now), refused(over)); !errors.Is(err, order.ErrStale) {
		t.Errorf("the attempt over: %v, want ErrStale", err)
	}
}

// Each event that starts undoing decides its write.
func TestUndoEvents(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	found := stored(2, order.Processing, nil)
	st, _ := found.Record()
	claimBy := now.Add(wf.ClaimWithin)
	tests := []struct {
		name                string
		got                 order.Undoing
		from, ends          order.ProcessState
		expired, cancelled  bool
		cancelNow, ownsUndo bool
		undo                int
	}{
		{"a permanent fault", wf.UndoFault(st, "declined", now), order.Processing, order.Failed, false, false, false, false, 2},
		{"a success after a cancel, claimed", wf.UndoCancelledSuccess(st, "ref", nil, now).ClaimedBy("s1", now), order.Processing, order.Processed, false, true, false, true, 3},
		{"a client's cancel of a waiting step", wf.UndoUnclaimed(stored(2, order.Pending, nil).Steps[2], true, now), order.Pending, order.Cancelled, false, false, true, false, 3},
		{"the Supervisor's compensation", wf.UndoRecovery(st, order.Recovery{Action: order.Compensate, MayHaveRun: true}, now), order.Processing, order.Failed, true, false, false, false, 3},
		{"an operator's compensate", wf.UndoFromError(stored(2, order.Error, nil).Steps[2], "redriven", now), order.Error, order.Failed, false, false, false, false, 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			u := tt.got
			if u.From != tt.from || u.Ends != tt.ends || u.Expired != tt.expired || u.Cancelled != tt.cancelled || u.CancelNow != tt.cancelNow {
				t.Errorf("from %s ends %s expired %v cancelled %v cancelNow %v; want %s %s %v %v %v",
					u.From, u.Ends, u.Expired, u.Cancelled, u.CancelNow, tt.from, tt.ends, tt.expired, tt.cancelled, tt.cancelNow)
			}
			if len(u.Plan) != tt.undo || u.Steps != len(wf.Steps) {
				t.Errorf("%d undos of %d steps, want %d of %d", len(u.Plan), u.Steps, tt.undo, len(wf.Steps))
			}
			if tt.ownsUndo != (u.Owner != "") || tt.ownsUndo == u.ClaimBy.Equal(claimBy) {
				t.Errorf("owner %q, claim by %s: want the first undo claimed %v", u.Owner, u.ClaimBy, tt.ownsUndo)
			}
		})
	}
}
