package remote_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/remote"
)

func stepRequest(key string) order.StepRequest {
	return order.StepRequest{
		OrderID:        "ORDER1",
		Step:           order.StepChargePayment,
		Attempt:        3,
		IdempotencyKey: key,
		CustomerID:     "cust-42",
		Lines:          []order.Line{{SKU: "WIDGET-1", Quantity: 2}, {SKU: "GADGET-7", Quantity: 1}},
	}
}

// respond returns a handler that answers every request the same way.
func respond(status int, header http.Header, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// holdUntilClientGivesUp never answers. It reads the body first because
// net/http notices a client hanging up only once the body is consumed;
// until then ts.Close would wait for the handler forever.
var holdUntilClientGivesUp = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
})

func TestCallSendsTheContract(t *testing.T) {
	tests := []struct {
		service  string
		wantPath string
	}{
		{"inventory", "/inventory/reservations"},
		{"payment", "/payment/charges"},
		{"shipping", "/shipping/shipments"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			var got *http.Request
			var gotBody []byte
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				gotBody, _ = io.ReadAll(r.Body)
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ref_1"}`)
			}))
			defer ts.Close()
			key := order.IdempotencyKeyFor("ORDER1", order.StepChargePayment)

			// A trailing slash on the base URL must not double up.
			ref, err := remote.NewClient(ts.URL+"/", ts.Client()).Call(t.Context(), tt.service, stepRequest(key))
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if ref != "ref_1" {
				t.Errorf("reference = %q, want %q", ref, "ref_1")
			}
			if got.Method != http.MethodPost || got.URL.Path != tt.wantPath {
				t.Errorf("request = %s %s, want POST %s", got.Method, got.URL.Path, tt.wantPath)
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if k := got.Header.Get("Idempotency-Key"); k != "ORDER1/charge-payment" {
				t.Errorf("Idempotency-Key = %q, want %q", k, "ORDER1/charge-payment")
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(gotBody, &body); err != nil {
				t.Fatalf("body %s: %v", gotBody, err)
			}
			if keys := slices.Sorted(func(yield func(string) bool) {
				for k := range body {
					if !yield(k) {
						return
					}
				}
			}); !slices.Equal(keys, []string{"customerId", "lines", "orderId"}) {
				t.Errorf("body fields = %v, want [customerId lines orderId]", keys)
			}
			want := `{"orderId":"ORDER1","customerId":"cust-42","lines":[{"sku":"WIDGET-1","quantity":2},{"sku":"GADGET-7","quantity":1}]}`
			if string(gotBody) != want {
				t.Errorf("body = %s, want %s", gotBody, want)
			}
		})
	}
}

func TestCallClassifiesResponses(t *testing.T) {
	tests := []struct {
		name     string
		status   int
		header   http.Header
		body     string
		wantRef  string
		wantKind error // nil for success
		wantMsg  string
	}{
		{name: "created", status: 201, body: `{"id":"ch_1"}`, wantRef: "ch_1"},
		{name: "replayed", status: 200, header: http.Header{"Idempotent-Replayed": {"true"}}, body: `{"id":"ch_1"}`, wantRef: "ch_1"},
		{name: "success without id", status: 201, body: `{}`, wantKind: remote.ErrTransient, wantMsg: "status 201 without a reference"},
		{name: "success with garbage", status: 201, body: `<html>`, wantKind: remote.ErrTransient, wantMsg: "without a reference"},
		{name: "503", status: 503, body: `{"error":"busy"}`, wantKind: remote.ErrTransient,
			wantMsg: "payment: POST /payment/charges: status 503: busy: transient fault"},
		{name: "429", status: 429, body: `{"error":"slow down"}`, wantKind: remote.ErrTransient, wantMsg: "status 429: slow down"},
		{name: "500 plain text", status: 500, body: "oops\n", wantKind: remote.ErrTransient, wantMsg: "status 500: oops: transient"},
		{name: "502 empty", status: 502, wantKind: remote.ErrTransient, wantMsg: "status 502: Bad Gateway"},
		{name: "504", status: 504, wantKind: remote.ErrTransient, wantMsg: "status 504"},
		{name: "408", status: 408, wantKind: remote.ErrTransient, wantMsg: "status 408"},
		{name: "422", status: 422, body: `{"error":"card declined"}`, wantKind: remote.ErrPermanent,
			wantMsg: "payment: POST /payment/charges: status 422: card declined: permanent fault"},
		{name: "400", status: 400, body: `{"error":"bad"}`, wantKind: remote.ErrPermanent, wantMsg: "status 400: bad"},
		{name: "404", status: 404, wantKind: remote.ErrPermanent, wantMsg: "status 404: Not Found"},
		// The IETF Idempotency-Key draft answers 409 while a request with
		// the same key is still in flight, as after an abandoned attempt.
		{name: "409 key in flight", status: 409, body: `{"error":"a request with this key is in progress"}`,
			wantKind: remote.ErrTransient, wantMsg: "status 409: a request with this key is in progress"},
		{name: "501", status: 501, wantKind: remote.ErrPermanent, wantMsg: "status 501"},
		{name: "unfollowed redirect", status: 302, wantKind: remote.ErrPermanent, wantMsg: "status 302"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(tt.status, tt.header, tt.body))
			defer ts.Close()

			ref, err := remote.NewClient(ts.URL, ts.Client()).Call(t.Context(), "payment", stepRequest("k1"))
			if ref != tt.wantRef {
				t.Errorf("reference = %q, want %q", ref, tt.wantRef)
			}
			if tt.wantKind == nil {
				if err != nil {
					t.Fatalf("Call: %v, want success", err)
				}
				return
			}
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("Call error = %v, want it to wrap %v", err, tt.wantKind)
			}
			other := remote.ErrTransient
			if tt.wantKind == remote.ErrTransient {
				other = remote.ErrPermanent
			}
			if errors.Is(err, other) {
				t.Errorf("Call error = %v, wraps %v as well", err, other)
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Call error = %q, want it to contain %q", err, tt.wantMsg)
			}
		})
	}
}

func TestCallRefusesBadRequestsWithoutSending(t *testing.T) {
	tests := []struct {
		name    string
		service string
		key     string
		wantMsg string
	}{
		{"unknown service", "billing", "k1", `remote service "billing": unknown`},
		{"empty service", "", "k1", "unknown"},
		{"no idempotency key", "payment", "", "no idempotency key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				respond(201, nil, `{"id":"x"}`)(w, r)
			}))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client()).Call(t.Context(), tt.service, stepRequest(tt.key))
			if !errors.Is(err, remote.ErrPermanent) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Call error = %v, want ErrPermanent containing %q", err, tt.wantMsg)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("server was called %d times, want 0", n)
			}
		})
	}
}

func TestCallEndedByContextIsTransient(t *testing.T) {
	ts := httptest.NewServer(holdUntilClientGivesUp)
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client())

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	deadline, cancelDeadline := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelDeadline()

	tests := []struct {
		name    string
		ctx     context.Context
		wantErr error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline", deadline, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Call(tt.ctx, "shipping", stepRequest("k1"))
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, remote.ErrTransient) {
				t.Errorf("Call error = %v, want it to wrap %v and ErrTransient", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "shipping: POST /shipping/shipments: ") {
				t.Errorf("Call error = %q, want it to name the call", err)
			}
		})
	}
}

func TestCallNetworkErrorIsTransient(t *testing.T) {
	ts := httptest.NewServer(respond(201, nil, `{"id":"x"}`))
	url := ts.URL
	ts.Close()

	_, err := remote.NewClient(url, nil).Call(t.Context(), "inventory", stepRequest("k1"))
	if !errors.Is(err, remote.ErrTransient) {
		t.Errorf("Call error = %v, want ErrTransient", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call error = %v, wraps a context error though the context is live", err)
	}
}

func TestCallHTTPClientTimeoutIsTransient(t *testing.T) {
	ts := httptest.NewServer(holdUntilClientGivesUp)
	defer ts.Close()
	hc := ts.Client()
	hc.Timeout = 50 * time.Millisecond

	_, err := remote.NewClient(ts.URL, hc).Call(t.Context(), "payment", stepRequest("k1"))
	if !errors.Is(err, remote.ErrTransient) {
		t.Errorf("Call error = %v, want ErrTransient", err)
	}
}

func TestCallReadsAtMost64KiB(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind error
		maxLen   int
	}{
		// A valid body made invalid by the cut shows the limit is applied.
		{"success padded past the limit", 201, `{"id":"ch_1","padding":"` + huge + `"}`, remote.ErrTransient, 1000},
		{"error text quoted in part", 503, huge, remote.ErrTransient, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(tt.status, nil, tt.body))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client()).Call(t.Context(), "payment", stepRequest("k1"))
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("Call error = %v, want %v", err, tt.wantKind)
			}
			if n := len(err.Error()); n > tt.maxLen {
				t.Errorf("error message is %d bytes, want at most %d", n, tt.maxLen)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	date := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"date against the response's Date", http.Header{
			"Date":        {date.Format(http.TimeFormat)},
			"Retry-After": {date.Add(5 * time.Second).Format(http.TimeFormat)},
		}, 5 * time.Second, true},
		{"date in the past", http.Header{
			"Date":        {date.Format(http.TimeFormat)},
			"Retry-After": {date.Add(-time.Minute).Format(http.TimeFormat)},
		}, 0, true},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(503, tt.header, `{"error":"busy"}`))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client()).Call(t.Context(), "payment", stepRequest("k1"))
			if !errors.Is(err, remote.ErrTransient) {
				t.Fatalf("Call error = %v, want ErrTransient", err)
			}
			got, ok := remote.RetryAfter(err)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter = %v, %t, want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if _, ok := remote.RetryAfter(nil); ok {
		t.Error("RetryAfter(nil) reported a delay")
	}
}
