// Package tracing puts every span of one order in one OpenTelemetry trace,
// whose id is derived from the order's id, so that no actor has to carry
// trace context through DynamoDB. Spans cross the queues with a W3C
// traceparent; with tracing off (no OTEL_EXPORTER_OTLP_ENDPOINT) starting
// a span does nothing at all.
package tracing

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strconv"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/order"
)

// Name is the instrumentation scope of orderly's spans.
const Name = "orderly"

// The attributes every span of an order carries. Nothing else of the
// order goes in a span: never its input, a result, a token or a
// credential.
const (
	AttrOrderID  = attribute.Key("orderly.order_id")
	AttrWorkflow = attribute.Key("orderly.workflow")
	AttrVersion  = attribute.Key("orderly.version")
	AttrStep     = attribute.Key("orderly.step")
	AttrAttempt  = attribute.Key("orderly.attempt")
	AttrUndo     = attribute.Key("orderly.undo")
	// AttrDecision is what the Supervisor decided about a step.
	AttrDecision = attribute.Key("orderly.decision")
	// AttrErrorClass is which of the domain's faults a failed span met
	// (see ErrorClass); the error's text is not recorded, as a service's
	// answer quoted in it may hold the order's data.
	AttrErrorClass = attribute.Key("orderly.error_class")
	// AttrStatusCode is the HTTP status a remote service answered
	// (OpenTelemetry's semantic convention name).
	AttrStatusCode = attribute.Key("http.response.status_code")
)

// tracer is the tracer spans start in; nil while tracing is off.
var tracer atomic.Pointer[trace.Tracer]

// Use makes spans start in tp; nil turns tracing off. FromEnv calls it;
// tests call it with an in-memory provider.
func Use(tp trace.TracerProvider) {
	if tp == nil {
		tracer.Store(nil)
		return
	}
	t := tp.Tracer(Name)
	tracer.Store(&t)
}

// On reports whether spans are recorded.
func On() bool { return tracer.Load() != nil }

// Step is what a span says of the order and step it works on.
type Step struct {
	OrderID, Workflow, Version, Step string
	Attempt                          int
	Undo                             bool
}

// OfState is the step of a step's record.
func OfState(st order.StepState) Step {
	return Step{OrderID: st.OrderID, Workflow: st.Workflow, Version: st.Version, Step: st.Step, Attempt: st.Attempt, Undo: st.Undo}
}

// OfRequest is the step a request asks for.
func OfRequest(r order.StepRequest) Step {
	return Step{OrderID: r.OrderID, Workflow: r.Workflow, Version: r.Version, Step: r.Step, Attempt: r.Attempt, Undo: r.Undo}
}

// OfReply is the step a reply answers.
func OfReply(r order.StepReply) Step {
	return Step{OrderID: r.OrderID, Workflow: r.Workflow, Version: r.Version, Step: r.Step, Attempt: r.Attempt, Undo: r.Undo}
}

// OfOrder is an order, no step in particular.
func OfOrder(o order.Order) Step {
	return Step{OrderID: o.ID, Workflow: o.Workflow, Version: o.Version}
}

func (s Step) attributes() []attribute.KeyValue {
	attrs := []attribute.KeyValue{AttrOrderID.String(s.OrderID)}
	if s.Workflow != "" {
		attrs = append(attrs, AttrWorkflow.String(s.Workflow))
	}
	if s.Version != "" {
		attrs = append(attrs, AttrVersion.String(s.Version))
	}
	if s.Step != "" {
		attrs = append(attrs, AttrStep.String(s.Step), AttrAttempt.Int(s.Attempt), AttrUndo.Bool(s.Undo))
	}
	return attrs
}

// TraceID is the id of orderID's trace: the first 16 bytes of the SHA-256
// of "orderly-trace:" and the id. Every actor derives it alone, so none
// stores or forwards it. Were those bytes all zero (the invalid id, with
// odds of 2^-128), the last byte is set.
func TraceID(orderID string) trace.TraceID {
	sum := sha256.Sum256([]byte("orderly-trace:" + orderID))
	var id trace.TraceID
	copy(id[:], sum[:16])
	if !id.IsValid() {
		id[15] = 1
	}
	return id
}

// orderParent is the span context a span of orderID hangs from when
// nothing parents it: the order's trace id, and a span id derived from it
// too, so that every such span of the order names the same (unrecorded)
// parent, which trace viewers show as the order itself. It is remote, so
// the sampler decides on the trace id (see sampler): every actor decides
// the same for one order.
func orderParent(orderID string) trace.SpanContext {
	sum := sha256.Sum256([]byte("orderly-trace:" + orderID))
	var span trace.SpanID
	copy(span[:], sum[16:24])
	if !span.IsValid() {
		span[7] = 1
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: TraceID(orderID), SpanID: span,
		TraceFlags: trace.FlagsSampled, Remote: true})
}

// Start starts span name of s's order: a child of the span in ctx when
// that is of the order's trace, else of the order's trace id itself.
// With tracing off it returns ctx and a span that does nothing.
func Start(ctx context.Context, name string, s Step, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	t := tracer.Load()
	if t == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	if trace.SpanContextFromContext(ctx).TraceID() != TraceID(s.OrderID) {
		ctx = trace.ContextWithRemoteSpanContext(ctx, orderParent(s.OrderID))
	}
	return (*t).Start(ctx, name, append(opts, trace.WithAttributes(s.attributes()...))...)
}

// StartFrom starts span name as a child of traceparent, the W3C header a
// queue's message carried, when it is of the order's trace; else as Start.
func StartFrom(ctx context.Context, name, traceparent string, s Step, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	if tracer.Load() == nil {
		return ctx, trace.SpanFromContext(ctx)
	}
	if traceparent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{HeaderTraceparent: traceparent})
	}
	return Start(ctx, name, s, opts...)
}

// HeaderTraceparent is the W3C Trace Context header, and the name of the
// SQS message attribute that carries it across a queue.
const HeaderTraceparent = "traceparent"

// Traceparent is the W3C traceparent of the span in ctx; "" when there is
// none, as with tracing off.
func Traceparent(ctx context.Context) string {
	if !trace.SpanContextFromContext(ctx).IsValid() {
		return ""
	}
	c := propagation.MapCarrier{}
	propagation.TraceContext{}.Inject(ctx, c)
	return c[HeaderTraceparent]
}

// Carrying is ctx, carrying orderID's trace (not sampled) when it holds
// no span, as with tracing off: a call made in it still sends the order's
// trace, so a team's service can tie its own spans to the order.
func Carrying(ctx context.Context, orderID string) context.Context {
	if trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	return trace.ContextWithRemoteSpanContext(ctx, orderParent(orderID).WithTraceFlags(0))
}

// Inject sets the traceparent header of a call: the span's in ctx (see
// Carrying).
func Inject(ctx context.Context, h http.Header) {
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(h))
}

// StatusCode records, on the span in ctx, the HTTP status a service
// answered.
func StatusCode(ctx context.Context, code int) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrStatusCode.Int(code))
	}
}

// Decision records, on the span in ctx, what was decided about its step.
func Decision(ctx context.Context, decision string) {
	if span := trace.SpanFromContext(ctx); span.IsRecording() {
		span.SetAttributes(AttrDecision.String(decision))
	}
}

// End ends span, marking it failed with err's class when err is not nil.
func End(span trace.Span, err error) {
	Failed(span, err)
	span.End()
}

// Failed marks span failed with err's class when err is not nil.
func Failed(span trace.Span, err error) {
	if err != nil && span.IsRecording() {
		class := ErrorClass(err)
		span.SetAttributes(AttrErrorClass.String(class))
		span.SetStatus(codes.Error, class)
	}
}

// ErrorClass names which of the domain's faults err is, for a span: its
// text is never recorded.
func ErrorClass(err error) string {
	for _, c := range []struct {
		err  error
		name string
	}{
		{order.ErrContract, "contract"},
		{order.ErrPermanent, "permanent"},
		{order.ErrConfiguration, "configuration"},
		{order.ErrNotInBuild, "not_in_build"},
		{order.ErrStale, "stale"},
		{context.DeadlineExceeded, "timeout"},
		{context.Canceled, "canceled"},
		{order.ErrTransient, "transient"},
	} {
		if errors.Is(err, c.err) {
			return c.name
		}
	}
	return "error"
}

// sampleRatio parses ORDERLY_TRACE_SAMPLE's value: "" is 1.
func sampleRatio(v string) (float64, error) {
	if v == "" {
		return 1, nil
	}
	r, err := strconv.ParseFloat(v, 64)
	if err != nil || r < 0 || r > 1 {
		return 0, errors.New(EnvSample + ": " + strconv.Quote(v) + " is not a ratio from 0 to 1")
	}
	return r, nil
}

// FromMessage is the traceparent an SQS message carries as an attribute;
// "" when it has none (a message from before tracing, or tracing off).
func FromMessage(msg events.SQSMessage) string {
	if a, ok := msg.MessageAttributes[HeaderTraceparent]; ok && a.StringValue != nil {
		return *a.StringValue
	}
	return ""
}
