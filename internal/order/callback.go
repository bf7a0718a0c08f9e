package order

import (
	"fmt"
	"time"
)

// The writes of a step whose service calls back (StepDef.Callback): its
// call is accepted, and the service calls back later, working, failed or
// succeeded (CallbackArrived). Each is fenced on the record's attempt,
// which the callback's token names, so a callback of an earlier attempt,
// or one after the wait ended, changes nothing.

// CallAccepted is the write of the acceptance of st's call, a step
// whose service calls back, as its agent's reply names it: the record
// waits for the callback until now plus the step's timeout, claimed by
// nobody, on the same attempt; the order shows Waiting. It holds only
// while the order is not cancelled (see AcceptRefused).
func (w Workflow) CallAccepted(st StepState, now time.Time) Transition {
	def, _ := w.Step(st.Step)
	var until time.Time
	if def.Callback != nil {
		until = now.Add(def.Callback.Timeout)
	}
	return Transition{Name: "await callback", Record: st, At: now,
		Guard:  Guard{State: Processing, NotCancelled: true},
		Change: Change{State: Waiting, Await: true, CompleteBy: until, DueAt: until, Status: StatusWaiting}}
}

// AcceptRefused decides, from err, the refusal of t, a CallAccepted,
// whether the client's cancel refused it: then ErrCancelRequested, and the
// replier starts undoing instead (UndoAcceptedAfterCancel). Any other
// error is returned as it is.
func AcceptRefused(t Transition, err error) error {
	f, ok := FoundBy(err)
	fence := Guard{State: Processing}
	if !ok || !fence.Holds(t.Record, t.At, f) {
		return err
	}
	if r, _ := f.Record(); r.CancelRequested {
		return fmt.Errorf("accept the call of step %s of order %s: %w", t.Record.Step, t.Record.OrderID, ErrCancelRequested)
	}
	return err
}

// CallbackWorking is a "working" callback for st, Waiting for it: the
// wait is moved on by the step's timeout, to at most its maximum after
// the call was accepted. ok is false when the wait is at its maximum
// already: nothing is written, and the service must finish by st's
// CompleteBy.
func (w Workflow) CallbackWorking(st StepState, now time.Time) (t Transition, ok bool) {
	def, _ := w.Step(st.Step)
	if def.Callback == nil {
		return Transition{}, false
	}
	until := now.Add(def.Callback.Timeout)
	if limit := st.Since.Add(max(def.Callback.MaxTimeout, def.Callback.Timeout)); until.After(limit) {
		until = limit
	}
	if !until.After(st.CompleteBy) {
		return Transition{}, false
	}
	return Transition{Name: "callback working", Record: st, At: now,
		Guard:  Guard{State: Waiting, InTime: true, EarlierThan: until},
		Change: Change{CompleteBy: until, CountHeartbeat: true}}, true
}

// CallbackFailed is a failure callback for st inside its wait, in a
// workflow that stops on failure: the record and its order go to Error,
// with a StepFailed alert leased to the writer. Other workflows undo the
// order's work instead (UndoCallbackFailed).
func CallbackFailed(st StepState, reason string, now time.Time) Transition {
	return failure("fail", st, Guard{State: Waiting, InTime: true}, AlertStepFailed, false, reason, now)
}
