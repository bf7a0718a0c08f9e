package order

import (
	"encoding/json"
	"fmt"
	"time"
)

// The writes below change more than one record, and so are not a
// Transition of their own: a success that completes its record and
// claims the next or ends the order, the write that starts undoing, and
// an operator's redrive. The actors decide them; an adapter persists each
// in one conditional write.

// Completion is a successful reply applied to the state store.
type Completion struct {
	// Step is the step that succeeded, as the reply names it (OrderID,
	// Step, Index, Attempt, Undo).
	Step      StepState
	Reference string
	// Result is the step's answer, kept when its workflow says so.
	Result json.RawMessage
	// Undid is, for an undo record, the index of the workflow step whose
	// work it undid: that step becomes Undone in the same write.
	Undid int
	// Next is the record to claim at once (the next workflow step, or the
	// next undo), or nil when the order is done.
	Next *StepDef
	// NextIndex is Next's position in the order's list of steps.
	NextIndex int
	// Owner and NextCompleteBy are the claim of Next.
	Owner          string
	NextCompleteBy time.Time
	// Cancelled says, for the last undo, that the order was cancelled, so
	// it ends Cancelled rather than Failed. A write that finds otherwise
	// is made the other way.
	Cancelled bool
	// MoveDue sets the order's DueAt to NextCompleteBy. Without it DueAt
	// stays where it is (no index write), and the write holds only while
	// DueAt is no later than the next record's deadline.
	MoveDue bool
}

// Completion is the write that applies a success of done, the record
// as its reply names it, at now: the record becomes Processed and owner
// claims the next record at once (the next workflow step, or the next
// undo) with its first allowance, or, after the last, the order ends.
func (w Workflow) Completion(done StepState, reference string, result json.RawMessage, owner string, now time.Time) Completion {
	c := Completion{Step: done, Reference: reference, Result: result}
	var (
		next StepDef
		more bool
	)
	if done.Undo {
		c.Undid, _ = w.Index(done.Step)
		var k int
		if k, more = w.NextUndo(c.Undid); more {
			next = w.Steps[k]
		}
	} else {
		next, more = w.Next(done.Step)
	}
	if more {
		c.Next, c.NextIndex, c.Owner = &next, done.Index+1, owner
		c.NextCompleteBy = now.Add(next.AllowanceFor(0))
	}
	return c
}

// Guard is what c's write must hold: the replied record is still
// Processing on the reply's attempt (so stale and duplicate replies
// change nothing); a workflow step's order is not cancelled (its success
// starts undoing instead); the next record is the next step, NotStarted;
// the last undo ends the order as cancelled or not, as c says.
func (c Completion) Guard() Guard {
	g := Guard{State: Processing, NotCancelled: !c.Step.Undo}
	switch {
	case c.Next != nil:
		g.Other = &RecordGuard{Index: c.NextIndex, Step: c.Next.Name, State: NotStarted}
		if !c.MoveDue {
			g.DueBy = c.NextCompleteBy
		}
	case c.Step.Undo:
		g.Cancelled, g.NotCancelled = c.Cancelled, !c.Cancelled
	}
	return g
}

// Again decides, from err, the refusal of c's write, whether the write is
// made again another way: when only the cancel or DueAt were other than
// the replier knew (a reply carries neither). A workflow step's success
// for an order the client cancelled returns ErrCancelRequested: its
// replier starts undoing instead. Any other error is returned as it is.
func (c Completion) Again(err error, now time.Time) (Completion, error) {
	f, ok := FoundBy(err)
	fence := Guard{State: Processing}
	if !ok || !fence.Holds(c.Step, now, f) {
		return c, err
	}
	r, _ := f.Record()
	switch {
	case !c.Step.Undo && r.CancelRequested:
		return c, fmt.Errorf("complete step %s of order %s: %w", c.Step.Step, c.Step.OrderID, ErrCancelRequested)
	case c.Step.Undo && c.Next == nil && r.CancelRequested != c.Cancelled:
		c.Cancelled = r.CancelRequested
		return c, nil
	case c.Next != nil && !c.MoveDue && (Guard{Other: c.Guard().Other}).Holds(c.Step, now, f) && r.DueAt.After(c.NextCompleteBy):
		// Only DueAt was later than the new deadline (after a retry
		// with a longer allowance): the write sets it too.
		c.MoveDue = true
		return c, nil
	}
	return c, err
}

// Undoing is the write that ends the order's active workflow step and
// starts undoing the work done, in reverse: one undo record per step to
// undo is appended to the order's list of steps, after the workflow's, and
// the first becomes the active record. Undo records are then claimed,
// fenced, timed and supervised exactly like workflow steps.
type Undoing struct {
	// Step is the active workflow step as found, in state From; the write
	// is fenced on it (index, name, state, attempt).
	Step StepState
	From ProcessState
	// Expired makes the write hold only once the step's deadline has
	// passed (a Supervisor's timeout), and counts the timeout as a
	// failure.
	Expired bool
	// Ends is the step's state from now on: Failed, Processed (a success
	// that arrived after a cancel) or Cancelled (it waited for a claim;
	// Plan says whether it is undone too).
	Ends      ProcessState
	Reference string
	// Result is a success's answer, kept when its workflow says so.
	Result json.RawMessage
	Reason string
	// Steps is the number of workflow steps: the write holds only while no
	// undo record follows them yet.
	Steps int
	// Plan lists the workflow steps to undo, in the order they are undone
	// (Workflow.UndoPlan). Empty ends the order at once.
	Plan []StepDef
	// Cancelled says that the client cancelled the order, so that it ends
	// Cancelled rather than Failed; a write that finds otherwise is made
	// the other way. CancelNow is the client's cancel itself: it holds
	// only if the order was not cancelled yet, and records the cancel.
	Cancelled, CancelNow bool
	// Owner claims the first undo at once, until CompleteBy, so its request
	// can be sent right away; without an Owner the first undo is announced
	// for a Scheduler to claim by ClaimBy.
	Owner      string
	CompleteBy time.Time
	ClaimBy    time.Time
}

// Guard is what u's write must hold: the record as found, in From (past
// its deadline for a timeout, unclaimed for a Pending one); no undo
// record appended yet; the cancel as u knows it (for CancelNow, not
// cancelled yet); the undo floor as found, since the undo records'
// attempts count on from it.
func (u Undoing) Guard() Guard {
	cancelled := u.Cancelled && !u.CancelNow
	return Guard{State: u.From, Records: u.Steps, Expired: u.Expired, Unlocked: u.From == Pending,
		Cancelled: cancelled, NotCancelled: !cancelled, SameUndoFloor: true}
}

// Again decides, from err, the refusal of u's write, whether the write is
// made again: when only the cancel or the undo floor were other than its
// actor knew (a reply's record carries neither), it is made as they are.
// Any other error is returned as it is.
func (u Undoing) Again(err error, now time.Time) (Undoing, error) {
	f, ok := FoundBy(err)
	fence := u.Guard()
	fence.Cancelled, fence.NotCancelled, fence.SameUndoFloor = false, false, false
	if !ok || !fence.Holds(u.Step, now, f) {
		return u, err
	}
	r, _ := f.Record()
	if u.CancelNow && r.CancelRequested {
		return u, err
	}
	again := false
	if !u.CancelNow && r.CancelRequested != u.Cancelled {
		u.Cancelled, again = r.CancelRequested, true
	}
	if r.UndoFloor != u.Step.UndoFloor {
		u.Step.UndoFloor, again = r.UndoFloor, true
	}
	if !again {
		return u, err
	}
	return u, nil
}

// Resume is an operator's redrive of an order in Error, as found with its
// active record st (in Error): the record is claimable again with a fresh
// failure count (the old one is added to its PastFailures, so every
// timeout it had stays known), and its attempt counter goes on, so late
// replies of old attempts stay stale. Status is what the order shows while
// it runs again. With Forward, the active record is an undo that is known
// to have undone nothing (PlanRedrive): the undo records go, and the
// workflow step at Forward.Index (Failed) runs again instead.
type Resume struct {
	Step    StepState
	Status  Status
	ClaimBy time.Time
	Reason  string
	// Forward, when set, is the failed workflow step to run again; Steps
	// is then the number of workflow steps, and the records after them go.
	// UndoFloor is then the order's floor from now on
	// (RedrivePlan's): undo records appended later number their
	// attempts above the dropped ones'.
	Forward   *StepState
	Steps     int
	UndoFloor int
	// Records is how many records the order has, as found.
	Records int
}

// Guard is what r's write must hold: the record in Error as found, the
// order in Error with the records counted; to run a failed step again,
// that step Failed and the order not cancelled.
func (r Resume) Guard() Guard {
	g := Guard{State: Error, Status: StatusError, Records: r.Records}
	if r.Forward != nil {
		g.Other = &RecordGuard{Index: r.Forward.Index, State: Failed}
		g.NotCancelled = true
	}
	return g
}
