package control

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"orderly/internal/actor/undo"
	"strings"
	"sync"
	"time"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// The actors a history names for an event's write.
const (
	ByClientEvent   = "client event"
	ByOperatorEvent = "operator event"
)

// TakingEvents is s with the stores an event's write goes through: a
// client's and an operator's, stamped with ByClientEvent and
// ByOperatorEvent (dynamo.Store.As). Without it, events are written
// through the cancel's and the redrive's stores.
func (s *Service) TakingEvents(clients, operators Store) *Service {
	s.clientEvents, s.operatorEvents = clients, operators
	return s
}

// SendEvent delivers the event name, with data (a JSON object), to order
// id: the step that waits for it is Processed with data as its result,
// and the order goes on (its next step announced for a Scheduler), or
// ends. A client (operator false) sends events to its own orders only;
// any other is order.ErrNotFound. Nothing is written when:
//   - the order's workflow has no step that waits for name, or data
//     breaks the step's schema (order.ErrInvalid, naming every problem);
//   - data is larger than the step keeps (order.ErrTooLarge);
//   - the order is not waiting for it: not there yet, cancelled, ended
//     (order.ErrNotAllowed), or the wait is over (order.ErrTooLate).
//
// The same event sent again, with the same data, once it was taken
// answers as the first did: a client that lost the answer may retry. The
// same event with other data is order.ErrNotAllowed.
func (s *Service) SendEvent(ctx context.Context, by order.Principal, operator bool, id, name string, data json.RawMessage) (order.Order, error) {
	store := cmp.Or[Store](s.clientEvents, s.clients)
	if operator {
		store = cmp.Or[Store](s.operatorEvents, s.operators)
	}
	for range tries {
		o, steps, err := store.GetOrder(ctx, id)
		if err != nil {
			return o, err
		}
		if !operator && !o.OwnedBy(by) {
			return order.Order{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
		}
		wf, err := s.workflow(o)
		if err != nil {
			return o, err
		}
		def, err := s.checkEvent(wf, name, data)
		if err != nil {
			return o, err
		}
		st, ok := recordOf(steps, def.Name)
		if !ok {
			return o, fmt.Errorf("order %s has no record of step %s: %w", id, def.Name, order.ErrNotAllowed)
		}
		now := s.now()
		if err := eventAllowed(o, st, name, data, now); err != nil {
			if errors.Is(err, errTakenAlready) {
				return o, nil
			}
			return o, err
		}
		o, err = s.takeEvent(ctx, store, wf, def, o, st, name, data, now)
		if errors.Is(err, order.ErrStale) {
			continue // read again: taken, ended, or cancelled meanwhile
		}
		return o, err
	}
	return order.Order{}, fmt.Errorf("event %s for order %s: %w", name, id, ErrBusy)
}

// takeEvent writes the event's arrival for st: the step is Processed
// with data and the order goes on, or, when the step's rejectWhen holds
// for it, the step fails (the order is compensated, or stops in Error in
// a workflow that stops on failure).
func (s *Service) takeEvent(ctx context.Context, store Store, wf order.Workflow, def order.StepDef, o order.Order, st order.StepState,
	name string, data json.RawMessage, now time.Time) (order.Order, error) {
	rejected := false
	if e := def.Wait.RejectWhen; e != nil {
		var err error
		if rejected, err = e.Bool(order.ExprVars{Input: o.Input, Results: o.Results, Event: data}); err != nil {
			// The schema took the data: what is missing is the order's.
			return o, fmt.Errorf("event %s: its rejectWhen (%s) cannot be decided for order %s: %v: %w", name, e, o.ID, err, order.ErrNotAllowed)
		}
	}
	switch {
	case !rejected:
		c, _ := wf.EventArrived(st, data, now).On(o.VarsWith(st.Step, data), now) // an until it cannot decide waits its max
		o, _, err := store.Apply(ctx, c.Transition(now))
		return o, err
	case wf.StopOnFailure:
		o, _, err := store.Apply(ctx, order.EventRejected(st, name, now))
		return o, err
	}
	o, _, err := undo.Start(ctx, store, wf.UndoEventRejected(st, name, data, now), now)
	return o, err
}

// errTakenAlready marks a second send of an event taken with the same
// data: it answers as the first did.
var errTakenAlready = errors.New("the event was taken already")

// eventAllowed decides whether st, the record of the step that waits for
// event name, takes data now.
func eventAllowed(o order.Order, st order.StepState, name string, data json.RawMessage, now time.Time) error {
	switch st.ProcessState {
	case order.Waiting:
		if st.Expired(now) {
			return fmt.Errorf("order %s: the wait for event %s ended at %s: %w", o.ID, name, st.CompleteBy.UTC().Format(time.RFC3339), order.ErrTooLate)
		}
		return nil
	case order.Processed, order.Undone:
		if len(st.Result) == 0 {
			// It went on without the event, at its timeout.
			return fmt.Errorf("order %s: the wait for event %s ended at its timeout, and the order went on without it: %w", o.ID, name, order.ErrTooLate)
		}
		if order.SameJSON(st.Result, data) {
			return errTakenAlready
		}
		return fmt.Errorf("order %s took event %s already, with other data: %w", o.ID, name, order.ErrNotAllowed)
	case order.Failed:
		switch {
		case order.SameJSON(st.Result, data):
			return errTakenAlready // rejected, as it is again
		case len(st.Result) > 0:
			return fmt.Errorf("order %s took event %s already, with other data, and rejected it: %w", o.ID, name, order.ErrNotAllowed)
		}
		return fmt.Errorf("order %s: event %s did not arrive in time, and the order failed: %w", o.ID, name, order.ErrTooLate)
	case order.NotStarted, order.Pending:
		if !o.Status.Terminal() && o.Status != order.StatusCancelling && o.Status != order.StatusCompensating {
			return fmt.Errorf("order %s is not waiting for event %s yet: it is %s; send it once its status is Waiting: %w", o.ID, name, o.Status, order.ErrNotAllowed)
		}
	}
	return fmt.Errorf("order %s is %s and waits for no event: %w", o.ID, o.Status, order.ErrNotAllowed)
}

// checkEvent returns the step of wf that waits for event name, once data
// is checked against its schema and its size.
func (s *Service) checkEvent(wf order.Workflow, name string, data json.RawMessage) (order.StepDef, error) {
	def, ok := wf.EventStep(name)
	if !ok {
		var names []string
		for _, d := range wf.Steps {
			if d.Wait != nil && d.Wait.Event != "" {
				names = append(names, d.Wait.Event)
			}
		}
		known := "none"
		if len(names) > 0 {
			known = strings.Join(names, ", ")
		}
		return def, &order.ValidationError{Fields: []order.FieldError{{Field: "event", Problem: fmt.Sprintf(
			"%q: workflow %s version %s waits for no such event (its events: %s)", name, wf.Name, wf.Version, known)}}}
	}
	if limit := cmp.Or(def.ResultMaxBytes, order.DefaultResultMaxBytes); len(data) > limit {
		return def, fmt.Errorf("event %s's data is %d bytes, step %s keeps at most %d: %w", name, len(data), def.Name, limit, order.ErrTooLarge)
	}
	check, err := s.schemas.check(def.Wait.Schema)
	if err != nil {
		return def, fmt.Errorf("event %s of workflow %s version %s: its schema: %w", name, wf.Name, wf.Version, err)
	}
	if check == nil {
		return def, nil
	}
	if problems := check(data); len(problems) > 0 {
		return def, &order.ValidationError{Fields: problems}
	}
	return def, nil
}

// recordOf returns the workflow step record of the named step.
func recordOf(steps []order.StepState, step string) (order.StepState, bool) {
	for _, st := range steps {
		if !st.Undo && st.Step == step {
			return st, true
		}
	}
	return order.StepState{}, false
}

// schemas compiles events' JSON Schemas once each.
type schemas struct {
	mu    sync.Mutex
	known map[string]order.InputCheck
}

// check returns the check of schema (nil: none, any object passes).
func (c *schemas) check(schema json.RawMessage) (order.InputCheck, error) {
	if len(schema) == 0 {
		return nil, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if f, ok := c.known[string(schema)]; ok {
		return f, nil
	}
	compiled, err := definition.CompileSchema(schema)
	if err != nil {
		return nil, err
	}
	f := func(doc []byte) []order.FieldError {
		var out []order.FieldError
		for _, p := range compiled.Check(doc) {
			out = append(out, order.FieldError{Field: cmp.Or(p.Field, "data"), Problem: p.Problem})
		}
		return out
	}
	if c.known == nil {
		c.known = map[string]order.InputCheck{}
	}
	c.known[string(schema)] = f
	return f, nil
}
