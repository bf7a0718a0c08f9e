package agent

import (
	"cmp"
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/sony/gobreaker/v2"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// Breaker tunes the circuit breaker of an agent's remote service.
type Breaker struct {
	// Failures is how many calls in a row must fail (transient faults, and
	// timeouts of different requests) to open the circuit. One
	// configuration fault is enough, unless it is one order's own 404 (see
	// circuit.judge).
	Failures int
	// OpenFor is how long the circuit stays open before one probe call
	// may go through; requests are held about that long.
	OpenFor time.Duration
	// RefusedKeys is how many distinct idempotency keys of one call must
	// be answered 404, with no success of that call between, to open the
	// circuit; the keys before them fail their steps alone. Zero means
	// DefaultBreaker's.
	RefusedKeys int
	// SucceededWithin is how recent another key's success of the same
	// call must be for a 404 to be taken as one order's own.
	// Zero means DefaultBreaker's.
	SucceededWithin time.Duration
}

// DefaultBreaker opens after 5 failed calls in a row and probes after 30
// s; a 404 fails one order's step while the same call succeeded for
// another key in the last 10 minutes, until a third key is refused with
// no success between.
var DefaultBreaker = Breaker{Failures: 5, OpenFor: 30 * time.Second, RefusedKeys: 3, SucceededWithin: 10 * time.Minute}

// errCircuitOpen says that a call was not made because the circuit is open.
var errCircuitOpen = errors.New("circuit breaker open")

// Suspects are forgotten after suspectFor, and at most maxSuspects are
// kept, so that the set stays small in a long-lived process.
const (
	suspectFor  = time.Hour
	maxSuspects = 10_000
)

// circuit guards one remote service. A failed answer (a refused
// connection, a 5xx, throttling) is the service speaking for itself, and
// every one counts. A timeout is different: a call that does not come back
// may be that one request's work (one huge order, one stuck record), and a
// request that hangs every time would otherwise open the circuit by itself,
// and take the half-open probe again and again, holding every other
// request of the agent. So a request whose call timed out becomes a
// suspect: its next calls go ahead without asking the breaker (though an
// open circuit still holds them), and only an answer is reported to it,
// which also ends the suspicion; its further timeouts, and calls cut short
// by the end of their window, are not counted. Timeouts of different
// requests in a row still open the circuit: that is a service that hangs.
type circuit struct {
	breaker *gobreaker.TwoStepCircuitBreaker[string]
	openFor time.Duration

	// reporting serializes the outcomes reported to the breaker, so that
	// its callbacks know the fault being reported: the circuit opens only
	// inside a report. fault is guarded by reporting and read only by
	// the callbacks of a failure (ReadyToTrip, and OnStateChange to open).
	reporting sync.Mutex
	fault     error

	// refusedKeys and succeededWithin tune judge; now is its clock.
	refusedKeys     int
	succeededWithin time.Duration
	now             func() time.Time

	mu       sync.Mutex
	suspects map[string]time.Time // by idempotency key: when its call timed out
	// calls is what the circuit has seen of each call (one step's work,
	// or its undo), for judge: a few per workflow version, so it stays
	// small.
	calls map[callRef]*callSeen
}

// callRef names one call of a service: a step's work or its undo, in one
// workflow version. Each has its own method and path, so one's success
// says nothing of another's configuration.
type callRef struct {
	workflow, version, step string
	undo                    bool
}

func refOf(req order.StepRequest) callRef {
	return callRef{workflow: req.Workflow, version: req.Version, step: req.Step, undo: req.Undo}
}

// callSeen is the evidence judge weighs for one call.
type callSeen struct {
	// succeeded is when the call last succeeded, for the key by.
	succeeded time.Time
	by        string
	// refused are the distinct keys answered 404 since, fewer than
	// refusedKeys.
	refused []string
}

func (s *Service) newCircuit(b Breaker) *circuit {
	if b == (Breaker{}) {
		b = DefaultBreaker
	}
	now := s.now
	if now == nil {
		now = time.Now
	}
	c := &circuit{openFor: b.OpenFor, suspects: map[string]time.Time{}, calls: map[callRef]*callSeen{},
		refusedKeys: cmp.Or(b.RefusedKeys, DefaultBreaker.RefusedKeys), succeededWithin: cmp.Or(b.SucceededWithin, DefaultBreaker.SucceededWithin), now: now}
	c.breaker = gobreaker.NewTwoStepCircuitBreaker[string](gobreaker.Settings{
		Name: s.name, MaxRequests: 1, Timeout: b.OpenFor,
		ReadyToTrip: func(n gobreaker.Counts) bool {
			return n.ConsecutiveFailures >= uint32(b.Failures) || errors.Is(c.fault, order.ErrConfiguration)
		},
		OnStateChange: func(name string, from, to gobreaker.State) {
			var cause error
			if to == gobreaker.StateOpen {
				cause = c.fault
			}
			s.circuitChanged(name, from, to, cause)
		},
	})
	return c
}

// errCallPanicked is reported for a call that panicked.
var errCallPanicked = errors.New("remote call panicked")

// report tells the breaker a call's outcome.
func (c *circuit) report(done func(success bool), err error) {
	c.reporting.Lock()
	defer c.reporting.Unlock()
	c.fault = err
	done(healthy(err))
	c.fault = nil
}

// healthy reports whether a call's outcome says the service is up: a
// success, or a permanent fault, which is an answer too; a request this
// build cannot make calls nothing and says nothing of the service. A call the agent
// cancelled (its attempt over, or the function ending) says nothing about
// it, and does not count against it; one cut short by its window's end
// timed out.
func healthy(err error) bool {
	return err == nil || errors.Is(err, order.ErrPermanent) || errors.Is(err, order.ErrContract) || errors.Is(err, order.ErrNotInBuild) ||
		(errors.Is(err, context.Canceled) && !timedOut(err))
}

// call makes one call of the request, asking the breaker first unless the
// request (its idempotency key) is a suspect. The outcome is judged
// before the breaker hears it: a configuration answer may be the
// order's own.
func (c *circuit) call(req order.StepRequest, call func() (order.Answer, error)) (order.Answer, error) {
	key := req.IdempotencyKey
	if c.open() {
		return order.Answer{}, errCircuitOpen
	}
	if c.suspect(key) {
		ref, err := call()
		err = c.judge(req, err)
		if answered(err) {
			c.clear(key)
			// The answer counts, as the probe if the circuit is half-open
			// and none is out; otherwise it is not reported.
			if done, allowErr := c.breaker.Allow(); allowErr == nil {
				c.report(done, err)
			}
		}
		return ref, err
	}
	done, err := c.breaker.Allow()
	if err != nil {
		return order.Answer{}, errCircuitOpen
	}
	reported := false
	defer func() {
		if !reported { // the call panicked: a half-open circuit must not wait for it
			c.report(done, errCallPanicked)
		}
	}()
	ref, err := call()
	if timedOut(err) {
		// Before the breaker counts it, so that a call of this request
		// made meanwhile already goes around it.
		c.add(key, time.Now())
	}
	err = c.judge(req, err)
	c.report(done, err)
	reported = true
	return ref, err
}

// judge decides whose a call's outcome is, and records what it shows.
//
// The rule ("one key's refusal"): a 404 (a status an order's own data
// can cause: an unknown SKU, customer or account) is the order's own, and
// fails its step with the service's words, when the same call (the
// step's work, or its undo, in the request's workflow version) succeeded
// for another key within succeededWithin, and fewer than refusedKeys
// distinct keys have been refused by it since that success, this one
// included. That holds for the half-open probe too: its 404 is then the
// service answering, reported as such, and closes the circuit, which a
// bad order's request would otherwise reopen each time it is the probe.
// Otherwise it is the service's configuration, and opens the circuit:
// refusedKeys keys refused with no success between (a wrong URL, a
// removed route: every key gets it); no recent success of another key (a
// fresh agent, say a new Lambda instance, knows of none, and holds as
// before: a one-order 404 then holds the others for a probe or two,
// until a request of another order succeeds); or any other configuration
// status (a redirect, 401, 403, 405, 407, 415), which no order's data
// causes.
func (c *circuit) judge(req order.StepRequest, err error) error {
	success := err == nil || errors.Is(err, order.ErrContract) // a 2xx
	if !success && !errors.Is(err, order.ErrConfiguration) {
		return err
	}
	now, ref, key := c.now(), refOf(req), req.IdempotencyKey
	c.mu.Lock()
	defer c.mu.Unlock()
	if success {
		// Every success passes here: the call's record is reused.
		seen, ok := c.calls[ref]
		if !ok {
			seen = &callSeen{}
			c.calls[ref] = seen
		}
		seen.succeeded, seen.by, seen.refused = now, key, seen.refused[:0]
		return err
	}
	seen := c.calls[ref]
	var said *order.ServiceError
	switch {
	case !order.UnknownEntity(err), !errors.As(err, &said),
		seen == nil, seen.by == key, now.Sub(seen.succeeded) > c.succeededWithin:
		return err
	}
	if !slices.Contains(seen.refused, key) {
		if len(seen.refused)+1 >= c.refusedKeys {
			return err
		}
		seen.refused = append(seen.refused, key)
	}
	return &ordersOwnFault{err: err, said: said}
}

// ordersOwnFault is a configuration answer taken as one order's own: a
// permanent fault, whose reason is the service's words (said, already
// cut by the client).
type ordersOwnFault struct {
	err  error
	said *order.ServiceError
}

func (f *ordersOwnFault) Error() string {
	return f.err.Error() + " (the service answers other orders: taken as this order's own)"
}

func (f *ordersOwnFault) Unwrap() []error { return []error{f.said, order.ErrPermanent} }

// open reports whether calls are being turned away.
func (c *circuit) open() bool { return c.breaker.State() == gobreaker.StateOpen }

func (c *circuit) suspect(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	at, ok := c.suspects[key]
	return ok && time.Since(at) < suspectFor
}

func (c *circuit) add(key string, now time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.suspects) >= maxSuspects {
		for k, at := range c.suspects {
			if now.Sub(at) >= suspectFor {
				delete(c.suspects, k)
			}
		}
		if len(c.suspects) >= maxSuspects {
			// Forgetting suspects only makes the breaker stricter.
			clear(c.suspects)
		}
	}
	c.suspects[key] = now
}

func (c *circuit) clear(key string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.suspects, key)
}

// answered reports whether a call got the service's answer: it neither
// timed out nor was cancelled (by the end of its window, say).
func answered(err error) bool {
	return !timedOut(err) && !errors.Is(err, context.Canceled)
}

// timedOut reports whether a call ended because it took too long, rather
// than with an answer.
func timedOut(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	var t interface{ Timeout() bool }
	return errors.As(err, &t) && t.Timeout()
}

// circuitChanged logs every change of the circuit and counts openings by
// a failing service, which the stack alarms on. An opening by a
// configuration fault (cause) is not counted there: that fault has a
// metric and alarm of its own, naming its status, and one alert is enough.
func (s *Service) circuitChanged(name string, from, to gobreaker.State, cause error) {
	if errors.Is(cause, order.ErrConfiguration) {
		s.log.Error("circuit breaker opened: the remote service refuses the agent's configuration; requests are held until it answers",
			"remote", name, "from", from.String(), "to", to.String(), "status", configurationStatus(cause), "error", cause)
		return
	}
	s.log.Warn("circuit breaker changed state", "remote", name, "from", from.String(), "to", to.String())
	if to == gobreaker.StateOpen {
		s.metrics.Count(metrics.CircuitOpened, 1, "remote", name)
	}
}

// circuitOpen reports whether calls are being turned away.
func (s *Service) circuitOpen() bool {
	return s.circuit != nil && s.circuit.open()
}

// circuitClosed reports whether the remote service is taken to be up: no
// circuit, or a closed one (not open, nor half-open waiting for a probe).
func (s *Service) circuitClosed() bool {
	return s.circuit == nil || s.circuit.breaker.State() == gobreaker.StateClosed
}

// hold puts a request the circuit turned away back in its queue for about
// as long as the circuit stays open (jittered, so held requests do not all
// come back at once). Its attempt is untouched: the Supervisor sees the
// queue's backlog and moves the deadline on, and when the request comes
// back the agent starts its window afresh.
//
// A request whose call the service answered with a configuration fault
// is held the same way (log carries the fault).
func (s *Service) hold(ctx context.Context, log *slog.Logger, req order.StepRequest) error {
	openFor := s.circuit.openFor
	delay := openFor/2 + time.Duration(s.rand()*float64(openFor/2))
	if err := s.holder.HoldRequest(ctx, s.name, req, delay); err != nil {
		log.ErrorContext(ctx, "circuit open and request not held; it will be redelivered", "error", err)
		return err
	}
	log.WarnContext(ctx, "circuit open: request held in its queue", "delay", delay)
	s.metrics.Count(metrics.RequestsHeld, 1, "order_id", req.OrderID, "step", req.Step)
	return nil
}

// configurationStatus names the status of a configuration fault, as its
// metric and alarms do.
func configurationStatus(err error) string {
	if status, ok := order.ConfigurationStatus(err); ok {
		return status
	}
	return "unknown"
}
