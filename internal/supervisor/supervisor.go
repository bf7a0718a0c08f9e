// Package supervisor is the pattern's Supervisor. Run on a schedule, it
// queries the sparse due index for steps whose deadline passed, and for each
// makes one conditional write on the step's current attempt: retry a
// timed-out step, fail it at its threshold (alerting operators), re-announce
// a Pending step nobody claimed, or send an alert a crash left unsent.
// Several Supervisors may run at once; the conditional writes make sure only
// one recovers each step, so no leader election is needed.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// Store is what the Supervisor needs of the state store.
type Store interface {
	Shards() int
	DueSteps(ctx context.Context, shard int, now time.Time, limit int) ([]order.StepState, error)
	RetryStep(ctx context.Context, st order.StepState, claimBy time.Time, reason string, now time.Time) (order.StepState, error)
	FailTimedOutStep(ctx context.Context, st order.StepState, reason string, now time.Time) error
	NudgeStep(ctx context.Context, st order.StepState, claimBy time.Time, now time.Time) (order.StepState, error)
	GetStep(ctx context.Context, orderID, step string) (order.StepState, error)
}

// Notifier alerts operators about a failed step and clears its alert flag.
type Notifier interface {
	Notify(ctx context.Context, st order.StepState, kind order.AlertKind) error
}

// Publisher sends an alert that is not tied to a failed step.
type Publisher interface {
	Alert(ctx context.Context, a order.Alert) error
}

// PerShardLimit bounds the steps one run handles per shard, so one run
// stays well inside the function timeout; the rest wait for the next run.
const PerShardLimit = 200

// Service is one Supervisor.
type Service struct {
	store     Store
	notifier  Notifier
	publisher Publisher
	workflow  order.Workflow
	now       func() time.Time
	log       *slog.Logger
	metrics   *metrics.Recorder
}

// Config wires a Supervisor.
type Config struct {
	Store     Store
	Notifier  Notifier
	Publisher Publisher
	Workflow  order.Workflow
	Now       func() time.Time
	Log       *slog.Logger
	Metrics   *metrics.Recorder
}

// New returns a Supervisor.
func New(c Config) *Service {
	return &Service{store: c.Store, notifier: c.Notifier, publisher: c.Publisher,
		workflow: c.Workflow, now: c.Now, log: c.Log, metrics: c.Metrics}
}

// Report counts what one run did.
type Report struct {
	Examined int `json:"examined"`
	Retried  int `json:"retried"`
	Failed   int `json:"failed"`
	Nudged   int `json:"nudged"`
	Alerted  int `json:"alerted"`
	// Lost counts recoveries another actor made first: a reply that arrived,
	// a Scheduler's claim, or another Supervisor's write.
	Lost int `json:"lost"`
}

func (r *Report) add(o Report) {
	r.Examined += o.Examined
	r.Retried += o.Retried
	r.Failed += o.Failed
	r.Nudged += o.Nudged
	r.Alerted += o.Alerted
	r.Lost += o.Lost
}

// Handle is the Lambda entry point for the EventBridge schedule; the
// event's content does not matter, every run examines every shard. It
// returns an error when any step could not be handled, so the invocation
// counts as failed and alarms fire.
func (s *Service) Handle(ctx context.Context, _ events.EventBridgeEvent) (Report, error) {
	return s.Run(ctx)
}

// Run examines every shard of the due index once, shards in parallel.
func (s *Service) Run(ctx context.Context) (Report, error) {
	now := s.now()
	var (
		mu    sync.Mutex
		total Report
		errs  []error
		wg    sync.WaitGroup
	)
	for shard := range s.store.Shards() {
		wg.Go(func() {
			r, err := s.runShard(ctx, shard, now)
			mu.Lock()
			defer mu.Unlock()
			total.add(r)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if total.Examined > 0 || len(errs) > 0 {
		s.log.InfoContext(ctx, "supervisor run", "report", total, "errors", len(errs))
	}
	return total, errors.Join(errs...)
}

func (s *Service) runShard(ctx context.Context, shard int, now time.Time) (Report, error) {
	var r Report
	steps, err := s.store.DueSteps(ctx, shard, now, PerShardLimit)
	if err != nil {
		return r, fmt.Errorf("shard %d: %w", shard, err)
	}
	var errs []error
	for _, st := range steps {
		r.Examined++
		if err := s.recover(ctx, st, now, &r); err != nil {
			errs = append(errs, err)
		}
	}
	return r, errors.Join(errs...)
}

func (s *Service) recover(ctx context.Context, st order.StepState, now time.Time, r *Report) error {
	rec := s.workflow.Assess(st, now)
	log := s.log.With("order_id", st.OrderID, "step", st.Step, "attempt", st.Attempt,
		"failure_count", st.FailureCount, "action", rec.Action.String())
	var err error
	switch rec.Action {
	case order.Leave:
		return nil
	case order.Retry:
		_, err = s.store.RetryStep(ctx, st, rec.CompleteBy, rec.Reason, now)
		if err == nil {
			r.Retried++
			log.WarnContext(ctx, "timed-out step reset to Pending", "reason", rec.Reason)
			s.metrics.Count(metrics.StepsRetried, 1, "order_id", st.OrderID, "step", st.Step)
		}
	case order.Fail:
		err = s.store.FailTimedOutStep(ctx, st, rec.Reason, now)
		if err == nil {
			r.Failed++
			log.ErrorContext(ctx, "step failed after repeated timeouts; order is in Error", "reason", rec.Reason)
			s.metrics.Count(metrics.OrdersFailed, 1, "order_id", st.OrderID, "step", st.Step)
			err = s.sendAlert(ctx, st.OrderID, st.Step, order.AlertStepTimedOut, r)
		}
	case order.SendAlert:
		err = s.sendAlert(ctx, st.OrderID, st.Step, "", r)
	case order.Nudge:
		_, err = s.store.NudgeStep(ctx, st, rec.CompleteBy, now)
		if err == nil {
			r.Nudged++
			log.WarnContext(ctx, "unclaimed pending step re-announced", "reason", rec.Reason, "nudges", st.Nudges+1)
			s.metrics.Count(metrics.StepsNudged, 1, "order_id", st.OrderID, "step", st.Step)
			if rec.AlertOperators {
				err = s.publisher.Alert(ctx, order.Alert{
					Kind: order.AlertStepUnclaimed, OrderID: st.OrderID, Step: st.Step,
					Attempt: st.Attempt, FailureCount: st.FailureCount,
					Reason: fmt.Sprintf("%s; re-announced %d times", rec.Reason, st.Nudges+1), At: now.UTC(),
				})
				if err == nil {
					r.Alerted++
				}
			}
		}
	}
	if errors.Is(err, order.ErrStale) {
		r.Lost++
		log.InfoContext(ctx, "recovery not needed any more; another actor moved the step on")
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "recovery failed; next run retries", "error", err)
		return fmt.Errorf("%s step %s of order %s: %w", rec.Action, st.Step, st.OrderID, err)
	}
	return nil
}

// sendAlert reads the failed step as stored (with its final failure count
// and reason) and alerts operators. kind "" derives the kind from the step.
func (s *Service) sendAlert(ctx context.Context, orderID, step string, kind order.AlertKind, r *Report) error {
	st, err := s.store.GetStep(ctx, orderID, step)
	if err != nil {
		return err
	}
	if st.ProcessState != order.Error || !st.AlertPending {
		return nil // another Supervisor or the Scheduler sent it
	}
	if kind == "" {
		kind = kindOf(st, s.workflow)
	}
	if err := s.notifier.Notify(ctx, st, kind); err != nil {
		return err
	}
	r.Alerted++
	s.metrics.Count(metrics.AlertsSent, 1, "order_id", orderID, "step", step)
	return nil
}

func kindOf(st order.StepState, w order.Workflow) order.AlertKind {
	if def, ok := w.Step(st.Step); ok && st.FailureCount >= def.FailureThreshold {
		return order.AlertStepTimedOut
	}
	return order.AlertStepFailed
}
