package order

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"orderly/internal/strictjson"
)

// Actions of an operator's redrive.
const (
	// RedriveRetry runs a failed workflow step again: the one in Error,
	// or, from an undo in Error, the one whose failure started the
	// undoing ("retry forward"), which PlanRedrive allows only while the
	// undoing is known to have undone nothing.
	RedriveRetry = "retry"
	// RedriveCompensate undoes the order's work: it resumes a stuck undo,
	// or starts undoing from a workflow step in Error.
	RedriveCompensate = "compensate"
)

// Redrive is the optional body of POST /orders/{id}/redrive.
type Redrive struct {
	Action string `json:"action,omitempty"`
}

// caseSensitive is the rule a field a request model does not have breaks.
const caseSensitive = "unknown field (names are case-sensitive)"

// requestRules refuse, beyond a request model's shape, what it may not
// hold: no field of a request model may be null (leave it out).
var requestRules = strictjson.Options{Repeated: "appears more than once", Null: "is null; leave an optional field out instead"}

var (
	redriveShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"action": nil}, Unknown: caseSensitive}
	emptyShape   = &strictjson.Shape{Fields: map[string]*strictjson.Shape{}, Unknown: caseSensitive}
)

// ParseRedrive decodes a redrive body as strictly as a submission. An
// empty body is an empty Redrive: the order's own default action.
func ParseRedrive(body []byte) (Redrive, error) {
	var r Redrive
	if err := parseStrict(body, redriveShape, &r); err != nil {
		return r, err
	}
	switch r.Action {
	case "", RedriveRetry, RedriveCompensate:
		return r, nil
	}
	return r, &ValidationError{Fields: []FieldError{{Field: "action",
		Problem: fmt.Sprintf("must be %q or %q", RedriveRetry, RedriveCompensate)}}}
}

// ParseEmpty accepts the body of a request that takes none: empty, or an
// empty JSON object.
func ParseEmpty(body []byte) error {
	return parseStrict(body, emptyShape, &struct{}{})
}

// parseStrict decodes an optional small JSON object body into v, refusing
// what ParseInput refuses. How large a body may be is the API's to say:
// it refuses one over its limit before parsing.
func parseStrict(body []byte, want *strictjson.Shape, v any) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if !utf8.Valid(body) {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: "is not valid UTF-8"}}}
	}
	problems, err := checkShape(body, want, requestRules)
	if err != nil {
		return err
	}
	if len(problems) > 0 {
		return &ValidationError{Fields: problems}
	}
	// The shapes leave the fields' kinds to the decoding.
	if err := json.Unmarshal(body, v); err != nil {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: describeJSONError(err)}}}
	}
	return nil
}

// RedriveMove is the write an operator's redrive makes.
type RedriveMove int

// Redrive moves.
const (
	// ResumeStuck makes the record in Error claimable again with a fresh
	// failure count: the workflow step runs again, or the undo does and
	// the undoing goes on from it.
	ResumeStuck RedriveMove = iota + 1
	// UndoFromStuck gives the workflow step in Error up and starts
	// undoing the order's work, the step's own included (it may have done
	// it).
	UndoFromStuck
	// RunForward drops a compensation stuck at its first undo, which is
	// known to have undone nothing, and runs the failed workflow step
	// again.
	RunForward
)

func (m RedriveMove) String() string {
	switch m {
	case ResumeStuck:
		return "resume"
	case UndoFromStuck:
		return "undo"
	case RunForward:
		return "forward"
	}
	return "none"
}

// RedrivePlan is what an operator's redrive does to an order in Error.
type RedrivePlan struct {
	Move RedriveMove
	// Action is the action asked for, or the stuck record's default:
	// compensate for an undo, retry for a workflow step.
	Action string
	// Stuck is the record in Error.
	Stuck StepState
	// Forward is, for RunForward, the failed workflow step that runs
	// again.
	Forward StepState
	// Status is what the order shows while it runs again (ResumeStuck and
	// RunForward; UndoFromStuck's write decides its own).
	Status Status
	// UndoFloor is, for RunForward, the order's UndoFloor from now on: at
	// least every attempt of the undo records it drops.
	UndoFloor int
	// What says what the redrive does, for the operator who confirms it.
	What string
}

// PlanRedrive decides what a redrive with action (RedriveRetry,
// RedriveCompensate, or "" for the stuck record's default) does to an order
// in status with these records, or why it is refused: order.ErrNotAllowed,
// with what to do instead. It is the one place that decides; the API, the
// CLI and the console all ask it.
//
// A retry from a stuck undo runs the order forward: the undo records are
// dropped and the failed workflow step runs again. That is refused unless
// the undo is the first and known to have undone nothing: every attempt of
// it was refused, or it was never claimed. An attempt that timed out, or
// whose request could not be confirmed sent, may have undone the work
// (the service also fences the step's key off), and running forward over
// it would leave the order looking done with that work gone.
func PlanRedrive(status Status, steps []StepState, action string) (RedrivePlan, error) {
	switch action {
	case "", RedriveRetry, RedriveCompensate:
	default:
		return RedrivePlan{}, fmt.Errorf("action %q: want %q or %q: %w", action, RedriveRetry, RedriveCompensate, ErrInvalid)
	}
	if status != StatusError {
		return RedrivePlan{}, fmt.Errorf("it is %s; only an order in Error can be redriven: %w", status, ErrNotAllowed)
	}
	p := RedrivePlan{Action: action}
	found := false
	for _, st := range steps {
		if st.ProcessState == Error {
			p.Stuck, found = st, true
			break
		}
	}
	if !found {
		return RedrivePlan{}, fmt.Errorf("it is in Error with no record in Error: %w", ErrNotAllowed)
	}
	stuck := p.Stuck
	if p.Action == "" {
		p.Action = RedriveRetry
		if stuck.Undo {
			p.Action = RedriveCompensate
		}
	}
	ends := StatusFailed
	if stuck.CancelRequested {
		ends = StatusCancelled
	}
	switch {
	case p.Action == RedriveCompensate && !stuck.Undo:
		p.Move = UndoFromStuck
		p.What = fmt.Sprintf("Step %s is given up: the work already done, its own included (it may have done it), is undone in reverse, and the order ends %s.", stuck.Step, ends)
	case stuck.Undo && p.Action == RedriveCompensate:
		p.Move, p.Status = ResumeStuck, StatusCompensating
		if stuck.CancelRequested {
			p.Status = StatusCancelling
		}
		p.What = fmt.Sprintf("The undo of %s runs again, as a new attempt, then the rest of the order's work is undone: the order ends %s.", stuck.Step, ends)
	case !stuck.Undo:
		p.Move, p.Status = ResumeStuck, StatusProcessing
		if stuck.Index == 0 {
			p.Status = StatusPending
		}
		p.What = fmt.Sprintf("Step %s runs again, as a new attempt, and the order goes on from there.", stuck.Step)
	default:
		forward, err := runForward(steps, stuck)
		if err != nil {
			return RedrivePlan{}, fmt.Errorf(`%w: redrive with "compensate" to resume undoing instead: %w`, err, ErrNotAllowed)
		}
		p.Move, p.Forward, p.Status = RunForward, forward, StatusProcessing
		if forward.Index == 0 {
			p.Status = StatusPending
		}
		p.UndoFloor = stuck.UndoFloor
		for _, st := range steps {
			if st.Undo {
				p.UndoFloor = max(p.UndoFloor, st.Attempt)
			}
		}
		p.What = fmt.Sprintf("Nothing was undone yet: the undo records are dropped and step %s runs again, as a new attempt; the order goes on from there.", forward.Step)
	}
	return p, nil
}

// runForward returns the failed workflow step a retry from the stuck undo
// runs again, or why the order must not run forward.
func runForward(steps []StepState, stuck StepState) (StepState, error) {
	n := 0
	for _, st := range steps {
		if !st.Undo {
			n++
		}
	}
	switch {
	case stuck.CancelRequested:
		return StepState{}, errors.New("the client cancelled the order, so its work can only be undone")
	case stuck.Index != n:
		var undone []string
		for _, st := range steps[n:stuck.Index] {
			undone = append(undone, st.Step)
		}
		return StepState{}, fmt.Errorf("the work of %s was already undone, so the order cannot run forward", strings.Join(undone, ", "))
	}
	if why := undoMayHaveRun(stuck); why != "" {
		return StepState{}, fmt.Errorf("the undo of %s may have been done (%s), and running the order forward would go on as if that work were still in place", stuck.Step, why)
	}
	for _, st := range steps[:n] {
		if st.ProcessState == Failed {
			return st, nil
		}
	}
	return StepState{}, errors.New("no workflow step failed, so none can run again")
}

// undoMayHaveRun says why an undo record that is not Processed may have
// done its work all the same, or "" when it cannot have: every attempt of
// it ended in a refusal (an attempt ends in a refusal, a timeout or a
// released claim; timeouts are counted across redrives), or it was never
// claimed.
func undoMayHaveRun(s StepState) string {
	var why []string
	if n := s.FailureCount + s.PastFailures; n > 0 {
		why = append(why, fmt.Sprintf("%d of its attempts timed out without an answer", n))
	}
	if s.Releases > 0 {
		why = append(why, fmt.Sprintf("%d of its requests failed to send and may have gone out all the same", s.Releases))
	}
	return strings.Join(why, "; ")
}
