package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/actor/control"
	"orderly/internal/adapter/secret"
	"orderly/internal/callbacktoken"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// The fulfilment example's steps (examples/workflows/fulfilment/v1.json).
const (
	stepFraudScreen  = "fraud-screen"
	stepManualReview = "manual-review"
	stepChargePay    = "charge-payment"
	stepPickAndShip  = "pick-and-ship"
	stepDelivery     = "delivery"
)

// An order of the fulfilment example, flagged by the fraud screen, waits
// for every kind of party through the deployed wiring: for the client's
// review event on POST /orders/{id}/events/review, for the payment and
// warehouse services' callbacks on POST /callbacks (the simulator, on
// this host, calls back at the stage's callback URL in LocalStack's path
// form), and for the carrier's delivery event, which the simulator's
// parties send on the operators' route, signed. Each wait is shown in the
// order's view, history and status events, ends as its party decides,
// and the results are kept. A callback with an altered token is refused
// with 401 and changes nothing.
func testFulfilment(t *testing.T, d deployed) {
	// The carrier is the simulator's; the analyst is this test, as the
	// order's client (TEST-REVIEW-SILENT keeps the simulated one quiet).
	ctx, stop := context.WithCancel(context.Background())
	parties := make(chan error, 1)
	go func() {
		parties <- simulator.NewParties(d.api, simulator.PartyConfig{Every: time.Second, Transport: d.signed,
			Log: slog.New(slog.NewTextHandler(logWriter{t}, &slog.HandlerOptions{Level: slog.LevelWarn}))}).Run(ctx)
	}()
	defer func() { stop(); <-parties }()

	body := `{"customerId":"TEST-FLAGGED-e2e","lines":[{"sku":"SKU-1","quantity":1},{"sku":"TEST-REVIEW-SILENT","quantity":1}],` +
		`"amount":{"currency":"EUR","minorUnits":4999}}`
	code, got := d.call(t, http.MethodPost, "/workflows/"+simulator.FulfilmentWorkflow+"/orders", body)
	var out struct{ OrderID string }
	if code != http.StatusAccepted || json.Unmarshal(got, &out) != nil || out.OrderID == "" {
		t.Fatalf("POST /workflows/fulfilment/orders: %d %s", code, got)
	}
	id := out.OrderID
	defer d.logHistory(t, id)

	// The screen flagged it: it waits for the review, on both routes.
	v := d.await(t, id, time.Minute, order.StatusWaiting, order.StatusProcessed, order.StatusFailed, order.StatusError)
	review := stepOf(v, stepManualReview)
	if v.Status != order.StatusWaiting || review.State != string(order.Waiting) || review.Waiting == nil ||
		review.Waiting.For != "event" || review.Waiting.Event != simulator.EventReview || (review.Waiting.Until.Sub(review.Waiting.Since)-48*time.Hour).Abs() > time.Minute {
		t.Fatalf("status %s, want Waiting for the review event for 48h: %s", v.Status, testenv.Describe(v))
	}
	var client api.ClientOrderView
	if code, got := d.call(t, http.MethodGet, "/orders/"+id, ""); code != http.StatusOK || json.Unmarshal(got, &client) != nil ||
		len(client.Steps) != len(v.Steps) || client.Steps[1].Waiting == nil || client.Steps[1].Waiting.Event != simulator.EventReview {
		t.Fatalf("the client's view: %d %s, want its review step waiting for %q", code, got, simulator.EventReview)
	}

	t.Run("a callback with an altered token", func(t *testing.T) {
		d.alteredCallback(t, v)
	})

	if code, got := d.call(t, http.MethodPost, "/orders/"+id+"/events/"+simulator.EventReview, `{"decision":"approve","note":"approved by the e2e test"}`); code != http.StatusAccepted {
		t.Fatalf("POST /orders/%s/events/review: %d %s, want 202", id, code, got)
	}
	v = d.await(t, id, 2*time.Minute, order.StatusProcessed, order.StatusFailed, order.StatusError)
	if v.Status != order.StatusProcessed {
		t.Fatalf("status %s, want Processed: %s", v.Status, testenv.Describe(v))
	}

	// The results kept: the screen's, the analyst's decision, the
	// services' references and the carrier's confirmation of the
	// warehouse's shipment.
	for _, s := range v.Steps {
		if s.Undo || s.State != string(order.Processed) {
			t.Errorf("record %s (undo %t) %s, want every step Processed and no undo", s.Step, s.Undo, s.State)
		}
	}
	if r := resultOf(v, stepFraudScreen); r["flagged"] != true {
		t.Errorf("the screen's result %v, want the order flagged", r)
	}
	if r := resultOf(v, stepManualReview); r["decision"] != "approve" {
		t.Errorf("the review's result %v, want the client's approval", r)
	}
	shipment := stepOf(v, stepPickAndShip).Reference
	if stepOf(v, stepChargePay).Reference == "" || shipment == "" {
		t.Errorf("references: charge %q, shipment %q; want both", stepOf(v, stepChargePay).Reference, shipment)
	}
	if r := resultOf(v, stepDelivery); r["trackingId"] != shipment {
		t.Errorf("the delivery's result %v, want the shipment %q tracked", r, shipment)
	}
	// The client reads the delivery (shown to clients), not the review.
	if code, got := d.call(t, http.MethodGet, "/orders/"+id, ""); code != http.StatusOK || json.Unmarshal(got, &client) != nil ||
		len(client.Steps) != len(v.Steps) || !bytes.Contains(client.Steps[4].Result, []byte(shipment)) || client.Steps[1].Result != nil {
		t.Errorf("the client's view: %d %s, want the delivery's result alone", code, got)
	}

	// Each wait in the history: begun, and ended by its party.
	h := d.historyShows(t, id, func(e order.HistoryEntry) bool {
		return e.Event == "status" && e.To == string(order.StatusProcessed)
	})
	for _, w := range []struct{ step, by string }{
		{stepManualReview, control.ByClientEvent},
		{stepChargePay, control.ByServiceCallback},
		{stepPickAndShip, control.ByServiceCallback},
		{stepDelivery, control.ByOperatorEvent},
	} {
		began := slices.ContainsFunc(h.History, func(e order.HistoryEntry) bool {
			return e.Event == "state" && e.Step == w.step && !e.Undo && e.To == string(order.Waiting) && e.Reason != ""
		})
		ended := slices.ContainsFunc(h.History, func(e order.HistoryEntry) bool {
			return e.Event == "state" && e.Step == w.step && !e.Undo && e.From == string(order.Waiting) && e.To == string(order.Processed) &&
				strings.HasPrefix(e.By, w.by)
		})
		if !began || !ended {
			t.Errorf("history of %s: wait began %t, ended by %s %t", w.step, began, w.by, ended)
		}
	}

	// The status events are the history's, Waiting among them, each
	// saying what the order waits for.
	var want []order.Status
	for _, e := range h.History {
		if e.Event == "status" {
			want = append(want, order.Status(e.To))
		}
	}
	if !slices.Contains(want, order.StatusWaiting) || want[len(want)-1] != order.StatusProcessed {
		t.Errorf("the history's statuses %v, want Waiting among them and Processed last", want)
	}
	kinds := map[string]bool{}
	for _, c := range d.events.statuses(t, id, want, time.Minute) {
		if c.Status != order.StatusWaiting {
			continue
		}
		if c.Waiting == nil || c.Waiting.Until.IsZero() {
			t.Errorf("a Waiting status event says not what for nor until when: %+v", c)
			continue
		}
		kinds[c.Waiting.For] = true
	}
	if !kinds["event"] || !kinds["callback"] {
		t.Errorf("Waiting status events for %v, want an event and a callback", kinds)
	}
}

// alteredCallback sends, while the order waits for its review, a callback
// whose token was sealed with the stage's key for the payment step's
// first attempt and then altered: the deployed route answers 401 without
// the token, and the order and its history stay as they were.
func (d deployed) alteredCallback(t *testing.T, v api.OrderView) {
	t.Helper()
	ctx := context.Background()
	record := slices.IndexFunc(v.Steps, func(s api.StepView) bool { return s.Step == stepChargePay && !s.Undo })
	key, err := secret.Key(ctx, d.clients.SecretsManager, resources.New(d.stage, nil).CallbackSecret, callbacktoken.MinKeyBytes)
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := callbacktoken.New(key)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := sealer.Seal(callbacktoken.Claim{OrderID: v.OrderID, Record: record, Step: stepChargePay, Attempt: 1, ExpiresAt: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	token := []byte(sealed.Reveal())
	// One character of the sealed part changed, still base64url.
	at := len(token) / 2
	token[at] = map[bool]byte{true: 'B', false: 'A'}[token[at] == 'A']

	// The history is written from the table's stream: once it shows the
	// review's wait, nothing more is written until the review comes.
	d.historyShows(t, v.OrderID, func(e order.HistoryEntry) bool {
		return e.Event == "state" && e.Step == stepManualReview && e.To == string(order.Waiting)
	})
	before := d.snapshot(t, v.OrderID)
	req, _ := http.NewRequest(http.MethodPost, d.api+api.ResourceCallbacks,
		strings.NewReader(`{"outcome":"succeeded","result":{"id":"ch_forged","status":"captured"}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Orderly-Callback "+string(token))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST /callbacks: %v", err)
	}
	answer, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || bytes.Contains(answer, token) {
		t.Errorf("POST /callbacks with an altered token: %d %s, want 401 without the token", resp.StatusCode, answer)
	}
	if after := d.snapshot(t, v.OrderID); after != before {
		t.Errorf("the order changed:\nbefore %s\nafter  %s", before, after)
	}
}

// historyShows waits until the order's history (which the recorder
// writes from the table's stream, a moment after the order) has an entry
// that is, and returns it as operators read it.
func (d deployed) historyShows(t *testing.T, id string, is func(order.HistoryEntry) bool) api.HistoryView {
	t.Helper()
	var h api.HistoryView
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, got := d.call(t, http.MethodGet, "/ops/orders/"+id+"/history", "")
		if code != http.StatusOK || json.Unmarshal(got, &h) != nil {
			return false, fmt.Sprintf("GET history: %d %s", code, got)
		}
		return slices.ContainsFunc(h.History, is), string(got)
	})
	return h
}

// snapshot is the order's view and history as operators read them.
func (d deployed) snapshot(t *testing.T, id string) string {
	t.Helper()
	var b strings.Builder
	for _, path := range []string{"/ops/orders/" + id, "/ops/orders/" + id + "/history"} {
		code, got := d.call(t, http.MethodGet, path, "")
		if code != http.StatusOK {
			t.Fatalf("GET %s: %d %s", path, code, got)
		}
		b.Write(got)
		b.WriteByte('\n')
	}
	return b.String()
}

// stepOf is the record of the workflow step name (not its undo).
func stepOf(v api.OrderView, name string) api.StepView {
	for _, s := range v.Steps {
		if s.Step == name && !s.Undo {
			return s
		}
	}
	return api.StepView{}
}

// resultOf is the step's result as a JSON object (nil when none).
func resultOf(v api.OrderView, step string) map[string]any {
	var r map[string]any
	_ = json.Unmarshal(stepOf(v, step).Result, &r)
	return r
}

// logWriter writes a logger's lines to the test's log.
type logWriter struct{ t *testing.T }

func (w logWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}
