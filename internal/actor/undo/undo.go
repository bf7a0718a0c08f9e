// Package undo starts undoing an order's work, for every actor that does:
// the Scheduler after a permanent fault or a cancel, the Supervisor after
// a timeout, and cancel and redrive (package control). The domain decides
// the write (order.Undoing); the actor makes it and, when it is refused,
// asks the domain once more.
package undo

import (
	"context"
	"time"

	"orderly/internal/order"
)

// Store is the orders table as undo writes it.
type Store interface {
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
}

// Start makes u's write through store. When it is refused because the
// order's cancel or undo floor were other than u knew, the domain's Again
// decides the write once more, as they are now; any other refusal (the
// record moved on) is returned for the caller to read the order again.
// It returns the order as written and its first undo record (the record
// u ends when there was nothing to undo).
func Start(ctx context.Context, store Store, u order.Undoing, now time.Time) (order.Order, order.StepState, error) {
	t, err := u.Transition(now)
	if err != nil {
		return order.Order{}, order.StepState{}, err
	}
	o, first, err := store.Apply(ctx, t)
	if err == nil {
		return o, first, nil
	}
	if u, err = u.Again(err, now); err != nil {
		return o, first, err
	}
	if t, err = u.Transition(now); err != nil {
		return o, first, err
	}
	return store.Apply(ctx, t)
}
