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

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/batch"
	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
)

// History stores an order's transitions.
type History interface {
	Record(ctx context.Context, orderID, seq string, ts []order.Transition, sent *order.Alert) error
}

// Publisher publishes a status change.
type Publisher interface {
	Publish(ctx context.Context, c order.StatusChange) error
}

// maxParallel bounds how many orders one invocation works on at once.
const maxParallel = 10

// Service is the recorder.
type Service struct {
	history   History
	publisher Publisher
	log       *slog.Logger
	metrics   *metrics.Recorder
}

// New returns a recorder.
func New(h History, p Publisher, log *slog.Logger, m *metrics.Recorder) *Service {
	return &Service{history: h, publisher: p, log: log, metrics: m}
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

func (s *Service) record(ctx context.Context, rec events.DynamoDBEventRecord) error {
	c, err := dynamo.ChangeOf(rec)
	if err != nil {
		// An image we cannot read will not get better by retrying.
		s.log.ErrorContext(ctx, "unreadable stream record skipped", "event_id", rec.EventID,
			"sequence_number", rec.Change.SequenceNumber, "error", err)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", "recorder")
		return nil
	}
	if len(c.Transitions) > 0 {
		if err := batch.Retry(ctx, func() error {
			return s.history.Record(ctx, c.OrderID, rec.Change.SequenceNumber, c.Transitions, c.Sent)
		}); err != nil {
			return err
		}
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
