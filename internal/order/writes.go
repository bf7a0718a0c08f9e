package order

import (
	"encoding/json"
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
