package soak

import (
	"errors"
	"net/http"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// The checker judges an operator's pause by the evidence: the calls the
// paused service received, the agents' holds, the kills, the held
// orders' histories, outcomes and alerts.
func TestPauseFactsJudgeThePauseByTheEvidence(t *testing.T) {
	paused := time.Date(2026, 11, 28, 19, 0, 0, 0, time.UTC)
	resumed := paused.Add(75 * time.Second)
	at := func(s int) time.Time { return paused.Add(time.Duration(s) * time.Second) }
	shipping, inventory := ordertest.AgentShipping, ordertest.AgentInventory
	step := map[string]string{ordertest.StepArrangeShipping: shipping, ordertest.StepReserveInventory: inventory, ordertest.StepChargePayment: ordertest.AgentPayment}
	deferral := order.HistoryEntry{At: at(20), Record: 2, Step: ordertest.StepArrangeShipping, Event: "deferred",
		Reason: "attempt 1 not answered by ... while service shipping is paused by an operator (its agent holds requests in its queue): deadline moved on, no failure counted"}
	// base is a pause that kept every promise: shipping called before
	// and after, never while it held; two orders held, one of them
	// deferred; a kill 10 s after a hold.
	base := func() (pauseEvidence, []acked, map[string]order.Order, []order.Alert) {
		ev := pauseEvidence{
			run:   pauseRun{Window: PauseWindow{Service: shipping, For: 75 * time.Second}, PausedAt: paused, ResumedAt: resumed},
			calls: []time.Time{at(-3), at(2), at(80)},
			holds: []heldRequest{{At: at(10), Agent: shipping, OrderID: "A"}, {At: at(12), Agent: shipping, OrderID: "B"}, {At: at(50), Agent: shipping, OrderID: "A"},
				{At: at(11), Agent: inventory, OrderID: "C"}},
			kills: []time.Time{at(-8), at(20), at(70), at(100)},
			// A failed read of the pause before it, one during it (a
			// call it let through would show), one by another agent.
			unread:    []heldRequest{{At: at(-10), Agent: shipping}, {At: at(30), Agent: shipping}, {At: at(30), Agent: inventory}},
			histories: map[string][]order.HistoryEntry{"A": {deferral}, "B": nil},
			agentOf:   func(_ order.Order, s string) string { return step[s] },
		}
		orders := []acked{{Planned: Planned{Kind: Plain}, ID: "A"}, {Planned: Planned{Kind: UndoStuck, Service: shipping}, ID: "B"}, {Planned: Planned{Kind: Plain}, ID: "C"}}
		final := map[string]order.Order{"A": {Status: order.StatusProcessed}, "B": {Status: order.StatusFailed}, "C": {Status: order.StatusProcessed}}
		alerts := []order.Alert{
			// The undo its kind refuses, and an alert before the pause.
			{Kind: order.AlertUndoFailed, OrderID: "B", Step: ordertest.StepReserveInventory, Undo: true, At: at(90)},
			{Kind: order.AlertStepUnclaimed, OrderID: "C", Step: ordertest.StepArrangeShipping, At: at(-5)},
		}
		return ev, orders, final, alerts
	}
	tests := []struct {
		name   string
		change func(ev *pauseEvidence, orders []acked, final map[string]order.Order, alerts *[]order.Alert)
		check  func(t *testing.T, f PauseFacts)
		wantOK bool
	}{
		{"every promise kept", nil, func(t *testing.T, f PauseFacts) {
			// The call 2 s in is inside pauseLead: the agents' caches.
			if f.CallsBefore != 1 || f.CallsWhilePaused != 0 || f.CallsAfter != 1 {
				t.Errorf("calls before / while / after = %d / %d / %d, want 1 / 0 / 1", f.CallsBefore, f.CallsWhilePaused, f.CallsAfter)
			}
			if f.RequestsHeld != 3 || f.OrdersHeld != 2 || f.OrdersDeferred != 1 {
				t.Errorf("requests held %d, orders held %d, deferred %d; want 3, 2, 1", f.RequestsHeld, f.OrdersHeld, f.OrdersDeferred)
			}
			// The kill at 20 s came 10 s after a hold, and 8 s after
			// another; the one at 70 s, 20 s after one.
			if f.KillsWhilePaused != 2 || f.KillsWhileHeld != 2 || f.HeldAtKills != 3 {
				t.Errorf("kills while paused %d, with requests held %d, held at them %d; want 2, 2, 3", f.KillsWhilePaused, f.KillsWhileHeld, f.HeldAtKills)
			}
			if f.UnreadWhilePaused != 1 {
				t.Errorf("failed reads of the pause while it held = %d, want 1", f.UnreadWhilePaused)
			}
			if f.HeldOutcomes[string(order.StatusProcessed)] != 1 || f.HeldOutcomes[string(order.StatusFailed)] != 1 {
				t.Errorf("held outcomes %v, want 1 Processed and 1 Failed", f.HeldOutcomes)
			}
		}, true},
		{"a call while paused", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.calls = append(ev.calls, at(40))
		}, func(t *testing.T, f PauseFacts) {
			if f.CallsWhilePaused != 1 {
				t.Errorf("calls while paused = %d, want 1", f.CallsWhilePaused)
			}
		}, false},
		{"a held order given up after timeouts", func(_ *pauseEvidence, _ []acked, final map[string]order.Order, _ *[]order.Alert) {
			final["A"] = order.Order{Status: order.StatusFailed, LastError: "step arrange-shipping: attempt 3 timed out"}
		}, func(t *testing.T, f PauseFacts) {
			if len(f.HeldWrong) != 1 || len(f.heldWrongIDs) != 1 || f.heldWrongIDs[0] != "A" {
				t.Errorf("held wrong %v, want order A", f.HeldWrong)
			}
		}, false},
		{"a cancel accepted, the held order Cancelled", func(_ *pauseEvidence, orders []acked, final map[string]order.Order, _ *[]order.Alert) {
			orders[0].Kind, orders[0].CancelAnswer = Cancel, http.StatusAccepted
			final["A"] = order.Order{Status: order.StatusCancelled}
		}, nil, true},
		{"a cancel refused, the held order Cancelled", func(_ *pauseEvidence, orders []acked, final map[string]order.Order, _ *[]order.Alert) {
			orders[0].Kind, orders[0].CancelAnswer = Cancel, http.StatusConflict
			final["A"] = order.Order{Status: order.StatusCancelled}
		}, nil, false},
		{"an alert about the paused service's step", func(_ *pauseEvidence, _ []acked, _ map[string]order.Order, alerts *[]order.Alert) {
			*alerts = append(*alerts, order.Alert{Kind: order.AlertStepTimedOut, OrderID: "C", Step: ordertest.StepArrangeShipping, At: at(100)})
		}, func(t *testing.T, f PauseFacts) {
			if len(f.AlertsCaused) != 1 {
				t.Errorf("alerts caused %v, want the StepTimedOut", f.AlertsCaused)
			}
		}, false},
		{"an alert about a held order its kind does not call for", func(_ *pauseEvidence, _ []acked, _ map[string]order.Order, alerts *[]order.Alert) {
			*alerts = append(*alerts, order.Alert{Kind: order.AlertStepUnclaimed, OrderID: "A", Step: ordertest.StepChargePayment, At: at(30)})
		}, nil, false},
		{"a rollback's VersionUnknown about a held order at the paused service", func(_ *pauseEvidence, _ []acked, _ map[string]order.Order, alerts *[]order.Alert) {
			*alerts = append(*alerts, order.Alert{Kind: order.AlertVersionUnknown, OrderID: "A", Step: ordertest.StepArrangeShipping, At: at(30)})
		}, nil, true},
		{"an alert about an order the pause did not hold, at another service", func(_ *pauseEvidence, _ []acked, _ map[string]order.Order, alerts *[]order.Alert) {
			*alerts = append(*alerts, order.Alert{Kind: order.AlertUndoFailed, OrderID: "C", Step: ordertest.StepReserveInventory, Undo: true, At: at(30)})
		}, nil, true},
		{"kills while paused, none with a request held", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.kills = []time.Time{at(5), at(45)}
		}, func(t *testing.T, f PauseFacts) {
			if f.KillsWhilePaused != 2 || f.KillsWhileHeld != 0 {
				t.Errorf("kills while paused %d, with requests held %d; want 2, 0", f.KillsWhilePaused, f.KillsWhileHeld)
			}
		}, false},
		{"no request held", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.holds = ev.holds[3:]
		}, nil, false},
		{"a timeout counted at the paused service during the pause is reported", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.histories["B"] = []order.HistoryEntry{{At: at(30), Record: 2, Step: ordertest.StepArrangeShipping, Event: "state", Reason: "attempt 1 timed out: no reply by ..."},
				{At: at(90), Record: 2, Step: ordertest.StepArrangeShipping, Event: "state", Reason: "attempt 2 timed out: no reply by ..."}}
		}, func(t *testing.T, f PauseFacts) {
			if f.TimeoutsWhilePaused != 1 {
				t.Errorf("timeouts while paused = %d, want 1 (the other came after the resume)", f.TimeoutsWhilePaused)
			}
		}, true},
		{"the resume failed", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.run.Err = errors.New("resume shipping: throttled")
		}, nil, false},
		{"the pause was never made", func(ev *pauseEvidence, _ []acked, _ map[string]order.Order, _ *[]order.Alert) {
			ev.run = pauseRun{Window: ev.run.Window, Err: errors.New("pause shipping: no table")}
		}, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ev, orders, final, alerts := base()
			if tt.change != nil {
				tt.change(&ev, orders, final, &alerts)
			}
			f := pauseFacts(ev, orders, final, alerts)
			if tt.check != nil {
				tt.check(t, f)
			}
			if got := f.OK(); got != tt.wantOK {
				t.Errorf("OK() = %v, want %v: %+v", got, tt.wantOK, f)
			}
		})
	}
}

// Each kind's outcome is the one its test values and its client's cancel
// call for.
func TestExpectedStatusesFollowTheKind(t *testing.T) {
	tests := []struct {
		kind   Kind
		cancel int
		want   []order.Status
	}{
		{Plain, 0, []order.Status{order.StatusProcessed}},
		{Hang, 0, []order.Status{order.StatusProcessed}},
		{Permanent, 0, []order.Status{order.StatusFailed}},
		{UndoStuck, 0, []order.Status{order.StatusFailed, order.StatusError}},
		{Cancel, http.StatusAccepted, []order.Status{order.StatusCancelled}},
		{Cancel, http.StatusConflict, []order.Status{order.StatusProcessed}},
		{FulfilCancel, http.StatusConflict, []order.Status{order.StatusCancelled}},
	}
	for _, tt := range tests {
		got := expectedStatuses(acked{Planned: Planned{Kind: tt.kind}, CancelAnswer: tt.cancel})
		if len(got) != len(tt.want) || got[0] != tt.want[0] {
			t.Errorf("%s (cancel answered %d): %v, want %v", tt.kind, tt.cancel, got, tt.want)
		}
	}
}
