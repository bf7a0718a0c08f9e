package order_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestRemoteKey(t *testing.T) {
	const id = "QMVF4LBCLJ4PRZERCUY25DASBK"
	nonce, other := order.NewKeyNonce(), order.NewKeyNonce()
	tests := []struct {
		name string
		o    order.Order
		step string
		// same lists keys it must equal; differs, keys it must not.
		same, differs []string
	}{
		{"an order without a nonce keeps the old key", order.Order{ID: id}, ordertest.StepChargePayment,
			[]string{id + "/" + ordertest.StepChargePayment}, nil},
		{"with a nonce the key is not the old one", order.Order{ID: id, KeyNonce: nonce}, ordertest.StepChargePayment,
			[]string{(order.Order{ID: id, KeyNonce: nonce}).RemoteKey(ordertest.StepChargePayment)},
			[]string{order.IdempotencyKeyFor(id, ordertest.StepChargePayment)}},
		{"another step has another key", order.Order{ID: id, KeyNonce: nonce}, ordertest.StepReserveInventory, nil,
			[]string{(order.Order{ID: id, KeyNonce: nonce}).RemoteKey(ordertest.StepChargePayment)}},
		{"the same id with a new nonce (a key reused after expiry) has new keys", order.Order{ID: id, KeyNonce: other}, ordertest.StepChargePayment, nil,
			[]string{(order.Order{ID: id, KeyNonce: nonce}).RemoteKey(ordertest.StepChargePayment)}},
		{"another order with the same nonce has other keys", order.Order{ID: order.NewID(), KeyNonce: nonce}, ordertest.StepChargePayment, nil,
			[]string{(order.Order{ID: id, KeyNonce: nonce}).RemoteKey(ordertest.StepChargePayment)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.o.RemoteKey(tt.step)
			if err := order.ValidateIdempotencyKey(got); err != nil {
				t.Errorf("RemoteKey = %q: not a valid Idempotency-Key: %v", got, err)
			}
			if tt.o.KeyNonce != "" && (strings.Contains(got, tt.o.ID) || len(got) < 26) {
				t.Errorf("RemoteKey = %q: names the order or is shorter than 128 bits of base32", got)
			}
			for _, s := range tt.same {
				if got != s {
					t.Errorf("RemoteKey = %q, want %q", got, s)
				}
			}
			for _, d := range tt.differs {
				if got == d {
					t.Errorf("RemoteKey = %q, want a key other than %q", got, d)
				}
			}
		})
	}
}

// The undo of a step goes to its remote service with the step's own key:
// the key names the work to undo.
func TestUndoRequestCarriesTheStepsKey(t *testing.T) {
	o := order.Order{ID: order.NewID(), KeyNonce: order.NewKeyNonce()}
	now := time.Now()
	forward := order.NewRequest(o, order.StepState{OrderID: o.ID, Step: ordertest.StepChargePayment, Index: 1, Attempt: 1, CompleteBy: now, UpdatedAt: now})
	undo := order.NewRequest(o, order.StepState{OrderID: o.ID, Step: ordertest.StepChargePayment, Index: 3, Undo: true, Attempt: 1, CompleteBy: now, UpdatedAt: now})
	if forward.IdempotencyKey != undo.IdempotencyKey || forward.IdempotencyKey != o.RemoteKey(ordertest.StepChargePayment) {
		t.Errorf("forward key %q, undo key %q; want both %q", forward.IdempotencyKey, undo.IdempotencyKey, o.RemoteKey(ordertest.StepChargePayment))
	}
}

// A nonce never shows: not printed, logged or encoded.
func TestKeyNonceIsNeverShown(t *testing.T) {
	o := order.Order{ID: order.NewID(), KeyNonce: order.NewKeyNonce()}
	nonce := string(o.KeyNonce)
	var logged bytes.Buffer
	slog.New(slog.NewJSONHandler(&logged, nil)).Info("order", "order", o, "nonce", o.KeyNonce)
	slog.New(slog.NewTextHandler(&logged, nil)).Info("order", "order", o, "nonce", o.KeyNonce)
	encoded, _ := json.Marshal(o)
	for _, shown := range []string{
		fmt.Sprint(o), fmt.Sprintf("%+v", o), fmt.Sprintf("%#v", o), fmt.Sprintf("%s %q %x %v", o.KeyNonce, o.KeyNonce, o.KeyNonce, o.KeyNonce),
		logged.String(), string(encoded),
	} {
		if strings.Contains(shown, nonce) {
			t.Errorf("the nonce %s shows in %s", nonce, shown)
		}
	}
}
