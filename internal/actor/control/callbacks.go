package control

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"orderly/internal/actor/undo"
	"orderly/internal/callbacktoken"
	"orderly/internal/order"
)

// ByServiceCallback is the actor a history names for a callback's write.
const ByServiceCallback = "service callback"

// TakingCallbacks is s with the store a callback's write goes through,
// stamped with ByServiceCallback (dynamo.Store.As). Without it, callbacks
// are written through the cancel's store.
func (s *Service) TakingCallbacks(store Store) *Service {
	s.callbacks = store
	return s
}

// Taken is what a callback did: the order as written (or as found, for a
// duplicate or a "working" that moved nothing), and the step's deadline
// from now on while it still waits.
type Taken struct {
	Order      order.Order
	Step       string
	Attempt    int
	CompleteBy time.Time
}

// Callback takes cb, sent for the attempt c (a callback token's claim,
// opened by the caller): a success completes the step with its answer and
// the order goes on, a failure undoes the order's work (or stops it in
// Error for an operator, as the workflow says), "working" moves the wait
// on. It is taken only while the step waits on that attempt, or still
// runs it (the callback came before the agent's reply that the call was
// accepted). Nothing is written when:
//   - a success's answer breaks the step's contract: no reference, a
//     result over its bound or against its schema (order.ErrInvalid);
//   - the claim's attempt is over, or the step took another callback
//     (order.ErrNotAllowed);
//   - the wait ended (order.ErrTooLate): the call is made again, with a
//     new token, or the order went on without it.
//
// A duplicate of the callback taken (the same outcome and answer) answers
// as the first did.
func (s *Service) Callback(ctx context.Context, c callbacktoken.Claim, cb order.Callback) (Taken, error) {
	store := cmp.Or[Store](s.callbacks, s.clients)
	for range tries {
		o, steps, err := store.GetOrder(ctx, c.OrderID)
		if errors.Is(err, order.ErrNotFound) {
			// Its token is genuine: the order ended and was removed.
			return Taken{}, fmt.Errorf("order %s ended and is gone: %w", c.OrderID, order.ErrTooLate)
		}
		if err != nil {
			return Taken{}, err
		}
		wf, err := s.workflow(o)
		if err != nil {
			return Taken{}, err
		}
		if c.Record >= len(steps) || steps[c.Record].Step != c.Step || steps[c.Record].Undo {
			return Taken{}, fmt.Errorf("order %s has no step %s at record %d any more: %w", o.ID, c.Step, c.Record, order.ErrNotAllowed)
		}
		st := steps[c.Record]
		def, _ := wf.Step(st.Step)
		taken := Taken{Order: o, Step: st.Step, Attempt: st.Attempt, CompleteBy: st.CompleteBy}
		var answer order.Answer
		if cb.Outcome == order.CallbackOutcomeSucceeded {
			if answer, err = s.readAnswer(wf, def, cb.Result); err != nil {
				return taken, err
			}
		}
		now := s.now()
		if err := callbackAllowed(o, st, c, cb, answer, now); err != nil {
			if errors.Is(err, errTakenAlready) {
				return taken, nil
			}
			return taken, err
		}
		if cb.Outcome == order.CallbackOutcomeWorking {
			t, moves := wf.CallbackWorking(st, now)
			if st.ProcessState != order.Waiting || !moves {
				return taken, nil // nothing to move: the deadline is as late as it goes
			}
			if _, st, err = store.Apply(ctx, t); err == nil {
				taken.CompleteBy = st.CompleteBy
			}
		} else {
			taken.Order, err = s.endCallback(ctx, store, wf, o, st, cb, answer, now)
		}
		if errors.Is(err, order.ErrStale) {
			continue // read again: moved on meanwhile
		}
		return taken, err
	}
	return Taken{}, fmt.Errorf("callback for order %s: %w", c.OrderID, ErrBusy)
}

// endCallback writes a success or a failure callback for st, Waiting for
// it or still Processing its call.
func (s *Service) endCallback(ctx context.Context, store Store, wf order.Workflow, o order.Order, st order.StepState, cb order.Callback, answer order.Answer, now time.Time) (order.Order, error) {
	var result json.RawMessage
	if wf.Keeps(st.Step) {
		result = answer.Body
	}
	reason := order.Refused(st.Agent, cb.Error)
	waiting := st.ProcessState == order.Waiting
	switch {
	case cb.Outcome == order.CallbackOutcomeSucceeded && waiting:
		c, _ := wf.CallbackArrived(st, answer.Reference, result, now).On(o.VarsWith(st.Step, result), now) // an until it cannot decide waits its max
		o, _, err := store.Apply(ctx, c.Transition(now))
		return o, err
	case cb.Outcome == order.CallbackOutcomeSucceeded:
		c, _ := wf.Completion(st, answer.Reference, result, "", now).On(o.VarsWith(st.Step, result), now)
		o, _, err := store.Apply(ctx, c.Transition(now))
		if err != nil {
			if c, err = c.Again(err, now); errors.Is(err, order.ErrCancelRequested) {
				o, _, err = undo.Start(ctx, store, wf.UndoCancelledSuccess(st, answer.Reference, result, now), now)
				return o, err
			} else if err == nil {
				o, _, err = store.Apply(ctx, c.Transition(now))
			}
		}
		return o, err
	case wf.StopOnFailure && waiting:
		o, _, err := store.Apply(ctx, order.CallbackFailed(st, reason, now))
		return o, err
	case wf.StopOnFailure:
		o, _, err := store.Apply(ctx, order.FailReply(st, reason, now))
		return o, err
	case waiting:
		o, _, err := undo.Start(ctx, store, wf.UndoCallbackFailed(st, reason, now), now)
		return o, err
	}
	o, _, err := undo.Start(ctx, store, wf.UndoFault(st, reason, now), now)
	return o, err
}

// callbackAllowed decides whether st, the record a callback's claim c
// names, takes cb now (answer is a success's).
func callbackAllowed(o order.Order, st order.StepState, c callbacktoken.Claim, cb order.Callback, answer order.Answer, now time.Time) error {
	switch {
	case st.Attempt != c.Attempt:
		return fmt.Errorf("order %s: attempt %d of step %s is over (attempt %d is the step's now): %w", o.ID, c.Attempt, st.Step, st.Attempt, order.ErrNotAllowed)
	case st.ProcessState == order.Waiting && st.Expired(now):
		return fmt.Errorf("order %s: the wait for step %s's callback ended at %s: %w", o.ID, st.Step, st.CompleteBy.UTC().Format(time.RFC3339), order.ErrTooLate)
	case st.ProcessState == order.Waiting, st.ProcessState == order.Processing:
		return nil
	case st.ProcessState == order.Processed && cb.Outcome == order.CallbackOutcomeSucceeded && st.Reference == answer.Reference:
		return errTakenAlready
	case st.ProcessState == order.Processed && cb.Outcome == order.CallbackOutcomeWorking:
		return errTakenAlready // late news of work that is done
	}
	return fmt.Errorf("order %s: step %s is %s, its callback was taken already or is not awaited: %w", o.ID, st.Step, st.ProcessState, order.ErrNotAllowed)
}

// readAnswer checks a success callback's result (CheckCallbackResult),
// with the step's result schema compiled once.
func (s *Service) readAnswer(wf order.Workflow, def order.StepDef, raw json.RawMessage) (order.Answer, error) {
	check, err := s.schemas.check(def.ResultSchema)
	if err != nil {
		return order.Answer{}, fmt.Errorf("step %s of workflow %s version %s: its result schema: %w", def.Name, wf.Name, wf.Version, err)
	}
	return CheckCallbackResult(wf, def, raw, check)
}

// CheckCallbackResult checks a success callback's result as the agent
// checks a synchronous call's answer: a JSON object with the reference in
// "id", a kept result within the step's bound, matching its result schema
// (check, nil for none). A problem is the caller's to fix
// (order.ErrInvalid), and is said without the answer's values. It is
// exported so that `orderly conformance` holds a service's callbacks to
// the same rules.
func CheckCallbackResult(wf order.Workflow, def order.StepDef, raw json.RawMessage, check order.InputCheck) (order.Answer, error) {
	invalid := func(problem string) error {
		return &order.ValidationError{Fields: []order.FieldError{{Field: "result", Problem: problem}}}
	}
	var created struct {
		ID json.RawMessage `json:"id"`
	}
	var id string
	if json.Unmarshal(raw, &created) != nil || json.Unmarshal(created.ID, &id) != nil || id == "" {
		return order.Answer{}, invalid(`needs the reference of the work done, a string in "id"`)
	}
	if problem := order.ReferenceProblem(created.ID, id); problem != "" {
		return order.Answer{}, invalid(problem)
	}
	var compact bytes.Buffer
	_ = json.Compact(&compact, raw) // it decoded above
	if limit := def.ResultMaxBytes; wf.Keeps(def.Name) && limit > 0 && compact.Len() > limit {
		return order.Answer{}, invalid(fmt.Sprintf("is %d bytes; step %s keeps at most %d (its result.maxBytes)", compact.Len(), def.Name, limit))
	}
	if check != nil {
		var fields []string
		for _, p := range check(compact.Bytes()) {
			if !slices.Contains(fields, p.Field) {
				fields = append(fields, p.Field)
			}
		}
		if len(fields) > 0 {
			return order.Answer{}, invalid("does not match step " + def.Name + "'s result schema at " + strings.Join(fields, ", "))
		}
	}
	return order.Answer{Reference: id, Body: compact.Bytes()}, nil
}
