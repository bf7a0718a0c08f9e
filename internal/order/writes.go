package order

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// The decisions below move an order on from one record to another, or
// end it: a success that completes its record and claims the next or ends
// the order, the write that starts undoing, and an operator's redrive.
// Each is a Transition like any other write, which an adapter persists in
// one conditional write; the actor that made it asks Again, after a
// refusal, whether to make it once more another way.

// Completion is a step's success applied to the state store: an agent's
// successful reply, or the end of a step that waits.
type Completion struct {
	// Step is the step that succeeded, as the reply names it (OrderID,
	// Step, Index, Attempt, Undo), or as the Supervisor found it.
	Step      StepState
	Reference string
	// Result is the step's answer, kept when its workflow says so.
	Result json.RawMessage
	// WaitEnded says that the step is one that waits and its wait is
	// over: the record is found Waiting past its CompleteBy, not
	// Processing.
	WaitEnded bool
	// Arrived names what the step waited for and what arrived before its
	// CompleteBy, "event" or "callback": the record is found Waiting.
	Arrived string
	// Undid is, for an undo record, the index of the workflow step whose
	// work it undid: that step becomes Undone in the same write.
	Undid int
	// Next is the record that starts (the next workflow step, or the next
	// undo), or nil when the order is done.
	Next *StepDef
	// NextIndex is Next's position in the order's list of steps.
	NextIndex int
	// NextState is how Next starts (StepDef.Start): claimed by Owner
	// (Processing), announced for a Scheduler (Pending) or Waiting;
	// NextCompleteBy is its deadline, or when its wait ends.
	NextState      ProcessState
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
	// Skip lists the workflow steps between the done one and Next whose
	// conditions do not hold (On): they are Skipped in the same write.
	Skip []int

	// w and claimer are the workflow and the would-be claimer of Next,
	// for On to decide Next again.
	w       Workflow
	claimer string
}

// Completion is the write that applies a success of done, the record
// as its reply names it, at now: the record becomes Processed and owner
// claims the next record at once (the next workflow step, or the next
// undo) with its first allowance, or, after the last, the order ends. A
// next step that waits starts waiting instead, in the same write.
func (w Workflow) Completion(done StepState, reference string, result json.RawMessage, owner string, now time.Time) Completion {
	c := Completion{Step: done, Reference: reference, Result: result, w: w, claimer: owner}
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
		c.Next, c.NextIndex = &next, done.Index+1
		c.NextState, c.NextCompleteBy = next.Start(owner, w.ClaimWithin, now)
		if c.NextState == Processing {
			c.Owner = owner
		} else {
			// Nothing else moves the Supervisor's look to a wait's end
			// or a claim window's.
			c.MoveDue = true
		}
	}
	return c
}

// On is c with what starts next decided on the order's data vars
// (Workflow.ReadsOrder): its input, and its results with the done step's
// among them. Steps whose conditions do not hold are skipped, in the
// same write, and the first that runs starts (or the order ends
// Processed); a timer until a time waits until it. The error says what
// the data could not decide (StepDef.Runs, StepDef.StartOn): the write is
// still made, as they say.
func (c Completion) On(vars ExprVars, now time.Time) (Completion, error) {
	if c.Next == nil || c.Step.Undo {
		return c, nil
	}
	skip, i, errs := c.w.firstRun(c.NextIndex, vars)
	c.Skip = skip
	if i == len(c.w.Steps) {
		c.Next, c.NextIndex, c.NextState, c.Owner, c.NextCompleteBy, c.MoveDue = nil, 0, "", "", time.Time{}, false
		return c, errors.Join(errs...)
	}
	next := c.w.Steps[i]
	state, until, err := next.StartOn(vars, c.claimer, c.w.ClaimWithin, now)
	c.Next, c.NextIndex, c.NextState, c.NextCompleteBy, c.Owner, c.MoveDue = &next, i, state, until, "", state != Processing
	if state == Processing {
		c.Owner = c.claimer
	}
	return c, errors.Join(append(errs, err)...)
}

// WaitEnded is the write that ends the wait of st, a step that waits,
// found Waiting past its CompleteBy: the step is Processed and the next
// one starts (announced for a Scheduler to claim, since the Supervisor
// that ends a wait sends no requests), or the order ends Processed.
func (w Workflow) WaitEnded(st StepState, now time.Time) Completion {
	c := w.Completion(st, "", nil, "", now)
	c.WaitEnded = true
	return c
}

// EventArrived is the write that takes the event st, a step that waits
// for it, waits for: data is its result, the step is Processed and the
// next one announced for a Scheduler (the API that takes events sends no
// requests), or the order ends Processed. It holds only inside the wait.
func (w Workflow) EventArrived(st StepState, data json.RawMessage, now time.Time) Completion {
	c := w.Completion(st, "", data, "", now)
	c.Arrived = WaitEvent
	return c
}

// CallbackArrived is the write that takes the success callback st, a
// step whose service calls back, waits for: reference and result are its
// answer, the step is Processed and the next one announced, or the order
// ends Processed. It holds only inside the wait, on the attempt the
// callback's token names.
func (w Workflow) CallbackArrived(st StepState, reference string, result json.RawMessage, now time.Time) Completion {
	c := w.Completion(st, reference, result, "", now)
	c.Arrived = WaitCallback
	return c
}

// Guard is what c's write must hold: the replied record is still
// Processing on the reply's attempt (so stale and duplicate replies
// change nothing), or, for a wait that ended, Waiting past its deadline;
// a workflow step's order is not cancelled (its success starts undoing
// instead); the next record is the next step, NotStarted; the last undo
// ends the order as cancelled or not, as c says.
func (c Completion) Guard() Guard {
	g := Guard{State: Processing, NotCancelled: !c.Step.Undo}
	if c.WaitEnded || c.Arrived != "" {
		g.State, g.Expired, g.InTime = Waiting, c.WaitEnded, c.Arrived != ""
		g.SameStatusURL = c.Arrived == WaitPoll
	}
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

// Transition is c's write at now: the replied record becomes Processed,
// with its answer and no deadline (an undo's step Undone), and either the
// next record starts (claimed, announced or Waiting) or the order ends
// (Processed after the last workflow step, Failed or Cancelled after the
// last undo).
func (c Completion) Transition(now time.Time) Transition {
	ch := Change{State: Processed, Settle: true, Reference: c.Reference, Result: c.Result, Skip: c.Skip}
	if c.Step.Undo {
		ch.Undone = []int{c.Undid}
	}
	switch {
	case c.Next != nil:
		ch.Next = &NextClaim{Index: c.NextIndex, Step: c.Next.Name, State: c.NextState, Owner: c.Owner, CompleteBy: c.NextCompleteBy}
		if !c.Step.Undo {
			ch.Status = StatusProcessing
			if c.NextState == Waiting {
				ch.Status = StatusWaiting
			}
		}
		if c.MoveDue {
			ch.DueAt = c.NextCompleteBy
		}
	case !c.Step.Undo:
		ch.End = StatusProcessed
	case c.Cancelled:
		ch.End = StatusCancelled
	default:
		ch.End = StatusFailed
	}
	name := "complete"
	switch {
	case c.WaitEnded:
		name = "end wait"
	case c.Arrived != "":
		name = "receive " + c.Arrived
	}
	return Transition{Name: name, Record: c.Step, Guard: c.Guard(), Change: ch, At: now}
}

// Again decides, from err, the refusal of c's write, whether the write is
// made again another way: when only the cancel or DueAt were other than
// the replier knew (a reply carries neither). A workflow step's success
// for an order the client cancelled returns ErrCancelRequested: its
// replier starts undoing instead. Any other error is returned as it is.
func (c Completion) Again(err error, now time.Time) (Completion, error) {
	f, ok := FoundBy(err)
	fence := Guard{State: c.Guard().State}
	if !ok || !fence.Holds(c.Step, now, f) {
		return c, err
	}
	r, _ := f.Record()
	if next, ok := c.undoneNext(f, now); ok {
		return next, nil
	}
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

// undoneNext is c, an undo's success, with the next record as the order
// has it, when that is not the one the workflow names: the undo records
// are the plan as it was made, and a step skipped (its condition did not
// hold) has none. ok is false when the next record is as c says.
func (c Completion) undoneNext(f Found, now time.Time) (Completion, bool) {
	if !c.Step.Undo || c.Next == nil {
		return c, false
	}
	if c.NextIndex >= len(f.Steps) {
		r, _ := f.Record()
		c.Next, c.NextState, c.Owner, c.NextCompleteBy, c.Cancelled = nil, "", "", time.Time{}, r.CancelRequested
		return c, true
	}
	n := f.Steps[c.NextIndex]
	def, known := c.w.Step(n.Step)
	if !n.Undo || n.ProcessState != NotStarted || n.Step == c.Next.Name || !known {
		return c, false
	}
	c.Next = &def
	c.NextState, c.NextCompleteBy, _ = def.StartOn(ExprVars{}, c.claimer, c.w.ClaimWithin, now)
	if c.NextState == Processing {
		c.Owner = c.claimer
	}
	return c, true
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
	// failure. InTime makes it hold only before (a callback's failure).
	// SameStatusURL makes it hold only while the record's status URL is
	// Step's (a polled step's check that says the work failed).
	Expired, InTime, SameStatusURL bool
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
	// (Workflow.UndoPlan), and PlanAt their indexes. Empty ends the order
	// at once. The write holds only while the steps planned before the
	// active one are Processed: a step skipped is not undone (Again).
	Plan   []StepDef
	PlanAt []int
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
	var done []int
	for _, i := range u.PlanAt {
		if i != u.Step.Index {
			done = append(done, i)
		}
	}
	return Guard{State: u.From, Records: u.Steps, Expired: u.Expired, InTime: u.InTime, SameStatusURL: u.SameStatusURL, Unlocked: u.From == Pending,
		Cancelled: cancelled, NotCancelled: !cancelled, SameUndoFloor: true, Processed: done}
}

// Transition is u's write at now: the step ends in Ends, with its answer
// or reason and no deadline, its alert answered, and the undo records
// are appended, the first claimed or announced, the order Compensating
// (Cancelling); with nothing to undo the order ends Failed (Cancelled).
// The undo records' attempts count on from the order's undo floor. Only a
// workflow step starts undoing: its undo records would be written over
// an undo record (ErrInvalid).
func (u Undoing) Transition(now time.Time) (Transition, error) {
	st := u.Step
	if st.Index < 0 || st.Index >= u.Steps {
		return Transition{}, fmt.Errorf("start undoing order %s at record %d: only one of the workflow's %d steps starts undoing: %w",
			st.OrderID, st.Index, u.Steps, ErrInvalid)
	}
	ch := Change{State: u.Ends, Settle: true, ClearAlert: true, Reference: u.Reference, Result: u.Result, Reason: u.Reason,
		Cancel: u.CancelNow, CountFailure: u.Expired, OutOfError: u.From == Error}
	if u.Reason != "" {
		ch.OrderReason = fmt.Sprintf("step %s: %s", st.Step, u.Reason)
	}
	status, final := StatusCompensating, StatusFailed
	if u.Cancelled || u.CancelNow {
		status, final = StatusCancelling, StatusCancelled
	}
	t := Transition{Name: "start undoing", Record: st, Guard: u.Guard(), At: now}
	if len(u.Plan) == 0 {
		ch.End, ch.Unannounce = final, true
		t.Change = ch
		return t, nil
	}
	// Claims add one to an attempt, as to any record.
	floor := st.UndoFloor
	for k, def := range u.Plan {
		r := StepState{OrderID: st.OrderID, Workflow: st.Workflow, Version: st.Version, Step: def.Name, Index: u.Steps + k,
			Undo: true, Agent: def.Agent, ProcessState: NotStarted, Attempt: floor, UpdatedAt: now}
		if k == 0 && u.Owner != "" {
			r.ProcessState, r.LockedBy, r.Attempt, r.CompleteBy = Processing, u.Owner, floor+1, u.CompleteBy
		} else if k == 0 {
			r.ProcessState, r.CompleteBy = Pending, u.ClaimBy
		}
		ch.Append = append(ch.Append, r)
	}
	ch.Status, ch.Watch = status, true
	if u.Owner != "" {
		ch.DueAt, ch.Unannounce = u.CompleteBy, true
	} else {
		ch.DueAt, ch.Announce = u.ClaimBy, true
	}
	t.Change = ch
	return t, nil
}

// Again decides, from err, the refusal of u's write, whether the write is
// made again: when only the cancel or the undo floor were other than its
// actor knew (a reply's record carries neither), it is made as they are.
// Any other error is returned as it is.
func (u Undoing) Again(err error, now time.Time) (Undoing, error) {
	f, ok := FoundBy(err)
	fence := u.Guard()
	fence.Cancelled, fence.NotCancelled, fence.SameUndoFloor, fence.Processed = false, false, false, nil
	if !ok || !fence.Holds(u.Step, now, f) {
		return u, err
	}
	// Steps skipped (their conditions did not hold) did no work: they
	// leave the plan.
	skipped := false
	for k := len(u.PlanAt) - 1; k >= 0; k-- {
		if i := u.PlanAt[k]; i < len(f.Steps) && f.Steps[i].ProcessState == Skipped {
			u.Plan, u.PlanAt, skipped = slices.Delete(u.Plan, k, k+1), slices.Delete(u.PlanAt, k, k+1), true
		}
	}
	if skipped && u.Owner != "" {
		u = u.ClaimedBy(u.Owner, now)
	}
	r, _ := f.Record()
	if u.CancelNow && r.CancelRequested {
		return u, err
	}
	again := skipped
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

// Transition is r's write at now: the record is Pending again, announced
// and watched, with a fresh failure count and r's reason; the order shows
// Status, out of the error index, its alert answered. A forward redrive
// drops the undo records and runs the failed workflow step instead.
func (r Resume) Transition(now time.Time) Transition {
	ch := Change{State: Pending, Fresh: true, CompleteBy: r.ClaimBy, DueAt: r.ClaimBy, Reason: r.Reason, Announce: true, Watch: true,
		Status: r.Status, OrderReason: r.Reason, ClearAlert: true, OutOfError: true}
	if r.Forward != nil {
		forward := *r.Forward
		ch.Forward = &forward
		for k := r.Steps; k < r.Records; k++ {
			ch.Drop = append(ch.Drop, k)
		}
		if r.UndoFloor > r.Step.UndoFloor {
			ch.UndoFloor = r.UndoFloor
		}
	}
	return Transition{Name: "redrive", Record: r.Step, Guard: r.Guard(), Change: ch, At: now}
}
