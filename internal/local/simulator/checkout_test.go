package simulator_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orderly/internal/adapter/remote"
	"orderly/internal/definition"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
)

// checkout is the four-step example workflow (examples/workflows/checkout).
func checkout(t *testing.T) (order.Versions, order.Workflow) {
	t.Helper()
	_, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	v, err := definition.Build(examples, "checkout", order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	return v, v.Latest()
}

// checkoutInput is the example's input (its schema's examples[0]) with
// the SKU of its first line replaced, for test values.
func checkoutInput(t *testing.T, w order.Workflow, sku string) json.RawMessage {
	t.Helper()
	var schema struct {
		Examples []map[string]any `json:"examples"`
	}
	if err := json.Unmarshal(w.Input, &schema); err != nil || len(schema.Examples) == 0 {
		t.Fatalf("checkout input schema: %v, %d examples", err, len(schema.Examples))
	}
	in := schema.Examples[0]
	if sku != "" {
		in["lines"] = []any{map[string]any{"sku": sku, "quantity": 1}}
	}
	raw, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkoutRequest is the request the Scheduler sends for a step of a
// checkout order, with the results the order keeps so far.
func checkoutRequest(w order.Workflow, orderID, step string, input json.RawMessage, results map[string]json.RawMessage) order.StepRequest {
	return order.StepRequest{
		OrderID: orderID, Workflow: w.Name, Version: w.Version, Step: step, Attempt: 1,
		IdempotencyKey: order.IdempotencyKeyFor(orderID, step), Input: input, Results: results,
	}
}

// The checkout example runs on the simulator as the engine runs it: each
// step's answer is kept and passed on, the fraud check answers a score,
// and a failure's compensation (the refund carrying the charge) succeeds.
func TestCheckoutRunsOnTheSimulator(t *testing.T) {
	versions, w := checkout(t)
	sim := newSim(t)
	ts := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); ts.Close() })
	client := remote.NewClient(ts.URL, ts.Client(), versions)
	input := checkoutInput(t, w, "")

	results := map[string]json.RawMessage{}
	for _, d := range w.Steps {
		answer, err := client.Call(t.Context(), d.Agent, checkoutRequest(w, "ORDERC", d.Name, input, results))
		if err != nil {
			t.Fatalf("%s: %v", d.Name, err)
		}
		results[d.Name] = answer.Body
	}
	var fraud struct {
		ID    string   `json:"id"`
		Score *float64 `json:"score"`
	}
	if err := json.Unmarshal(results["fraud-check"], &fraud); err != nil || !strings.HasPrefix(fraud.ID, "fc_") ||
		fraud.Score == nil || *fraud.Score < 0 || *fraud.Score > 1 {
		t.Errorf("fraud check answer %s (%v), want an fc_ id and a score from 0 to 1", results["fraud-check"], err)
	}
	// Compensation, in reverse: every undo carries what its definition says.
	for i := len(w.Steps) - 1; i >= 0; i-- {
		d := w.Steps[i]
		if d.Undo == "" {
			continue
		}
		req := checkoutRequest(w, "ORDERC", d.Name, input, results)
		req.Undo, req.Record = true, len(w.Steps)
		if _, err := client.Call(t.Context(), d.Agent, req); err != nil {
			t.Errorf("undo %s: %v", d.Name, err)
		}
		if !sim.Undone(d.Agent, req.IdempotencyKey) {
			t.Errorf("undo %s: not undone", d.Name)
		}
	}
}

// The fraud service takes the test values as the others do:
// TEST-FRAUD-PERMANENT refuses the order, TEST-FRAUD-TRANSIENT-1 fails
// one call; other services' values leave it alone.
func TestFraudTestValues(t *testing.T) {
	versions, w := checkout(t)
	tests := []struct {
		sku  string
		want []outcome
		msg  string
	}{
		{"WIDGET-1", []outcome{succeeded, succeeded}, ""},
		{"TEST-FRAUD-PERMANENT", []outcome{permanent, permanent}, "status 422: order flagged as a fraud risk"},
		{"TEST-FRAUD-TRANSIENT-1", []outcome{transient, succeeded}, "status 503"},
		{"TEST-PAYMENT-PERMANENT", []outcome{succeeded}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.sku, func(t *testing.T) {
			sim := newSim(t)
			ts := httptest.NewServer(sim)
			t.Cleanup(func() { sim.Close(); ts.Close() })
			client := remote.NewClient(ts.URL, ts.Client(), versions)
			req := checkoutRequest(w, "ORDERF", "fraud-check", checkoutInput(t, w, tt.sku), nil)
			for i, want := range tt.want {
				_, err := client.Call(t.Context(), "fraud", req)
				if got := classify(err); got != want {
					t.Fatalf("call %d: %s (%v), want %s", i+1, got, err, want)
				}
				if err != nil && !strings.Contains(err.Error(), tt.msg) {
					t.Errorf("call %d: %v, want it to say %q", i+1, err, tt.msg)
				}
			}
		})
	}
}

// rawCall sends one call as a service's client would, with extra headers,
// and returns the status and the decoded JSON answer.
func rawCall(t *testing.T, url, key, body string, header http.Header) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header = header.Clone()
	if req.Header == nil {
		req.Header = http.Header{}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var answer map[string]any
	if err := json.Unmarshal(raw, &answer); err != nil {
		t.Fatalf("POST %s: status %d, body %q is not a JSON object", url, resp.StatusCode, raw)
	}
	return resp.StatusCode, answer
}

// body is a checkout call's body for order orderID, carrying results.
func body(orderID string, results map[string]string) string {
	b := map[string]any{"orderId": orderID, "customerId": "c-42", "lines": []any{map[string]any{"sku": "SKU-1", "quantity": 1}}}
	if results != nil {
		rs := map[string]any{}
		for step, id := range results {
			rs[step] = map[string]any{"id": id}
		}
		b["results"] = rs
	}
	raw, _ := json.Marshal(b)
	return string(raw)
}

// A shipment that names a reservation (the checkout example's
// arrange-shipping carries reserve-inventory's answer) is arranged only
// from a reservation made for that order and not released; one without
// results is the shipped workflow's, as before.
func TestShippingChecksTheReservation(t *testing.T) {
	_, ts, _ := start(t)
	reserve := func(orderID, key string) string {
		status, answer := rawCall(t, ts.URL+"/inventory/reservations", key, body(orderID, nil), nil)
		if status != http.StatusCreated {
			t.Fatalf("reserve: %d %v", status, answer)
		}
		return answer["id"].(string)
	}
	mine := reserve("ORDER1", "K-res-1")
	other := reserve("ORDER2", "K-res-2")
	released := reserve("ORDER1", "K-res-3")
	if status, answer := rawCall(t, ts.URL+"/inventory/releases", "K-res-3", body("ORDER1", nil), nil); status != http.StatusOK {
		t.Fatalf("release: %d %v", status, answer)
	}
	tests := []struct {
		name    string
		results map[string]string
		want    int
		msg     string
	}{
		{"no results", nil, http.StatusCreated, ""},
		{"the order's reservation", map[string]string{"reserve-inventory": mine}, http.StatusCreated, ""},
		{"another order's reservation", map[string]string{"reserve-inventory": other}, http.StatusUnprocessableEntity,
			"results.reserve-inventory.id: " + other + " is not a reservation made for order ORDER1"},
		{"an unknown reservation", map[string]string{"reserve-inventory": "res_NOPE"}, http.StatusUnprocessableEntity,
			"results.reserve-inventory.id: res_NOPE is not a reservation made for order ORDER1"},
		{"a released reservation", map[string]string{"reserve-inventory": released}, http.StatusUnprocessableEntity,
			"results.reserve-inventory.id: " + released + " was undone"},
		{"an empty id", map[string]string{"reserve-inventory": ""}, http.StatusBadRequest, "results.reserve-inventory.id is required"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := rawCall(t, ts.URL+"/shipping/shipments", fmt.Sprintf("K-shp-%d", i), body("ORDER1", tt.results), nil)
			if status != tt.want {
				t.Errorf("status %d %v, want %d", status, answer, tt.want)
			}
			if msg, _ := answer["error"].(string); tt.msg != "" && msg != tt.msg {
				t.Errorf("error %q, want %q", msg, tt.msg)
			}
		})
	}
}

// A refund that names the charge (the checkout example's refund carries
// charge-payment's answer) must name the charge made under its key.
func TestRefundChecksTheCharge(t *testing.T) {
	_, ts, _ := start(t)
	charge := func(key string) string {
		status, answer := rawCall(t, ts.URL+"/payment/charges", key, body("ORDER1", nil), nil)
		if status != http.StatusCreated {
			t.Fatalf("charge: %d %v", status, answer)
		}
		return answer["id"].(string)
	}
	first, second := charge("K-ch-1"), charge("K-ch-2")
	tests := []struct {
		name    string
		key     string
		results map[string]string
		want    int
	}{
		{"another charge", "K-ch-1", map[string]string{"charge-payment": second}, http.StatusUnprocessableEntity},
		{"a charge where none was made", "K-ch-none", map[string]string{"charge-payment": first}, http.StatusUnprocessableEntity},
		{"its own charge", "K-ch-1", map[string]string{"charge-payment": first}, http.StatusOK},
		{"no results", "K-ch-2", nil, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := rawCall(t, ts.URL+"/payment/refunds", tt.key, body("ORDER1", tt.results), nil)
			if status != tt.want {
				t.Errorf("status %d %v, want %d", status, answer, tt.want)
			}
		})
	}
}

// The reservations a ledger records are known after a restart: a
// shipment naming one is arranged.
func TestResultChecksSurviveARestart(t *testing.T) {
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	sim := newSim(t, simulator.WithLedger(ledger))
	ts := httptest.NewServer(sim)
	status, answer := rawCall(t, ts.URL+"/inventory/reservations", "K-res", body("ORDER1", nil), nil)
	sim.Close()
	ts.Close()
	if status != http.StatusCreated {
		t.Fatalf("reserve: %d %v", status, answer)
	}
	_, ts2, _ := start(t, simulator.WithLedger(ledger))
	if status, answer := rawCall(t, ts2.URL+"/shipping/shipments", "K-shp", body("ORDER1", map[string]string{"reserve-inventory": answer["id"].(string)}), nil); status != http.StatusCreated {
		t.Errorf("shipment after a restart: %d %v, want 201", status, answer)
	}
}

// A service given a required header answers 401 without it or with
// another value, and never says the value; other services do not ask.
func TestRequiredHeader(t *testing.T) {
	const secret = "Bearer s3cret-value"
	var logs bytes.Buffer
	_, ts, _ := start(t, simulator.WithRequiredHeader("fraud", "Authorization", secret),
		simulator.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	tests := []struct {
		name   string
		path   string
		header http.Header
		want   int
	}{
		{"missing", "/fraud/checks", nil, http.StatusUnauthorized},
		{"wrong", "/fraud/checks", http.Header{"Authorization": {"Bearer guess"}}, http.StatusUnauthorized},
		{"a prefix of it", "/fraud/checks", http.Header{"Authorization": {"Bearer s3cret"}}, http.StatusUnauthorized},
		{"right", "/fraud/checks", http.Header{"Authorization": {secret}}, http.StatusCreated},
		{"another service", "/payment/charges", nil, http.StatusCreated},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			status, answer := rawCall(t, ts.URL+tt.path, fmt.Sprintf("K-%d", i), body("ORDER1", nil), tt.header)
			if status != tt.want {
				t.Errorf("status %d %v, want %d", status, answer, tt.want)
			}
			if msg, _ := answer["error"].(string); strings.Contains(msg, "s3cret") {
				t.Errorf("error %q says the value", msg)
			}
		})
	}
	if strings.Contains(logs.String(), "s3cret") {
		t.Errorf("the logs say the value:\n%s", logs.String())
	}
}

// -require-header's values come from a variable or a file, never from the
// command line itself.
func TestParseRequiredHeader(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "token")
	if err := os.WriteFile(file, []byte("Bearer from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := map[string]string{"FRAUD_AUTH": "Bearer from-env", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	tests := []struct {
		spec    string
		want    simulator.RequiredHeader
		wantErr string
	}{
		{"fraud=Authorization=$FRAUD_AUTH", simulator.RequiredHeader{Service: "fraud", Name: "Authorization", Value: "Bearer from-env"}, ""},
		{"payment=X-Api-Key=@" + file, simulator.RequiredHeader{Service: "payment", Name: "X-Api-Key", Value: "Bearer from-file"}, ""},
		{"fraud=Authorization=Bearer literal", simulator.RequiredHeader{}, "want $VARIABLE or @FILE"},
		{"fraud=Authorization", simulator.RequiredHeader{}, "want SERVICE=HEADER=$VARIABLE or SERVICE=HEADER=@FILE"},
		{"fraud=Authorization=$MISSING", simulator.RequiredHeader{}, "$MISSING is not set"},
		{"fraud=Authorization=$EMPTY", simulator.RequiredHeader{}, "$EMPTY is empty"},
		{"fraud=Authorization=@" + filepath.Join(dir, "nope"), simulator.RequiredHeader{}, "no such file"},
		{"fraud=Bad Header=$FRAUD_AUTH", simulator.RequiredHeader{}, `header name "Bad Header"`},
		{"=Authorization=$FRAUD_AUTH", simulator.RequiredHeader{}, "want SERVICE=HEADER"},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := simulator.ParseRequiredHeader(tt.spec, lookup)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
			case err != nil && (strings.Contains(err.Error(), "from-env") || strings.Contains(err.Error(), "from-file")):
				t.Errorf("error %q says the value", err)
			}
			if got != tt.want {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
			if strings.Contains(fmt.Sprint(got), "from-") {
				t.Errorf("%%v of it says the value: %v", got)
			}
		})
	}
}
