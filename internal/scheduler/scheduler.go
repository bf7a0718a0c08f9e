// Package scheduler is the pattern's Scheduler. It is invoked by the state
// table's stream, where it claims each step that became Pending and sends
// the request to the step's agent, and by the response queue, where it
// applies agents' replies: success moves the workflow on, a permanent fault
// fails the order and alerts operators. Every write is conditional on the
// step's attempt, so lost races, stale and duplicate replies change nothing.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/sqs"
)

// Store is what the Scheduler needs of the state store.
type Store interface {
	Order(ctx context.Context, id string) (order.Order, error)
	GetStep(ctx context.Context, orderID, step string) (order.StepState, error)
	ClaimStep(ctx context.Context, orderID, step, owner string, completeBy, now time.Time) (order.StepState, error)
	CompleteStep(ctx context.Context, c dynamo.Completion, now time.Time) error
	FailStep(ctx context.Context, orderID, step string, attempt int, reason string, now time.Time) error
}

// RequestSender sends step requests to agents.
type RequestSender interface {
	SendRequest(ctx context.Context, agent string, req order.StepRequest) error
}

// Notifier alerts operators about a failed step.
type Notifier interface {
	Notify(ctx context.Context, st order.StepState, kind order.AlertKind) error
}

// Service is one Scheduler instance.
type Service struct {
	id       string // LockedBy value of this instance
	store    Store
	requests RequestSender
	notifier Notifier
	workflow order.Workflow
	now      func() time.Time
	log      *slog.Logger
	metrics  *metrics.Recorder
}

// Config wires a Scheduler.
type Config struct {
	InstanceID string
	Store      Store
	Requests   RequestSender
	Notifier   Notifier
	Workflow   order.Workflow
	Now        func() time.Time
	Log        *slog.Logger
	Metrics    *metrics.Recorder
}

// New returns a Scheduler.
func New(c Config) *Service {
	return &Service{id: c.InstanceID, store: c.Store, requests: c.Requests, notifier: c.Notifier,
		workflow: c.Workflow, now: c.Now, log: c.Log.With("scheduler", c.InstanceID), metrics: c.Metrics}
}

// Handle is the Lambda entry point. One function serves both event
// sources; it tells them apart by the records' eventSource.
func (s *Service) Handle(ctx context.Context, raw json.RawMessage) (any, error) {
	var probe struct {
		Records []struct {
			EventSource string `json:"eventSource"`
		} `json:"Records"`
	}
	if err := json.Unmarshal(raw, &probe); err != nil {
		return nil, fmt.Errorf("decode event: %w", err)
	}
	if len(probe.Records) == 0 {
		return nil, nil
	}
	switch src := probe.Records[0].EventSource; src {
	case "aws:dynamodb":
		var ev events.DynamoDBEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("decode stream event: %w", err)
		}
		return s.HandleStream(ctx, ev)
	case "aws:sqs":
		var ev events.SQSEvent
		if err := json.Unmarshal(raw, &ev); err != nil {
			return nil, fmt.Errorf("decode SQS event: %w", err)
		}
		return s.HandleReplies(ctx, ev)
	default:
		return nil, fmt.Errorf("unexpected event source %q", src)
	}
}

// HandleStream claims every step the batch shows becoming Pending. Records
// are processed in order; a record that fails for an unexpected reason is
// reported, and Lambda retries from it.
func (s *Service) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	for _, rec := range ev.Records {
		if rec.EventName == string(events.DynamoDBOperationTypeRemove) {
			continue
		}
		st, err := dynamo.StepFromStreamImage(rec.Change.NewImage)
		if err != nil {
			// An image we cannot read will not get better by retrying;
			// the Supervisor notices the step if it stays Pending.
			s.log.ErrorContext(ctx, "unreadable stream record skipped", "event_id", rec.EventID,
				"sequence_number", rec.Change.SequenceNumber, "error", err)
			s.metrics.Count(metrics.PoisonMessages, 1, "source", "stream")
			continue
		}
		if st.ProcessState != order.Pending || st.LockedBy != "" {
			continue
		}
		if err := s.dispatch(ctx, st); err != nil {
			s.log.ErrorContext(ctx, "claim failed; record will be retried", "order_id", st.OrderID,
				"step", st.Step, "sequence_number", rec.Change.SequenceNumber, "error", err)
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: rec.Change.SequenceNumber},
			}}, nil
		}
	}
	return events.DynamoDBEventResponse{}, nil
}

// dispatch claims a Pending step and sends its request. Losing the claim to
// another Scheduler is a normal outcome. If the request cannot be sent after
// a won claim, the step stays Processing until CompleteBy and the
// Supervisor retries it: that is the pattern's recovery for a Scheduler
// that dies between its two actions.
func (s *Service) dispatch(ctx context.Context, seen order.StepState) error {
	def, ok := s.workflow.Step(seen.Step)
	if !ok {
		s.log.ErrorContext(ctx, "pending step is not in the workflow", "order_id", seen.OrderID, "step", seen.Step)
		return nil
	}
	o, err := s.store.Order(ctx, seen.OrderID)
	if err != nil {
		return fmt.Errorf("read order for step %s: %w", seen.Step, err)
	}
	now := s.now()
	st, err := s.store.ClaimStep(ctx, seen.OrderID, seen.Step, s.id, now.Add(def.AllowanceFor(seen.FailureCount)), now)
	if errors.Is(err, order.ErrStale) {
		s.log.DebugContext(ctx, "claim lost to another scheduler", "order_id", seen.OrderID, "step", seen.Step)
		s.metrics.Count(metrics.ClaimsLost, 1)
		return nil
	}
	if err != nil {
		return err
	}
	log := s.log.With("order_id", st.OrderID, "step", st.Step, "attempt", st.Attempt)
	s.metrics.Count(metrics.StepsClaimed, 1, "order_id", st.OrderID, "step", st.Step)
	req := order.StepRequest{
		OrderID: st.OrderID, Step: st.Step, Attempt: st.Attempt, CompleteBy: st.CompleteBy,
		IdempotencyKey: order.IdempotencyKeyFor(st.OrderID, st.Step),
		CustomerID:     o.CustomerID, Lines: o.Lines,
	}
	if err := s.requests.SendRequest(ctx, def.Agent, req); err != nil {
		log.ErrorContext(ctx, "request not sent; the Supervisor retries the step after complete_by",
			"complete_by", st.CompleteBy, "error", err)
		return nil
	}
	log.InfoContext(ctx, "step claimed and requested", "agent", def.Agent, "complete_by", st.CompleteBy)
	return nil
}

// HandleReplies applies agents' replies. A malformed reply is reported as a
// batch item failure, so after the queue's maxReceiveCount it lands in the
// dead-letter queue, where an alarm fires; its batch-mates are unaffected.
func (s *Service) HandleReplies(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var resp events.SQSEventResponse
	for _, msg := range ev.Records {
		if err := s.applyReply(ctx, msg); err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
		}
	}
	return resp, nil
}

func (s *Service) applyReply(ctx context.Context, msg events.SQSMessage) error {
	rep, err := decodeReply(msg.Body, s.workflow)
	if err != nil {
		s.log.ErrorContext(ctx, "malformed reply", append(sqs.Describe(msg), "error", err)...)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", "responses", "message_id", msg.MessageId)
		return err
	}
	log := s.log.With("order_id", rep.OrderID, "step", rep.Step, "attempt", rep.Attempt, "outcome", rep.Outcome)
	now := s.now()
	switch rep.Outcome {
	case order.Succeeded:
		next, more := s.workflow.Next(rep.Step)
		c := dynamo.Completion{OrderID: rep.OrderID, Step: rep.Step, Attempt: rep.Attempt}
		if more {
			c.Next, c.NextClaimBy = next.Name, now.Add(s.workflow.ClaimWithin)
		}
		err = s.store.CompleteStep(ctx, c, now)
	case order.Failed:
		err = s.store.FailStep(ctx, rep.OrderID, rep.Step, rep.Attempt, rep.Reason, now)
	}
	if errors.Is(err, order.ErrStale) {
		log.InfoContext(ctx, "stale or duplicate reply dropped", "message_id", msg.MessageId)
		s.metrics.Count(metrics.StaleReplies, 1, "order_id", rep.OrderID, "step", rep.Step)
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "reply not applied; it will be redelivered", "message_id", msg.MessageId, "error", err)
		return err
	}

	if rep.Outcome == order.Failed {
		log.WarnContext(ctx, "step failed permanently; order is in Error", "reason", rep.Reason)
		s.metrics.Count(metrics.OrdersFailed, 1, "order_id", rep.OrderID, "step", rep.Step)
		s.alert(ctx, log, rep)
		return nil
	}
	s.metrics.Count(metrics.StepsCompleted, 1, "order_id", rep.OrderID, "step", rep.Step)
	if _, more := s.workflow.Next(rep.Step); !more {
		log.InfoContext(ctx, "order processed", "reference", rep.Reference)
		s.metrics.Count(metrics.OrdersProcessed, 1, "order_id", rep.OrderID)
	} else {
		log.InfoContext(ctx, "step processed", "reference", rep.Reference)
	}
	return nil
}

// alert tells operators right away. The failure is already recorded with
// AlertPending, so if this fails the next Supervisor run sends it.
func (s *Service) alert(ctx context.Context, log *slog.Logger, rep order.StepReply) {
	st, err := s.store.GetStep(ctx, rep.OrderID, rep.Step)
	if err == nil {
		err = s.notifier.Notify(ctx, st, order.AlertStepFailed)
	}
	if err != nil {
		log.WarnContext(ctx, "alert deferred to the Supervisor", "error", err)
		return
	}
	s.metrics.Count(metrics.AlertsSent, 1, "order_id", rep.OrderID, "step", rep.Step)
}

func decodeReply(body string, w order.Workflow) (order.StepReply, error) {
	var rep order.StepReply
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		return rep, fmt.Errorf("decode reply: %w", err)
	}
	switch {
	case !order.ValidID(rep.OrderID):
		return rep, fmt.Errorf("reply has invalid orderId %q", rep.OrderID)
	case rep.Attempt < 1:
		return rep, fmt.Errorf("reply has invalid attempt %d", rep.Attempt)
	case rep.Outcome != order.Succeeded && rep.Outcome != order.Failed:
		return rep, fmt.Errorf("reply has unknown outcome %q", rep.Outcome)
	}
	if _, ok := w.Step(rep.Step); !ok {
		return rep, fmt.Errorf("reply names unknown step %q", rep.Step)
	}
	return rep, nil
}
