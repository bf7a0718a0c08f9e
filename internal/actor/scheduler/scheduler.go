// Package scheduler is the pattern's Scheduler. It is invoked by the
// response queue, where it applies agents' replies: a success completes the
// step and, in the same write, claims the next one, whose request it sends
// at once; a permanent fault fails the order and alerts operators. It is
// also invoked by the orders table's stream, filtered to steps that wait
// for a claim (after a Supervisor retry or a released claim), which it
// claims and requests. Every write is conditional on the step's attempt, so
// lost races, stale and duplicate replies change nothing.
package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/actor/undo"
	"orderly/internal/batch"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// Store is what the Scheduler needs of the state store.
type Store interface {
	// Apply persists a decided transition (an *order.StaleWrite, which
	// is order.ErrStale, when its guard no longer holds) and returns the
	// order and the record it leaves active as written.
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
	// UnclaimedStep reads an order image of the table's stream, as Lambda
	// delivers it, and returns its active record if that waits for a
	// claim (ok); it fails on an image it cannot read.
	UnclaimedStep(image map[string]events.DynamoDBAttributeValue) (st order.StepState, ok bool, err error)
	// GetOrder reads an order and its records: the data a step's start
	// may depend on (order.Workflow.ReadsOrder).
	GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error)
}

// Dispatcher sends a claimed step's request to its agent.
type Dispatcher interface {
	Send(ctx context.Context, o order.Order, st order.StepState)
}

// Notifier sends the alert a step records and clears it.
type Notifier interface {
	Notify(ctx context.Context, st order.StepState) error
}

// maxParallel bounds how many orders one invocation works on at once.
// Records and replies of different orders are independent; each costs a
// few network round trips, so working them one by one would cap a stream
// shard or a reply batch at a few hundred a second.
const maxParallel = 10

// Service is one Scheduler instance.
type Service struct {
	id         string // LockedBy value of this instance
	store      Store
	dispatcher Dispatcher
	notifier   Notifier
	workflows  order.Versions
	now        func() time.Time
	log        *slog.Logger
	metrics    *metrics.Recorder
}

// Config wires a Scheduler.
type Config struct {
	InstanceID string
	Store      Store
	Dispatcher Dispatcher
	Notifier   Notifier
	// Workflows are the workflow versions this build runs: each order
	// moves on by its own version's definition.
	Workflows order.Versions
	Now       func() time.Time
	Log       *slog.Logger
	Metrics   *metrics.Recorder
}

// New returns a Scheduler.
func New(c Config) *Service {
	return &Service{id: c.InstanceID, store: c.Store, dispatcher: c.Dispatcher, notifier: c.Notifier,
		workflows: c.Workflows, now: c.Now, log: c.Log.With("scheduler", c.InstanceID), metrics: c.Metrics}
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

// HandleStream claims every step the batch shows waiting for a claim. The
// stream filter lets only such changes through in AWS; anything else is
// skipped here too. Records of one order are handled in order, different
// orders in parallel. When a record fails for an unexpected reason, the
// earliest such record is reported and Lambda retries from it; claims are
// conditional, so records handled twice change nothing.
func (s *Service) HandleStream(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
	return batch.ByOrder(ev.Records, maxParallel, func(rec events.DynamoDBEventRecord) error {
		return s.claimRecord(ctx, rec)
	}), nil
}

func (s *Service) claimRecord(ctx context.Context, rec events.DynamoDBEventRecord) error {
	if rec.EventName == string(events.DynamoDBOperationTypeRemove) {
		return nil
	}
	st, ok, err := s.store.UnclaimedStep(rec.Change.NewImage)
	if err != nil {
		// An image we cannot read will not get better by retrying;
		// the Supervisor notices the step if it stays Pending.
		s.log.ErrorContext(ctx, "unreadable stream record skipped", "event_id", rec.EventID,
			"sequence_number", rec.Change.SequenceNumber, "error", err)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", "stream")
		return nil
	}
	if !ok {
		return nil
	}
	wf, known := s.workflows.Get(st.Workflow, st.Version)
	if !known {
		// A newer build's order, after a rollback: it is not claimed by a
		// definition it was not submitted under. The Supervisor parks it
		// and alerts once; it goes on when its version is back.
		s.log.WarnContext(ctx, "step of an unknown workflow version left unclaimed", "order_id", st.OrderID,
			"step", st.Step, "version", order.Ref(st.Workflow, st.Version), "known", s.workflows.Known())
		return nil
	}
	if st.CancelRequested && !st.Undo {
		// Cancelled while the step waits for a claim: it does not run
		// (again), and an earlier attempt's work is undone.
		now := s.now()
		err = s.undo(ctx, s.log.With("order_id", st.OrderID, "step", st.Step), wf.UndoUnclaimed(st, false, now).ClaimedBy(s.id, now))
		if errors.Is(err, order.ErrStale) {
			return nil
		}
		return err
	}
	if err := batch.Retry(ctx, func() error { return s.claim(ctx, wf, st) }); err != nil {
		s.log.ErrorContext(ctx, "claim failed; record will be retried", "order_id", st.OrderID,
			"step", st.Step, "sequence_number", rec.Change.SequenceNumber, "error", err)
		return err
	}
	return nil
}

// claim claims a Pending step and sends its request. Losing the claim to
// another Scheduler is a normal outcome.
func (s *Service) claim(ctx context.Context, wf order.Workflow, seen order.StepState) (err error) {
	ctx, span := tracing.Start(ctx, "scheduler.claim", tracing.OfState(seen))
	defer func() { tracing.End(span, err) }()
	def, ok := wf.Step(seen.Step)
	if !ok {
		s.log.ErrorContext(ctx, "pending step is not in the workflow", "order_id", seen.OrderID, "step", seen.Step)
		return nil
	}
	now := s.now()
	if def.Waits() {
		// A step that waits is announced only after an operator's
		// redrive: it starts waiting again, with no request.
		_, _, err := s.store.Apply(ctx, order.StartWait(seen, now.Add(def.Wait.Length()), now))
		if errors.Is(err, order.ErrStale) {
			return nil
		}
		return err
	}
	o, st, err := s.store.Apply(ctx, order.Claim(seen, s.id, now.Add(def.AllowanceFor(seen.FailureCount)), now))
	if errors.Is(err, order.ErrStale) {
		s.log.DebugContext(ctx, "claim lost to another scheduler", "order_id", seen.OrderID, "step", seen.Step)
		s.metrics.Count(metrics.ClaimsLost, 1)
		return nil
	}
	if err != nil {
		return err
	}
	s.metrics.Count(metrics.StepsClaimed, 1, "order_id", st.OrderID, "step", st.Step)
	s.dispatcher.Send(ctx, o, st)
	return nil
}

// HandleReplies applies agents' replies. A malformed reply is reported as a
// batch item failure, so after the queue's maxReceiveCount it lands in the
// dead-letter queue, where an alarm fires; its batch-mates are unaffected.
func (s *Service) HandleReplies(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return batch.Messages(ev.Records, maxParallel, func(msg events.SQSMessage) error {
		return s.applyReply(ctx, msg)
	}), nil
}

func (s *Service) applyReply(ctx context.Context, msg events.SQSMessage) error {
	rep, err := order.DecodeReply([]byte(msg.Body))
	wf, known := s.workflows.Get(rep.Workflow, rep.Version)
	if err == nil && !known {
		// After a rollback: applied by its own version once that is back
		// (the message comes again; after the queue's receive limit it
		// waits in the dead-letter queue, and its step is retried when
		// the order resumes).
		s.log.WarnContext(ctx, "reply of an unknown workflow version not applied", append(batch.Describe(msg),
			"version", order.Ref(rep.Workflow, rep.Version), "known", s.workflows.Known())...)
		return fmt.Errorf("reply of order %s: workflow version %s is not in this build", rep.OrderID, rep.Version)
	}
	if err == nil {
		err = rep.Check(wf)
	}
	if err != nil {
		s.log.ErrorContext(ctx, "malformed reply", append(batch.Describe(msg), "error", err)...)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", "responses", "message_id", msg.MessageId)
		return err
	}
	log := s.log.With("order_id", rep.OrderID, "step", rep.Step, "undo", rep.Undo, "attempt", rep.Attempt, "outcome", rep.Outcome)
	// A child of the agent's span, through the reply's traceparent.
	ctx, span := tracing.StartFrom(ctx, "scheduler.reply", tracing.FromMessage(msg), tracing.OfReply(rep),
		trace.WithSpanKind(trace.SpanKindConsumer), trace.WithAttributes(attribute.String("orderly.outcome", string(rep.Outcome))))
	defer span.End()
	index, _ := rep.StepIndex(wf) // Check checked it
	replied := order.StepState{OrderID: rep.OrderID, Step: rep.Step, Index: index, Undo: rep.Undo, Attempt: rep.Attempt}
	now := s.now()
	switch {
	case rep.Poll:
		err = s.applyCheck(ctx, wf, log, replied, rep, now)
	case rep.Outcome == order.OutcomeSucceeded:
		result := keptResult(wf, rep)
		err = s.complete(ctx, wf, log, wf.Completion(replied, rep.Reference, result, s.id, now), now)
		if errors.Is(err, order.ErrCancelRequested) {
			// The step is done, but the client cancelled meanwhile: its
			// work is undone too, then the rest in reverse.
			err = s.undo(ctx, log, wf.UndoCancelledSuccess(replied, rep.Reference, result, now).ClaimedBy(s.id, now))
		}
	case rep.Outcome == order.OutcomeAccepted:
		// The service calls back, or is polled: the step waits for
		// it, no request goes out.
		t := wf.CallAccepted(replied, now)
		if rep.StatusURL != "" {
			t = wf.PollAccepted(replied, rep.StatusURL, time.Duration(rep.RetryAfterMs)*time.Millisecond, now)
		}
		if _, _, err = s.store.Apply(ctx, t); err != nil {
			err = order.AcceptRefused(t, err)
		}
		if errors.Is(err, order.ErrCancelRequested) {
			// Cancelled meanwhile: the service may be doing the work,
			// so it is undone first, then the rest.
			err = s.undo(ctx, log, wf.UndoAcceptedAfterCancel(replied, now).ClaimedBy(s.id, now))
		}
		if err == nil {
			log.InfoContext(ctx, "call accepted; the step waits", "for", wf.Steps[index].WaitKind())
		}
	case rep.Undo || wf.StopOnFailure || rep.WorkDone:
		// An undo that cannot be done, a workflow that stops for an
		// operator, or work done whose answer is unusable (a contract
		// fault): an operator decides.
		var failed order.StepState
		_, failed, err = s.store.Apply(ctx, order.FailReply(replied, order.ReplyReason(rep.Reason), now))
		if err == nil {
			log.ErrorContext(ctx, "failed permanently; order is in Error for an operator", "reason", rep.Reason)
			s.metrics.Count(metrics.OrdersInError, 1, "order_id", rep.OrderID, "step", rep.Step)
			s.alert(ctx, log, failed)
		}
	default:
		// A permanent fault did no work: the steps before it are undone.
		err = s.undo(ctx, log, wf.UndoFault(replied, order.ReplyReason(rep.Reason), now).ClaimedBy(s.id, now))
	}
	if errors.Is(err, order.ErrStale) {
		log.InfoContext(ctx, "stale or duplicate reply dropped", "message_id", msg.MessageId)
		s.metrics.Count(metrics.StaleReplies, 1, "order_id", rep.OrderID, "step", rep.Step)
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "reply not applied; it will be redelivered", "message_id", msg.MessageId, "error", err)
		tracing.Failed(span, err)
		return err
	}
	return nil
}

// applyCheck applies the reply to a check of the status URL of replied,
// a step whose service is polled (its reply's Poll): the work goes on
// (the next check is set), is done (the step completes as any success),
// or failed (as a failure callback: undone, or in Error for an operator).
// Each write holds only inside the wait, on the reply's attempt.
func (s *Service) applyCheck(ctx context.Context, wf order.Workflow, log *slog.Logger, replied order.StepState, rep order.StepReply, now time.Time) error {
	if rep.Outcome == order.OutcomeAccepted {
		// The next check is never after the wait's deadline, which the
		// reply does not carry: the record as stored does.
		o, steps, err := s.store.GetOrder(ctx, rep.OrderID)
		if err != nil {
			return err
		}
		if replied.Index >= len(steps) {
			return fmt.Errorf("order %s has no record %d: %w", o.ID, replied.Index, order.ErrStale)
		}
		stored := steps[replied.Index]
		// The fence is the reply's: its attempt, and the status URL its
		// check checked.
		stored.Attempt, stored.StatusURL = rep.Attempt, rep.Checked
		_, st, err := s.store.Apply(ctx, wf.PollWorking(stored, rep.StatusURL, time.Duration(rep.RetryAfterMs)*time.Millisecond, now))
		if err == nil {
			log.InfoContext(ctx, "status checked: the work goes on", "next_check", st.DueAt)
		}
		return err
	}
	replied.StatusURL = rep.Checked
	if rep.Outcome == order.OutcomeSucceeded {
		return s.complete(ctx, wf, log, wf.PollDone(replied, rep.Reference, keptResult(wf, rep), s.id, now), now)
	}
	reason := order.ReplyReason(rep.Reason)
	if wf.StopOnFailure || rep.WorkDone {
		_, failed, err := s.store.Apply(ctx, order.PollFailed(replied, reason, now))
		if err == nil {
			log.ErrorContext(ctx, "status says the work failed; order is in Error for an operator", "reason", rep.Reason)
			s.metrics.Count(metrics.OrdersInError, 1, "order_id", rep.OrderID, "step", rep.Step)
			s.alert(ctx, log, failed)
		}
		return err
	}
	return s.undo(ctx, log, wf.UndoPollFailed(replied, reason, now).ClaimedBy(s.id, now))
}

// complete applies c, a success: the record becomes Processed and, in the
// same write, the next one (the next workflow step, or the next undo) is
// claimed by this Scheduler, whose request goes out at once. No stream hop
// and no second write stand between two steps.
func (s *Service) complete(ctx context.Context, wf order.Workflow, log *slog.Logger, c order.Completion, now time.Time) error {
	done, reference, result := c.Step, c.Reference, c.Result
	if wf.ReadsOrder(done) {
		// The next step's start depends on the order's data: read it.
		o, _, err := s.store.GetOrder(ctx, done.OrderID)
		if err != nil {
			return err
		}
		if c, err = c.On(o.VarsWith(done.Step, result), now); err != nil {
			log.WarnContext(ctx, "the next step's start cannot be decided on the order's data", "error", err)
		}
	}
	o, claimed, err := s.store.Apply(ctx, c.Transition(now))
	if err != nil {
		// The reply knows neither the cancel nor DueAt: the domain says
		// whether the write is made again as they are.
		if c, err = c.Again(err, now); err != nil {
			return err
		}
		if o, claimed, err = s.store.Apply(ctx, c.Transition(now)); err != nil {
			return err
		}
	}
	more := c.Next != nil
	if done.Undo {
		s.metrics.Count(metrics.StepsUndone, 1, "order_id", done.OrderID, "step", done.Step)
	} else {
		s.metrics.Count(metrics.StepsCompleted, 1, "order_id", done.OrderID, "step", done.Step)
	}
	if !more {
		s.ended(ctx, log, o)
		return nil
	}
	log.InfoContext(ctx, "step processed", "reference", reference)
	if claimed.ProcessState != order.Processing {
		// The next step waits: nothing is sent until its wait ends.
		log.InfoContext(ctx, "step waits", "next", claimed.Step, "until", claimed.CompleteBy)
		return nil
	}
	s.metrics.Count(metrics.StepsClaimed, 1, "order_id", claimed.OrderID, "step", claimed.Step)
	s.dispatcher.Send(ctx, o, claimed)
	return nil
}

// undo makes u's write, which ends the active workflow step and starts
// undoing the order's work; the first undo's request goes out at once
// when u claims it. An order with nothing to undo ends at once.
func (s *Service) undo(ctx context.Context, log *slog.Logger, u order.Undoing) error {
	o, first, err := undo.Start(ctx, s.store, u, s.now())
	if err != nil {
		return err
	}
	s.metrics.Count(metrics.CompensationsStarted, 1, "order_id", o.ID, "step", u.Step.Step)
	if len(u.Plan) == 0 {
		s.ended(ctx, log, o)
		return nil
	}
	log.WarnContext(ctx, "undoing the order's work", "status", o.Status, "reason", u.Reason, "undo", len(u.Plan))
	if first.ProcessState == order.Processing {
		s.metrics.Count(metrics.StepsClaimed, 1, "order_id", first.OrderID, "step", first.Step)
		s.dispatcher.Send(ctx, o, first)
	}
	return nil
}

// ended logs and counts an order that reached its end.
func (s *Service) ended(ctx context.Context, log *slog.Logger, o order.Order) {
	log.InfoContext(ctx, "order ended", "status", o.Status)
	switch o.Status {
	case order.StatusProcessed:
		s.metrics.Count(metrics.OrdersProcessed, 1, "order_id", o.ID)
	case order.StatusFailed:
		s.metrics.Count(metrics.OrdersFailed, 1, "order_id", o.ID)
	case order.StatusCancelled:
		s.metrics.Count(metrics.OrdersCancelled, 1, "order_id", o.ID)
	}
}

// alert tells operators right away. The failure is already recorded with
// AlertPending, so if this fails the Supervisor sends it later.
func (s *Service) alert(ctx context.Context, log *slog.Logger, failed order.StepState) {
	if err := s.notifier.Notify(ctx, failed); err != nil {
		log.WarnContext(ctx, "alert deferred to the Supervisor", "error", err)
		return
	}
	s.metrics.Count(metrics.AlertsSent, 1, "order_id", failed.OrderID, "step", failed.Step)
}

// keptResult is the reply's result when its workflow keeps the step's:
// a forward step's success that some later call carries.
func keptResult(wf order.Workflow, rep order.StepReply) json.RawMessage {
	if rep.Undo || !wf.Keeps(rep.Step) {
		return nil
	}
	return rep.Result
}
