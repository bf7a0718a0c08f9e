package remote_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"orderly/internal/adapter/remote"
	"orderly/internal/callbacktoken"
	"orderly/internal/tracing"
)

// A call carries the order's trace to the service in a W3C traceparent:
// the call's own span when tracing is on, so the service's spans are its
// children; the order's trace, not sampled, when it is off.
func TestCallSendsTheOrdersTraceparent(t *testing.T) {
	tests := []struct {
		name   string
		on     bool
		status int
		class  string
	}{
		{"tracing off", false, http.StatusCreated, ""},
		{"tracing on, a success", true, http.StatusCreated, ""},
		{"tracing on, a refusal", true, http.StatusUnprocessableEntity, "permanent"},
		{"tracing on, a fault", true, http.StatusServiceUnavailable, "transient"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			if tt.on {
				tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
				tracing.Use(tp)
				t.Cleanup(func() { tracing.Use(nil) })
			}
			var got string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Header.Get("traceparent")
				w.WriteHeader(tt.status)
				io.WriteString(w, `{"id":"ref_1"}`)
			}))
			defer ts.Close()
			req := stepRequest("ORDER1/charge-payment")
			remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", req)

			parts := strings.Split(got, "-")
			if len(parts) != 4 || parts[1] != tracing.TraceID(req.OrderID).String() {
				t.Fatalf("traceparent = %q, want one of the order's trace %s", got, tracing.TraceID(req.OrderID))
			}
			if !tt.on {
				if parts[3] != "00" {
					t.Errorf("traceparent = %q with tracing off, want it not sampled", got)
				}
				return
			}
			spans := exp.GetSpans()
			if len(spans) != 1 || spans[0].Name != "remote.call" {
				t.Fatalf("spans = %v, want the one remote.call", spans)
			}
			call := spans[0]
			if parts[2] != call.SpanContext.SpanID().String() || parts[3] != "01" {
				t.Errorf("traceparent = %q, want the call's span %s, sampled", got, call.SpanContext.SpanID())
			}
			attrs := map[string]string{}
			for _, kv := range call.Attributes {
				attrs[string(kv.Key)] = kv.Value.String()
			}
			if attrs["http.response.status_code"] != strconv.Itoa(tt.status) || attrs["orderly.order_id"] != req.OrderID || attrs["orderly.step"] != req.Step {
				t.Errorf("span attributes %v, want the status %d, the order and its step", attrs, tt.status)
			}
			if attrs["orderly.error_class"] != tt.class {
				t.Errorf("error class %q, want %q", attrs["orderly.error_class"], tt.class)
			}
		})
	}
}

// No span says what a call carries or what its service answered: the
// order's input, a result, the callback's token, the service's credential
// stay out of every attribute, whatever the answer.
func TestSpansHoldNoOrderData(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tracing.Use(sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp)))
	t.Cleanup(func() { tracing.Use(nil) })
	versions, def := callingBack(t)
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var token string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var body struct{ Callback struct{ Token string } }
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &body)
		token = body.Callback.Token
		// The service echoes what it was sent into a refusal.
		w.WriteHeader(http.StatusUnprocessableEntity)
		w.Write(raw)
	}))
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{
		URL: "https://api.example.com/dev/callbacks", Tokens: callbacktoken.Fixed(callbackSealer(t)), Now: func() time.Time { return now }})
	req := stepRequest("ORDER1/charge-payment")
	req.OrderID, req.Record, req.AllowanceMs = "01JTQ8ZK5XW3M6R2V9B4N7C1DE", 1, (2 * def.Allowance).Milliseconds()
	req.Results = map[string]json.RawMessage{"reserve-inventory": json.RawMessage(`{"id":"res-secret-9"}`)}
	if _, err := client.Call(t.Context(), "payment", req); err == nil {
		t.Fatal("Call: no error, want the refusal")
	}
	if token == "" {
		t.Fatal("the service was sent no callback token")
	}
	spans := exp.GetSpans()
	if len(spans) == 0 {
		t.Fatal("no span recorded")
	}
	for _, s := range spans {
		for _, kv := range s.Attributes {
			v := kv.Value.String()
			for _, secret := range []string{"cust-42", "WIDGET-1", "res-secret-9", token, "declined"} {
				if strings.Contains(v, secret) {
					t.Errorf("span %s attribute %s = %q holds %q", s.Name, kv.Key, v, secret)
				}
			}
		}
		if strings.Contains(s.Status.Description, "cust-42") || strings.Contains(s.Status.Description, token) {
			t.Errorf("span %s status %q holds the order's data", s.Name, s.Status.Description)
		}
	}
}
