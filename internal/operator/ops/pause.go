package ops

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// Pause pauses a service or a workflow (see order.Pause), as the operator
// r.By: checked against the stage's workflows first, so an unknown name
// or a missing reason writes nothing. A pause that is on already keeps
// its start and takes the new end and reason.
func (s *Stage) Pause(ctx context.Context, r order.PauseRequest) (order.Pause, error) {
	p, err := s.PlanPause(r)
	if err != nil {
		return order.Pause{}, err
	}
	stored, err := s.store.Pause(ctx, p)
	if err != nil {
		return order.Pause{}, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	return stored, nil
}

// PlanPause checks a pause as Pause does and returns the pause it would
// store, writing nothing: what a confirmation shows before the pause.
func (s *Stage) PlanPause(r order.PauseRequest) (order.Pause, error) {
	return order.PlanPause(r, s.workflows, s.now())
}

// Resume ends the pause of a service or workflow, as the operator by; a
// resume of something unknown, or not paused, is refused.
func (s *Stage) Resume(ctx context.Context, kind order.PauseKind, name, by, reason string) (order.Pause, error) {
	if err := order.CheckPausable(kind, name, s.workflows); err != nil {
		return order.Pause{}, err
	}
	if len(reason) > order.MaxPauseReason {
		return order.Pause{}, fmt.Errorf("resume %s %s: the reason is %d bytes; at most %d: %w", kind, name, len(reason), order.MaxPauseReason, order.ErrInvalid)
	}
	ended, err := s.store.Resume(ctx, kind, name, by, strings.TrimSpace(reason))
	if errors.Is(err, order.ErrNotPaused) {
		return order.Pause{}, fmt.Errorf("%s %s is not paused: nothing to resume: %w", kind, name, order.ErrNotPaused)
	}
	if err != nil {
		return order.Pause{}, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	return ended, nil
}

// Pauses lists the pause of every service and workflow of the stage, on
// or not (a resumed one says who resumed it), services first.
func (s *Stage) Pauses(ctx context.Context) ([]order.Pause, error) {
	ps, err := s.store.PausesOf(ctx, s.agents, s.workflows.Names())
	if err != nil {
		return nil, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	return ps, nil
}

// PauseHistory lists every pause, change and resume of a service or
// workflow the stage keeps (as long as orders' history), oldest first:
// who, when, why.
func (s *Stage) PauseHistory(ctx context.Context, kind order.PauseKind, name string) ([]order.HistoryEntry, error) {
	if err := order.CheckPausable(kind, name, s.workflows); err != nil {
		return nil, err
	}
	es, err := s.history.List(ctx, order.PauseKey(kind, name), time.Time{})
	if err != nil {
		return nil, fmt.Errorf("history of the pauses of %s %s: %w", kind, name, err)
	}
	return es, nil
}

// HeldBy is the pause an order is held by, if any: its running step's
// service paused, or, for an order accepted while its workflow was paused
// (held: order.StepState.Held), that workflow's pause.
func (s *Stage) HeldBy(ctx context.Context, v api.OrderView, held bool) (order.Pause, bool, error) {
	if v.Status.Terminal() {
		return order.Pause{}, false, nil
	}
	var services []string
	for _, st := range v.Steps {
		switch order.ProcessState(st.State) {
		case order.Pending, order.Processing:
			services = append(services, st.Agent)
		case order.Waiting:
			if st.Waiting != nil && st.Waiting.For == order.WaitPoll {
				services = append(services, st.Agent)
			}
		}
	}
	var workflows []string
	if held {
		workflows = []string{order.WorkflowOf(v.Workflow)}
	}
	if len(services) == 0 && len(workflows) == 0 {
		return order.Pause{}, false, nil // nothing of it can be paused: no read
	}
	ps, err := s.store.PausesOf(ctx, services, workflows)
	if err != nil {
		return order.Pause{}, false, fmt.Errorf("stage %s: %w", s.Name, err)
	}
	for _, p := range ps {
		if p.On() {
			return p, true, nil
		}
	}
	return order.Pause{}, false, nil
}
