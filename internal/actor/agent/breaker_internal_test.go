package agent

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

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
		if _, err := c.call("k", result(st.err)); err != st.err {
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
