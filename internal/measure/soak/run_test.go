package soak

import (
	"testing"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// The soak's operator redrives an order stuck in Error only once its
// alert was sent, as an operator woken by it would.
func TestOperatorRedrivesAfterTheAlert(t *testing.T) {
	stuck := order.StepState{Step: ordertest.StepChargePayment, Undo: true, ProcessState: order.Error}
	pending := stuck
	pending.AlertPending, pending.AlertKind = true, order.AlertUndoFailed
	done := order.StepState{Step: ordertest.StepReserveInventory, ProcessState: order.Processed}
	tests := []struct {
		name     string
		kind     Kind
		status   order.Status
		redrives int
		steps    []order.StepState
		want     bool
	}{
		{"in Error, alert sent", UndoStuck, order.StatusError, 0, []order.StepState{done, stuck}, true},
		{"in Error, alert not sent yet", UndoStuck, order.StatusError, 0, []order.StepState{done, pending}, false},
		{"redriven as often as allowed", UndoStuck, order.StatusError, maxRedrives, []order.StepState{done, stuck}, false},
		{"still undoing", UndoStuck, order.StatusCompensating, 0, []order.StepState{done, stuck}, false},
		{"not planned to get stuck", Plain, order.StatusError, 0, []order.StepState{done, stuck}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a := acked{Planned: Planned{Kind: tt.kind}, redrives: tt.redrives}
			if got := redriveNow(a, order.Order{Status: tt.status}, tt.steps); got != tt.want {
				t.Errorf("redriveNow = %v, want %v", got, tt.want)
			}
		})
	}
}
