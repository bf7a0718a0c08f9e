package simulator_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/adapter/remote"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// shipped is the shipped workflow, whose steps name the calls the client makes.
var shipped = ordertest.Built(order.DefaultTiming)

// start serves a fresh simulator over a real connection. Cleanup closes the
// simulator before the server, so calls it holds cannot stall ts.Close.
func start(t *testing.T, opts ...simulator.Option) (*simulator.Server, *httptest.Server, *remote.Client) {
	t.Helper()
	sim := newSim(t, opts...)
	ts := httptest.NewServer(sim)
	t.Cleanup(func() {
		sim.Close()
		ts.Close()
	})
	return sim, ts, remote.NewClient(ts.URL, ts.Client(), shipped)
}

func stepRequest(orderID, step string, skus ...string) order.StepRequest {
	req := order.StepRequest{
		OrderID:        orderID,
		Step:           step,
		Attempt:        1,
		IdempotencyKey: order.IdempotencyKeyFor(orderID, step),
	}
	lines := []order.Line{}
	for _, sku := range skus {
		lines = append(lines, order.Line{SKU: sku, Quantity: 2})
	}
	req.Input = order.LegacyInput("cust-1", lines, "")
	return req
}

var stepOf = map[string]string{
	"inventory": ordertest.StepReserveInventory,
	"payment":   ordertest.StepChargePayment,
	"shipping":  ordertest.StepArrangeShipping,
}

var refPrefix = map[string]string{"inventory": "res_", "payment": "ch_", "shipping": "shp_"}

// outcome is how a call ended, as the agent's retry loop sees it.
type outcome int

const (
	succeeded outcome = iota
	transient
	permanent
	configuration
)

func (o outcome) String() string {
	return [...]string{"succeeded", "transient", "permanent", "configuration"}[o]
}

func classify(err error) outcome {
	switch {
	case err == nil:
		return succeeded
	case errors.Is(err, order.ErrPermanent):
		return permanent
	case errors.Is(err, order.ErrConfiguration):
		return configuration
	default:
		return transient
	}
}

func TestTestValues(t *testing.T) {
	type attempt struct {
		timeout    time.Duration // of the call's context; 0 means 5s
		want       outcome
		wantMsg    string        // in the error
		wantCtxErr error         // wrapped in the error
		minElapsed time.Duration // before the call returns
	}
	ok := attempt{want: succeeded}
	gaveUp := attempt{timeout: 50 * time.Millisecond, want: transient, wantCtxErr: context.DeadlineExceeded}

	tests := []struct {
		name     string
		service  string
		skus     []string
		attempts []attempt
	}{
		{"normal sku", "inventory", []string{"WIDGET-1"}, []attempt{ok, ok}},
		{"transient 2 then success", "payment", []string{"WIDGET-1", "TEST-PAYMENT-TRANSIENT-2"}, []attempt{
			{want: transient, wantMsg: "status 503: payment is temporarily unavailable"},
			{want: transient, wantMsg: "status 503"},
			ok, ok,
		}},
		{"transient 0 is normal", "payment", []string{"TEST-PAYMENT-TRANSIENT-0"}, []attempt{ok}},
		{"permanent payment", "payment", []string{"TEST-PAYMENT-PERMANENT"}, []attempt{
			{want: permanent, wantMsg: "status 422: card declined"},
			{want: permanent, wantMsg: "status 422: card declined"},
		}},
		{"permanent inventory", "inventory", []string{"TEST-INVENTORY-PERMANENT"}, []attempt{
			{want: permanent, wantMsg: "status 422: sku out of stock"},
		}},
		{"permanent shipping", "shipping", []string{"TEST-SHIPPING-PERMANENT"}, []attempt{
			{want: permanent, wantMsg: "status 422: address undeliverable"},
		}},
		// 404, as a REST service answers for an entity it does not know.
		{"unknown to payment", "payment", []string{"TEST-PAYMENT-UNKNOWN"}, []attempt{
			{want: configuration, wantMsg: "status 404: no such payment account"},
			{want: configuration, wantMsg: "status 404: no such payment account"},
		}},
		{"unknown to inventory", "inventory", []string{"TEST-INVENTORY-UNKNOWN"}, []attempt{
			{want: configuration, wantMsg: "status 404: no such sku"},
		}},
		{"other services' values leave this one alone", "inventory",
			[]string{"TEST-PAYMENT-PERMANENT", "TEST-SHIPPING-HANG", "TEST-PAYMENT-TRANSIENT-5"}, []attempt{ok}},
		{"hang never answers", "shipping", []string{"TEST-SHIPPING-HANG"}, []attempt{gaveUp, gaveUp, gaveUp}},
		{"hang 1 then success", "shipping", []string{"TEST-SHIPPING-HANG-1"}, []attempt{gaveUp, ok, ok}},
		{"hang 2 then success", "payment", []string{"TEST-PAYMENT-HANG-2"}, []attempt{gaveUp, gaveUp, ok}},
		{"slow in time", "payment", []string{"TEST-PAYMENT-SLOW-100"}, []attempt{
			{want: succeeded, minElapsed: 100 * time.Millisecond},
			ok, // a replay is answered at once
		}},
		{"slow past the deadline leaves no work done", "inventory", []string{"TEST-INVENTORY-SLOW-300"}, []attempt{
			gaveUp,
			{want: succeeded, minElapsed: 300 * time.Millisecond},
		}},
		{"unknown test values are ordinary", "payment",
			[]string{"TEST-PAYMENT-EXPLODE", "TEST-PAYMENT-TRANSIENT", "TEST-PAYMENT-SLOW-x", "TEST-BANK-PERMANENT"}, []attempt{ok}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, _, client := start(t)
			req := stepRequest("ORDER1", stepOf[tt.service], tt.skus...)

			var firstRef string
			for i, a := range tt.attempts {
				timeout := cmp.Or(a.timeout, 5*time.Second)
				ctx, cancel := context.WithTimeout(t.Context(), timeout)
				began := time.Now()
				answer, err := client.Call(ctx, tt.service, req)
				ref := answer.Reference
				elapsed := time.Since(began)
				cancel()

				if got := classify(err); got != a.want {
					t.Fatalf("call %d: %s (err %v), want %s", i+1, got, err, a.want)
				}
				if a.wantMsg != "" && !strings.Contains(err.Error(), a.wantMsg) {
					t.Errorf("call %d: error %q, want it to contain %q", i+1, err, a.wantMsg)
				}
				if a.wantCtxErr != nil && !errors.Is(err, a.wantCtxErr) {
					t.Errorf("call %d: error %v, want it to wrap %v", i+1, err, a.wantCtxErr)
				}
				if elapsed < a.minElapsed {
					t.Errorf("call %d: answered after %s, want at least %s", i+1, elapsed, a.minElapsed)
				}
				if a.want != succeeded {
					continue
				}
				if !strings.HasPrefix(ref, refPrefix[tt.service]) || len(ref) < len(refPrefix[tt.service])+10 {
					t.Errorf("call %d: reference %q, want %s followed by a random id", i+1, ref, refPrefix[tt.service])
				}
				if firstRef == "" {
					firstRef = ref
				} else if ref != firstRef {
					t.Errorf("call %d: reference %q, want the first success's %q", i+1, ref, firstRef)
				}
			}
			if got := sim.Calls(tt.service, req.IdempotencyKey); got != len(tt.attempts) {
				t.Errorf("Calls(%s, %s) = %d, want %d", tt.service, req.IdempotencyKey, got, len(tt.attempts))
			}
		})
	}
}

// post sends a raw request, for what the client cannot show or would not send.
func post(t *testing.T, url, key, contentType, body string) (status int, header http.Header, respBody map[string]string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	if key != "" {
		req.Header.Set("Idempotency-Key", key)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	if err := json.Unmarshal(raw, &respBody); err != nil {
		t.Fatalf("POST %s: status %d, body %q is not a JSON object of strings: %v", url, resp.StatusCode, raw, err)
	}
	return resp.StatusCode, resp.Header, respBody
}

const validBody = `{"orderId":"ORDER1","customerId":"cust-1","lines":[{"sku":"WIDGET-1","quantity":2}]}`

func TestReplayReturnsTheSameReference(t *testing.T) {
	sim, ts, _ := start(t)
	url := ts.URL + "/payment/charges"

	status, header, first := post(t, url, "ORDER1/charge-payment", "application/json", validBody)
	if status != http.StatusCreated || header.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first call: status %d, Idempotent-Replayed %q, want 201 and none", status, header.Get("Idempotent-Replayed"))
	}
	if !strings.HasPrefix(first["id"], "ch_") {
		t.Fatalf("first call: id %q, want a ch_ reference", first["id"])
	}
	// The same body formatted differently is the same request.
	status, header, second := post(t, url, "ORDER1/charge-payment", "application/json; charset=utf-8",
		"{\n  \"orderId\": \"ORDER1\", \"customerId\": \"cust-1\",\n  \"lines\": [{\"quantity\": 2, \"sku\": \"WIDGET-1\"}]\n}")
	if status != http.StatusOK || header.Get("Idempotent-Replayed") != "true" || second["id"] != first["id"] {
		t.Errorf("replay: status %d, Idempotent-Replayed %q, id %q, want 200, true, %q",
			status, header.Get("Idempotent-Replayed"), second["id"], first["id"])
	}
	if got := header.Get("Content-Type"); got != "application/json" {
		t.Errorf("replay: Content-Type %q, want application/json", got)
	}

	// A new key is new work; keys are scoped per service.
	for _, tc := range []struct{ path, key string }{
		{"/payment/charges", "ORDER2/charge-payment"},
		{"/inventory/reservations", "ORDER1/charge-payment"},
	} {
		status, _, other := post(t, ts.URL+tc.path, tc.key, "application/json", validBody)
		if status != http.StatusCreated || other["id"] == first["id"] {
			t.Errorf("POST %s with key %s: status %d, id %q, want 201 and an id other than %q",
				tc.path, tc.key, status, other["id"], first["id"])
		}
	}
	if got := sim.Calls("payment", "ORDER1/charge-payment"); got != 2 {
		t.Errorf("Calls = %d, want 2", got)
	}
}

func TestRejectsMalformedCalls(t *testing.T) {
	big := `{"orderId":"O","lines":[{"sku":"` + strings.Repeat("x", 70<<10) + `","quantity":1}]}`
	tests := []struct {
		name        string
		method      string
		path        string
		contentType string
		key         string
		body        string
		wantStatus  int
	}{
		{"no idempotency key", "POST", "/payment/charges", "application/json", "", validBody, 400},
		{"key with spaces", "POST", "/payment/charges", "application/json", "a key", validBody, 400},
		{"key too long", "POST", "/payment/charges", "application/json", strings.Repeat("k", 256), validBody, 400},
		{"malformed JSON", "POST", "/payment/charges", "application/json", "k1", `{"orderId":`, 400},
		{"empty body", "POST", "/payment/charges", "application/json", "k1", ``, 400},
		{"trailing data", "POST", "/payment/charges", "application/json", "k1", validBody + `{}`, 400},
		{"wrong field type", "POST", "/payment/charges", "application/json", "k1", `{"orderId":"O","lines":"many"}`, 400},
		{"no order id", "POST", "/payment/charges", "application/json", "k1", `{"lines":[{"sku":"A","quantity":1}]}`, 400},
		{"no lines", "POST", "/payment/charges", "application/json", "k1", `{"orderId":"O","lines":[]}`, 400},
		{"zero quantity", "POST", "/payment/charges", "application/json", "k1", `{"orderId":"O","lines":[{"sku":"A","quantity":0}]}`, 400},
		{"body too large", "POST", "/payment/charges", "application/json", "k1", big, 413},
		{"not JSON", "POST", "/payment/charges", "text/plain", "k1", validBody, 415},
		{"no content type", "POST", "/payment/charges", "", "k1", validBody, 415},
		{"GET", "GET", "/payment/charges", "application/json", "k1", "", 405},
		{"unknown collection", "POST", "/payment/invoices", "application/json", "k1", validBody, 404},
		{"unknown service", "POST", "/billing/charges", "application/json", "k1", validBody, 404},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim := newSim(t)
			req := httptest.NewRequest(tt.method, tt.path, strings.NewReader(tt.body))
			if tt.contentType != "" {
				req.Header.Set("Content-Type", tt.contentType)
			}
			if tt.key != "" {
				req.Header.Set("Idempotency-Key", tt.key)
			}
			rec := httptest.NewRecorder()
			sim.ServeHTTP(rec, req)

			if rec.Code != tt.wantStatus {
				t.Errorf("status = %d (body %s), want %d", rec.Code, rec.Body, tt.wantStatus)
			}
			var body struct{ Error string }
			if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error == "" {
				t.Errorf("body = %s, want {\"error\": ...}", rec.Body)
			}
			if tt.wantStatus == 405 && rec.Header().Get("Allow") != "POST" {
				t.Errorf("Allow = %q, want POST", rec.Header().Get("Allow"))
			}
			for _, service := range []string{"inventory", "payment", "shipping"} {
				if n := sim.Calls(service, tt.key); n != 0 {
					t.Errorf("Calls(%s, %q) = %d, want 0 for a malformed call", service, tt.key, n)
				}
			}
		})
	}
}

func TestKeyReusedForDifferentWorkIsRefused(t *testing.T) {
	_, _, client := start(t)
	first := stepRequest("ORDER1", ordertest.StepChargePayment, "WIDGET-1")
	answer, err := client.Call(t.Context(), "payment", first)
	ref := answer.Reference
	if err != nil {
		t.Fatalf("first call: %v", err)
	}
	other := first
	other.Input = order.LegacyInput("cust-1", []order.Line{{SKU: "GADGET-9", Quantity: 1}}, "")
	_, err = client.Call(t.Context(), "payment", other)
	if !errors.Is(err, order.ErrPermanent) || !strings.Contains(err.Error(), "status 422") {
		t.Errorf("same key, different lines: error %v, want a permanent 422", err)
	}
	// The original work is still there.
	if again, err := client.Call(t.Context(), "payment", first); err != nil || again.Reference != ref {
		t.Errorf("replay after the conflict: %+v, %v, want %q", again, err, ref)
	}
}

func TestCallsCountsPerServiceAndKey(t *testing.T) {
	sim, _, client := start(t)
	a := stepRequest("ORDERA", stepOf["payment"], "TEST-PAYMENT-TRANSIENT-1")
	b := stepRequest("ORDERB", stepOf["payment"], "WIDGET-1")
	// The same key to another service (the client routes by step).
	aInventory := a
	aInventory.Step = stepOf["inventory"]
	calls := []struct {
		service string
		req     order.StepRequest
	}{
		{"payment", a}, {"payment", a}, {"payment", a},
		{"inventory", aInventory},
		{"payment", b},
	}
	for _, c := range calls {
		client.Call(t.Context(), c.service, c.req) // outcomes are covered elsewhere
	}
	tests := []struct {
		service, key string
		want         int
	}{
		{"payment", a.IdempotencyKey, 3},
		{"inventory", a.IdempotencyKey, 1},
		{"shipping", a.IdempotencyKey, 0},
		{"payment", b.IdempotencyKey, 1},
		{"payment", "never-used", 0},
		{"billing", a.IdempotencyKey, 0},
	}
	for _, tt := range tests {
		if got := sim.Calls(tt.service, tt.key); got != tt.want {
			t.Errorf("Calls(%s, %s) = %d, want %d", tt.service, tt.key, got, tt.want)
		}
	}
}

func TestConcurrentCallsWithOneKeyDoTheWorkOnce(t *testing.T) {
	sim, ts, _ := start(t)
	const n = 32
	// SLOW keeps every call in flight together, before any has done the work.
	slowBody := `{"orderId":"ORDER1","customerId":"cust-1","lines":[{"sku":"TEST-INVENTORY-SLOW-200","quantity":1}]}`
	var wg sync.WaitGroup
	statuses := make([]int, n)
	ids := make([]string, n)
	for i := range n {
		wg.Go(func() {
			status, _, body := post(t, ts.URL+"/inventory/reservations", "ORDER1/reserve-inventory", "application/json", slowBody)
			statuses[i], ids[i] = status, body["id"]
		})
	}
	wg.Wait()
	created := 0
	for i := range n {
		if statuses[i] == http.StatusCreated {
			created++
		} else if statuses[i] != http.StatusOK {
			t.Errorf("call %d: status %d, want 200 or 201", i, statuses[i])
		}
		if ids[i] != ids[0] {
			t.Errorf("call %d: id %q, want %q like call 0", i, ids[i], ids[0])
		}
	}
	if created != 1 {
		t.Errorf("%d calls answered 201, want exactly 1", created)
	}
	if got := sim.Calls("inventory", "ORDER1/reserve-inventory"); got != n {
		t.Errorf("Calls = %d, want %d", got, n)
	}
}

func TestConcurrentTransientCallsFailExactlyN(t *testing.T) {
	sim, _, client := start(t)
	req := stepRequest("ORDER1", ordertest.StepChargePayment, "TEST-PAYMENT-TRANSIENT-5")
	const n = 20
	var mu sync.Mutex
	outcomes := map[outcome]int{}
	refs := map[string]bool{}
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			answer, err := client.Call(t.Context(), "payment", req)
			ref := answer.Reference
			mu.Lock()
			defer mu.Unlock()
			outcomes[classify(err)]++
			if err == nil {
				refs[ref] = true
			}
		})
	}
	// Unrelated keys on every service at the same time, for the race detector.
	for i := range n {
		wg.Go(func() {
			for _, service := range []string{"inventory", "payment", "shipping"} {
				if _, err := client.Call(t.Context(), service, stepRequest(fmt.Sprintf("OTHER%d", i), stepOf[service], "WIDGET-1")); err != nil {
					t.Errorf("%s for OTHER%d: %v", service, i, err)
				}
			}
		})
	}
	wg.Wait()
	if outcomes[transient] != 5 || outcomes[succeeded] != n-5 || len(refs) != 1 {
		t.Errorf("outcomes %v with %d distinct references, want 5 transient, %d succeeded, 1 reference", outcomes, len(refs), n-5)
	}
	if got := sim.Calls("payment", req.IdempotencyKey); got != n {
		t.Errorf("Calls = %d, want %d", got, n)
	}
}

func TestHangIsReleasedByTheClientGivingUp(t *testing.T) {
	var logs testenv.JSONLines
	sim := newSim(t, simulator.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	ts := httptest.NewServer(sim)
	t.Cleanup(sim.Close) // only if the test fails: it must not be needed
	client := remote.NewClient(ts.URL, ts.Client(), shipped)
	req := stepRequest("ORDER1", ordertest.StepArrangeShipping, "TEST-SHIPPING-HANG")

	ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancel()
	if _, err := client.Call(ctx, "shipping", req); !errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, order.ErrTransient) {
		t.Fatalf("Call error = %v, want a transient deadline error", err)
	}

	// httptest.Server.Close waits for every handler, so it returns only if
	// the held call let go when its client did.
	closed := make(chan struct{})
	go func() {
		ts.Close()
		close(closed)
	}()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("server still holds the call 5s after its client gave up")
	}
	recs := logs.Records(t)
	if len(recs) != 1 || recs[0]["abandoned"] != true || recs[0]["status"] != 0.0 {
		t.Errorf("log = %v, want one record of an abandoned call with status 0", recs)
	}
}

func TestCloseReleasesHeldCalls(t *testing.T) {
	var logs testenv.JSONLines
	sim := newSim(t, simulator.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
	ts := httptest.NewServer(sim)
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client(), shipped)
	held := []order.StepRequest{
		stepRequest("ORDER1", ordertest.StepArrangeShipping, "TEST-SHIPPING-HANG"),
		stepRequest("ORDER2", ordertest.StepArrangeShipping, "TEST-SHIPPING-HANG-3"),
		stepRequest("ORDER3", ordertest.StepArrangeShipping, "TEST-SHIPPING-SLOW-60000"),
	}

	errs := make(chan error, len(held))
	for _, req := range held {
		go func() {
			_, err := client.Call(t.Context(), "shipping", req) // no deadline: only Close can end it
			errs <- err
		}()
	}
	waitFor(t, "every call to arrive", func() bool {
		for _, req := range held {
			if sim.Calls("shipping", req.IdempotencyKey) != 1 {
				return false
			}
		}
		return true
	})

	sim.Close()
	// Close returns only once every handler is done, log line included.
	if recs := logs.Records(t); len(recs) != len(held) {
		t.Errorf("%d log records when Close returned, want %d", len(recs), len(held))
	}
	for range held {
		if err := <-errs; !errors.Is(err, order.ErrTransient) || !strings.Contains(err.Error(), "status 503: simulator is shutting down") {
			t.Errorf("held call ended with %v, want a transient 503 for the shutdown", err)
		}
	}
	_, err := client.Call(t.Context(), "inventory", stepRequest("ORDER4", stepOf["inventory"], "WIDGET-1"))
	if !errors.Is(err, order.ErrTransient) || !strings.Contains(err.Error(), "status 503") {
		t.Errorf("call after Close: %v, want a transient 503", err)
	}
	sim.Close() // a second Close is harmless
}

// waitFor polls cond, for state that another goroutine reaches.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestLogsOneLinePerCall(t *testing.T) {
	var logs testenv.JSONLines
	// The engine gives the simulator a logger that names it as the service.
	_, ts, client := start(t, simulator.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil)).With("service", "simulator")))
	req := stepRequest("ORDER1", ordertest.StepChargePayment, "TEST-PAYMENT-TRANSIENT-1")
	client.Call(t.Context(), "payment", req)
	client.Call(t.Context(), "payment", req)
	post(t, ts.URL+"/payment/charges", "", "application/json", validBody)

	want := []map[string]any{
		{"level": "WARN", "msg": "remote call", "service": "simulator", "remote_service": "payment", "key": "ORDER1/charge-payment", "order_id": "ORDER1", "mode": "TRANSIENT-1", "call": 1.0, "status": 503.0},
		{"level": "INFO", "msg": "remote call", "service": "simulator", "remote_service": "payment", "key": "ORDER1/charge-payment", "order_id": "ORDER1", "mode": "TRANSIENT-1", "call": 2.0, "status": 201.0},
		{"level": "INFO", "msg": "remote call", "service": "simulator", "remote_service": "payment", "key": "", "mode": "", "status": 400.0},
	}
	recs := logs.Records(t)
	if n := strings.Count(logs.String(), `"service":`); n != len(want) {
		t.Errorf("%d service keys in %d lines: a key is written twice", n, len(want))
	}
	if len(recs) != len(want) {
		t.Fatalf("%d log records, want %d: %v", len(recs), len(want), recs)
	}
	for i, w := range want {
		for k, v := range w {
			if recs[i][k] != v {
				t.Errorf("record %d: %s = %v, want %v (record %v)", i, k, recs[i][k], v, recs[i])
			}
		}
	}
}

func TestRetryAfterOnTransientFaults(t *testing.T) {
	tests := []struct {
		name   string
		opts   []simulator.Option
		want   time.Duration
		wantOK bool
	}{
		{"not sent by default", nil, 0, false},
		{"rounded up to seconds", []simulator.Option{simulator.WithRetryAfter(1500 * time.Millisecond)}, 2 * time.Second, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, client := start(t, tt.opts...)
			_, err := client.Call(t.Context(), "payment", stepRequest("ORDER1", stepOf["payment"], "TEST-PAYMENT-TRANSIENT-1"))
			if !errors.Is(err, order.ErrTransient) {
				t.Fatalf("Call error = %v, want ErrTransient", err)
			}
			if got, ok := order.RetryAfter(err); got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter = %v, %t, want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func newSim(t testing.TB, opts ...simulator.Option) *simulator.Server {
	t.Helper()
	sim, err := simulator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	return sim
}
