// Package agent is the pattern's Agent: it takes step requests from its
// request queue, calls its remote service with the step's idempotency key,
// retries transient faults with capped exponential backoff and full jitter,
// and never works past the step's CompleteBy. It replies with success, or
// with an error for a permanent fault; when time runs out it stops and sends
// nothing, because the Supervisor may already have handed the step to
// another attempt.
package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/remote"
	"orderly/internal/sqs"
)

// Caller calls the remote service.
type Caller interface {
	Call(ctx context.Context, service string, req order.StepRequest) (reference string, err error)
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
	now     func() time.Time
	rand    func() float64
	log     *slog.Logger
	metrics *metrics.Recorder
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
	Now        func() time.Time
	Log        *slog.Logger
	Metrics    *metrics.Recorder
}

// New returns an agent.
func New(c Config) *Service {
	if c.Backoff == (Backoff{}) {
		c.Backoff = DefaultBackoff
	}
	return &Service{name: c.Name, remote: c.Remote, replies: c.Replies, backoff: c.Backoff, margin: c.ReplyMargin,
		tryFor: c.TryTimeout, now: c.Now, rand: rand.Float64, log: c.Log.With("agent", c.Name), metrics: c.Metrics}
}

// Handle processes a batch of requests in parallel. Only messages that must
// be seen again are reported as failures: a malformed message (so it ends
// in the dead-letter queue) and a reply that could not be sent.
func (s *Service) Handle(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	var (
		mu   sync.Mutex
		resp events.SQSEventResponse
		wg   sync.WaitGroup
		sem  = make(chan struct{}, maxParallel)
	)
	for _, msg := range ev.Records {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			if err := s.handleMessage(ctx, msg); err != nil {
				mu.Lock()
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return resp, nil
}

func (s *Service) handleMessage(ctx context.Context, msg events.SQSMessage) error {
	req, err := decodeRequest(msg.Body)
	if err != nil {
		s.log.ErrorContext(ctx, "malformed request", append(sqs.Describe(msg), "error", err)...)
		s.metrics.Count(metrics.PoisonMessages, 1, "source", s.name, "message_id", msg.MessageId)
		return err
	}
	return s.Process(ctx, req)
}

// Process does one request. It returns an error only when a reply could
// not be sent, so the message is delivered again and the (idempotent) call
// repeated.
func (s *Service) Process(ctx context.Context, req order.StepRequest) error {
	log := s.log.With("order_id", req.OrderID, "step", req.Step, "attempt", req.Attempt)
	// The agent stops a margin before CompleteBy, so that its reply lands
	// inside the window.
	arrived := s.now()
	stopAt := req.CompleteBy.Add(-min(s.margin, req.CompleteBy.Sub(arrived)/4))
	if !arrived.Before(stopAt) {
		log.WarnContext(ctx, "request arrived too close to complete_by; not replying", "complete_by", req.CompleteBy)
		s.metrics.Count(metrics.RepliesWithheld, 1, "order_id", req.OrderID, "step", req.Step)
		return nil
	}
	callCtx, cancel := context.WithDeadline(ctx, stopAt)
	defer cancel()
	ref, calls, err := s.callWithRetry(callCtx, req, stopAt)
	log = log.With("remote_calls", calls)

	rep := order.StepReply{OrderID: req.OrderID, Step: req.Step, Attempt: req.Attempt}
	switch {
	case err == nil:
		rep.Outcome, rep.Reference = order.Succeeded, ref
	case errors.Is(err, remote.ErrPermanent):
		rep.Outcome, rep.Reason = order.Failed, err.Error()
	default:
		// Out of time. Silence is the protocol: the Supervisor will see
		// the expired CompleteBy and retry or fail the step.
		log.WarnContext(ctx, "gave up at complete_by; not replying", "error", err)
		s.metrics.Count(metrics.RepliesWithheld, 1, "order_id", req.OrderID, "step", req.Step)
		return nil
	}
	if err := s.sendReply(ctx, rep, req.CompleteBy); err != nil {
		log.ErrorContext(ctx, "reply not sent; request will be redelivered", "error", err)
		return err
	}
	log.InfoContext(ctx, "replied", "outcome", rep.Outcome, "reference", rep.Reference, "reason", rep.Reason)
	return nil
}

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
// permanently, or the next try could not start before stopAt.
func (s *Service) callWithRetry(ctx context.Context, req order.StepRequest, stopAt time.Time) (ref string, calls int, err error) {
	for n := 0; ; n++ {
		calls++
		s.metrics.Count(metrics.RemoteCalls, 1, "agent", s.name)
		ref, err = s.try(ctx, req)
		if err == nil || errors.Is(err, remote.ErrPermanent) {
			return ref, calls, err
		}
		s.metrics.Count(metrics.RemoteFaults, 1, "agent", s.name)
		if ctx.Err() != nil {
			return "", calls, err
		}
		delay := s.backoff.Delay(n, s.rand())
		if after, ok := remote.RetryAfter(err); ok && after > delay {
			delay = after
		}
		if !s.now().Add(delay).Before(stopAt) {
			return "", calls, fmt.Errorf("next retry in %s would leave no time to reply by complete_by: %w", delay, err)
		}
		s.log.DebugContext(ctx, "transient fault; retrying", "order_id", req.OrderID, "step", req.Step,
			"retry", n+1, "delay", delay, "error", err)
		select {
		case <-ctx.Done():
			return "", calls, fmt.Errorf("waiting to retry: %w", ctx.Err())
		case <-time.After(delay):
		}
	}
}

// try makes one call, bounded by the try timeout as well as the window. A
// try that times out is a transient fault like any other.
func (s *Service) try(ctx context.Context, req order.StepRequest) (string, error) {
	if s.tryFor <= 0 {
		return s.remote.Call(ctx, s.name, req)
	}
	tryCtx, cancel := context.WithTimeout(ctx, s.tryFor)
	defer cancel()
	return s.remote.Call(tryCtx, s.name, req)
}

func decodeRequest(body string) (order.StepRequest, error) {
	var req order.StepRequest
	if err := json.Unmarshal([]byte(body), &req); err != nil {
		return req, fmt.Errorf("decode request: %w", err)
	}
	switch {
	case !order.ValidID(req.OrderID):
		return req, fmt.Errorf("request has invalid orderId %q", req.OrderID)
	case req.Step == "":
		return req, errors.New("request has no step")
	case req.Attempt < 1:
		return req, fmt.Errorf("request has invalid attempt %d", req.Attempt)
	case req.CompleteBy.IsZero():
		return req, errors.New("request has no completeBy")
	case req.IdempotencyKey == "":
		return req, errors.New("request has no idempotencyKey")
	}
	return req, nil
}
