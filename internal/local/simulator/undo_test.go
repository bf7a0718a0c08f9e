package simulator_test

import (
	"errors"
	"path/filepath"
	"testing"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func undoOf(req order.StepRequest) order.StepRequest {
	req.Undo, req.Record = true, 3
	return req
}

// An undo reverses the work done under the step's key, answers the same on
// a repeat, and fences the key off, so the work is never done again.
func TestUndoReversesTheWorkOnce(t *testing.T) {
	sim, _, client := start(t)
	req := stepRequest("ORDER1", ordertest.StepChargePayment, "WIDGET")
	ref, err := client.Call(t.Context(), "payment", req)
	if err != nil {
		t.Fatal(err)
	}
	first, err := client.Call(t.Context(), "payment", undoOf(req))
	if err != nil {
		t.Fatalf("undo: %v", err)
	}
	again, err := client.Call(t.Context(), "payment", undoOf(req))
	if err != nil || again.Reference != first.Reference || first.Reference == ref.Reference {
		t.Errorf("undo twice = %+v then %+v (%v), want one undo id, not the charge's %+v", first, again, err, ref)
	}
	if !sim.Undone("payment", req.IdempotencyKey) {
		t.Error("Undone() = false after the undo")
	}
	if _, err := client.Call(t.Context(), "payment", req); !errors.Is(err, order.ErrPermanent) {
		t.Errorf("work after its undo: %v, want a permanent refusal", err)
	}
}

// Undoing work that was never done is a success ("nothing to undo"), and a
// late call with that key does no work: the undo fenced it off.
func TestUndoOfNothingFencesTheKey(t *testing.T) {
	sim, ts, client := start(t)
	req := stepRequest("ORDER2", ordertest.StepReserveInventory, "WIDGET")
	if _, err := client.Call(t.Context(), "inventory", undoOf(req)); err != nil {
		t.Fatalf("undo of nothing: %v", err)
	}
	status, _, body := post(t, ts.URL+"/inventory/releases", req.IdempotencyKey, "application/json", validBody)
	if status != 200 || body["id"] == "" {
		t.Errorf("repeated undo = %d %v, want 200 with its id", status, body)
	}
	if _, err := client.Call(t.Context(), "inventory", req); !errors.Is(err, order.ErrPermanent) {
		t.Errorf("late work: %v, want a permanent refusal", err)
	}
	if n := sim.Calls("inventory", req.IdempotencyKey); n != 1 {
		t.Errorf("%d work calls counted, want 1", n)
	}
}

// A call still held by the service when its undo arrives does no work
// once it is let go: the undo wins the race.
func TestUndoWinsOverAHeldCall(t *testing.T) {
	_, _, client := start(t)
	req := stepRequest("ORDER3", ordertest.StepArrangeShipping, "TEST-SHIPPING-SLOW-300")
	done := make(chan error, 1)
	go func() {
		_, err := client.Call(t.Context(), "shipping", req)
		done <- err
	}()
	time.Sleep(50 * time.Millisecond)
	if _, err := client.Call(t.Context(), "shipping", undoOf(req)); err != nil {
		t.Fatalf("undo: %v", err)
	}
	if err := <-done; !errors.Is(err, order.ErrPermanent) {
		t.Errorf("held call after the undo: %v, want a permanent refusal", err)
	}
}

func TestUndoTestValues(t *testing.T) {
	tests := []struct {
		sku  string
		want []error // per undo call
	}{
		{"TEST-PAYMENT-UNDO-TRANSIENT-1", []error{order.ErrTransient, nil}},
		{"TEST-PAYMENT-UNDO-PERMANENT", []error{order.ErrPermanent, order.ErrPermanent}},
		{"TEST-PAYMENT-UNDO-PERMANENT-1", []error{order.ErrPermanent, nil}},
		// The work's own value does not touch its undo.
		{"TEST-PAYMENT-TRANSIENT-5", []error{nil}},
	}
	for _, tt := range tests {
		t.Run(tt.sku, func(t *testing.T) {
			_, _, client := start(t)
			req := stepRequest("ORDER4", ordertest.StepChargePayment, tt.sku)
			for i, want := range tt.want {
				_, err := client.Call(t.Context(), "payment", undoOf(req))
				if (want == nil) != (err == nil) || (want != nil && !errors.Is(err, want)) {
					t.Errorf("undo call %d: %v, want %v", i+1, err, want)
				}
			}
		})
	}
}

// PERMANENT-<N> refuses the first N calls, then the service is "fixed".
func TestPermanentForNCalls(t *testing.T) {
	_, _, client := start(t)
	req := stepRequest("ORDER5", ordertest.StepArrangeShipping, "TEST-SHIPPING-PERMANENT-1")
	if _, err := client.Call(t.Context(), "shipping", req); !errors.Is(err, order.ErrPermanent) {
		t.Errorf("first call: %v, want a permanent refusal", err)
	}
	if _, err := client.Call(t.Context(), "shipping", req); err != nil {
		t.Errorf("second call: %v, want success", err)
	}
}

// The ledger records undos, so a restarted simulator still refuses work
// for an undone key and replays the undo.
func TestLedgerKeepsUndos(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	_, _, client := start(t, simulator.WithLedger(path))
	req := stepRequest("ORDER6", ordertest.StepChargePayment, "WIDGET")
	if _, err := client.Call(t.Context(), "payment", req); err != nil {
		t.Fatal(err)
	}
	undoID, err := client.Call(t.Context(), "payment", undoOf(req))
	if err != nil {
		t.Fatal(err)
	}
	sim2, _, client2 := start(t, simulator.WithLedger(path))
	if !sim2.Undone("payment", req.IdempotencyKey) {
		t.Error("restarted simulator forgot the undo")
	}
	if again, err := client2.Call(t.Context(), "payment", undoOf(req)); err != nil || again.Reference != undoID.Reference {
		t.Errorf("undo after restart = %+v, %v, want the replay %+v", again, err, undoID)
	}
	effects, err := simulator.ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 2 || effects[0].Undo || !effects[1].Undo || effects[1].Undid != effects[0].Reference {
		t.Errorf("ledger = %+v, want the charge, then its undo naming it", effects)
	}
}
