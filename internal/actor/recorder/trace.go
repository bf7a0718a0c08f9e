package recorder

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/order"
	"orderly/internal/tracing"
)

// AttrStatus is, on a record's span, the order's status when the record
// changed it.
const AttrStatus = attribute.Key("orderly.status")

// startRecord starts the span of one stream record applied: in its
// order's trace, hanging from the order (a record carries no
// traceparent). Like every span of an order it says which order, and
// which step when the record's transitions are all of one; nothing of a
// transition's reason or result. A pause's record is of no order: it
// gets no span.
func startRecord(ctx context.Context, c order.Written) (context.Context, trace.Span) {
	if c.Pause != nil || !tracing.On() {
		return ctx, trace.SpanFromContext(ctx)
	}
	s := tracing.Step{OrderID: c.OrderID}
	if t, ok := oneStep(c.Transitions); ok {
		s.Step, s.Attempt, s.Undo = t.Step, t.Attempt, t.Undo
	}
	opts := []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindConsumer)}
	if c.Status != nil {
		opts = append(opts, trace.WithAttributes(AttrStatus.String(string(c.Status.Status))))
	}
	return tracing.Start(ctx, "recorder.record", s, opts...)
}

// oneStep is the latest transition of the one step (or undo) the
// transitions name; false when they name none, or more than one.
func oneStep(ts []order.HistoryEntry) (order.HistoryEntry, bool) {
	var one order.HistoryEntry
	for _, t := range ts {
		switch {
		case t.Step == "":
		case one.Step == "":
			one = t
		case t.Step != one.Step || t.Undo != one.Undo:
			return order.HistoryEntry{}, false
		case t.Attempt > one.Attempt:
			one = t
		}
	}
	return one, one.Step != ""
}
