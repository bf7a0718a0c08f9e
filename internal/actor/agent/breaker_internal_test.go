package agent

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/sony/gobreaker/v2"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// What a call's outcome says: whether the service answered (which ends a
// request's suspicion), and whether the breaker takes it as the service
// being up.
func TestCallOutcomes(t *testing.T) {
	netTimeout := &net.OpError{Op: "read", Net: "tcp", Err: &timeoutError{}}
	tests := []struct {
		name             string
		err              error
		answered, health bool
	}{
		{"success", nil, true, true},
		{"permanent fault", fmt.Errorf("status 402: %w", order.ErrPermanent), true, true},
		{"transient fault", fmt.Errorf("status 503: %w", order.ErrTransient), true, false},
		// The service answered, but no call can succeed until its
		// configuration is fixed.
		{"configuration fault", fmt.Errorf("status 403: %w", order.ErrConfiguration), true, false},
		{"try timeout", fmt.Errorf("payment: %w: %w", context.DeadlineExceeded, order.ErrTransient), false, false},
		{"network timeout", fmt.Errorf("payment: %w: %w", netTimeout, order.ErrTransient), false, false},
		{"cut short by its window's end", fmt.Errorf("payment: %w: %w: %w", context.Canceled, order.ErrTransient, errWindowEnded), false, false},
		{"cancelled: the attempt is over", fmt.Errorf("payment: %w: %w", context.Canceled, order.ErrTransient), false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answered(tt.err); got != tt.answered {
				t.Errorf("answered(%v) = %t, want %t", tt.err, got, tt.answered)
			}
			if got := healthy(tt.err); got != tt.health {
				t.Errorf("healthy(%v) = %t, want %t", tt.err, got, tt.health)
			}
		})
	}
}

type timeoutError struct{}

func (*timeoutError) Error() string { return "i/o timeout" }
func (*timeoutError) Timeout() bool { return true }

// A request stays a suspect until a call of it is answered: a call cut
// short by the end of its window (cancelled) says nothing, and must not
// let its next call take the half-open probe.
func TestSuspectUntilAnswered(t *testing.T) {
	s := &Service{name: "payment", log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: metrics.Discard()}
	c := s.newCircuit(Breaker{Failures: 5, OpenFor: time.Minute})
	result := func(err error) func() (order.Answer, error) {
		return func() (order.Answer, error) { return order.Answer{}, err }
	}
	timeout := fmt.Errorf("%w: %w", context.DeadlineExceeded, order.ErrTransient)
	steps := []struct {
		err         error
		wantSuspect bool
	}{
		{timeout, true},
		{fmt.Errorf("%w: %w", context.Canceled, order.ErrTransient), true},
		{timeout, true},
		{fmt.Errorf("status 503: %w", order.ErrTransient), false},
		{timeout, true},
		{nil, false},
	}
	for i, st := range steps {
		if _, err := c.call(order.StepRequest{IdempotencyKey: "k"}, result(st.err)); err != st.err {
			t.Fatalf("step %d: call returned %v, want %v", i, err, st.err)
		}
		if got := c.suspect("k"); got != st.wantSuspect {
			t.Errorf("step %d (%v): suspect = %t, want %t", i, st.err, got, st.wantSuspect)
		}
	}
	if n := c.breaker.Counts().ConsecutiveFailures; n != 0 {
		t.Errorf("consecutive failures %d after a success, want 0", n)
	}
}

// refusedWith is a configuration answer as the remote client makes it.
func refusedWith(status int, message string) error {
	return &order.StatusFault{Status: strconv.Itoa(status), Unknown: status == 404, Err: fmt.Errorf("payment: POST /payment/charges: %w: %w",
		&order.ServiceError{Service: "payment", Status: status, Message: message}, order.ErrConfiguration)}
}

// A 404 (an unknown SKU) fails only that order's step when the same call
// succeeds for other keys, even as the half-open probe, which then closes
// the circuit; the circuit opens only when many keys get one with no
// success between, when no other key succeeded lately (a fresh agent
// knows nothing, and holds), or for a status that no order's data can
// cause (401, 403, 405, 415, a redirect).
func TestConfigurationAnswerOfOneKey(t *testing.T) {
	type step struct {
		key     string
		undo    bool
		err     error
		advance time.Duration // the clock moves on before the call
		probe   bool          // the call waits for the circuit to be half-open
		// want: "ok", "own" (the step fails with the service's words,
		// the circuit stays closed) or "held" (a configuration fault,
		// the circuit open).
		want string
	}
	notFound := refusedWith(404, "no such sku")
	tests := []struct {
		name  string
		steps []step
	}{
		{"one key's 404 while others succeed fails only it", []step{
			{key: "a", want: "ok"}, {key: "bad", err: notFound, want: "own"}, {key: "b", want: "ok"},
			{key: "bad", err: notFound, want: "own"},
		}},
		// 403 is how credentials that expired or are not yet rotated, and
		// bad signatures, are answered: every order's, however few see it.
		{"a 403 of one key holds", []step{
			{key: "a", want: "ok"}, {key: "bad", err: refusedWith(403, "customer blocked"), want: "held"},
		}},
		{"no success seen (a fresh agent) holds", []step{
			{key: "bad", err: notFound, want: "held"},
		}},
		{"the key's own success is no evidence", []step{
			{key: "a", want: "ok"}, {key: "a", err: notFound, want: "held"},
		}},
		{"a success too long ago holds", []step{
			{key: "a", want: "ok"}, {key: "bad", err: notFound, advance: 11 * time.Minute, want: "held"},
		}},
		{"the third key refused with no success between opens the circuit", []step{
			{key: "a", want: "ok"},
			{key: "x", err: notFound, want: "own"}, {key: "x", err: notFound, want: "own"},
			{key: "y", err: notFound, want: "own"}, {key: "z", err: notFound, want: "held"},
		}},
		{"a success between resets the count", []step{
			{key: "a", want: "ok"},
			{key: "x", err: notFound, want: "own"}, {key: "y", err: notFound, want: "own"},
			{key: "b", want: "ok"},
			{key: "z", err: notFound, want: "own"}, {key: "w", err: notFound, want: "own"},
		}},
		{"401 is never one order's", []step{
			{key: "a", want: "ok"}, {key: "bad", err: refusedWith(401, "bad token"), want: "held"},
		}},
		{"405 is never one order's", []step{
			{key: "a", want: "ok"}, {key: "bad", err: refusedWith(405, "method not allowed"), want: "held"},
		}},
		{"an undo's 404 is judged by undos alone", []step{
			{key: "a", want: "ok"}, {key: "b", undo: true, err: notFound, want: "held"},
		}},
		{"an undo's 404 while other undos succeed is its own", []step{
			{key: "a", undo: true, want: "ok"}, {key: "b", undo: true, err: notFound, want: "own"},
		}},
		// Opened by another fault, the circuit must not reopen each
		// time a bad order's request is its probe.
		{"a bad order as the probe fails alone and closes the circuit", []step{
			{key: "a", want: "ok"}, {key: "c", err: refusedWith(401, "bad token"), want: "held"},
			{key: "bad", err: notFound, probe: true, want: "own"},
			{key: "bad", err: notFound, want: "own"}, {key: "b", want: "ok"},
		}},
		{"a good order as the probe closes the circuit", []step{
			{key: "a", want: "ok"}, {key: "c", err: refusedWith(401, "bad token"), want: "held"},
			{key: "b", probe: true, want: "ok"},
		}},
		{"the probe's 404 with no success seen holds", []step{
			{key: "bad", err: notFound, want: "held"}, {key: "bad", err: notFound, probe: true, want: "held"},
		}},
		{"the probe's 404 after the third key refused holds", []step{
			{key: "a", want: "ok"},
			{key: "x", err: notFound, want: "own"}, {key: "y", err: notFound, want: "own"},
			{key: "z", err: notFound, want: "held"}, {key: "w", err: notFound, probe: true, want: "held"},
			{key: "b", probe: true, want: "ok"}, {key: "z", err: notFound, want: "own"},
		}},
		{"the probe's 403 holds", []step{
			{key: "a", want: "ok"}, {key: "c", err: refusedWith(401, "bad token"), want: "held"},
			{key: "bad", err: refusedWith(403, "customer blocked"), probe: true, want: "held"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			s := &Service{name: "payment", log: slog.New(slog.NewTextHandler(io.Discard, nil)), metrics: metrics.Discard(),
				now: func() time.Time { return now }}
			// Long enough that a circuit a call opened is still open when
			// the test looks.
			openFor := 300 * time.Millisecond
			c := s.newCircuit(Breaker{Failures: 5, OpenFor: openFor})
			for i, st := range tt.steps {
				now = now.Add(st.advance)
				if st.probe {
					for deadline := time.Now().Add(10 * openFor); c.breaker.State() != gobreaker.StateHalfOpen; time.Sleep(openFor / 20) {
						if time.Now().After(deadline) {
							t.Fatalf("step %d: the circuit is %s, want half-open", i, c.breaker.State())
						}
					}
				}
				req := order.StepRequest{Workflow: "order", Version: "1", Step: "charge-payment", IdempotencyKey: st.key, Undo: st.undo}
				_, err := c.call(req, func() (order.Answer, error) { return order.Answer{Reference: "ch_1"}, st.err })
				got := "ok"
				switch {
				case err == nil && c.breaker.State() == gobreaker.StateClosed:
				case errors.Is(err, order.ErrPermanent) && !errors.Is(err, order.ErrConfiguration) && c.breaker.State() == gobreaker.StateClosed:
					got = "own"
					if reason := order.ReasonFor(err); !strings.Contains(reason, "no such sku") && !strings.Contains(reason, "customer blocked") {
						t.Errorf("step %d: reason %q, want the service's words", i, reason)
					}
				case errors.Is(err, order.ErrConfiguration) && c.open():
					got = "held"
				default:
					got = fmt.Sprintf("error %v with the circuit open %t", err, c.open())
				}
				if got != st.want {
					t.Fatalf("step %d (key %s, %v): got %s, want %s", i, st.key, st.err, got, st.want)
				}
			}
		})
	}
}
