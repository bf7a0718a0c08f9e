package tracing_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/order"
	"orderly/internal/tracing"
)

func TestTraceIDIsTheOrdersAlone(t *testing.T) {
	tests := []struct {
		orderID string
		want    string
	}{
		// sha256("orderly-trace:ord-1")[:16], computed apart with sha256sum.
		{"ord-1", "8ea3281dbfe232d91501d57ce0859651"},
		{"", ""},
	}
	for _, tt := range tests {
		got := tracing.TraceID(tt.orderID)
		if !got.IsValid() {
			t.Errorf("TraceID(%q) = %s, not a valid trace id", tt.orderID, got)
		}
		if again := tracing.TraceID(tt.orderID); again != got {
			t.Errorf("TraceID(%q) = %s, then %s", tt.orderID, got, again)
		}
		if tt.want != "" && got.String() != tt.want {
			t.Errorf("TraceID(%q) = %s, want %s", tt.orderID, got, tt.want)
		}
	}
	if tracing.TraceID("ord-1") == tracing.TraceID("ord-2") {
		t.Error("two orders share a trace id")
	}
}

// recording turns tracing on into an in-memory exporter for one test.
func recording(t *testing.T, ratio float64) *tracetest.InMemoryExporter {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tracing.Sampler(ratio)))
	tracing.Use(tp)
	t.Cleanup(func() { tracing.Use(nil); _ = tp.Shutdown(context.Background()) })
	return exp
}

func TestSpansOfAnOrderShareItsTrace(t *testing.T) {
	exp := recording(t, 1)
	s := tracing.Step{OrderID: "ord-1", Workflow: "checkout", Version: "3", Step: "pay", Attempt: 2}
	// A span with no parent, one under it, and one across a queue.
	ctx, root := tracing.Start(context.Background(), "claim", s)
	_, child := tracing.Start(ctx, "request", s)
	tp := tracing.Traceparent(ctx)
	_, consumer := tracing.StartFrom(context.Background(), "agent", tp, s)
	// A message of another order's trace does not parent this order's span.
	_, stranger := tracing.StartFrom(context.Background(), "reply", tracing.Traceparent(ctx), tracing.Step{OrderID: "ord-2"})
	for _, span := range []trace.Span{child, consumer, stranger, root} {
		span.End()
	}
	spans := map[string]tracetest.SpanStub{}
	for _, s := range exp.GetSpans() {
		spans[s.Name] = s
	}
	want := tracing.TraceID("ord-1")
	for _, name := range []string{"claim", "request", "agent"} {
		if got := spans[name].SpanContext.TraceID(); got != want {
			t.Errorf("span %s: trace %s, want the order's %s", name, got, want)
		}
	}
	if got, want := spans["request"].Parent.SpanID(), spans["claim"].SpanContext.SpanID(); got != want {
		t.Errorf("request's parent = %s, want claim %s", got, want)
	}
	if got, want := spans["agent"].Parent.SpanID(), spans["claim"].SpanContext.SpanID(); got != want || !spans["agent"].Parent.IsRemote() {
		t.Errorf("agent's parent = %s (remote %t), want claim %s, remote", got, spans["agent"].Parent.IsRemote(), want)
	}
	if got := spans["reply"].SpanContext.TraceID(); got != tracing.TraceID("ord-2") {
		t.Errorf("another order's span: trace %s, want its own %s", got, tracing.TraceID("ord-2"))
	}
	if !spans["claim"].Parent.IsRemote() || spans["claim"].Parent.TraceID() != want {
		t.Errorf("claim's parent = %v, want the order's trace, remote", spans["claim"].Parent)
	}
}

func TestSamplingIsTheOrders(t *testing.T) {
	exp := recording(t, 0.5)
	sampled := 0
	for i := range 200 {
		id := fmt.Sprintf("ord-%d", i)
		s := tracing.Step{OrderID: id}
		ctx, a := tracing.Start(context.Background(), "submit", s)
		_, b := tracing.StartFrom(context.Background(), "agent", tracing.Traceparent(ctx), s)
		_, c := tracing.Start(context.Background(), "supervisor", s)
		if a.SpanContext().IsSampled() != b.SpanContext().IsSampled() || a.SpanContext().IsSampled() != c.SpanContext().IsSampled() {
			t.Fatalf("order %s: sampled by some actors and not others", id)
		}
		if a.SpanContext().IsSampled() {
			sampled++
		}
		a.End()
		b.End()
		c.End()
	}
	if sampled < 60 || sampled > 140 {
		t.Errorf("%d of 200 orders sampled at 0.5", sampled)
	}
	if got := len(exp.GetSpans()); got != 3*sampled {
		t.Errorf("%d spans exported, want %d", got, 3*sampled)
	}
}

func TestInjectSendsTheOrdersTrace(t *testing.T) {
	tests := []struct {
		name  string
		on    bool
		flags string
	}{
		{"tracing off: the order's trace, not sampled", false, "-00"},
		{"tracing on: the call's span, sampled", true, "-01"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.on {
				recording(t, 1)
				var span trace.Span
				ctx, span = tracing.Start(ctx, "call", tracing.Step{OrderID: "ord-1"})
				defer span.End()
			}
			h := http.Header{}
			tracing.Inject(tracing.Carrying(ctx, "ord-1"), h)
			got := h.Get("traceparent")
			if !strings.HasPrefix(got, "00-"+tracing.TraceID("ord-1").String()+"-") || !strings.HasSuffix(got, tt.flags) {
				t.Errorf("traceparent = %q, want the order's trace %s, flags %s", got, tracing.TraceID("ord-1"), tt.flags)
			}
		})
	}
}

func TestErrorClass(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{fmt.Errorf("pay: status 503: %w", order.ErrTransient), "transient"},
		{fmt.Errorf("pay: status 422: %w", order.ErrPermanent), "permanent"},
		{fmt.Errorf("pay: %w", order.ErrConfiguration), "configuration"},
		{fmt.Errorf("pay: %w: %w", order.ErrTransient, context.DeadlineExceeded), "timeout"},
		{errors.New("something else"), "error"},
	}
	for _, tt := range tests {
		if got := tracing.ErrorClass(tt.err); got != tt.want {
			t.Errorf("ErrorClass(%v) = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestFromEnv(t *testing.T) {
	const xray = "https://xray.eu-west-1.amazonaws.com/v1/traces"
	signed := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("AKIDTEST", "secret", "token")}
	tests := []struct {
		name    string
		env     map[string]string
		cfg     aws.Config
		on      bool
		wantErr string
	}{
		{"no endpoint: off", map[string]string{tracing.EnvSample: "0.5"}, aws.Config{}, false, ""},
		{"endpoint: on", map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318"}, aws.Config{}, true, ""},
		{"a ratio over 1", map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318", tracing.EnvSample: "2"}, aws.Config{}, false, "ORDERLY_TRACE_SAMPLE: \"2\" is not a ratio from 0 to 1"},
		{"not a number", map[string]string{tracing.EnvEndpoint: "http://127.0.0.1:4318", tracing.EnvSample: "half"}, aws.Config{}, false, "ORDERLY_TRACE_SAMPLE: \"half\""},
		{"X-Ray: on", map[string]string{tracing.EnvXRay: xray, tracing.EnvSample: "0.1"}, signed, true, ""},
		{"X-Ray and an endpoint", map[string]string{tracing.EnvXRay: xray, tracing.EnvEndpoint: "http://127.0.0.1:4318"}, signed, false, "are both set"},
		{"X-Ray without credentials", map[string]string{tracing.EnvXRay: xray}, aws.Config{Region: "eu-west-1"}, false, "no AWS credentials"},
		// A signed export carries the role's session token: only to X-Ray,
		// over TLS, in the function's own region.
		{"X-Ray over plain HTTP", map[string]string{tracing.EnvXRay: "http://xray.eu-west-1.amazonaws.com/v1/traces"}, signed, false, "is not X-Ray's OTLP endpoint"},
		{"X-Ray at another host", map[string]string{tracing.EnvXRay: "https://collector.example.com/v1/traces"}, signed, false, "is not X-Ray's OTLP endpoint"},
		{"X-Ray in another region", map[string]string{tracing.EnvXRay: "https://xray.us-east-1.amazonaws.com/v1/traces"}, signed, false, "in the function's region \"eu-west-1\""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Cleanup(func() { tracing.Use(nil) })
			p, err := tracing.FromEnv(context.Background(), "test", func(k string) string { return tt.env[k] }, tt.cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("FromEnv: error %v, want one saying %q", err, tt.wantErr)
				}
				if tracing.On() {
					t.Error("tracing on after a refused configuration")
				}
				return
			}
			if err != nil {
				t.Fatalf("FromEnv: %v", err)
			}
			defer p.Shutdown(context.Background())
			if got := tracing.On(); got != tt.on {
				t.Errorf("tracing on = %t, want %t", got, tt.on)
			}
		})
	}
}

// BenchmarkSpanOff is what a span costs with tracing off: a handler's
// span, its child, and the traceparent a message would carry.
func BenchmarkSpanOff(b *testing.B) {
	tracing.Use(nil)
	benchmarkSpans(b)
}

// BenchmarkSpanOn is the same with tracing on and every order sampled,
// exporting to a processor that drops the spans: the SDK's own cost.
func BenchmarkSpanOn(b *testing.B) {
	tp := sdktrace.NewTracerProvider(sdktrace.WithSampler(tracing.Sampler(1)), sdktrace.WithSpanProcessor(discard{}))
	tracing.Use(tp)
	defer tracing.Use(nil)
	benchmarkSpans(b)
}

func benchmarkSpans(b *testing.B) {
	st := order.StepState{OrderID: "ord-1", Workflow: "checkout", Version: "3", Step: "pay", Attempt: 1}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		c, span := tracing.Start(ctx, "claim", tracing.OfState(st))
		c, child := tracing.Start(c, "request", tracing.OfState(st))
		_ = tracing.Traceparent(c)
		tracing.End(child, nil)
		tracing.End(span, nil)
	}
}

type discard struct{}

func (discard) OnStart(context.Context, sdktrace.ReadWriteSpan) {}
func (discard) OnEnd(sdktrace.ReadOnlySpan)                     {}
func (discard) Shutdown(context.Context) error                  { return nil }
func (discard) ForceFlush(context.Context) error                { return nil }
