package order

import (
	"encoding/json"
	"time"
)

// The events that start undoing an order's work, each deciding its
// Undoing write from the record as found. The first undo is announced
// for a Scheduler to claim within ClaimWithin, unless the writer claims
// it itself (Undoing.ClaimedBy); with nothing to undo the write ends the
// order.

// UndoFault is a workflow step's permanent fault, which did no work: the
// step ends Failed and the steps before it are undone.
func (w Workflow) UndoFault(st StepState, reason string, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Processing, Ends: Failed, Reason: reason}, false, now)
}

// UndoCancelledSuccess is a workflow step's success that arrived after
// the client's cancel: the step ends Processed with its reference and
// result, and its own work is undone first, then the rest.
func (w Workflow) UndoCancelledSuccess(st StepState, reference string, result json.RawMessage, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Processing, Ends: Processed, Reference: reference, Result: result, Cancelled: true}, true, now)
}

// UndoUnclaimed is a cancelled order's workflow step that waits for a claim
// (Pending): it does not run (again) and ends Cancelled, and an earlier
// attempt's work is undone with the rest (see CancelUnclaimed). With
// cancelNow the write is the client's cancel itself, which holds only
// while the order is not cancelled yet.
func (w Workflow) UndoUnclaimed(st StepState, cancelNow bool, now time.Time) Undoing {
	c := CancelUnclaimed(st)
	return w.undoing(Undoing{Step: st, From: Pending, Ends: Cancelled, Reason: c.Reason, Cancelled: !cancelNow, CancelNow: cancelNow}, c.MayHaveRun, now)
}

// UndoCancelledWait is a client's cancel of an order whose active
// workflow step waits (Waiting): the wait stops at once (nothing is in
// flight), the step ends Cancelled, and the work of the steps before it is
// undone in reverse. It holds only while the order is not cancelled yet.
//
// A step whose service calls back may be doing its work meanwhile: it is
// undone too, first (its undo call, with the step's Idempotency-Key, is
// how the service hears of the cancel).
func (w Workflow) UndoCancelledWait(st StepState, now time.Time) Undoing {
	def, _ := w.Step(st.Step)
	return w.undoing(Undoing{Step: st, From: Waiting, Ends: Cancelled, Reason: cancelledWait, CancelNow: true}, def.Async(), now)
}

// UndoAcceptedAfterCancel is the call of a step whose service calls back,
// accepted after the client's cancel: the step ends Cancelled, and its
// work, which the service may be doing, is undone first, then the rest.
func (w Workflow) UndoAcceptedAfterCancel(st StepState, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Processing, Ends: Cancelled, Reason: cancelledAccepted, Cancelled: true}, true, now)
}

// UndoCallbackFailed is the failure callback of st, a step whose service
// calls back, inside its wait: a permanent fault, which did no work (the
// service says so), so the steps before it are undone.
func (w Workflow) UndoCallbackFailed(st StepState, reason string, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Waiting, InTime: true, Ends: Failed, Reason: reason}, false, now)
}

// UndoEventRejected is an event, taken inside the wait of st, for which
// the step's RejectWhen holds: the step ends Failed with the event's data
// as its result (who rejected what stays with the order), and the steps
// before it are undone (it did no work).
func (w Workflow) UndoEventRejected(st StepState, event string, data json.RawMessage, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Waiting, InTime: true, Ends: Failed, Result: data, Reason: EventRejectedReason(event)}, false, now)
}

// EventRejected is the same event in a workflow that stops on failure:
// the record and its order go to Error, with a StepFailed alert leased to
// the writer.
func EventRejected(st StepState, event string, now time.Time) Transition {
	return failure("fail", st, Guard{State: Waiting, InTime: true}, AlertStepFailed, false, EventRejectedReason(event), now)
}

// EventRejectedReason is the reason of a step whose event was rejected.
func EventRejectedReason(event string) string {
	return eventRejected + event + " was rejected (its rejectWhen holds)"
}

// UndoRecovery is the Supervisor's Compensate decision about the active
// record st: a Processing record past its deadline ends Failed (the
// timeout counted, like one that is retried); a cancelled order's Pending
// record ends Cancelled. rec says whether the record's own work is undone.
func (w Workflow) UndoRecovery(st StepState, rec Recovery, now time.Time) Undoing {
	u := Undoing{Step: st, From: st.ProcessState, Ends: Failed, Reason: rec.Reason, Cancelled: st.CancelRequested}
	if st.ProcessState == Pending {
		u.Ends = Cancelled
	} else {
		u.Expired = true
	}
	return w.undoing(u, rec.MayHaveRun, now)
}

// UndoFromError is an operator's compensate of a workflow step in Error:
// it ends Failed, and its own work is undone too, since it may have done
// it (it timed out, or its answer was unusable).
func (w Workflow) UndoFromError(st StepState, reason string, now time.Time) Undoing {
	return w.undoing(Undoing{Step: st, From: Error, Ends: Failed, Reason: reason, Cancelled: st.CancelRequested}, true, now)
}

func (w Workflow) undoing(u Undoing, mayHaveRun bool, now time.Time) Undoing {
	u.Steps = len(w.Steps)
	u.PlanAt = w.UndoPlan(u.Step.Index, mayHaveRun)
	u.Plan = w.UndoSteps(u.Step.Index, mayHaveRun)
	if len(u.Plan) > 0 {
		u.ClaimBy = now.Add(w.ClaimWithin)
	}
	return u
}

// ClaimedBy is u with its first undo claimed by owner at now, for its
// first allowance, so that its request is sent at once.
func (u Undoing) ClaimedBy(owner string, now time.Time) Undoing {
	if len(u.Plan) > 0 {
		u.Owner, u.CompleteBy, u.ClaimBy = owner, now.Add(u.Plan[0].AllowanceFor(0)), time.Time{}
	}
	return u
}
