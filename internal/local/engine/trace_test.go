package engine_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
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
	// shows.
	var spans []tracetest.SpanStub
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		spans = spansOf(exp.GetSpans(), id)
		return countSpans(spans, "scheduler.reply") == 3, spanNames(spans)
	})

	traceID := tracing.TraceID(id)
	byID := map[trace.SpanID]tracetest.SpanStub{}
	allowed := []string{"orderly.order_id", "orderly.workflow", "orderly.version", "orderly.step", "orderly.attempt", "orderly.undo",
		"orderly.outcome", "orderly.service", "orderly.poll", "http.response.status_code"}
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
