package undo_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"orderly/internal/actor/undo"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// refusing is a store that refuses its first writes with the errors it
// is given, in turn, and records every transition it is asked to apply.
type refusing struct {
	errs    []error
	applied []order.Transition
}

func (s *refusing) Apply(_ context.Context, t order.Transition) (order.Order, order.StepState, error) {
	s.applied = append(s.applied, t)
	if len(s.errs) > 0 {
		err := s.errs[0]
		s.errs = s.errs[1:]
		if err != nil {
			return order.Order{}, order.StepState{}, err
		}
	}
	return order.Order{ID: t.Record.OrderID, Status: order.StatusCompensating}, t.Record, nil
}

func TestStart(t *testing.T) {
	now := time.Now()
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	// The order's second step failed permanently: its first undo runs.
	steps := make([]order.StepState, len(wf.Steps))
	for i, d := range wf.Steps {
		steps[i] = order.StepState{OrderID: "o-1", Step: d.Name, Index: i, Agent: d.Agent, ProcessState: order.NotStarted}
	}
	steps[0].ProcessState, steps[0].Attempt = order.Processed, 1
	steps[1].ProcessState, steps[1].Attempt, steps[1].LockedBy = order.Processing, 1, "s1"
	u := wf.UndoFault(steps[1], "card declined", now)
	// found is the order as a refused write found it: the client
	// cancelled it meanwhile, or its record moved on.
	found := func(change func(*order.StepState)) error {
		recs := append([]order.StepState(nil), steps...)
		change(&recs[1])
		return &order.StaleWrite{Found: order.Found{Status: order.StatusProcessing, Active: 1, Steps: recs}}
	}
	cancelled := found(func(s *order.StepState) { s.CancelRequested = true })
	movedOn := found(func(s *order.StepState) { s.Attempt = 2 })
	throttled := errors.New("throttled")
	tests := []struct {
		name       string
		errs       []error
		wantWrites int
		wantErr    error // nil: none
	}{
		{"lands at once", nil, 1, nil},
		{"a cancel meanwhile: decided again and made", []error{cancelled}, 2, nil},
		{"the record moved on: not made again", []error{movedOn}, 1, order.ErrStale},
		{"refused twice: the second refusal is returned", []error{cancelled, cancelled}, 2, order.ErrStale},
		{"the store fails: returned as it is", []error{throttled}, 1, throttled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &refusing{errs: tt.errs}
			_, _, err := undo.Start(context.Background(), store, u, now)
			if len(store.applied) != tt.wantWrites {
				t.Errorf("got %d writes, want %d", len(store.applied), tt.wantWrites)
			}
			if (tt.wantErr == nil) != (err == nil) || !errors.Is(err, tt.wantErr) {
				t.Errorf("got %v, want %v", err, tt.wantErr)
			}
			if tt.wantWrites == 2 && len(store.applied) == 2 {
				// The second write knows the cancel: the order ends Cancelled, not Failed.
				if first, again := store.applied[0].Guard, store.applied[1].Guard; reflect.DeepEqual(first, again) {
					t.Errorf("the write made again has the first's guard %+v: the domain was not asked again", first)
				}
			}
		})
	}
}
