package soak

import (
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/simulator"
)

// The accounting judges each order by its test values and the evidence:
// the ledger of remote work and the alerts.
func TestAccountJudgesOutcomesByTheEvidence(t *testing.T) {
	created := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	type tc struct {
		name      string
		kind      Kind
		status    order.Status
		alert     order.AlertKind // "" for none
		effect    bool            // the failed step's remote work is in the ledger
		wantWrong bool
		wantGiven bool
		wantLost  bool
	}
	tests := []tc{
		{"plain, Processed", Plain, order.StatusProcessed, "", false, false, false, false},
		{"permanent, Error with StepFailed", Permanent, order.StatusError, order.AlertStepFailed, false, false, false, false},
		{"permanent, Processed", Permanent, order.StatusProcessed, "", false, true, false, false},
		{"plain, Error with StepFailed", Plain, order.StatusError, order.AlertStepFailed, false, true, false, false},
		{"plain, timed out with no remote work: given up", Plain, order.StatusError, order.AlertStepTimedOut, false, false, true, false},
		{"plain, timed out although the work was done", Plain, order.StatusError, order.AlertStepTimedOut, true, true, false, false},
		{"plain, Error never alerted", Plain, order.StatusError, "", false, true, false, false},
		{"plain, still Processing", Plain, order.StatusProcessing, "", false, false, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := order.IDForKey("soak", "c", tt.name)
			a := acked{Planned: Planned{Key: tt.name, Kind: tt.kind}, ID: id}
			final := map[string]order.Order{id: {ID: id, Status: tt.status, CreatedAt: created, UpdatedAt: created.Add(time.Minute)}}
			var alerts []order.Alert
			if tt.alert != "" {
				alerts = append(alerts, order.Alert{Kind: tt.alert, OrderID: id, Step: order.StepChargePayment})
			}
			var effects []simulator.Effect
			if tt.effect {
				effects = append(effects, simulator.Effect{Service: order.AgentPayment, Key: order.IdempotencyKeyFor(id, order.StepChargePayment)})
			}
			r := account([]Planned{a.Planned}, []acked{a}, final, effects, alerts)
			if got := r.WrongOutcomes == 1; got != tt.wantWrong {
				t.Errorf("wrong outcome: %v, want %v (%+v)", got, tt.wantWrong, r)
			}
			if got := len(r.GivenUp) == 1; got != tt.wantGiven {
				t.Errorf("given up: %v, want %v", got, tt.wantGiven)
			}
			if got := r.Lost == 1; got != tt.wantLost {
				t.Errorf("lost: %v, want %v", got, tt.wantLost)
			}
		})
	}
}

// Two effects for one key are a duplicate; the same key at two services
// is two pieces of work.
func TestAccountCountsDuplicateEffects(t *testing.T) {
	effects := []simulator.Effect{
		{Service: "payment", Key: "A/charge-payment"}, {Service: "payment", Key: "A/charge-payment"},
		{Service: "inventory", Key: "A/charge-payment"}, {Service: "payment", Key: "B/charge-payment"},
	}
	if r := account(nil, nil, nil, effects, nil); r.DuplicateEffects != 1 {
		t.Errorf("duplicate effects = %d, want 1", r.DuplicateEffects)
	}
}
