package order

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// StepRequest is what the Scheduler sends an agent on its request queue.
type StepRequest struct {
	OrderID string `json:"orderId"`
	// Version is the order's workflow version; the agent copies it into
	// its reply, which is applied by that version's definition.
	Version string `json:"version,omitempty"`
	Step    string `json:"step"`
	// Undo asks for the step's work to be undone. Record is the record's
	// index in the order's list of steps: an undo record's own, which
	// the reply must name; a workflow step's, which is also the
	// workflow's (requests of builds before it carried 0 there). An agent
	// whose build lacks the order's version has no workflow to look it up
	// in and parks the order by it (see StepRecord). The agent copies
	// both into its reply.
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
	// Poll, when set, asks the agent to check this status URL of the
	// step's service once (a step whose service is polled) instead of
	// calling it; see NewPollRequest.
	Poll string `json:"poll,omitempty"`
	// IdempotencyKey is the same for every attempt of a step, and for its
	// undo, so the remote service can recognise a retry of work it already
	// did (see Order.RemoteKey).
	IdempotencyKey string `json:"idempotencyKey"`
	// Workflow is the order's workflow, like Version.
	Workflow string `json:"workflow,omitempty"`
	// Input is the order's input and Results its kept step results: what
	// the step's call may carry (see Body).
	Input   json.RawMessage            `json:"input,omitempty"`
	Results map[string]json.RawMessage `json:"results,omitempty"`
	// LegacyCustomerID and LegacyLines are the order of a request sent by
	// a build from before inputs (only the shipped workflow then); Body
	// takes them as the input.
	LegacyCustomerID string `json:"customerId,omitempty"`
	LegacyLines      []Line `json:"lines,omitempty"`
}

// NewRequest is the request for a claimed step of an order.
func NewRequest(o Order, st StepState) StepRequest {
	return StepRequest{
		OrderID: o.ID, Version: o.Version, Step: st.Step, Attempt: st.Attempt, CompleteBy: st.CompleteBy,
		Undo: st.Undo, Record: st.Index,
		// A claim writes the step's Updated and its CompleteBy from the
		// same now, so their difference is the claim's allowance.
		AllowanceMs:    st.CompleteBy.Sub(st.UpdatedAt).Milliseconds(),
		IdempotencyKey: o.RemoteKey(st.Step),
		Workflow:       o.Workflow, Input: o.Input, Results: o.Results,
	}
}

// Body is the JSON object the step's remote call sends, for its call d
// (the request's step): "orderId"; with CarriesOrder, every field of the
// order's input; with earlier steps named, "results" holding each one's
// answer. A result the order does not have is left out: the step that
// should have kept it is not Processed (an undo after a failure).
func (r StepRequest) Body(d StepDef) ([]byte, error) {
	body := map[string]json.RawMessage{}
	results := map[string]json.RawMessage{}
	for _, item := range d.Carried(r.Undo) {
		if item != CarriesOrder {
			if res, ok := r.Results[item]; ok {
				results[item] = res
			}
			continue
		}
		input, err := r.input()
		if err != nil {
			return nil, err
		}
		for k, v := range input {
			body[k] = v
		}
		// The body's own fields are the engine's, whatever the input says.
		delete(body, BodyResults)
	}
	id, _ := json.Marshal(r.OrderID) // a string cannot fail
	body[BodyOrderID] = id
	if len(results) > 0 {
		raw, err := json.Marshal(results)
		if err != nil {
			return nil, fmt.Errorf("order %s: encode results: %w", r.OrderID, err)
		}
		body[BodyResults] = raw
	}
	out, err := json.Marshal(body)
	if err != nil {
		return nil, fmt.Errorf("order %s: encode request body: %w", r.OrderID, err)
	}
	return out, nil
}

// The request body's own fields; an input schema may not declare them.
const (
	BodyOrderID = "orderId"
	BodyResults = "results"
	// BodyCallback is where the call of a step whose service calls back
	// says how to call back (its URL, token and expiry).
	BodyCallback = "callback"
)

// ReservedInput are the names an order's input may not use at its top:
// the request body's own fields and the order view's (see ParseInput).
var ReservedInput = []string{BodyOrderID, BodyResults, BodyCallback, "workflow", "version", "status", "steps", "lastError", "createdAt", "updatedAt", "redrive"}

// input is the order's input as fields: Input, or a request of an older
// build's order.
func (r StepRequest) input() (map[string]json.RawMessage, error) {
	raw := r.Input
	if len(raw) == 0 {
		raw = LegacyInput(r.LegacyCustomerID, r.LegacyLines, "")
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("order %s: input is not a JSON object: %w", r.OrderID, err)
	}
	return fields, nil
}

// StepRecord is the record a request names, as far as the request alone
// says: the order, its version, the step, its record index and attempt,
// Processing. A write fenced on it changes nothing if the request is of
// an older build, whose forward steps carry index 0 (see Record).
func (r StepRequest) StepRecord() StepState {
	return StepState{OrderID: r.OrderID, Workflow: r.Workflow, Version: r.Version, Step: r.Step, Index: r.Record,
		Undo: r.Undo, Attempt: r.Attempt, ProcessState: Processing}
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
	// OutcomeAccepted: the service of a step that calls back (StepDef.
	// Callback) accepted the call (202): the step waits for its callback.
	// For a step whose service is polled (StepDef.Poll), the reply names
	// the status URL; the reply of a check says the work goes on.
	OutcomeAccepted Outcome = "accepted"
)

// StepReply is what an agent posts on the response queue.
type StepReply struct {
	OrderID  string  `json:"orderId"`
	Workflow string  `json:"workflow,omitempty"`
	Version  string  `json:"version,omitempty"`
	Step     string  `json:"step"`
	Undo     bool    `json:"undo,omitempty"`
	Record   int     `json:"record,omitempty"`
	Attempt  int     `json:"attempt"`
	Outcome  Outcome `json:"outcome"`
	// Reason explains a failure for the operator.
	Reason string `json:"reason,omitempty"`
	// Reference is the remote service's id for the work (a reservation,
	// charge or shipment), kept for operators and compensation.
	Reference string `json:"reference,omitempty"`
	// Result is the service's whole answer, when the workflow keeps the
	// step's (Workflow.Keeps).
	Result json.RawMessage `json:"result,omitempty"`
	// WorkDone says, of a failure, that the service did the work but its
	// answer breaks the contract (ErrContract): the step is undone
	// with the others.
	WorkDone bool `json:"workDone,omitempty"`
	// Poll says the reply answers a check of the step's status URL
	// (StepRequest.Poll), not its call; Checked is the URL it checked,
	// whose answer counts only while the step's status URL is still that
	// one (the service may have moved it since).
	Poll    bool   `json:"poll,omitempty"`
	Checked string `json:"checked,omitempty"`
	// StatusURL, of an accepted call or check of a step whose service is
	// polled, is where the service says how the work goes from now on;
	// RetryAfterMs is when it says to check next (0: it did not say).
	StatusURL    string `json:"statusUrl,omitempty"`
	RetryAfterMs int64  `json:"retryAfterMs,omitempty"`
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

// DecodeRequest reads a request from its queue message and checks what
// it must hold whatever its workflow: a valid order id, a step, an
// attempt, a deadline, an idempotency key, and an undo record's index.
func DecodeRequest(body []byte) (StepRequest, error) {
	var req StepRequest
	if err := json.Unmarshal(body, &req); err != nil {
		return req, fmt.Errorf("decode request: %w", err)
	}
	switch {
	case !ValidID(req.OrderID):
		return req, fmt.Errorf("request has invalid orderId %q", req.OrderID)
	case req.Step == "":
		return req, errors.New("request has no step")
	case req.Attempt < 1:
		return req, fmt.Errorf("request has invalid attempt %d", req.Attempt)
	case req.CompleteBy.IsZero():
		return req, errors.New("request has no completeBy")
	case req.IdempotencyKey == "":
		return req, errors.New("request has no idempotencyKey")
	case req.Undo && req.Record < 1:
		return req, fmt.Errorf("undo request has invalid record %d", req.Record)
	}
	return req, nil
}

// DecodeReply reads a reply from the response queue and checks what it
// must hold whatever its workflow; Check then checks it against its
// version's workflow.
func DecodeReply(body []byte) (StepReply, error) {
	var rep StepReply
	if err := json.Unmarshal(body, &rep); err != nil {
		return rep, fmt.Errorf("decode reply: %w", err)
	}
	switch {
	case !ValidID(rep.OrderID):
		return rep, fmt.Errorf("reply has invalid orderId %q", rep.OrderID)
	case rep.Attempt < 1:
		return rep, fmt.Errorf("reply has invalid attempt %d", rep.Attempt)
	case rep.Outcome != OutcomeSucceeded && rep.Outcome != OutcomeFailed && rep.Outcome != OutcomeAccepted:
		return rep, fmt.Errorf("reply has unknown outcome %q", rep.Outcome)
	}
	return rep, nil
}

// Check reports whether the reply names a step, and record, that w has.
func (r StepReply) Check(w Workflow) error {
	d, ok := w.Step(r.Step)
	if !ok {
		return fmt.Errorf("reply names step %q, which workflow version %s does not have", r.Step, w.Version)
	}
	switch {
	case r.Outcome == OutcomeAccepted && (r.Undo || !d.Async()):
		return fmt.Errorf("reply says %s of step %q was accepted, which neither calls back nor is polled", map[bool]string{true: "the undo", false: "the call"}[r.Undo], r.Step)
	case r.Poll && (r.Undo || d.Poll == nil):
		return fmt.Errorf("reply answers a check of step %q, which is not polled", r.Step)
	case r.Outcome == OutcomeAccepted && d.Poll != nil && r.StatusURL == "" && !r.Poll:
		return fmt.Errorf("reply says the call of step %q was accepted, with no status URL to poll", r.Step)
	case len(r.StatusURL) > MaxStatusURLBytes:
		return fmt.Errorf("reply names a status URL of %d bytes, over %d", len(r.StatusURL), MaxStatusURLBytes)
	}
	if _, ok := r.StepIndex(w); !ok {
		return fmt.Errorf("reply names undo record %d, which cannot be one", r.Record)
	}
	return nil
}
