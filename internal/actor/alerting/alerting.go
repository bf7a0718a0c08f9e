// Package alerting tells operators about failed steps exactly as the state
// store recorded them. A failed step is written with AlertPending set, the
// alert is published, and only then is the flag cleared, so an alert lost
// to a crash between the two is re-sent by the next Supervisor run.
package alerting

import (
	"context"
	"errors"
	"fmt"
	"time"

	"orderly/internal/order"
)

// Publisher sends an alert to operators.
type Publisher interface {
	Alert(ctx context.Context, a order.Alert) error
}

// Store persists order.ClearAlert, which clears a recorded alert once
// it was sent (order.ErrStale when it was cleared already or the record
// moved on).
type Store interface {
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
}

// Notifier publishes recorded alerts and clears them.
type Notifier struct {
	publisher Publisher
	store     Store
	now       func() time.Time
}

// NewNotifier returns a notifier.
func NewNotifier(p Publisher, s Store, now func() time.Time) *Notifier {
	return &Notifier{publisher: p, store: s, now: now}
}

// Publish sends an alert no step records (an order item the Supervisor
// cannot read): there is no flag to clear.
func (n *Notifier) Publish(ctx context.Context, a order.Alert) error {
	if err := n.publisher.Alert(ctx, a); err != nil {
		return fmt.Errorf("alert %s about order %s: %w", a.Kind, a.OrderID, err)
	}
	return nil
}

// Notify publishes the alert a step records (AlertPending, of AlertKind)
// and then clears the flag. Publishing twice (after a crash between the
// two writes) is possible; losing the alert is not.
func (n *Notifier) Notify(ctx context.Context, st order.StepState) error {
	now := n.now()
	err := n.publisher.Alert(ctx, order.Alert{
		Kind: st.AlertKind, OrderID: st.OrderID, Step: st.Step, Attempt: st.Attempt,
		FailureCount: st.FailureCount, Reason: st.LastError, Undo: st.Undo, Undone: st.Undone, At: now.UTC(),
	})
	if err != nil {
		return fmt.Errorf("alert about step %s of order %s: %w", st.Step, st.OrderID, err)
	}
	if _, _, err := n.store.Apply(ctx, order.ClearAlert(st, now)); err != nil && !errors.Is(err, order.ErrStale) {
		return fmt.Errorf("clear alert flag of step %s of order %s: %w", st.Step, st.OrderID, err)
	}
	return nil
}
