// Package control is what clients and operators do to an order once it
// runs: a client cancels it, an operator redrives an order in Error. Each
// reads the order, decides from its state, and makes one conditional write
// fenced on what it read; a write that finds the order moved on reads it
// again, so a cancel or a redrive racing a reply or a Supervisor is applied
// to the order as it is, or refused, never half-made.
package control

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"orderly/internal/actor/undo"
	"orderly/internal/order"
)

// Store is what control needs of the state store.
type Store interface {
	GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error)
	// Apply persists a decided transition (an *order.StaleWrite, which
	// is order.ErrStale, when its guard no longer holds) and returns the
	// order as written.
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
}

// tries bounds how often a decision is made again after the order moved on
// between its read and its write.
const tries = 5

// ErrBusy says the order kept changing under every try; the client may
// retry (the API answers 503).
var ErrBusy = errors.New("the order changed under every try")

// The actors a history names for the writes of this package: give New a
// store stamped with each (dynamo.Store.As), so an order's history tells
// a client's cancel from an operator's redrive.
const (
	ByClientCancel    = "client cancel"
	ByOperatorRedrive = "operator redrive"
)

// Service applies cancels and redrives.
type Service struct {
	clients   Store // writes a client's cancel
	operators Store // writes an operator's redrive
	// clientEvents and operatorEvents write events (TakingEvents).
	clientEvents, operatorEvents Store
	// callbacks writes services' callbacks (TakingCallbacks).
	callbacks Store
	schemas   schemas
	workflows order.Versions
	now       func() time.Time
}

// New returns a control service that writes cancels through clients and
// redrives through operators: the same table, stamped with
// ByClientCancel and ByOperatorRedrive.
func New(clients, operators Store, w order.Versions, now func() time.Time) *Service {
	return &Service{clients: clients, operators: operators, workflows: w, now: now}
}

// ErrVersionUnknown marks an order whose workflow version this build
// does not have: it waits for its version (see order.AlertVersionUnknown).
var ErrVersionUnknown = errors.New("its workflow version is not in this build")

// workflow is the definition o runs under.
func (s *Service) workflow(o order.Order) (order.Workflow, error) {
	wf, ok := s.workflows.Get(o.Workflow, o.Version)
	if !ok {
		return wf, fmt.Errorf("order %s runs under workflow version %s, which this build does not have (it has %s): deploy it back first: %w: %w",
			o.ID, order.Ref(o.Workflow, o.Version), strings.Join(s.workflows.Known(), ", "), ErrVersionUnknown, order.ErrNotAllowed)
	}
	return wf, nil
}

// Cancel cancels owner's order: a step in flight may finish or time out,
// then the work done is undone in reverse and the order ends Cancelled. A
// cancel of an order already cancelling or cancelled changes nothing; a
// cancel of an order that ended otherwise, or is undoing its work after a
// failure, is refused with order.ErrNotAllowed. An order not owner's
// (order.Order.OwnedBy) is order.ErrNotFound.
func (s *Service) Cancel(ctx context.Context, owner order.Principal, id string) (order.Order, error) {
	for range tries {
		o, steps, err := s.clients.GetOrder(ctx, id)
		if err != nil {
			return o, err
		}
		if !o.OwnedBy(owner) {
			return order.Order{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
		}
		switch o.Status {
		case order.StatusCancelling, order.StatusCancelled:
			return o, nil
		case order.StatusPending, order.StatusProcessing, order.StatusWaiting:
		default:
			return o, fmt.Errorf("order %s is %s: %s: %w", id, o.Status, whyNot(o.Status), order.ErrNotAllowed)
		}
		act, ok := active(steps)
		if !ok {
			return o, fmt.Errorf("order %s is %s with no step running: %w", id, o.Status, ErrBusy)
		}
		wf, err := s.workflow(o)
		if err != nil {
			return o, err
		}
		now := s.now()
		switch act.ProcessState {
		case order.Processing:
			o, _, err = s.clients.Apply(ctx, order.Cancel(act, now))
		case order.Waiting:
			// Nothing is in flight: the wait stops at once.
			o, _, err = undo.Start(ctx, s.clients, wf.UndoCancelledWait(act, now), now)
		default: // Pending: it does not run (again); an earlier attempt is undone
			o, _, err = undo.Start(ctx, s.clients, wf.UndoUnclaimed(act, true, now), now)
		}
		if errors.Is(err, order.ErrStale) {
			continue
		}
		return o, err
	}
	return order.Order{}, fmt.Errorf("cancel order %s: %w", id, ErrBusy)
}

func whyNot(st order.Status) string {
	switch st {
	case order.StatusProcessed:
		return "it was processed; nothing is left to cancel"
	case order.StatusFailed:
		return "it failed and its work was undone"
	case order.StatusCompensating:
		return "a step failed and its work is being undone; it ends Failed"
	case order.StatusError:
		return "it waits for an operator, who may redrive it"
	}
	return "it cannot be cancelled in this status"
}

// Redrive resumes an order in Error where it stopped, with a fresh failure
// count; the attempt counter goes on, so late replies of old attempts stay
// stale. action is order.RedriveRetry, order.RedriveCompensate or empty (a
// stuck undo is resumed, a stuck workflow step retried): order.PlanRedrive
// decides what it does. An order not in Error, or an action its state does
// not allow (a retry that would run the order forward over an undo that may
// have been done), is order.ErrNotAllowed, saying what to do instead, and
// nothing is written.
func (s *Service) Redrive(ctx context.Context, id, action string) (order.Order, error) {
	switch action {
	case "", order.RedriveRetry, order.RedriveCompensate:
	default:
		return order.Order{}, fmt.Errorf("action %q: want %q or %q: %w", action, order.RedriveRetry, order.RedriveCompensate, order.ErrInvalid)
	}
	for range tries {
		o, steps, err := s.operators.GetOrder(ctx, id)
		if err != nil {
			return o, err
		}
		p, err := order.PlanRedrive(o.Status, steps, action)
		if err != nil {
			return o, fmt.Errorf("order %s: %w", id, err)
		}
		wf, err := s.workflow(o)
		if err != nil {
			return o, err
		}
		now := s.now()
		claimBy := now.Add(wf.ClaimWithin)
		reason := order.RedriveReason(p.Action)
		switch p.Move {
		case order.UndoFromStuck:
			o, _, err = undo.Start(ctx, s.operators, wf.UndoFromError(p.Stuck, reason, now), now)
		case order.RunForward:
			forward := p.Forward
			o, _, err = s.operators.Apply(ctx, order.Resume{Step: p.Stuck, Forward: &forward, Steps: len(wf.Steps), Records: len(steps),
				UndoFloor: p.UndoFloor, Status: p.Status, ClaimBy: claimBy, Reason: reason}.Transition(now))
		default: // order.ResumeStuck
			o, _, err = s.operators.Apply(ctx, order.Resume{Step: p.Stuck, Status: p.Status, ClaimBy: claimBy, Reason: reason, Records: len(steps)}.Transition(now))
		}
		if errors.Is(err, order.ErrStale) {
			continue
		}
		return o, err
	}
	return order.Order{}, fmt.Errorf("redrive order %s: %w", id, ErrBusy)
}

// Move moves an order parked under a workflow version this build lacks
// onto version to, which it has: an operator's explicit alternative to
// deploying the missing version again. It is allowed only when every
// record of the order names a step of version to, with the same agent,
// at the same place (the workflow steps) or with an undo (the undo
// records), and both versions have as many steps: a version that changed
// timings or thresholds, say. The order then goes on under version to.
func (s *Service) Move(ctx context.Context, id, to string) (order.Order, error) {
	for range tries {
		o, steps, err := s.operators.GetOrder(ctx, id)
		if err != nil {
			return o, err
		}
		wf, ok := s.workflows.Get(o.Workflow, to)
		if !ok {
			return order.Order{}, fmt.Errorf("this build has no version %s of workflow %s (it has %s): %w", to, o.Workflow, strings.Join(s.workflows.Known(), ", "), order.ErrNotAllowed)
		}
		if _, known := s.workflows.Get(o.Workflow, o.Version); known {
			return o, fmt.Errorf("order %s runs under version %s, which this build has; only an order of a missing version is moved: %w", id, o.Version, order.ErrNotAllowed)
		}
		if err := fits(wf, steps); err != nil {
			return o, fmt.Errorf("order %s cannot move from version %s to %s: %w: %w", id, o.Version, to, err, order.ErrNotAllowed)
		}
		var active *order.StepState
		for i := range steps {
			if ps := steps[i].ProcessState; ps == order.Pending || ps == order.Processing || ps == order.Waiting || ps == order.Error {
				active = &steps[i]
				break
			}
		}
		o, _, err = s.operators.Apply(ctx, order.MoveVersion(o, active, to, s.now()))
		if errors.Is(err, order.ErrStale) {
			continue
		}
		return o, err
	}
	return order.Order{}, fmt.Errorf("move order %s: %w", id, ErrBusy)
}

// fits reports why an order's records do not fit a workflow version.
func fits(wf order.Workflow, steps []order.StepState) error {
	forward := 0
	for k, st := range steps {
		if st.Undo {
			def, ok := wf.Step(st.Step)
			if !ok || def.Undo == "" || def.Agent != st.Agent {
				return fmt.Errorf("undo record %d undoes %s, which version %s cannot undo with agent %s", st.Index, st.Step, wf.Version, st.Agent)
			}
			// Each undo's success claims the next undo record by the
			// version's plan: the records from the running undo on must be
			// that plan, or the compensation would wait for a record that
			// is not there. Undos already done claim nothing any more.
			if st.ProcessState == order.Processed {
				continue
			}
			i, _ := wf.Index(st.Step)
			next, more := wf.NextUndo(i)
			switch {
			case k+1 < len(steps) && steps[k+1].Undo && (!more || wf.Steps[next].Name != steps[k+1].Step):
				return fmt.Errorf("undo record %d undoes %s, then %s; version %s undoes %s next", st.Index, st.Step, steps[k+1].Step, wf.Version, nextName(wf, next, more))
			case (k+1 == len(steps) || !steps[k+1].Undo) && more:
				return fmt.Errorf("undo record %d undoes %s last; version %s would undo %s after it, which the order has no record for", st.Index, st.Step, wf.Version, wf.Steps[next].Name)
			}
			continue
		}
		if st.Index >= len(wf.Steps) || wf.Steps[st.Index].Name != st.Step || wf.Steps[st.Index].Agent != st.Agent {
			return fmt.Errorf("step %d is %s (agent %s), which version %s does not have there", st.Index, st.Step, st.Agent, wf.Version)
		}
		if st.ProcessState == order.Waiting && wf.Steps[st.Index].WaitKind() == "" {
			// Its wait would be ended by a version that does not wait there.
			return fmt.Errorf("step %d, %s, waits; version %s's step %s does not", st.Index, st.Step, wf.Version, st.Step)
		}
		forward++
	}
	if forward != len(wf.Steps) {
		return fmt.Errorf("it has %d steps, version %s has %d", forward, wf.Version, len(wf.Steps))
	}
	return nil
}

// nextName names the step undone next, or says there is none.
func nextName(wf order.Workflow, next int, more bool) string {
	if !more {
		return "nothing"
	}
	return wf.Steps[next].Name
}

// active returns the order's running workflow step: Pending or Processing.
func active(steps []order.StepState) (order.StepState, bool) {
	for _, st := range steps {
		if !st.Undo && (st.ProcessState == order.Pending || st.ProcessState == order.Processing || st.ProcessState == order.Waiting) {
			return st, true
		}
	}
	return order.StepState{}, false
}
