// Package supervisor is the pattern's Supervisor. Run on a schedule, it
// queries the sparse due index for orders whose DueAt passed, page by page
// until every shard is drained, and for each makes one conditional write on
// the active step's current attempt: retry a timed-out step, fail it at its
// threshold (alerting operators), re-announce a Pending step nobody
// claimed, send an alert a crash left unsent, or move DueAt on to a step
// still inside its window. Several Supervisors may run at once; the
// conditional writes make sure only one recovers each step, so no leader
// election is needed.
package supervisor

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/actor/undo"
	"orderly/internal/batch"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// Store is what the Supervisor needs of the state store.
type Store interface {
	Shards() int
	DuePage(ctx context.Context, shard int, now time.Time, limit int, after order.Cursor) (order.DuePage, error)
	ReportUnreadable(ctx context.Context, u order.Unreadable) error
	UnreportUnreadable(ctx context.Context, u order.Unreadable) error
	// Apply persists a decided transition (an *order.StaleWrite, which
	// is order.ErrStale, when its guard no longer holds) and returns the
	// order and the record it leaves active as written.
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
	// GetOrder reads an order and its records: the data a step's start
	// may depend on (order.Workflow.ReadsOrder).
	GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error)
}

// Notifier sends the alert a step records and clears its alert flag, or
// sends one no step records.
type Notifier interface {
	Notify(ctx context.Context, st order.StepState) error
	Publish(ctx context.Context, a order.Alert) error
}

// Requests sends a check of a polled step's status URL to its agent.
type Requests interface {
	SendRequest(ctx context.Context, agent string, req order.StepRequest) error
}

// Backlogs tells whether requests of an agent wait in its queue (or held
// there behind its open circuit), or replies in the response queue.
type Backlogs interface {
	Backlog(ctx context.Context, agent string) (order.Backlog, error)
}

// Pauses reads the pauses of the stage's services and workflows (see
// order.Pause): one of each name asked, not On when none is.
type Pauses interface {
	PausesOf(ctx context.Context, services, workflows []string) ([]order.Pause, error)
}

// Drain settings. A run reads each shard a page at a time and works a
// page's steps in parallel, until the shard is drained or the run is close
// to its function timeout; whatever is left waits for the next run.
const (
	PageSize = 200
	// perShardParallel steps of each shard are worked at once, so a run
	// makes up to Shards × perShardParallel conditional writes at a time.
	perShardParallel = 8
	// stopBefore is how long before the invocation's deadline a run stops
	// starting new pages.
	stopBefore = 10 * time.Second
)

// DefaultParkFor is how often an order whose workflow version the running
// build lacks is looked at again: about once a Supervisor run, so it
// resumes within a minute of its version's return.
const DefaultParkFor = time.Minute

// Service is one Supervisor.
type Service struct {
	store     Store
	notifier  Notifier
	backlogs  Backlogs
	requests  Requests
	pauses    Pauses
	workflows order.Versions
	parkFor   time.Duration
	now       func() time.Time
	log       *slog.Logger
	metrics   *metrics.Recorder
	pageSize  int
}

// Config wires a Supervisor.
type Config struct {
	Store    Store
	Notifier Notifier
	// Backlogs, when set, lets the Supervisor tell queue wait from a
	// timeout; nil counts every expired deadline as a timeout.
	Backlogs Backlogs
	// Requests, when set, sends the checks of steps whose service is
	// polled; nil leaves such a step waiting until its deadline.
	Requests Requests
	// Pauses, when set, tells the Supervisor which services an operator
	// paused (their steps' deadlines move on, counting no failure) and
	// lets it alarm on pauses past their stated end.
	Pauses Pauses
	// Workflows are the workflow versions this build runs; an order is
	// recovered by its own version's definition.
	Workflows order.Versions
	// ParkFor is how long an order whose version this build lacks waits
	// before it is looked at again; zero means DefaultParkFor.
	ParkFor time.Duration
	Now     func() time.Time
	Log     *slog.Logger
	Metrics *metrics.Recorder
	// PageSize is how many due orders of a shard are read at once; zero
	// means PageSize.
	PageSize int
}

// New returns a Supervisor.
func New(c Config) *Service {
	if c.PageSize <= 0 {
		c.PageSize = PageSize
	}
	if c.ParkFor <= 0 {
		c.ParkFor = DefaultParkFor
	}
	return &Service{store: c.Store, notifier: c.Notifier, backlogs: c.Backlogs, requests: c.Requests, pauses: c.Pauses,
		workflows: c.Workflows, parkFor: c.ParkFor, now: c.Now, log: c.Log, metrics: c.Metrics, pageSize: c.PageSize}
}

// Report counts what one run did.
type Report struct {
	Examined int `json:"examined"`
	Retried  int `json:"retried"`
	Failed   int `json:"failed"`
	Nudged   int `json:"nudged"`
	Alerted  int `json:"alerted"`
	// Rescheduled counts orders looked at early: their step was still
	// inside its window, so only DueAt moved.
	Rescheduled int `json:"rescheduled"`
	// Deferred counts steps whose request waited in a backlogged queue:
	// their deadline moved on, with no failure counted.
	Deferred int `json:"deferred"`
	// Compensated counts orders whose work this run began to undo.
	Compensated int `json:"compensated"`
	// Parked counts orders of a workflow version this build lacks, left
	// to wait for it.
	Parked int `json:"parked"`
	// Lost counts recoveries another actor made first: a reply that arrived,
	// a Scheduler's claim, or another Supervisor's write.
	Lost int `json:"lost"`
	// Unreadable counts due order items this build could not read: they
	// were skipped, counted (PoisonMessages, source due-index) and, once
	// per version of each, reported to operators.
	Unreadable int `json:"unreadable"`
	// WaitsEnded counts steps that waited whose wait this run ended.
	WaitsEnded int `json:"waitsEnded"`
	// Polled counts checks of polled steps' status URLs this run sent.
	Polled int `json:"polled"`
	// Paused counts the services and workflows paused at the run's
	// start; Overrun those of them on past their stated end.
	Paused  int `json:"paused,omitempty"`
	Overrun int `json:"overrun,omitempty"`
}

func (r *Report) add(o Report) {
	r.Examined += o.Examined
	r.Retried += o.Retried
	r.Failed += o.Failed
	r.Nudged += o.Nudged
	r.Alerted += o.Alerted
	r.Rescheduled += o.Rescheduled
	r.Deferred += o.Deferred
	r.Compensated += o.Compensated
	r.Parked += o.Parked
	r.Lost += o.Lost
	r.Unreadable += o.Unreadable
	r.WaitsEnded += o.WaitsEnded
	r.Polled += o.Polled
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
	on, total := s.readPauses(ctx, now)
	backlog := s.backlogOnce(ctx, on)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for shard := range s.store.Shards() {
		wg.Go(func() {
			r, err := s.runShard(ctx, shard, now, backlog)
			mu.Lock()
			defer mu.Unlock()
			total.add(r)
			if err != nil {
				errs = append(errs, err)
			}
		})
	}
	wg.Wait()
	if total.Examined > 0 || total.Paused > 0 || len(errs) > 0 {
		s.log.InfoContext(ctx, "supervisor run", "report", total, "errors", len(errs))
	}
	return total, errors.Join(errs...)
}

// backlogOnce returns a function that reads, once per agent per run, what
// the agent's queue (and the response queue) hold. A paused service's
// agent holds its requests: no queue need be asked.
func (s *Service) backlogOnce(ctx context.Context, on paused) func(st order.StepState) order.Backlog {
	var mu sync.Mutex
	known := map[string]order.Backlog{}
	return func(st order.StepState) order.Backlog {
		agent := st.Agent
		switch {
		case st.Held && on.workflows[order.WorkflowOf(st.Workflow)]:
			return order.Paused
		case st.Held:
			return order.NoBacklog
		case on.services[agent]:
			return order.Paused
		case st.ProcessState == order.Waiting:
			return order.NoBacklog // no queue holds a waiting step's request
		}
		if s.backlogs == nil {
			return order.NoBacklog
		}
		mu.Lock()
		defer mu.Unlock()
		if b, ok := known[agent]; ok {
			return b
		}
		b, err := s.backlogs.Backlog(ctx, agent)
		if err != nil {
			// Without it a timeout counts as one, as it always did.
			s.log.WarnContext(ctx, "queue backlog unknown", "agent", agent, "error", err)
		}
		known[agent] = b
		return b
	}
}

func (s *Service) runShard(ctx context.Context, shard int, now time.Time, backlog func(order.StepState) order.Backlog) (Report, error) {
	var (
		mu   sync.Mutex
		r    Report
		errs []error
		page order.Cursor
	)
	for {
		// Orders are looked at once their DueAt is a grace in the past.
		due, err := s.store.DuePage(ctx, shard, now.Add(-s.workflows.Latest().SkewGrace), s.pageSize, page)
		if err != nil {
			return r, errors.Join(append(errs, fmt.Errorf("shard %d: %w", shard, err))...)
		}
		steps, next := due.Steps, due.Next
		for _, u := range due.Unreadable {
			// Skipped: it holds up nothing after it.
			r.Unreadable++
			if err := s.reportUnreadable(ctx, u, now, &r); err != nil {
				errs = append(errs, err)
			}
		}
		batch.Each(steps, perShardParallel, func(st order.StepState) {
			var one Report
			err := s.recover(ctx, st, now, backlog, &one)
			mu.Lock()
			defer mu.Unlock()
			one.Examined++
			r.add(one)
			if err != nil {
				errs = append(errs, err)
			}
		})
		page = next
		if page == nil || nearDeadline(ctx) {
			return r, errors.Join(errs...)
		}
	}
}

func nearDeadline(ctx context.Context) bool {
	deadline, ok := ctx.Deadline()
	return ctx.Err() != nil || (ok && time.Until(deadline) < stopBefore)
}

func (s *Service) recover(ctx context.Context, st order.StepState, now time.Time, backlogOf func(order.StepState) order.Backlog, r *Report) error {
	wf, known := s.workflows.Get(st.Workflow, st.Version)
	if !known {
		return s.park(ctx, st, now, r)
	}
	// The queue is asked about only for a Processing step past its
	// deadline, the one case where the answer matters.
	backlog := order.NoBacklog
	if (st.ProcessState == order.Processing || st.ProcessState == order.Waiting || st.Held) && st.Expired(now.Add(-wf.SkewGrace)) {
		backlog = backlogOf(st)
	}
	rec := wf.Assess(st, now, backlog)
	if rec.Action != order.Leave {
		// Leaving a step as it is is no decision worth a span.
		var span trace.Span
		ctx, span = tracing.Start(ctx, "supervisor.decide", tracing.OfState(st), trace.WithAttributes(tracing.AttrDecision.String(rec.Action.String())))
		defer span.End()
	}
	// failure_count is logged with each outcome, as stored after the write.
	log := s.log.With("order_id", st.OrderID, "step", st.Step, "attempt", st.Attempt,
		"action", rec.Action.String())
	var err error
	switch rec.Action {
	case order.Leave:
		// DueAt lags the deadline (completions leave it alone to save
		// index writes): look again when the step is really due.
		if st.CompleteBy.After(st.DueAt) {
			_, _, err = s.store.Apply(ctx, order.Reschedule(st, st.CompleteBy, now))
			if err == nil {
				r.Rescheduled++
			}
		}
	case order.Defer:
		_, err = s.apply(ctx, rec, st, now)
		if err == nil {
			r.Deferred++
			msg := "deadline moved on: the request waits in a backlogged queue"
			if backlog == order.Held {
				msg = "deadline moved on: the agent holds requests behind its open circuit"
			}
			log.InfoContext(ctx, msg, "reason", rec.Reason, "deferrals", st.Deferrals+1, "failure_count", st.FailureCount)
			s.metrics.Count(metrics.StepsDeferred, 1, "order_id", st.OrderID, "step", st.Step)
		}
	case order.Retry:
		var retried order.StepState
		retried, err = s.apply(ctx, rec, st, now)
		if err == nil {
			r.Retried++
			log.WarnContext(ctx, "timed-out step reset to Pending", "reason", rec.Reason, "failure_count", retried.FailureCount)
			s.metrics.Count(metrics.StepsRetried, 1, "order_id", st.OrderID, "step", st.Step)
		}
	case order.Fail:
		var failed order.StepState
		failed, err = s.apply(ctx, rec, st, now)
		if err == nil {
			r.Failed++
			log.ErrorContext(ctx, "step failed for good; order is in Error", "reason", rec.Reason,
				"alert", failed.AlertKind, "failure_count", failed.FailureCount)
			s.metrics.Count(metrics.OrdersInError, 1, "order_id", st.OrderID, "step", st.Step)
			err = s.sendAlert(ctx, failed, r)
		}
	case order.Compensate:
		var o order.Order
		o, err = s.compensate(ctx, wf, st, rec, now)
		if err == nil {
			r.Compensated++
			log.WarnContext(ctx, "undoing the order's work", "reason", rec.Reason, "status", o.Status,
				"failure_count", st.FailureCount)
			s.metrics.Count(metrics.CompensationsStarted, 1, "order_id", st.OrderID, "step", st.Step)
		}
	case order.EndWait:
		var o order.Order
		c := wf.WaitEnded(st, now)
		if wf.ReadsOrder(st) {
			c, err = decideOn(ctx, s.store, c, log, now)
		}
		if err == nil {
			o, _, err = s.store.Apply(ctx, c.Transition(now))
		}
		if err == nil {
			r.WaitsEnded++
			log.InfoContext(ctx, "wait ended", "waited_since", st.Since, "status", o.Status)
			s.metrics.Count(metrics.WaitsEnded, 1, "order_id", st.OrderID, "step", st.Step)
			if o.Status == order.StatusProcessed {
				s.metrics.Count(metrics.OrdersProcessed, 1, "order_id", o.ID)
			}
		}
	case order.Poll:
		err = s.poll(ctx, wf, st, log, now)
		if err == nil {
			r.Polled++
		}
	case order.SendAlert:
		// Found unsent after its writer's lease: lease it to this run
		// first, so that a racing Supervisor does not send it too. A
		// Pending step's lease ends no later than its claim deadline.
		until := now.Add(order.AlertLease)
		if st.ProcessState == order.Pending && st.CompleteBy.Before(until) {
			until = st.CompleteBy
		}
		if _, _, err = s.store.Apply(ctx, order.LeaseAlert(st, until, now)); err == nil {
			err = s.sendAlert(ctx, st, r)
		}
	case order.Nudge:
		var nudged order.StepState
		nudged, err = s.apply(ctx, rec, st, now)
		if err == nil {
			r.Nudged++
			log.WarnContext(ctx, "unclaimed pending step re-announced", "reason", rec.Reason, "nudges", nudged.Nudges,
				"failure_count", st.FailureCount)
			s.metrics.Count(metrics.StepsNudged, 1, "order_id", st.OrderID, "step", st.Step)
			if nudged.AlertPending {
				// Recorded with the nudge: if sending fails now, the next
				// run that finds the order sends it.
				err = s.sendAlert(ctx, nudged, r)
			}
		}
	}
	if errors.Is(err, order.ErrStale) {
		r.Lost++
		log.InfoContext(ctx, "recovery not needed any more; another actor moved the step on", "failure_count", st.FailureCount)
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "recovery failed; next run retries", "error", err, "failure_count", st.FailureCount)
		tracing.Failed(trace.SpanFromContext(ctx), err)
		return fmt.Errorf("%s step %s of order %s: %w", rec.Action, st.Step, st.OrderID, err)
	}
	return nil
}

// poll checks the status URL of st, a step whose service is polled and
// due for a check: the next look is moved on by the check's window first
// (order.Workflow.PollSent), then the check goes to the step's agent, so
// a check lost between the two (a crash, a failed send) is made again
// when that window ends. No Lambda waits between two checks.
func (s *Service) poll(ctx context.Context, wf order.Workflow, st order.StepState, log *slog.Logger, now time.Time) error {
	if s.requests == nil {
		return fmt.Errorf("step %s of order %s is due for a check of its status, and this Supervisor sends no requests", st.Step, st.OrderID)
	}
	o, sent, err := s.store.Apply(ctx, wf.PollSent(st, now))
	if err != nil {
		return err
	}
	sent.StatusURL = st.StatusURL // the write does not change it
	if err := s.requests.SendRequest(ctx, st.Agent, order.NewPollRequest(o, sent, sent.DueAt.Sub(now), now)); err != nil {
		log.WarnContext(ctx, "check not sent; made again when its window ends", "next_check", sent.DueAt, "error", err)
		return nil
	}
	log.InfoContext(ctx, "status check sent", "agent", st.Agent, "next_check", sent.DueAt)
	s.metrics.Count(metrics.PollsSent, 1, "order_id", st.OrderID, "step", st.Step)
	return nil
}

// decideOn is c decided on its order's data, read now: the next step's
// start depends on it (order.Workflow.ReadsOrder). What the data cannot
// decide is logged, and the write made as the domain bounds it.
func decideOn(ctx context.Context, store Store, c order.Completion, log *slog.Logger, now time.Time) (order.Completion, error) {
	o, _, err := store.GetOrder(ctx, c.Step.OrderID)
	if err != nil {
		return c, err
	}
	c, err = c.On(o.VarsWith(c.Step.Step, c.Result), now)
	if err != nil {
		log.WarnContext(ctx, "the next step's start cannot be decided on the order's data", "error", err)
	}
	return c, nil
}

// compensate ends the active workflow step and starts undoing the order's
// work, in reverse; the first undo is announced for a Scheduler to claim.
func (s *Service) compensate(ctx context.Context, wf order.Workflow, st order.StepState, rec order.Recovery, now time.Time) (order.Order, error) {
	// A client's cancel (or a redrive's undo floor) since the order was
	// read: the domain says whether to start undoing as they are.
	o, _, err := undo.Start(ctx, s.store, wf.UndoRecovery(st, rec, now), now)
	return o, err
}

// apply makes the write of rec, a decision about st that is one record's
// write.
func (s *Service) apply(ctx context.Context, rec order.Recovery, st order.StepState, now time.Time) (order.StepState, error) {
	t, ok := rec.Transition(st, now)
	if !ok {
		return order.StepState{}, fmt.Errorf("%s of step %s of order %s is not one record's write", rec.Action, st.Step, st.OrderID)
	}
	_, st, err := s.store.Apply(ctx, t)
	return st, err
}

// park leaves an order whose workflow version this build lacks (after a
// rollback) as it is: it is not failed or retried by a definition it was
// not submitted under. Operators are alerted once per version that is
// missing (the write that first parks it records the alert, which is
// then sent like any other); after that only its next look moves on, so
// it resumes within ParkFor of its version's return.
func (s *Service) park(ctx context.Context, st order.StepState, now time.Time, r *Report) error {
	log := s.log.With("order_id", st.OrderID, "step", st.Step, "attempt", st.Attempt, "version", st.Version, "action", "park")
	var err error
	switch {
	case st.AlertPending && st.AlertKind == order.AlertVersionUnknown:
		// Recorded, not sent yet (its writer crashed): lease it, send it.
		if _, _, err = s.store.Apply(ctx, order.LeaseAlert(st, now.Add(order.AlertLease), now)); err == nil {
			err = s.sendAlert(ctx, st, r)
		}
	default:
		alert := st.Parked != st.Version && !st.AlertPending
		reason := s.workflows.Missing(st.Workflow, st.Version)
		var parked order.StepState
		_, parked, err = s.store.Apply(ctx, order.Park(st, now.Add(s.parkFor), alert, reason, now))
		if err == nil {
			r.Parked++
			if alert {
				log.ErrorContext(ctx, "order of an unknown workflow version parked", "reason", reason)
				s.metrics.Count(metrics.OrdersParked, 1, "order_id", st.OrderID, "version", st.Version)
				err = s.sendAlert(ctx, parked, r)
			}
		}
	}
	if errors.Is(err, order.ErrStale) {
		r.Lost++
		return nil
	}
	if err != nil {
		log.ErrorContext(ctx, "park failed; next run retries", "error", err)
		return fmt.Errorf("park step %s of order %s: %w", st.Step, st.OrderID, err)
	}
	return nil
}

// reportUnreadable counts a due order item that did not decode, on every
// run, and alerts operators about it once per version of it: the write
// that marks the version reported comes first, so of two Supervisors only
// one alerts, and a later run (another invocation) finds the mark. If the
// alert is not sent the mark is taken back, and the next run tries again;
// a crash between the two loses the alert, but not the count, which goes
// on every run while the item is there.
func (s *Service) reportUnreadable(ctx context.Context, u order.Unreadable, now time.Time, r *Report) error {
	log := s.log.With("order_id", u.OrderID, "item_version", u.Fingerprint)
	s.metrics.Count(metrics.PoisonMessages, 1, "source", "due-index", "order_id", u.OrderID)
	if u.Reported {
		log.WarnContext(ctx, "unreadable order item skipped again; operators were alerted", "error", u.Err)
		return nil
	}
	log.ErrorContext(ctx, "unreadable order item skipped; alerting operators", "error", u.Err)
	err := s.store.ReportUnreadable(ctx, u)
	if errors.Is(err, order.ErrStale) {
		return nil // another Supervisor reports it
	}
	if err != nil {
		return fmt.Errorf("unreadable order item %s: %w", u.OrderID, err)
	}
	err = s.notifier.Publish(ctx, order.Alert{Kind: order.AlertItemUnreadable, OrderID: u.OrderID, At: now.UTC(),
		Reason: fmt.Sprintf("the order item cannot be read by this build (%v); the Supervisor skips it until it is repaired or removed (runbook: docs/operations.md#item-unreadable)", u.Err)})
	if err != nil {
		if uerr := s.store.UnreportUnreadable(ctx, u); uerr != nil && !errors.Is(uerr, order.ErrStale) {
			log.WarnContext(ctx, "report mark not taken back: the item is not alerted again", "error", uerr)
		}
		return fmt.Errorf("unreadable order item %s: %w", u.OrderID, err)
	}
	r.Alerted++
	s.metrics.Count(metrics.AlertsSent, 1, "order_id", u.OrderID, "kind", string(order.AlertItemUnreadable))
	return nil
}

// sendAlert sends the alert a step records, as stored (its kind, final
// failure count and reason), and clears its alert flag.
func (s *Service) sendAlert(ctx context.Context, st order.StepState, r *Report) error {
	if err := s.notifier.Notify(ctx, st); err != nil {
		return err
	}
	r.Alerted++
	s.metrics.Count(metrics.AlertsSent, 1, "order_id", st.OrderID, "step", st.Step, "kind", string(st.AlertKind))
	return nil
}
