package recorder_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"orderly/internal/actor/recorder"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// written is a history whose stream records read as the changes it is
// given, by event id; its writes fail with failWith.
type written struct {
	changes  map[string]order.Written
	failWith error
}

func (w *written) ChangeOf(rec events.DynamoDBEventRecord) (order.Written, error) {
	c, ok := w.changes[rec.EventID]
	if !ok {
		return order.Written{}, errors.New("unreadable image")
	}
	return c, nil
}

func (w *written) Record(context.Context, string, string, []order.HistoryEntry, *order.Alert, time.Time) error {
	return w.failWith
}
func (w *written) Pin(context.Context, string) error                           { return nil }
func (w *written) Restamp(context.Context, string, time.Time, time.Time) error { return nil }
func (w *written) Publish(context.Context, order.StatusChange) error           { return nil }
func (w *written) PublishPause(context.Context, order.PauseChange) error       { return nil }

// Each stream record the recorder applies is one span of its order's
// trace, hanging from the order, naming its step when it has one, and
// saying nothing of a transition's reason.
func TestEachRecordAppliedIsASpanOfItsOrder(t *testing.T) {
	now := time.Now()
	claim := []order.HistoryEntry{{At: now, Record: 1, Step: "charge-payment", Event: "state", From: "Pending", To: "Processing", Attempt: 2,
		By: "scheduler s-1", Reason: "card 4111 declined"}}
	tests := []struct {
		name      string
		change    order.Written // "" OrderID: unreadable
		failWith  error
		wantSpan  bool
		wantAttrs map[string]string
		wantError string // its orderly.error_class
	}{
		{name: "a step's claim", change: order.Written{OrderID: "ord-1", Transitions: claim, At: now, Current: order.StatusProcessing},
			wantSpan: true, wantAttrs: map[string]string{"orderly.order_id": "ord-1", "orderly.step": "charge-payment", "orderly.attempt": "2", "orderly.undo": "false"}},
		{name: "a status change of two steps", change: order.Written{OrderID: "ord-2", At: now, Current: order.StatusCompensating,
			Transitions: append(slices.Clone(claim), order.HistoryEntry{At: now, Record: 3, Step: "reserve-inventory", Undo: true, Event: "state", To: "Pending", Attempt: 1}),
			Status:      &order.StatusChange{OrderID: "ord-2", Status: order.StatusCompensating, Reason: "card 4111 declined", At: now}},
			wantSpan: true, wantAttrs: map[string]string{"orderly.order_id": "ord-2", "orderly.status": "Compensating"}},
		{name: "a history write that fails", change: order.Written{OrderID: "ord-3", Transitions: claim, At: now, Current: order.StatusProcessing},
			failWith: order.ErrPermanent, wantSpan: true, wantError: "permanent",
			wantAttrs: map[string]string{"orderly.order_id": "ord-3", "orderly.step": "charge-payment", "orderly.attempt": "2", "orderly.undo": "false"}},
		{name: "a pause's change", change: order.Written{OrderID: "pause#service#payment", At: now,
			Transitions: []order.HistoryEntry{{At: now, Record: -1, Event: "paused", By: "operator"}},
			Pause:       &order.PauseChange{}}, wantSpan: false},
		{name: "an unreadable record", wantSpan: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			exp := tracetest.NewInMemoryExporter()
			tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithSampler(tracing.Sampler(1)))
			tracing.Use(tp)
			t.Cleanup(func() { tracing.Use(nil) })
			h := &written{changes: map[string]order.Written{}, failWith: tt.failWith}
			if tt.change.OrderID != "" {
				h.changes["e-1"] = tt.change
			}
			rec := recorder.New(h, h, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.Discard())
			_, _ = rec.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{{EventID: "e-1",
				Change: events.DynamoDBStreamRecord{SequenceNumber: "100"}}}})

			spans := exp.GetSpans()
			if !tt.wantSpan {
				if len(spans) != 0 {
					t.Fatalf("%d spans, want none", len(spans))
				}
				return
			}
			if len(spans) != 1 {
				t.Fatalf("%d spans, want 1", len(spans))
			}
			s := spans[0]
			if s.Name != "recorder.record" || s.SpanContext.TraceID() != tracing.TraceID(tt.change.OrderID) {
				t.Errorf("span %s in trace %s, want recorder.record in the order's %s", s.Name, s.SpanContext.TraceID(), tracing.TraceID(tt.change.OrderID))
			}
			if !s.Parent.IsRemote() || s.Parent.TraceID() != tracing.TraceID(tt.change.OrderID) {
				t.Errorf("span's parent %v, want the order itself", s.Parent)
			}
			got := map[string]string{}
			for _, kv := range s.Attributes {
				got[string(kv.Key)] = kv.Value.String()
			}
			want := maps.Clone(tt.wantAttrs)
			if tt.wantError != "" {
				want["orderly.error_class"] = tt.wantError
			}
			if !maps.Equal(got, want) {
				t.Errorf("attributes %v, want %v", got, want)
			}
		})
	}
}
