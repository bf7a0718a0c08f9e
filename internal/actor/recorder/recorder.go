// Package recorder turns the orders table's stream into the order's
// history and its status events. Every write to an order is one stream
// record with the item before and after it, so the changes it lists are
// exact and complete, and the stream is the outbox: a status change whose
// event was not yet published when the recorder crashed is delivered again
// (at least once), never lost. The state writes themselves pay nothing for
// either.
package recorder

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/batch"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/tracing"
)

// History stores an order's transitions, and their expiry.
type History interface {
	Record(ctx context.Context, orderID, seq string, ts []order.HistoryEntry, sent *order.Alert, expires time.Time) error
	Pin(ctx context.Context, orderID string) error
	Restamp(ctx context.Context, orderID string, notBefore, expires time.Time) error
	// ChangeOf reads a record of the orders table's stream: the write
	// it was, as the history and the status events tell it.
	ChangeOf(rec events.DynamoDBEventRecord) (order.Written, error)
}

// Publisher publishes a status change, and a pause's change.
type Publisher interface {
	Publish(ctx context.Context, c order.StatusChange) error
	PublishPause(ctx context.Context, c order.PauseChange) error
}

// maxParallel bounds how many orders one invocation works on at once.
const maxParallel = 10

// Service is the recorder.
type Service struct {
	history   History
	publisher Publisher
	log       *slog.Logger
	metrics   *metrics.Recorder
	retention time.Duration
}

// New returns a recorder that keeps an ended order's history for
// resources.DefaultRetention (and HistoryMargin).
func New(h History, p Publisher, log *slog.Logger, m *metrics.Recorder) *Service {
	return &Service{history: h, publisher: p, log: log, metrics: m, retention: resources.DefaultRetention}
}

// Retain returns the recorder keeping ended orders' history for d
// (plus resources.HistoryMargin), as the orders are kept for d.
func (s *Service) Retain(d time.Duration) *Service {
	if d > 0 {
		s.retention = d
	}
	return s
}

// HandleStream records every change of the batch: its transitions in the
// history, then its status change on the bus. Records of one order are
// handled in order, different orders in parallel. When a record fails,
// the earliest failed record is reported and Lambda retries from it;
// history writes are idempotent, and events are at least once.
func (s *Service) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return batch.ByOrder(ev.Records, maxParallel, func(rec events.DynamoDBEventRecord) error {
		err := s.record(ctx, rec)
		if err != nil {
			s.log.ErrorContext(ctx, "change not recorded; it will be retried", "event_id", rec.EventID,
				"sequence_number", rec.Change.SequenceNumber, "error", err)
		}
		return err
	}), nil
}

func (s *Service) record(ctx context.Context, rec events.DynamoDBEventRecord) (err error) {
	c, err := s.history.ChangeOf(rec)
	if err != nil {
		// An image we cannot read will not get better by retrying.
		s.log.ErrorContext(ctx, "unreadable stream record skipped", "event_id", rec.EventID,
			"sequence_number", rec.Change.SequenceNumber, "error", err)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", "recorder")
		return nil
	}
	ctx, span := startRecord(ctx, c)
	defer func() { tracing.End(span, err) }()
	// History expires a margin after its order would, counted from each
	// change; an order in Error keeps all of it (pinned) until it ends,
	// when any item that would expire before the order is restamped.
	keep := s.retention + resources.HistoryMargin
	var expires time.Time
	if c.Current != order.StatusError {
		expires = c.At.Add(keep)
	}
	if len(c.Transitions) > 0 {
		if err := batch.Retry(ctx, func() error {
			return s.history.Record(ctx, c.OrderID, rec.Change.SequenceNumber, c.Transitions, c.Sent, expires)
		}); err != nil {
			return err
		}
	}
	if c.Status != nil {
		var err error
		switch c.Status.Status {
		case order.StatusError:
			err = batch.Retry(ctx, func() error { return s.history.Pin(ctx, c.OrderID) })
		case order.StatusProcessed, order.StatusFailed, order.StatusCancelled:
			err = batch.Retry(ctx, func() error { return s.history.Restamp(ctx, c.OrderID, c.At.Add(s.retention), c.At.Add(keep)) })
		}
		if err != nil {
			return fmt.Errorf("history expiry: %w", err)
		}
	}
	if c.Pause != nil {
		if err := batch.Retry(ctx, func() error { return s.publisher.PublishPause(ctx, *c.Pause) }); err != nil {
			return fmt.Errorf("pause event: %w", err)
		}
		s.log.InfoContext(ctx, "pause changed", "event", c.Pause.Event, "kind", c.Pause.Pause.Kind, "name", c.Pause.Pause.Name,
			"by", c.Transitions[0].By, "reason", c.Transitions[0].Reason)
	}
	if c.Status != nil {
		if err := batch.Retry(ctx, func() error { return s.publisher.Publish(ctx, *c.Status) }); err != nil {
			return fmt.Errorf("status event: %w", err)
		}
		s.metrics.Count(metrics.StatusEvents, 1, "status", string(c.Status.Status))
		switch st := c.Status.Status; st {
		case order.StatusProcessed, order.StatusFailed, order.StatusCancelled, order.StatusError:
			s.metrics.Duration(metrics.OrderLatency, c.Status.At.Sub(c.Submitted), metrics.DimStatus, string(st), "order_id", c.OrderID)
		}
	}
	return nil
}
