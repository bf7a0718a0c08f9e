package soak

import (
	"net/http"
	"reflect"
	"testing"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// The accounting judges each order by its test values and the evidence:
// the ledger of remote work and undos, the alerts, the client's cancel.
func TestAccountJudgesOutcomesByTheEvidence(t *testing.T) {
	created := time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC)
	all := []string{ordertest.StepReserveInventory, ordertest.StepChargePayment, ordertest.StepArrangeShipping}
	two := all[:2]
	// The rehearsal version renames the middle step: its work has a key of
	// its own.
	renamed := ordertest.StepChargePayment + "-rehearsal"
	rehearsed := []string{ordertest.StepReserveInventory, renamed, ordertest.StepArrangeShipping}
	// The fulfilment example's steps that call a service; its two waits
	// for events call none.
	fulfil := []string{"fraud-screen", ordertest.StepChargePayment, "pick-and-ship"}
	type tc struct {
		name      string
		workflow  string // the order's workflow; empty is the shipped one
		version   string // the order's workflow version; empty is version 1
		kind      Kind
		status    order.Status
		lastError string
		done      []string // steps whose work the ledger has
		undone    []string // steps whose work the ledger undid
		alert     bool
		cancel    int // the answer to the client's cancel
		redriven  bool
		wantWrong bool
		wantGiven bool
		wantLost  bool
		wantLeft  int
	}
	tests := []tc{
		{name: "plain, Processed with every effect", kind: Plain, status: order.StatusProcessed, done: all},
		{name: "plain, Processed with an effect missing", kind: Plain, status: order.StatusProcessed, done: two, wantWrong: true},
		{name: "plain, Processed but an effect undone", kind: Plain, status: order.StatusProcessed, done: all, undone: two[:1], wantWrong: true},
		{name: "permanent, Failed with the work before it undone", kind: Permanent, status: order.StatusFailed, done: two, undone: two},
		{name: "permanent, Failed with an effect left in place", kind: Permanent, status: order.StatusFailed, done: two, undone: two[:1], wantWrong: true, wantLeft: 1},
		{name: "permanent, Processed", kind: Permanent, status: order.StatusProcessed, done: all, wantWrong: true},
		{name: "plain, Failed after timeouts: given up and undone", kind: Plain, status: order.StatusFailed, lastError: "step x: attempt 3 timed out", done: two, undone: two, wantGiven: true},
		{name: "plain, Failed with no reason to", kind: Plain, status: order.StatusFailed, lastError: "step x: card declined", wantWrong: true},
		{name: "cancel accepted, Cancelled and undone", kind: Cancel, status: order.StatusCancelled, done: two, undone: two, cancel: http.StatusAccepted},
		{name: "cancel accepted, yet Processed", kind: Cancel, status: order.StatusProcessed, done: all, cancel: http.StatusAccepted, wantWrong: true},
		{name: "cancel refused as too late, Processed", kind: Cancel, status: order.StatusProcessed, done: all, cancel: http.StatusConflict},
		{name: "cancel refused, yet Cancelled", kind: Cancel, status: order.StatusCancelled, cancel: http.StatusConflict, wantWrong: true},
		{name: "never cancelled, yet Cancelled", kind: Plain, status: order.StatusCancelled, wantWrong: true},
		{name: "undo stuck, alerted, redriven, Failed", kind: UndoStuck, status: order.StatusFailed, done: two, undone: two, alert: true, redriven: true},
		{name: "undo stuck, redriven without an alert", kind: UndoStuck, status: order.StatusFailed, done: two, undone: two, redriven: true, wantWrong: true},
		{name: "Error with an alert waits for an operator", kind: UndoStuck, status: order.StatusError, done: two, undone: two[1:], alert: true},
		{name: "Error never alerted", kind: Plain, status: order.StatusError, wantWrong: true},
		{name: "plain, still Processing", kind: Plain, status: order.StatusProcessing, wantLost: true},
		{name: "rehearsal version, Processed with its renamed step's work", version: "1.rehearsal", kind: Plain, status: order.StatusProcessed, done: rehearsed},
		{name: "rehearsal version, Processed with the old step's work instead", version: "1.rehearsal", kind: Plain, status: order.StatusProcessed, done: all, wantWrong: true},
		{name: "rehearsal version, Failed with its renamed step's work left", version: "1.rehearsal", kind: Permanent, status: order.StatusFailed, done: rehearsed[:2], undone: rehearsed[:1], wantWrong: true, wantLeft: 1},
		{name: "a version no runtime had", version: "7", kind: Plain, status: order.StatusProcessed, done: all, wantWrong: true},
		{name: "fulfilment, Processed with each service's work", workflow: Fulfilment, kind: Fulfil, status: order.StatusProcessed, done: fulfil},
		{name: "fulfilment late, Processed without the shipment", workflow: Fulfilment, kind: FulfilLate, status: order.StatusProcessed, done: fulfil[:2], wantWrong: true},
		{name: "fulfilment twice, Failed with no reason to", workflow: Fulfilment, kind: FulfilTwice, status: order.StatusFailed, lastError: "step pick-and-ship: refused", wantWrong: true},
		{name: "fulfilment rejected, Failed", workflow: Fulfilment, kind: FulfilRejected, status: order.StatusFailed, lastError: "step manual-review: rejected", done: fulfil[:1]},
		{name: "fulfilment rejected, Processed", workflow: Fulfilment, kind: FulfilRejected, status: order.StatusProcessed, done: fulfil, wantWrong: true},
		{name: "fulfilment cancelled while waiting, every effect undone", workflow: Fulfilment, kind: FulfilCancel, status: order.StatusCancelled, done: fulfil, undone: fulfil[1:], cancel: http.StatusAccepted},
		{name: "fulfilment cancelled while waiting, the shipment left", workflow: Fulfilment, kind: FulfilCancel, status: order.StatusCancelled, done: fulfil, undone: fulfil[1:2], cancel: http.StatusAccepted, wantWrong: true, wantLeft: 1},
		{name: "fulfilment whose carrier never confirms, Processed", workflow: Fulfilment, kind: FulfilCancel, status: order.StatusProcessed, done: fulfil, cancel: http.StatusConflict, wantWrong: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := order.IDForKey("soak", "", "c", tt.name)
			a := acked{Planned: Planned{Key: tt.name, Kind: tt.kind}, ID: id, CancelAnswer: tt.cancel, Redriven: tt.redriven}
			final := map[string]order.Order{id: {ID: id, Workflow: tt.workflow, Version: tt.version, Status: tt.status, LastError: tt.lastError, CreatedAt: created, UpdatedAt: created.Add(time.Minute)}}
			var alerts []order.Alert
			if tt.alert {
				alerts = append(alerts, order.Alert{Kind: order.AlertUndoFailed, OrderID: id, Step: ordertest.StepReserveInventory, Undo: true})
			}
			var effects []simulator.Effect
			service := map[string]string{ordertest.StepReserveInventory: "inventory", ordertest.StepChargePayment: "payment", renamed: "payment", ordertest.StepArrangeShipping: "shipping",
				"fraud-screen": "fraud", "pick-and-ship": "warehouse"}
			for _, st := range tt.done {
				effects = append(effects, simulator.Effect{Service: service[st], Key: order.IdempotencyKeyFor(id, st)})
			}
			for _, st := range tt.undone {
				effects = append(effects, simulator.Effect{Service: service[st], Key: order.IdempotencyKeyFor(id, st), Undo: true})
			}
			r := account([]acked{a}, final, effects, alerts)
			if got := r.WrongOutcomes == 1; got != tt.wantWrong {
				t.Errorf("wrong outcome: %v, want %v (%+v)", got, tt.wantWrong, r)
			}
			if got := len(r.GivenUp) == 1; got != tt.wantGiven {
				t.Errorf("given up: %v, want %v", got, tt.wantGiven)
			}
			if got := r.Lost == 1; got != tt.wantLost {
				t.Errorf("lost: %v, want %v", got, tt.wantLost)
			}
			if r.EffectsLeftInPlace != tt.wantLeft {
				t.Errorf("effects left in place: %d, want %d", r.EffectsLeftInPlace, tt.wantLeft)
			}
		})
	}
}

// Two effects for one key are a duplicate, and so are two undos; the same
// key at two services is two pieces of work, and an effect with its undo
// is no duplicate.
func TestAccountCountsDuplicateEffects(t *testing.T) {
	effects := []simulator.Effect{
		{Service: "payment", Key: "A/charge-payment"}, {Service: "payment", Key: "A/charge-payment"},
		{Service: "inventory", Key: "A/charge-payment"}, {Service: "payment", Key: "B/charge-payment"},
		{Service: "payment", Key: "B/charge-payment", Undo: true},
		{Service: "payment", Key: "C/charge-payment", Undo: true}, {Service: "payment", Key: "C/charge-payment", Undo: true},
	}
	if r := account(nil, nil, effects, nil); r.DuplicateEffects != 2 {
		t.Errorf("duplicate effects = %d, want 2", r.DuplicateEffects)
	}
}

// Every terminal order needs an event for its final status; an event for
// an earlier status is not enough.
func TestEventFactsWantTheFinalStatusPublished(t *testing.T) {
	orders := []acked{{ID: "A"}, {ID: "B"}, {ID: "C"}}
	final := map[string]order.Order{
		"A": {Status: order.StatusProcessed}, "B": {Status: order.StatusFailed}, "C": {Status: order.StatusProcessing},
	}
	published := map[string]map[order.Status]bool{
		"A": {order.StatusPending: true, order.StatusProcessed: true},
		"B": {order.StatusPending: true, order.StatusCompensating: true},
	}
	f := eventFacts(orders, final, published)
	if f.Terminal != 2 || f.Published != 1 || len(f.Missing) != 1 {
		t.Errorf("got %+v, want 2 terminal, 1 published, B missing", f)
	}
}

// The same alert sent again is a duplicate; the same publication received
// twice is a copy; a new refusal after a redrive (a new attempt) is a new
// alert.
func TestDuplicateAlertsArePerAttempt(t *testing.T) {
	at := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	first := order.Alert{Kind: order.AlertUndoFailed, OrderID: "A", Step: "s", Undo: true, Attempt: 1, At: at}
	again := first
	again.At = at.Add(time.Minute)
	redriven := first
	redriven.Attempt, redriven.At = 2, at.Add(time.Hour)
	r := account(nil, nil, nil, []order.Alert{first, first, again, redriven})
	if r.DuplicateAlerts != 1 || r.DuplicatesByKind[string(order.AlertUndoFailed)] != 1 || r.AlertCopies != 1 {
		t.Errorf("duplicates %d by kind %v, copies %d; want 1 UndoFailed sent again and 1 copy",
			r.DuplicateAlerts, r.DuplicatesByKind, r.AlertCopies)
	}
	if r.Alerts[string(order.AlertUndoFailed)] != 3 {
		t.Errorf("alerts %v, want 3 UndoFailed publications", r.Alerts)
	}
}

// fakeCallbacks is the simulator's record of callbacks, by service and
// key.
type fakeCallbacks map[string][]simulator.CallbackSent

func (f fakeCallbacks) Callbacks(service, key string) []simulator.CallbackSent {
	return f[service+" "+key]
}

// The callbacks of the fulfilment orders are counted by outcome and
// answer: a late one answered 410 is stale, a second success answered as
// the first a duplicate taken, and a refused one a broken promise.
func TestWaitFactsReadTheCallbacksAnswers(t *testing.T) {
	const ok, gone = http.StatusOK, http.StatusGone
	succeeded := order.CallbackOutcomeSucceeded
	tests := []struct {
		name      string
		kind      Kind
		service   string
		sent      []simulator.CallbackSent
		want      WaitFacts
		cancelled bool
	}{
		{"late, refused as stale, then taken", FulfilLate, "warehouse", []simulator.CallbackSent{{Accepted: 1, Outcome: succeeded, Status: gone}, {Accepted: 2, Outcome: succeeded, Status: ok}},
			WaitFacts{StaleRefused: 1, Answers: map[string]int{"succeeded 410": 1, "succeeded 200": 1}}, false},
		{"late, but the runtime was down when it came", FulfilLate, "warehouse", []simulator.CallbackSent{{Accepted: 1, Outcome: succeeded, Status: 0}, {Accepted: 2, Outcome: succeeded, Status: ok}},
			WaitFacts{Answers: map[string]int{"succeeded 0": 1, "succeeded 200": 1}}, false},
		{"twice, both taken alike", FulfilTwice, "payment", []simulator.CallbackSent{{Accepted: 1, Outcome: succeeded, Status: ok}, {Accepted: 1, Outcome: succeeded, Status: ok}},
			WaitFacts{DuplicatesTaken: 1, Answers: map[string]int{"succeeded 200": 2}}, false},
		{"a token refused", Fulfil, "payment", []simulator.CallbackSent{{Accepted: 1, Outcome: succeeded, Status: http.StatusUnauthorized}},
			WaitFacts{Refused: 1, Answers: map[string]int{"succeeded 401": 1}}, false},
		{"cancelled while waiting", FulfilCancel, "payment", []simulator.CallbackSent{{Accepted: 1, Outcome: succeeded, Status: ok}},
			WaitFacts{CancelledWhileWaiting: 1, Answers: map[string]int{"succeeded 200": 1}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			id := order.IDForKey("soak", "", "c", tt.name)
			o := order.Order{ID: id, Workflow: Fulfilment, Status: order.StatusProcessed}
			if tt.cancelled {
				o.Status = order.StatusCancelled
			}
			step := map[string]string{"payment": "charge-payment", "warehouse": "pick-and-ship"}[tt.service]
			sent := fakeCallbacks{tt.service + " " + o.RemoteKey(step): tt.sent}
			a := acked{Planned: Planned{Kind: tt.kind, Service: tt.service, Workflow: Fulfilment}, ID: id, WaitedAtCancel: tt.cancelled}
			got := waitFacts([]acked{a}, map[string]order.Order{id: o}, sent)
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}
