package alerting_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	"orderly/internal/actor/alerting"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

type fakePublisher struct {
	err    error
	alerts []order.Alert
}

func (f *fakePublisher) Alert(ctx context.Context, a order.Alert) error {
	f.alerts = append(f.alerts, a)
	return f.err
}

type clearCall struct {
	st  order.StepState
	now time.Time
}

type fakeStore struct {
	err    error
	clears []clearCall
}

func (f *fakeStore) Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error) {
	if t.Name != order.ClearAlert(t.Record, t.At).Name {
		return order.Order{}, order.StepState{}, fmt.Errorf("%s: not expected", t.Name)
	}
	f.clears = append(f.clears, clearCall{st: t.Record, now: t.At})
	return order.Order{}, t.Record, f.err
}

func TestNotify(t *testing.T) {
	// A clock outside UTC shows that the alert's time is normalised.
	now := time.Date(2025, 3, 1, 13, 0, 0, 0, time.FixedZone("CET", 3600))
	st := order.StepState{
		OrderID: order.IDForKey("caller", "", "c-1", "k"), Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment,
		ProcessState: order.Error, AlertPending: true, AlertKind: order.AlertStepTimedOut, Attempt: 3, FailureCount: 2,
		LastError: "payment: status 402: card declined",
	}
	publishErr := errors.New("sns: Publish: throttled")
	clearErr := errors.New("dynamodb: UpdateItem: throttled")

	tests := []struct {
		name       string
		publishErr error
		clearErr   error
		wantErr    error // nil means Notify must succeed
		wantClears int
	}{
		{"published and cleared", nil, nil, nil, 1},
		{"publish fails", publishErr, nil, publishErr, 0},
		{"flag already cleared by another Supervisor", nil, fmt.Errorf("clear alert: %w", order.ErrStale), nil, 1},
		{"clear fails", nil, clearErr, clearErr, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pub := &fakePublisher{err: tt.publishErr}
			store := &fakeStore{err: tt.clearErr}
			n := alerting.NewNotifier(pub, store, func() time.Time { return now })

			err := n.Notify(context.Background(), st)

			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Notify() = %v, want nil", err)
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Errorf("Notify() = %v, want an error wrapping %v", err, tt.wantErr)
			}

			want := order.Alert{
				Kind: order.AlertStepTimedOut, OrderID: st.OrderID, Step: st.Step,
				Attempt: 3, FailureCount: 2, Reason: st.LastError, At: now.UTC(),
			}
			if len(pub.alerts) != 1 {
				t.Fatalf("published %d alerts, want 1: %+v", len(pub.alerts), pub.alerts)
			}
			if got := pub.alerts[0]; !reflect.DeepEqual(got, want) {
				t.Errorf("published alert = %+v, want %+v", got, want)
			}

			if len(store.clears) != tt.wantClears {
				t.Fatalf("ClearAlert applied %d times, want %d", len(store.clears), tt.wantClears)
			}
			if tt.wantClears > 0 {
				got := store.clears[0]
				if !reflect.DeepEqual(got.st, st) || !got.now.Equal(now) {
					t.Errorf("ClearAlert(%+v, %s) applied, want ClearAlert(%+v, %s)", got.st, got.now, st, now)
				}
			}
		})
	}
}
