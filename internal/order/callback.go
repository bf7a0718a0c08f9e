package order

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
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

// The outcomes a callback reports (Callback.Outcome).
const (
	CallbackOutcomeSucceeded = "succeeded"
	CallbackOutcomeFailed    = "failed"
	CallbackOutcomeWorking   = "working"
)

// Callback is what a service that calls back sends: its work succeeded,
// with Result, the answer a synchronous call would have returned (a JSON
// object with the reference in "id"); it failed, with Error, its reason
// for people; or it is still working, which moves the wait on.
type Callback struct {
	Outcome string          `json:"outcome"`
	Result  json.RawMessage `json:"result,omitempty"`
	Error   string          `json:"error,omitempty"`
}

// ParseCallback decodes and checks a callback's body strictly: a JSON
// object of at most MaxInputBytes with an outcome, a result object with a
// succeeded one only, an error of at most MaxReasonBytes with a failed one
// only, and nothing else. Every problem is named at once.
func ParseCallback(body []byte) (Callback, error) {
	if len(body) > MaxInputBytes {
		return Callback{}, fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), MaxInputBytes, ErrTooLarge)
	}
	var cb Callback
	if err := decodeStrict(body, &cb); err != nil {
		return cb, err
	}
	var problems []FieldError
	add := func(field, problem string) { problems = append(problems, FieldError{Field: field, Problem: problem}) }
	switch cb.Outcome {
	case CallbackOutcomeSucceeded:
		if len(cb.Result) == 0 || cb.Result[0] != '{' {
			add("result", `is required with "succeeded": the answer a synchronous call returns, a JSON object with the reference in "id"`)
		}
	case CallbackOutcomeFailed, CallbackOutcomeWorking:
		if len(cb.Result) > 0 {
			add("result", fmt.Sprintf("goes only with %q", CallbackOutcomeSucceeded))
		}
	default:
		add("outcome", fmt.Sprintf("%q: want %q, %q or %q", Cut(cb.Outcome, 64), CallbackOutcomeSucceeded, CallbackOutcomeFailed, CallbackOutcomeWorking))
	}
	switch {
	case cb.Error != "" && cb.Outcome != CallbackOutcomeFailed:
		add("error", fmt.Sprintf("goes only with %q", CallbackOutcomeFailed))
	case len(cb.Error) > MaxReasonBytes:
		add("error", fmt.Sprintf("is %d bytes, at most %d", len(cb.Error), MaxReasonBytes))
	}
	if len(problems) > 0 {
		return cb, &ValidationError{Fields: problems}
	}
	return cb, nil
}

// decodeStrict decodes body, a JSON object, into v: unknown fields, a
// second value and anything but an object are a ValidationError.
func decodeStrict(body []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: "must be a JSON object with known fields only: " + describeJSONError(err)}}}
	}
	if dec.More() {
		return &ValidationError{Fields: []FieldError{{Field: "body", Problem: "must hold one JSON object"}}}
	}
	return nil
}

// MaxReferenceChars bounds a service's id, the step's reference: it is
// kept in the order's item and history, and a client sees it when the
// step's definition sets result.shownToClient.
const MaxReferenceChars = 256

// ReferenceProblem says what is wrong with a service's id (raw as the
// answer wrote it, id decoded), in the engine's words, never quoting it:
// "" when it is at most MaxReferenceChars printable characters of valid
// UTF-8. Printable is unicode.IsPrint: letters, marks, numbers,
// punctuation, symbols and the ASCII space, so no control character (a
// line break that forges a log line), no format character (a direction
// override that disguises it) and no other space.
func ReferenceProblem(raw json.RawMessage, id string) string {
	if !utf8.Valid(raw) {
		return "has an id that is not valid UTF-8"
	}
	if n := utf8.RuneCountInString(id); n > MaxReferenceChars {
		return fmt.Sprintf("has an id of %d characters, over the %d a reference may have", n, MaxReferenceChars)
	}
	if strings.IndexFunc(id, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		return fmt.Sprintf("has an id with a character that is not printable (a control, format or separator character); a reference is at most %d printable characters", MaxReferenceChars)
	}
	return ""
}
