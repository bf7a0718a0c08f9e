package simulator_test

import (
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// The ledger outlives the simulator: a restarted simulator replays work it
// did before the restart instead of doing it again, and the ledger holds
// one effect per key however often it was called.
func TestLedgerSurvivesARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	_, ts, _ := start(t, simulator.WithLedger(path))
	url := ts.URL + "/payment/charges"
	status, _, first := post(t, url, "ORDER1/charge-payment", "application/json", validBody)
	if status != http.StatusCreated {
		t.Fatalf("first call: status %d, want 201", status)
	}
	// A crash cut the last line short; it is ignored.
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"service":"payment","key":"ORD`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	_, restarted, _ := start(t, simulator.WithLedger(path))
	status, header, again := post(t, restarted.URL+"/payment/charges", "ORDER1/charge-payment", "application/json", validBody)
	if status != http.StatusOK || header.Get("Idempotent-Replayed") != "true" || again["id"] != first["id"] {
		t.Errorf("after restart: status %d, replayed %q, id %q; want 200, true, %q", status, header.Get("Idempotent-Replayed"), again["id"], first["id"])
	}
	effects, err := simulator.ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 1 || effects[0].Key != "ORDER1/charge-payment" || effects[0].Reference != first["id"] || effects[0].OrderID != "ORDER1" {
		t.Errorf("ledger %+v, want the one charge", effects)
	}
}

// During an outage a service answers 503 to every call and does no work;
// other services are not affected.
func TestOutageTakesOneServiceDown(t *testing.T) {
	now := time.Now()
	_, ts, _ := start(t, simulator.WithOutage(simulator.Outage{Service: "payment", From: now.Add(-time.Minute), Till: now.Add(time.Minute)}))
	if status, _, _ := post(t, ts.URL+"/payment/charges", "ORDER1/charge-payment", "application/json", validBody); status != http.StatusServiceUnavailable {
		t.Errorf("payment during its outage: status %d, want 503", status)
	}
	if status, _, _ := post(t, ts.URL+"/inventory/reservations", "ORDER1/reserve-inventory", "application/json", validBody); status != http.StatusCreated {
		t.Errorf("inventory during payment's outage: status %d, want 201", status)
	}
}

// An outage may answer another status: 403, as a WAF that blocks the
// agents would, 401 as after a rotated credential, or a redirect, as a
// moved service would. Like a 503 outage it does no work; the agents'
// client takes each for a configuration fault.
func TestOutageAnswersItsStatus(t *testing.T) {
	now := time.Now()
	tests := []struct {
		status     int
		wantStatus string
		wantMsg    string
	}{
		{http.StatusForbidden, "403", "status 403: payment refuses the call (outage)"},
		{http.StatusUnauthorized, "401", "status 401: payment refuses the call (outage)"},
		{http.StatusFound, "3xx", "redirected to moved.invalid (status 302)"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			sim, _, client := start(t)
			req := stepRequest("ORDER1", ordertest.StepChargePayment, "BOOK-1")
			if _, err := client.Call(t.Context(), "payment", stepRequest("ORDER0", ordertest.StepChargePayment, "BOOK-1")); err != nil {
				t.Fatalf("payment before its outage: %v", err)
			}
			sim.AddOutage(simulator.Outage{Service: "payment", From: now.Add(-time.Minute), Till: now.Add(time.Minute), Status: tt.status})
			_, err := client.Call(t.Context(), "payment", req)
			if got, ok := order.ConfigurationStatus(err); !ok || got != tt.wantStatus || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("payment during its outage: %v (status %q), want a configuration fault with status %s containing %q", err, got, tt.wantStatus, tt.wantMsg)
			}
			if n := sim.Calls("payment", req.IdempotencyKey); n != 0 {
				t.Errorf("calls recorded during the outage = %d, want 0: no work was done", n)
			}
		})
	}
}

// A counted test value counts across restarts: a refund refused once is
// refused once, and a service failing two calls fails two, however often
// the simulator restarts in between. Effects-only readers do not see the
// counting lines.
func TestCountedTestValuesOutliveARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "ledger.jsonl")
	body := func(sku string) string {
		return `{"orderId":"ORDER1","lines":[{"sku":"` + sku + `","quantity":1}]}`
	}
	tests := []struct {
		name, url, key, sku string
		want                []int // status of each call, a restart before each
	}{
		{"a refund refused once", "/payment/refunds", "ORDER1/charge-payment", "TEST-PAYMENT-UNDO-PERMANENT-1",
			[]int{http.StatusUnprocessableEntity, http.StatusOK}},
		{"two failing calls", "/inventory/reservations", "ORDER1/reserve-inventory", "TEST-INVENTORY-TRANSIENT-2",
			[]int{http.StatusServiceUnavailable, http.StatusServiceUnavailable, http.StatusCreated}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i, want := range tt.want {
				_, ts, _ := start(t, simulator.WithLedger(path))
				req, _ := http.NewRequest(http.MethodPost, ts.URL+tt.url, strings.NewReader(body(tt.sku)))
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("Idempotency-Key", tt.key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != want {
					t.Fatalf("call %d after a restart: status %d, want %d", i+1, resp.StatusCode, want)
				}
			}
		})
	}
	effects, err := simulator.ReadLedger(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 2 || effects[0].Call != 0 || effects[1].Call != 0 {
		t.Errorf("effects %+v, want the undo (nothing to undo) and the reservation only", effects)
	}
}
