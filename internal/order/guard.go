package order

import (
	"errors"
	"time"
)

// Guard is what must still hold when a write lands. Every write but an
// operator's version move is fenced on the record its actor found (the
// fence): the order's active record is the fence's index, holds the
// fence's step, is on the fence's attempt and is in State. The other
// fields add conditions; a zero field adds none.
type Guard struct {
	// State is the fenced record's state; empty only for a write with no
	// fence (an operator's move of an order with no active record).
	State ProcessState
	// Expired: the record's deadline has passed (CompleteBy before the
	// write's time). EarlierThan: the record's deadline is before this
	// (a heartbeat only moves a deadline later). SameCompleteBy: the
	// deadline is the fence's.
	Expired     bool
	EarlierThan time.Time
	// InTime: the record's deadline has not passed (CompleteBy at or
	// after the write's time): an event is taken only inside its wait.
	InTime         bool
	SameCompleteBy bool
	// Unlocked: no Scheduler holds the record's claim; LockedBy: this
	// Scheduler does.
	Unlocked bool
	LockedBy string
	// SameFailures: the record's failure count is the fence's (a claim's
	// allowance grows with it, so a claim from a stale image claims
	// nothing).
	SameFailures bool
	// BeatsBelow: the attempt has had fewer heartbeats than this.
	BeatsBelow int
	// NotCancelled: the client has not cancelled the order; Cancelled:
	// the client has.
	NotCancelled, Cancelled bool
	// NotParkedFor: the order is not parked for this workflow version
	// already. NoAlertPending: no alert of the order waits to be sent.
	NotParkedFor   string
	NoAlertPending bool
	// AlertPending: an alert waits to be sent; SameAlertKind: of the
	// fence's kind. SameDueAt: the order's DueAt is the fence's.
	AlertPending, SameAlertKind, SameDueAt bool
	// SameStatusURL: the record's status URL is the fence's, the one a
	// check of a polled step checked (the service may have moved it).
	SameStatusURL bool
	// DueBy: the order's DueAt is unset or no later than this (a success
	// leaves DueAt as it is while it is).
	DueBy time.Time
	// Records: the order has this many records (no undo record was
	// appended since they were counted). SameUndoFloor: the order's undo
	// floor is the fence's.
	Records       int
	SameUndoFloor bool
	// Status: the order shows this status. Version: the order is on
	// this workflow version.
	Status  Status
	Version string
	// Processed: these records are Processed (the steps a compensation
	// plans to undo ran: none was skipped).
	Processed []int
	// Other: another record of the order is as named (the next record a
	// success claims is NotStarted; the failed step a redrive runs again
	// is Failed).
	Other *RecordGuard
}

// RecordGuard names the state a record other than the fenced one must be
// in; with Step, also the step it must hold.
type RecordGuard struct {
	Index int
	Step  string
	State ProcessState
}

// Found is an order's records as stored: what a guard is checked against,
// and what a refused write found.
type Found struct {
	Status  Status
	Version string
	// Active is the index of the order's active record; -1 when it has
	// none (a finished order). The order's own attributes (the cancel,
	// the park, the pending alert, DueAt, the undo floor) are on its
	// records, as StepState carries them.
	Active int
	Steps  []StepState
}

// Record returns the active record.
func (f Found) Record() (StepState, bool) {
	if f.Active < 0 || f.Active >= len(f.Steps) {
		return StepState{}, false
	}
	return f.Steps[f.Active], true
}

// Holds reports whether g, with its fence, holds for the order as found
// at the write's time: an adapter's conditional write lands exactly when
// this is true.
func (g Guard) Holds(fence StepState, at time.Time, f Found) bool {
	if g.Status != "" && f.Status != g.Status || g.Version != "" && f.Version != g.Version ||
		g.Records > 0 && len(f.Steps) != g.Records {
		return false
	}
	for _, i := range g.Processed {
		if i >= len(f.Steps) || f.Steps[i].ProcessState != Processed {
			return false
		}
	}
	if o := g.Other; o != nil && (o.Index >= len(f.Steps) || f.Steps[o.Index].ProcessState != o.State ||
		o.Step != "" && f.Steps[o.Index].Step != o.Step) {
		return false
	}
	if g.State == "" {
		return true
	}
	r, ok := f.Record()
	switch {
	case !ok || r.Index != fence.Index || r.Step != fence.Step || r.Attempt != fence.Attempt || r.ProcessState != g.State:
		return false
	case g.Expired && !r.CompleteBy.Before(at), g.InTime && r.CompleteBy.Before(at):
		return false
	case !g.EarlierThan.IsZero() && !r.CompleteBy.Before(g.EarlierThan):
		return false
	case g.SameCompleteBy && !r.CompleteBy.Equal(fence.CompleteBy):
		return false
	case g.Unlocked && r.LockedBy != "":
		return false
	case g.LockedBy != "" && r.LockedBy != g.LockedBy:
		return false
	case g.SameFailures && r.FailureCount != fence.FailureCount:
		return false
	case g.BeatsBelow > 0 && r.Heartbeats >= g.BeatsBelow:
		return false
	case g.NotCancelled && r.CancelRequested, g.Cancelled && !r.CancelRequested:
		return false
	case g.NotParkedFor != "" && r.Parked == g.NotParkedFor, g.NoAlertPending && r.AlertPending:
		return false
	case g.AlertPending && !r.AlertPending, g.SameAlertKind && r.AlertKind != fence.AlertKind:
		return false
	case g.SameDueAt && !r.DueAt.Equal(fence.DueAt):
		return false
	case g.SameStatusURL && r.StatusURL != fence.StatusURL:
		return false
	case !g.DueBy.IsZero() && !r.DueAt.IsZero() && r.DueAt.After(g.DueBy):
		return false
	case g.SameUndoFloor && r.UndoFloor != fence.UndoFloor:
		return false
	}
	return true
}

// StaleWrite is a write whose guard no longer held. It is ErrStale, and
// carries the order as the write found it, so that the domain can tell
// why (see Completion.Again, Undoing.Again, HeartbeatRefused).
type StaleWrite struct{ Found Found }

func (e *StaleWrite) Error() string { return ErrStale.Error() }
func (e *StaleWrite) Unwrap() error { return ErrStale }

// FoundBy returns the order as a refused write found it, when err is one.
func FoundBy(err error) (Found, bool) {
	var e *StaleWrite
	if !errors.As(err, &e) {
		return Found{}, false
	}
	return e.Found, true
}
