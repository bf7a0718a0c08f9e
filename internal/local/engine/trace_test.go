package engine_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
	"orderly/internal/tracing"
)

// heard records the traceparent of every call a service was sent.
type heard struct {
	mu           sync.Mutex
	traceparents []string
}

func (h *heard) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.traceparents = append(h.traceparents, r.Header.Get("traceparent"))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// One order makes one trace: every actor's spans share the order's trace
// id, the request and reply hops across the queues are parented, and the
// team's service is sent the agent's call span as its parent. The spans
// are counted, for the cost of tracing (docs/operations.md, "Tracing").
func TestOneTracePerOrder(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tracing.Sampler(1)))
	tracing.Use(tp)
	t.Cleanup(func() { tracing.Use(nil) })
	sim, err := simulator.New()
	if err != nil {
		t.Fatal(err)
	}
	service := &heard{}
	ts := httptest.NewServer(service.wrap(sim))
	t.Cleanup(func() { ts.Close(); sim.Close() })

	e := start(t, func(c *engine.Config) { c.RemoteURL = ts.URL })
	id := submit(t, e, lines("BOOK-1", "PEN-2"))
	if v := await(t, e, id, 20*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed: %s", v.Status, testenv.Describe(v))
	}
	// The last reply's span ends just after the write the order's status
	// shows; the recorder applies the stream's records in order, the
	// order's end last.
	var spans []tracetest.SpanStub
	ended := func(s tracetest.SpanStub) bool {
		return s.Name == "recorder.record" && attr(s, "orderly.status") == string(order.StatusProcessed)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		spans = spansOf(exp.GetSpans(), id)
		return countSpans(spans, "scheduler.reply") == 3 && slices.ContainsFunc(spans, ended), spanNames(spans)
	})

	traceID := tracing.TraceID(id)
	byID := map[trace.SpanID]tracetest.SpanStub{}
	allowed := []string{"orderly.order_id", "orderly.workflow", "orderly.version", "orderly.step", "orderly.attempt", "orderly.undo",
		"orderly.outcome", "orderly.service", "orderly.poll", "orderly.status", "http.response.status_code"}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("span %s is in trace %s, want the order's %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
		for _, kv := range s.Attributes {
			// What a span may say: nothing of the order's input, a
			// result, a token or a credential.
			if !slices.Contains(allowed, string(kv.Key)) {
				t.Errorf("span %s has attribute %s, which no span of a processed order should", s.Name, kv.Key)
			}
		}
	}
	t.Logf("spans of one processed order of %d steps: %d (%s)", 3, len(spans), spanNames(spans))
	// What they weigh as OTLP/HTTP protobuf, uncompressed: all in one
	// export, and each in its own (a function's flush carries the spans
	// of its invocation, somewhere between the two).
	one, each := otlpBytes(t, spans, len(spans)), otlpBytes(t, spans, 1)
	t.Logf("OTLP payload of the order's spans: %d bytes in one export, %d in one export per span", one, each)
	for name, want := range map[string]int{"api.submit": 1, "dispatch.request": 3, "agent.request": 3, "remote.call": 3, "scheduler.reply": 3} {
		if got := countSpans(spans, name); got != want {
			t.Errorf("%d %s spans, want %d", got, name, want)
		}
	}
	// The hops: a request's consumer is a child of the span that sent it,
	// the call of the agent's span, a reply's consumer of the agent's span.
	parents := map[string]string{"agent.request": "dispatch.request", "remote.call": "agent.request", "scheduler.reply": "agent.request",
		"dispatch.request": ""}
	for _, s := range spans {
		want, ok := parents[s.Name]
		if !ok || want == "" {
			continue
		}
		if got := byID[s.Parent.SpanID()].Name; got != want {
			t.Errorf("span %s (step %s) has parent %q, want %s", s.Name, attr(s, "orderly.step"), got, want)
		}
	}
	// The first request went out from the submission; the others from the
	// replies that claimed their steps.
	for _, s := range spans {
		if s.Name != "dispatch.request" {
			continue
		}
		if got := byID[s.Parent.SpanID()].Name; got != "api.submit" && got != "scheduler.reply" {
			t.Errorf("request of step %s sent under %q, want the submission or a reply", attr(s, "orderly.step"), got)
		}
	}
	// The service was sent each call's span as its parent.
	service.mu.Lock()
	defer service.mu.Unlock()
	calls := 0
	for _, tp := range service.traceparents {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[1] != traceID.String() {
			continue // another order's, or none
		}
		calls++
		sid, _ := trace.SpanIDFromHex(parts[2])
		if got := byID[sid].Name; got != "remote.call" || parts[3] != "01" {
			t.Errorf("service sent traceparent %s, whose parent is %q, want a remote.call span, sampled", tp, got)
		}
	}
	if calls != 3 {
		t.Errorf("service heard %d calls in the order's trace (of %d), want 3", calls, len(service.traceparents))
	}
}

// spansOf are the spans of the order id.
func spansOf(all []tracetest.SpanStub, id string) []tracetest.SpanStub {
	var out []tracetest.SpanStub
	for _, s := range all {
		if attr(s, "orderly.order_id") == id {
			out = append(out, s)
		}
	}
	return out
}

func attr(s tracetest.SpanStub, key string) string {
	for _, kv := range s.Attributes {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func countSpans(spans []tracetest.SpanStub, name string) int {
	n := 0
	for _, s := range spans {
		if s.Name == name {
			n++
		}
	}
	return n
}

func spanNames(spans []tracetest.SpanStub) string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// An order whose first step times out once and whose second fails for
// good is still one trace: the Supervisor's retry decision, the claim it
// leads to and the second round hang from the order; the compensation's
// undo spans say orderly.undo=true and link up as a step's do.
func TestOneTraceThroughARetryAndACompensation(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tracing.Sampler(1)))
	tracing.Use(tp)
	t.Cleanup(func() { tracing.Use(nil) })

	e := start(t, nil)
	// Inventory hangs on its first call (a timeout the Supervisor
	// retries), payment refuses for good: the reservation is undone.
	id := submit(t, e, lines("TEST-INVENTORY-HANG-1", "TEST-PAYMENT-PERMANENT"))
	if v := await(t, e, id, 30*time.Second); v.Status != order.StatusFailed {
		t.Fatalf("got %s, want Failed after the reservation's undo: %s", v.Status, testenv.Describe(v))
	}
	var spans []tracetest.SpanStub
	undone := func(s tracetest.SpanStub) bool {
		return s.Name == "scheduler.reply" && attr(s, "orderly.undo") == "true"
	}
	// The recorder applies the order's end last.
	recorded := func(s tracetest.SpanStub) bool {
		return s.Name == "recorder.record" && attr(s, "orderly.status") == string(order.StatusFailed)
	}
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		spans = spansOf(exp.GetSpans(), id)
		return slices.ContainsFunc(spans, undone) && slices.ContainsFunc(spans, recorded), spanNames(spans)
	})
	t.Logf("spans of an order retried once and compensated: %d (%s)", len(spans), spanNames(spans))

	traceID := tracing.TraceID(id)
	byID := map[trace.SpanID]tracetest.SpanStub{}
	for _, s := range spans {
		byID[s.SpanContext.SpanID()] = s
		if s.SpanContext.TraceID() != traceID {
			t.Errorf("span %s is in trace %s, want the order's %s", s.Name, s.SpanContext.TraceID(), traceID)
		}
	}
	parent := func(s tracetest.SpanStub) string {
		p, ok := byID[s.Parent.SpanID()]
		if !ok {
			return "the order" // no span of its own: the order's trace id
		}
		return p.Name
	}
	// find is the one span named name of step, attempt and undo.
	find := func(name, step string, attempt int, undo bool) (tracetest.SpanStub, bool) {
		var found []tracetest.SpanStub
		for _, s := range spans {
			if s.Name == name && attr(s, "orderly.step") == step && attr(s, "orderly.attempt") == fmt.Sprint(attempt) &&
				attr(s, "orderly.undo") == fmt.Sprint(undo) {
				found = append(found, s)
			}
		}
		if len(found) != 1 {
			t.Errorf("%d %s spans of step %s attempt %d undo %t, want 1", len(found), name, step, attempt, undo)
			return tracetest.SpanStub{}, false
		}
		return found[0], true
	}
	reserve, charge := ordertest.StepReserveInventory, ordertest.StepChargePayment
	for _, tt := range []struct {
		what, name, step string
		attempt          int
		undo             bool
		parent           string
		attrs            map[string]string
	}{
		// The retry: the Supervisor decides, a Scheduler claims from the
		// stream, and the second round goes out from that claim.
		{"the retry's decision", "supervisor.decide", reserve, 1, false, "the order", map[string]string{"orderly.decision": "retry"}},
		{"the retry's request", "dispatch.request", reserve, 2, false, "scheduler.claim", nil},
		{"the retry's handling", "agent.request", reserve, 2, false, "dispatch.request", nil},
		{"the retry's call", "remote.call", reserve, 2, false, "agent.request", nil},
		{"the retry's reply", "scheduler.reply", reserve, 2, false, "agent.request", nil},
		// The refusal: the payment's call fails for good.
		{"the refused call", "remote.call", charge, 1, false, "agent.request", map[string]string{"orderly.error_class": "permanent"}},
		{"the refusal applied", "scheduler.reply", charge, 1, false, "agent.request", nil},
		// The undo of the reservation, sent by the reply that applied the
		// refusal.
		{"the undo's request", "dispatch.request", reserve, 1, true, "scheduler.reply", nil},
		{"the undo's handling", "agent.request", reserve, 1, true, "dispatch.request", nil},
		{"the undo's call", "remote.call", reserve, 1, true, "agent.request", nil},
		{"the undo's reply", "scheduler.reply", reserve, 1, true, "agent.request", nil},
	} {
		s, ok := find(tt.name, tt.step, tt.attempt, tt.undo)
		if !ok {
			continue
		}
		if got := parent(s); got != tt.parent {
			t.Errorf("%s (%s) has parent %q, want %q", tt.what, tt.name, got, tt.parent)
		}
		for k, want := range tt.attrs {
			if got := attr(s, k); got != want {
				t.Errorf("%s (%s) has %s=%q, want %q", tt.what, tt.name, k, got, want)
			}
		}
	}
	// A claim's span names the step as the stream showed it, Pending
	// after attempt 1 (two Schedulers may race for it; one wins): each
	// hangs from the order, and the retry's request from one of them.
	claims := 0
	for _, s := range spans {
		if s.Name == "scheduler.claim" {
			claims++
			if attr(s, "orderly.step") != reserve || parent(s) != "the order" {
				t.Errorf("a claim of step %s attempt %s has parent %q, want the retried %s's, from the order",
					attr(s, "orderly.step"), attr(s, "orderly.attempt"), parent(s), reserve)
			}
		}
	}
	if claims == 0 {
		t.Error("no scheduler.claim span: the retry went out unclaimed")
	}
	// Each write's record, the retry's and the undo's among them, is a
	// span of the order too.
	for _, s := range spans {
		if s.Name == "recorder.record" && parent(s) != "the order" {
			t.Errorf("a recorder.record span has parent %q, want the order", parent(s))
		}
	}
	for _, status := range []order.Status{order.StatusCompensating, order.StatusFailed} {
		if !slices.ContainsFunc(spans, func(s tracetest.SpanStub) bool {
			return s.Name == "recorder.record" && attr(s, "orderly.status") == string(status)
		}) {
			t.Errorf("no recorder.record span of the change to %s", status)
		}
	}
	// The undo's request went out from the reply that applied the
	// payment's refusal, not another.
	if req, ok := find("dispatch.request", reserve, 1, true); ok {
		if p := byID[req.Parent.SpanID()]; attr(p, "orderly.step") != charge {
			t.Errorf("the undo's request was sent under the reply of step %q, want %s's", attr(p, "orderly.step"), charge)
		}
	}
}

// otlpBytes is how many bytes spans take as OTLP/HTTP protobuf,
// uncompressed, exported perExport spans at a time to a receiver that
// counts them.
func otlpBytes(t *testing.T, spans []tracetest.SpanStub, perExport int) int64 {
	t.Helper()
	var received atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n, _ := io.Copy(io.Discard, r.Body)
		received.Add(n)
	}))
	defer srv.Close()
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"))
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	stubs := tracetest.SpanStubs(spans)
	for start := 0; start < len(stubs); start += perExport {
		if err := exp.ExportSpans(context.Background(), stubs[start:min(start+perExport, len(stubs))].Snapshots()); err != nil {
			t.Fatal(err)
		}
	}
	return received.Load()
}
