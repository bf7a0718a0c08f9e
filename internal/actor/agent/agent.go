// Package agent is the pattern's Agent: it takes step requests from its
// request queue, calls its remote service with the step's idempotency key,
// retries transient faults with capped exponential backoff and full jitter,
// and never works past the step's CompleteBy. It replies with success, or
// with an error for a permanent fault; when time runs out it stops and sends
// nothing, because the Supervisor may already have handed the step to
// another attempt.
//
// The window of a remote call starts when the agent starts it: a request
// that waited in its queue for more than half its window has its deadline
// moved on first, and a long call moves it on every third of the window
// (heartbeats). Both are writes fenced on the attempt, so a request whose
// attempt is already over is dropped without a call.
//
// A circuit breaker per remote service stops calls after a run of failed
// ones: while it is open, requests are held in their queue (sent back with
// a delay, which the Supervisor counts as a backlog) instead of spending
// their attempts on a service that is down. Timeouts count once per
// request, so that one request that always hangs does not hold the rest
// (see circuit). A configuration fault (order.ErrConfiguration: a
// redirect, 401, 403, 404, 405, 407, 415) is the same for every order
// until someone fixes it: it is neither retried nor replied, it opens the
// circuit at once, and its request is held like the rest, so no order
// fails or is undone because of it. The exception is a 404 that
// only one order's key gets while the same call succeeds for others (an
// unknown SKU): that order's step fails, with the service's words, and
// the circuit stays closed (circuit.judge has the rule).
package agent

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/batch"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/pausecache"
	"orderly/internal/tracing"
)

// Caller calls the remote service. The call of a step whose service
// calls back may be accepted (202): its answer then has no reference.
type Caller interface {
	Call(ctx context.Context, service string, req order.StepRequest) (order.Answer, error)
}

// Deadlines persists the agent's transitions of its attempts' records
// (order.ErrStale, an *order.StaleWrite, when a guard no longer holds):
// order.Heartbeat, which moves an attempt's deadline on; order.GaveUp,
// when the agent took the attempt's request and gave it up at its
// deadline (its timeout is not back-pressure); order.Park, when its build
// lacks the order's workflow version.
type Deadlines interface {
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
}

// Holder puts a request back in its agent's queue, delivered again after
// delay: where requests wait while the circuit breaker is open.
type Holder interface {
	HoldRequest(ctx context.Context, agent string, req order.StepRequest, delay time.Duration) error
}

// Replier posts replies on the response queue.
type Replier interface {
	SendReply(ctx context.Context, rep order.StepReply) error
}

// Backoff is capped exponential backoff with full jitter: the delay before
// retry n is uniform in [0, min(Cap, Base*2^n)).
type Backoff struct {
	Base time.Duration
	Cap  time.Duration
}

// DefaultBackoff suits remote services that recover within seconds.
var DefaultBackoff = Backoff{Base: 100 * time.Millisecond, Cap: 5 * time.Second}

// Delay returns the wait before retry n (0-based); rnd is uniform in [0,1).
func (b Backoff) Delay(n int, rnd float64) time.Duration {
	ceiling := b.Base
	for i := 0; i < n && ceiling < b.Cap; i++ {
		ceiling *= 2
	}
	ceiling = min(ceiling, b.Cap)
	return time.Duration(rnd * float64(ceiling))
}

// DefaultTryTimeout bounds one call to a remote service, so that one hung
// call does not use up the whole window: the agent retries after it.
const DefaultTryTimeout = 10 * time.Second

// DefaultReplyMargin is how long before CompleteBy an agent stops calling,
// so that its reply reaches the Scheduler inside the window. For short
// windows it is at most a quarter of the time the request had left.
const DefaultReplyMargin = 2 * time.Second

// maxParallel bounds how many requests of one batch run at once. Messages
// of a batch are independent, and a remote call may wait until CompleteBy,
// so running them one after another would let one slow call starve the
// rest.
const maxParallel = 10

// Service is one agent.
type Service struct {
	name    string // the agent's name, also the remote service it calls
	remote  Caller
	replies Replier
	backoff Backoff
	margin  time.Duration
	tryFor  time.Duration
	// deadlines and workflows, when set, let the agent move deadlines on.
	deadlines Deadlines
	workflows order.Versions
	// circuit, when set, guards the remote service; holder keeps the
	// requests it turns away.
	circuit *circuit
	holder  Holder
	// pause, when set, says whether an operator paused the service.
	pause *pausecache.Cache
	// pausedHold is about how long a paused service's request is held.
	pausedHold time.Duration
	now        func() time.Time
	rand       func() float64
	log        *slog.Logger
	metrics    *metrics.Recorder
}

// Config wires an agent.
type Config struct {
	Name    string
	Remote  Caller
	Replies Replier
	Backoff Backoff
	// ReplyMargin is how long before CompleteBy the agent stops calling
	// (see DefaultReplyMargin); zero means none.
	ReplyMargin time.Duration
	// TryTimeout bounds each call (see DefaultTryTimeout); zero means a
	// call may take the whole window.
	TryTimeout time.Duration
	// Deadlines, with Workflows (for each step's MaxHeartbeats), lets the
	// agent start a late request's window afresh and heartbeat on long
	// calls; nil keeps every request's CompleteBy as it came.
	Deadlines Deadlines
	Workflows order.Versions
	// Holder, when set, turns the circuit breaker on (tuned by Breaker,
	// DefaultBreaker when zero): requests it turns away are held there.
	Holder  Holder
	Breaker Breaker
	// Pauses, with Holder, lets an operator pause the service: its
	// requests are then held in the queue as behind an open circuit,
	// but no failure is counted and no alarm raised (see order.Pause).
	Pauses pausecache.Reader
	// PausedHold is about how long a paused service's request waits in
	// the queue before the agent looks again; zero means pausedHold (a
	// minute). Local tests shorten it.
	PausedHold time.Duration
	Now        func() time.Time
	Log        *slog.Logger
	Metrics    *metrics.Recorder
}

// New returns an agent.
func New(c Config) *Service {
	if c.Backoff == (Backoff{}) {
		c.Backoff = DefaultBackoff
	}
	s := &Service{name: c.Name, remote: c.Remote, replies: c.Replies, backoff: c.Backoff, margin: c.ReplyMargin,
		tryFor: c.TryTimeout, deadlines: c.Deadlines, workflows: c.Workflows, now: c.Now, rand: rand.Float64, log: c.Log.With("agent", c.Name), metrics: c.Metrics}
	if c.Holder != nil {
		s.holder = c.Holder
		s.circuit = s.newCircuit(c.Breaker)
		if c.Pauses != nil {
			s.pause = pausecache.New(c.Pauses, c.Now)
			s.pausedHold = cmp.Or(c.PausedHold, pausedHold)
		}
	}
	return s
}

// Handle processes a batch of requests in parallel. Only messages that must
// be seen again are reported as failures: a malformed message (so it ends
// in the dead-letter queue) and a reply that could not be sent.
func (s *Service) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return batch.Messages(ev.Records, maxParallel, func(msg events.SQSMessage) error {
		return s.handleMessage(ctx, msg)
	}), nil
}

func (s *Service) handleMessage(ctx context.Context, msg events.SQSMessage) error {
	req, err := order.DecodeRequest([]byte(msg.Body))
	if err != nil {
		s.log.ErrorContext(ctx, "malformed request", append(batch.Describe(msg), "error", err)...)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", s.name, "message_id", msg.MessageId)
		return err
	}
	ctx, span := tracing.StartFrom(ctx, "agent.request", tracing.FromMessage(msg), tracing.OfRequest(req), trace.WithSpanKind(trace.SpanKindConsumer))
	err = s.Process(ctx, req)
	tracing.End(span, err)
	return err
}

// Process does one request. It returns an error only when a reply could
// not be sent, so the message is delivered again and the (idempotent) call
// repeated.
func (s *Service) Process(ctx context.Context, r order.StepRequest) error {
	req := s.job(r)
	log := s.log.With("order_id", req.OrderID, "step", req.Step, "undo", req.Undo, "attempt", req.Attempt)
	if p, paused := s.paused(ctx, log); paused {
		return s.holdPaused(ctx, log, req.StepRequest, p)
	}
	if s.circuitOpen() {
		return s.hold(ctx, log, req.StepRequest)
	}
	arrived := s.now()
	completeBy := req.CompleteBy
	// Time spent waiting in the queue is not the remote service's: a
	// request that used up more than half its window there starts a fresh
	// one. The write is fenced on the attempt, so it also tells whether
	// the attempt is still on.
	if req.canExtend() && completeBy.Sub(arrived) < req.Allowance()/2 {
		extended, err := s.extend(ctx, req, completeBy, arrived)
		switch {
		case errors.Is(err, order.ErrStale):
			log.InfoContext(ctx, "attempt already over; request dropped without a call", "complete_by", req.CompleteBy)
			s.metrics.Count(metrics.StaleRequests, 1, "order_id", req.OrderID, "step", req.Step)
			return nil
		case errors.Is(err, order.ErrHeartbeatLimit):
			// No fresh window, but the deadline as stored (which the
			// Supervisor moves on while the request is held) may leave one.
			if extended.After(completeBy) {
				completeBy = extended
			}
		case err != nil:
			log.WarnContext(ctx, "late start not recorded; keeping the request's deadline", "error", err)
		default:
			completeBy = extended
		}
	}
	w := s.newWindow(ctx, completeBy, arrived)
	defer w.close()
	if !arrived.Before(w.stop()) {
		if req.canExtend() && !s.circuitClosed() {
			// Back from being held, with no window left: the Supervisor
			// moves a held step's deadline on, and a later start finds
			// it. Dropped, the request's attempt would time out for the
			// outage.
			return s.hold(ctx, log.With("complete_by", completeBy), req.StepRequest)
		}
		log.WarnContext(ctx, "request arrived too close to complete_by; not replying", "complete_by", completeBy)
		s.metrics.Count(metrics.RepliesWithheld, 1, "order_id", req.OrderID, "step", req.Step)
		return nil
	}
	answer, calls, err := s.callWithRetry(w, req)
	log = log.With("remote_calls", calls)

	rep := order.StepReply{OrderID: req.OrderID, Workflow: req.Workflow, Version: req.Version, Step: req.Step, Undo: req.Undo, Record: req.Record, Attempt: req.Attempt,
		Poll: req.Poll != "", Checked: req.Poll}
	switch {
	case err == nil && req.callsBack && answer.Accepted:
		// The service took the call and calls back, or is polled at the
		// status URL it named; or a check says the work goes on. The
		// Scheduler writes the step waiting.
		rep.Outcome = order.OutcomeAccepted
		rep.StatusURL, rep.RetryAfterMs = answer.StatusURL, answer.RetryAfter.Milliseconds()
	case err == nil:
		rep.Outcome, rep.Reference = order.OutcomeSucceeded, answer.Reference
		if req.keeps {
			rep.Result = answer.Body
		}
	case errors.Is(err, order.ErrContract):
		// The work was done, but its answer cannot be used: an operator
		// decides (the order goes to Error with an alert; a redrive
		// retries with the same key, or undoes the step with the others).
		rep.Outcome, rep.Reason, rep.WorkDone = order.OutcomeFailed, order.ReasonFor(err), true
		log = log.With("error", err)
	case errors.Is(err, order.ErrPermanent):
		// The reply says why in words clients may read; the error itself
		// is logged with it.
		rep.Outcome, rep.Reason = order.OutcomeFailed, order.ReasonFor(err)
		log = log.With("error", err)
	case errors.Is(err, order.ErrNotInBuild):
		// An order of a newer build's version, after a rollback: not its
		// failure either. The request is dropped unanswered, and the
		// order parked (VersionUnknown) until a build with its version
		// takes it up, which sends the attempt again with no failure
		// counted (see order.Workflow.Assess).
		log.WarnContext(ctx, "request of a workflow version this build does not have; not called, not replied", "version", req.Version, "error", err)
		s.metrics.Count(metrics.StaleRequests, 1, "order_id", req.OrderID, "step", req.Step)
		s.park(ctx, log, req.StepRequest)
		return nil
	case errors.Is(err, order.ErrConfiguration):
		// Not the order's fault, so not its failure: the request waits
		// with the others behind the circuit it opened.
		if s.circuit != nil {
			return s.hold(ctx, log.With("error", err), req.StepRequest)
		}
		log.ErrorContext(ctx, "remote service refuses the agent's configuration and no circuit breaker holds the request; not replying", "error", err)
		return nil
	case errors.Is(err, errCircuitOpen):
		return s.hold(ctx, log, req.StepRequest)
	case w.isStale():
		log.InfoContext(ctx, "attempt ended during the call; not replying", "error", err)
		s.metrics.Count(metrics.StaleRequests, 1, "order_id", req.OrderID, "step", req.Step)
		return nil
	default:
		// Out of time. Silence is the protocol: the Supervisor will see
		// the expired CompleteBy and retry or fail the step. It is told
		// that this request was taken, so that a backlog in the queue
		// does not make it wait for a request that is not there.
		log.WarnContext(ctx, "gave up at complete_by; not replying", "error", err)
		s.metrics.Count(metrics.RepliesWithheld, 1, "order_id", req.OrderID, "step", req.Step)
		s.gaveUp(ctx, log, req)
		return nil
	}
	if err := s.sendReply(ctx, rep, w.deadline()); err != nil {
		log.ErrorContext(ctx, "reply not sent; request will be redelivered", "error", err)
		return err
	}
	log.InfoContext(ctx, "replied", "outcome", rep.Outcome, "reference", rep.Reference, "reason", rep.Reason)
	if rep.Outcome == order.OutcomeSucceeded && req.AllowanceMs > 0 {
		// The claim set the request's deadline one allowance ahead.
		name := metrics.StepLatency
		if req.Undo {
			name = metrics.UndoLatency
		}
		s.metrics.Duration(name, s.now().Sub(req.CompleteBy.Add(-req.Allowance())), "", "", "order_id", req.OrderID, "step", req.Step)
	}
	return nil
}

// gaveUp records a given-up attempt; a failure only costs the Supervisor's
// deferrals, so it is logged, not retried.
func (s *Service) gaveUp(ctx context.Context, log *slog.Logger, req job) {
	if s.deadlines == nil || !req.known {
		return
	}
	// The invocation may be at its end too: the write gets a moment of
	// its own.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	if _, _, err := s.deadlines.Apply(ctx, order.GaveUp(req.record, s.now())); err != nil && !errors.Is(err, order.ErrStale) {
		log.WarnContext(ctx, "given-up attempt not recorded", "error", err)
	}
}

// park records that the agent dropped req, of a workflow version its
// build lacks. Left unrecorded, the drop looks like a request still
// waiting in its queue: a build with the version back would defer the
// step while the queue has a backlog, again and again, for a request that
// is not there. Only the Supervisor parks an order whose deadline passes
// under a build without its version; this one's may pass after the
// version is back.
func (s *Service) park(ctx context.Context, log *slog.Logger, req order.StepRequest) {
	if s.deadlines == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	now := s.now()
	park := order.Park(req.StepRecord(), now, true, s.workflows.Missing(req.Workflow, req.Version), now)
	_, _, err := s.deadlines.Apply(ctx, park)
	if mark, ok := order.ParkRefused(park, err); ok {
		// Another alert of the order waits to be sent: the mark alone.
		_, _, err = s.deadlines.Apply(ctx, mark)
	}
	switch {
	case errors.Is(err, order.ErrStale):
		// The attempt is over, or the order is parked for its version
		// already.
		log.InfoContext(ctx, "dropped request not recorded: the attempt moved on or the order is parked already")
	case err != nil:
		log.WarnContext(ctx, "dropped request not recorded; the Supervisor parks the order when its deadline passes", "error", err)
	}
}

// job is a request with what the agent's build knows of it, looked up
// once.
type job struct {
	order.StepRequest
	// known: the build has the request's workflow version.
	known bool
	// record is the record the request names, the fence of the agent's
	// writes.
	record order.StepState
	// keeps: the step's answer is kept with the order.
	keeps bool
	// callsBack: the step's service calls back or is polled, so its
	// call may be accepted (order.StepDef.Async); never an undo's.
	callsBack bool
	// maxHeartbeats is how often the agent may move the attempt's deadline
	// on; 0 when it may not.
	maxHeartbeats int
}

func (s *Service) job(req order.StepRequest) job {
	wf, known := s.workflows.Get(req.Workflow, req.Version)
	j := job{StepRequest: req, known: known, record: req.StepRecord(), keeps: known && !req.Undo && wf.Keeps(req.Step)}
	if index, ok := req.StepIndex(wf); ok {
		j.record.Index = index
	}
	def, ok := wf.Step(req.Step)
	if known && ok && s.deadlines != nil && req.Allowance() > 0 {
		j.maxHeartbeats = def.MaxHeartbeats
	}
	j.callsBack = known && ok && !req.Undo && def.Async()
	return j
}

// canExtend reports whether the agent may move the attempt's deadline on.
func (j job) canExtend() bool { return j.maxHeartbeats > 0 }

// extend moves req's deadline on to a full window from now, never past the
// agent's own invocation, and returns the deadline as stored. At the
// step's limit it returns the deadline the step has.
func (s *Service) extend(ctx context.Context, req job, current, now time.Time) (time.Time, error) {
	target := now.Add(req.Allowance())
	if end, ok := ctx.Deadline(); ok && end.Before(target) {
		target = end
	}
	if !target.After(current) {
		return current, nil
	}
	beat := order.Heartbeat(req.record, target, req.maxHeartbeats, now)
	_, stored, err := s.deadlines.Apply(ctx, beat)
	if errors.Is(err, order.ErrStale) {
		stored, err = order.HeartbeatRefused(beat, err)
	}
	if err != nil && !errors.Is(err, order.ErrHeartbeatLimit) {
		return current, err
	}
	s.metrics.Count(metrics.Heartbeats, 1, "agent", s.name)
	return stored.CompleteBy, err
}

// errWindowEnded ends a window's context at its stop: a call cut short by
// it timed out (where the attempt's end, abandon, says nothing about the
// remote service).
var errWindowEnded = fmt.Errorf("the attempt's window ended: %w", context.DeadlineExceeded)

// window is the time an attempt has: its CompleteBy, which heartbeats move
// on, and the moment a margin before it when the agent stops calling. Its
// context ends at that moment, or when the attempt turns out to be over.
type window struct {
	ctx    context.Context
	cancel context.CancelCauseFunc
	margin time.Duration
	now    func() time.Time

	mu         sync.Mutex
	completeBy time.Time
	stopAt     time.Time
	timer      *time.Timer
	stale      bool
}

func (s *Service) newWindow(parent context.Context, completeBy, now time.Time) *window {
	ctx, cancel := context.WithCancelCause(parent)
	w := &window{ctx: ctx, cancel: cancel, margin: s.margin, now: s.now}
	w.completeBy, w.stopAt = completeBy, w.stopFor(completeBy, now)
	w.timer = time.AfterFunc(w.stopAt.Sub(now), func() { cancel(errWindowEnded) })
	return w
}

// stopFor is when the agent stops calling for a deadline: a margin before
// it, at most a quarter of the time left, so its reply lands in time.
func (w *window) stopFor(completeBy, now time.Time) time.Time {
	return completeBy.Add(-min(w.margin, max(completeBy.Sub(now), 0)/4))
}

func (w *window) stop() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.stopAt }

func (w *window) deadline() time.Time { w.mu.Lock(); defer w.mu.Unlock(); return w.completeBy }

func (w *window) isStale() bool { w.mu.Lock(); defer w.mu.Unlock(); return w.stale }

// moveTo takes a later deadline, as a heartbeat stored it.
func (w *window) moveTo(completeBy time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !completeBy.After(w.completeBy) {
		return
	}
	now := w.now()
	w.completeBy, w.stopAt = completeBy, w.stopFor(completeBy, now)
	w.timer.Reset(w.stopAt.Sub(now))
}

// abandon ends the window at once: the attempt is over.
func (w *window) abandon() {
	w.mu.Lock()
	w.stale = true
	w.mu.Unlock()
	w.cancel(nil)
}

func (w *window) close() { w.timer.Stop(); w.cancel(nil) }

// sendReply sends a reply, trying again with backoff while the window
// lasts: a reply the response queue refused would otherwise come back only
// with its request, after the queue's visibility timeout, when it is
// always too late.
func (s *Service) sendReply(ctx context.Context, rep order.StepReply, until time.Time) error {
	for n := 0; ; n++ {
		err := s.replies.SendReply(ctx, rep)
		if err == nil {
			return nil
		}
		delay := s.backoff.Delay(n, s.rand())
		if ctx.Err() != nil || !s.now().Add(delay).Before(until) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
	}
}

// callWithRetry calls the remote service until it succeeds, fails
// permanently, refuses the agent's configuration, or the next try could
// not start before the window's stop.
func (s *Service) callWithRetry(w *window, req job) (answer order.Answer, calls int, err error) {
	for n := 0; ; n++ {
		answer, err = s.try(w, req)
		if errors.Is(err, errCircuitOpen) || errors.Is(err, order.ErrNotInBuild) {
			return order.Answer{}, calls, err
		}
		calls++
		var own *ordersOwnFault
		if errors.As(err, &own) {
			// Not counted as a configuration fault: its alarm is for
			// what every order meets.
			s.log.WarnContext(w.ctx, "remote service refused this order alone with a configuration status while it answers others; the step fails",
				"order_id", req.OrderID, "step", req.Step, "status", own.said.Status, "error", err)
		}
		if err == nil || errors.Is(err, order.ErrPermanent) || errors.Is(err, order.ErrContract) {
			return answer, calls, err
		}
		if errors.Is(err, order.ErrConfiguration) {
			status := configurationStatus(err)
			s.log.WarnContext(w.ctx, "remote service refuses the agent's configuration", "order_id", req.OrderID, "step", req.Step,
				"status", status, "error", err)
			s.metrics.CountBy(metrics.ConfigurationFaults, 1, metrics.DimStatus, status, "order_id", req.OrderID, "step", req.Step)
			return order.Answer{}, calls, err
		}
		s.metrics.Count(metrics.RemoteFaults, 1, "agent", s.name)
		if w.ctx.Err() != nil {
			return order.Answer{}, calls, err
		}
		delay := s.backoff.Delay(n, s.rand())
		if after, ok := order.RetryAfter(err); ok && after > delay {
			delay = after
		}
		if !s.now().Add(delay).Before(w.stop()) {
			return order.Answer{}, calls, fmt.Errorf("next retry in %s would leave no time to reply by complete_by: %w", delay, err)
		}
		s.log.DebugContext(w.ctx, "transient fault; retrying", "order_id", req.OrderID, "step", req.Step,
			"retry", n+1, "delay", delay, "error", err)
		select {
		case <-w.ctx.Done():
			return order.Answer{}, calls, fmt.Errorf("waiting to retry: %w", w.ctx.Err())
		case <-time.After(delay):
		}
	}
}

// try makes one call, bounded by the try timeout as well as the window. A
// try that times out is a transient fault like any other. While the call
// runs, the agent heartbeats.
func (s *Service) try(w *window, req job) (order.Answer, error) {
	ctx := w.ctx
	if req.canExtend() {
		// The window's context ends when its (moving) stop comes.
		done := make(chan struct{})
		defer close(done)
		go s.heartbeat(w, req, done)
	} else {
		// A fixed stop: say so in the context, for the HTTP client.
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, w.stop())
		defer cancel()
	}
	if s.tryFor > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, s.tryFor)
		defer cancel()
	}
	call := func() (order.Answer, error) {
		s.metrics.Count(metrics.RemoteCalls, 1, "agent", s.name)
		answer, err := s.remote.Call(ctx, s.name, req.StepRequest)
		if err != nil && errors.Is(context.Cause(w.ctx), errWindowEnded) {
			err = fmt.Errorf("%w: %w", err, errWindowEnded)
		}
		return answer, err
	}
	if s.circuit == nil {
		return call()
	}
	return s.circuit.call(req.StepRequest, call)
}

// heartbeat moves the deadline on every third of the window until done, the
// step's limit, or the news that the attempt is over (which ends the
// window, so the call stops).
func (s *Service) heartbeat(w *window, req job, done <-chan struct{}) {
	t := time.NewTicker(req.Allowance() / 3)
	defer t.Stop()
	for {
		select {
		case <-done:
			return
		case <-w.ctx.Done():
			return
		case <-t.C:
		}
		completeBy, err := s.extend(w.ctx, req, w.deadline(), s.now())
		switch {
		case errors.Is(err, order.ErrStale):
			s.log.InfoContext(w.ctx, "attempt ended during a call; stopping it", "order_id", req.OrderID, "step", req.Step)
			w.abandon()
			return
		case errors.Is(err, order.ErrHeartbeatLimit):
			w.moveTo(completeBy)
			s.log.WarnContext(w.ctx, "heartbeat limit reached; the call must end by complete_by", "order_id", req.OrderID,
				"step", req.Step, "complete_by", completeBy)
			return
		case err != nil:
			// The next beat tries again; the deadline stands meanwhile.
			s.log.WarnContext(w.ctx, "heartbeat not recorded", "order_id", req.OrderID, "step", req.Step, "error", err)
		default:
			w.moveTo(completeBy)
		}
	}
}
