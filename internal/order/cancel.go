package order

import "fmt"

// Cancellation is the decision about a cancelled order's workflow step
// that waits for a claim (Pending): it is not claimed (again) and ends
// Cancelled, and the work of the steps before it is undone in reverse.
type Cancellation struct {
	// MayHaveRun says that the step is undone too, first: an attempt of
	// it was claimed before (it timed out, its claim was released, or an
	// operator redrove it), and that attempt's request may have done the
	// work, or may still do it, whatever became of its reply.
	MayHaveRun bool
	// Reason explains the decision, for the step's LastError.
	Reason string
}

// CancelUnclaimed decides about a cancelled order's workflow step that waits
// for a claim. Attempt counts a workflow step's claims (an undo record's
// count on from UndoFloor), so only a step on attempt 0 never ran. Any
// other is undone: its undo reverses the work done under the step's
// idempotency key, or does nothing when there was none, and fences the key
// off against a request still on its way.
func CancelUnclaimed(s StepState) Cancellation {
	if s.Attempt == 0 {
		return Cancellation{Reason: cancelledUnclaimed}
	}
	return Cancellation{MayHaveRun: true, Reason: fmt.Sprintf(
		cancelledReclaim+"attempt %d may have done its work, so it is undone too", s.Attempt)}
}
