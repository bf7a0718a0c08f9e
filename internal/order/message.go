package order

import "time"

// StepRequest is what the Scheduler sends an agent on its request queue.
type StepRequest struct {
	OrderID string `json:"orderId"`
	// Version is the order's workflow version; the agent copies it into
	// its reply, which is applied by that version's definition.
	Version string `json:"version,omitempty"`
	Step    string `json:"step"`
	// Undo asks for the step's work to be undone; Record is then the undo
	// record's index in the order's list of steps. The agent copies both
	// into its reply.
	Undo   bool `json:"undo,omitempty"`
	Record int  `json:"record,omitempty"`
	// Attempt is the fencing token; the agent copies it into its reply.
	Attempt    int       `json:"attempt"`
	CompleteBy time.Time `json:"completeBy"`
	// AllowanceMs is the attempt's window in milliseconds: an agent that
	// starts a request late, or heartbeats on a long call, moves
	// CompleteBy to that far after now. Zero (a request from before it
	// existed) means the agent keeps CompleteBy as it is.
	AllowanceMs int64 `json:"allowanceMs,omitempty"`
	// IdempotencyKey is the same for every attempt of a step, and for its
	// undo, so the remote service can recognise a retry of work it already
	// did (see Order.RemoteKey).
	IdempotencyKey string `json:"idempotencyKey"`
	CustomerID     string `json:"customerId"`
	Lines          []Line `json:"lines"`
}

// NewRequest is the request for a claimed step of an order.
func NewRequest(o Order, st StepState) StepRequest {
	return StepRequest{
		OrderID: o.ID, Version: o.Version, Step: st.Step, Attempt: st.Attempt, CompleteBy: st.CompleteBy,
		Undo: st.Undo, Record: record(st),
		// A claim writes the step's Updated and its CompleteBy from the
		// same now, so their difference is the claim's allowance.
		AllowanceMs:    st.CompleteBy.Sub(st.UpdatedAt).Milliseconds(),
		IdempotencyKey: o.RemoteKey(st.Step),
		CustomerID:     o.CustomerID, Lines: o.Lines,
	}
}

// record is the index a request or reply carries: an undo record's;
// a workflow step's is the workflow's, so it is left out.
func record(st StepState) int {
	if st.Undo {
		return st.Index
	}
	return 0
}

// StepIndex returns the index, in the order's list of steps, of the record
// a request names: an undo record's own, a workflow step's from w.
func (r StepRequest) StepIndex(w Workflow) (int, bool) {
	return w.recordIndex(r.Step, r.Undo, r.Record)
}

// StepIndex: see StepRequest.StepIndex.
func (r StepReply) StepIndex(w Workflow) (int, bool) {
	return w.recordIndex(r.Step, r.Undo, r.Record)
}

func (w Workflow) recordIndex(step string, undo bool, record int) (int, bool) {
	i, ok := w.Index(step)
	if !ok {
		return 0, false
	}
	if undo {
		// Undo records follow the workflow's steps.
		return record, record >= len(w.Steps)
	}
	return i, true
}

// Allowance is the attempt's window (see AllowanceMs).
func (r StepRequest) Allowance() time.Duration {
	return time.Duration(r.AllowanceMs) * time.Millisecond
}

// Outcome is the result an agent reports.
type Outcome string

// Outcomes. A timed-out agent sends no reply at all.
const (
	OutcomeSucceeded Outcome = "succeeded"
	OutcomeFailed    Outcome = "failed" // a permanent fault: retrying cannot help
)

// StepReply is what an agent posts on the response queue.
type StepReply struct {
	OrderID string  `json:"orderId"`
	Version string  `json:"version,omitempty"`
	Step    string  `json:"step"`
	Undo    bool    `json:"undo,omitempty"`
	Record  int     `json:"record,omitempty"`
	Attempt int     `json:"attempt"`
	Outcome Outcome `json:"outcome"`
	// Reason explains a failure for the operator.
	Reason string `json:"reason,omitempty"`
	// Reference is the remote service's id for the work (a reservation,
	// charge or shipment), kept for operators and compensation.
	Reference string `json:"reference,omitempty"`
}

// AlertKind says why operators are alerted.
type AlertKind string

// Alert kinds.
const (
	AlertStepFailed    AlertKind = "StepFailed"    // permanent fault reported by an agent
	AlertStepTimedOut  AlertKind = "StepTimedOut"  // failure threshold of timeouts reached
	AlertStepUnclaimed AlertKind = "StepUnclaimed" // Pending and no Scheduler claims it
	AlertStepAbandoned AlertKind = "StepAbandoned" // never claimed; the order was given up
	AlertUndoFailed    AlertKind = "UndoFailed"    // an undo refused permanently: its work is still in place
	AlertUndoTimedOut  AlertKind = "UndoTimedOut"  // an undo timed out FailureThreshold times
	// AlertVersionUnknown: the order's workflow version is not in the
	// running build (a rollback); the order waits for it, alerted once.
	AlertVersionUnknown AlertKind = "VersionUnknown"
	// AlertItemUnreadable: an order item in the due index cannot be read
	// by the running build; the Supervisor skips it, alerted once per
	// version of the item. Its Step and Attempt are empty.
	AlertItemUnreadable AlertKind = "ItemUnreadable"
)

// AlertLease is how long the actor that records an alert has to send it
// before a Supervisor does: a failure write puts the order in the due index
// this far ahead, and a Supervisor that finds an unsent alert moves it this
// far ahead before it sends, so an alert is sent twice only after a crash or
// a send slower than the lease.
const AlertLease = 30 * time.Second

// Alert is what operators receive through SNS.
type Alert struct {
	Kind         AlertKind `json:"kind"`
	OrderID      string    `json:"orderId"`
	Step         string    `json:"step"`
	Attempt      int       `json:"attempt"`
	FailureCount int       `json:"failureCount"`
	Reason       string    `json:"reason"`
	// Undo is set when the stuck record is an undo of Step; Undone lists
	// the steps whose work was already undone.
	Undo   bool      `json:"undo,omitempty"`
	Undone []string  `json:"undone,omitempty"`
	At     time.Time `json:"at"`
}
