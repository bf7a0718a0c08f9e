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
	"orderly/internal/remote"
)

func TestAnswered(t *testing.T) {
	netTimeout := &net.OpError{Op: "read", Net: "tcp", Err: &timeoutError{}}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"success", nil, true},
		{"permanent fault", fmt.Errorf("status 402: %w", remote.ErrPermanent), true},
		{"transient fault", fmt.Errorf("status 503: %w", remote.ErrTransient), true},
		{"try timeout", fmt.Errorf("payment: %w: %w", context.DeadlineExceeded, remote.ErrTransient), false},
		{"network timeout", fmt.Errorf("payment: %w: %w", netTimeout, remote.ErrTransient), false},
		{"window ended", fmt.Errorf("payment: %w: %w", context.Canceled, remote.ErrTransient), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := answered(tt.err); got != tt.want {
				t.Errorf("answered(%v) = %t, want %t", tt.err, got, tt.want)
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
	result := func(err error) func() (string, error) { return func() (string, error) { return "", err } }
	timeout := fmt.Errorf("%w: %w", context.DeadlineExceeded, remote.ErrTransient)
	steps := []struct {
		err         error
		wantSuspect bool
	}{
		{timeout, true},
		{fmt.Errorf("%w: %w", context.Canceled, remote.ErrTransient), true},
		{timeout, true},
		{fmt.Errorf("status 503: %w", remote.ErrTransient), false},
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
