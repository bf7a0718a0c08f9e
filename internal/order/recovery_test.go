package order_test

import (
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestStepStateExpired(t *testing.T) {
	deadline := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		completeBy time.Time
		now        time.Time
		want       bool
	}{
		{"before deadline", deadline, deadline.Add(-time.Nanosecond), false},
		{"at deadline", deadline, deadline, false},
		{"after deadline", deadline, deadline.Add(time.Nanosecond), true},
		{"no deadline", time.Time{}, deadline, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := order.StepState{CompleteBy: tt.completeBy}
			if got := s.Expired(tt.now); got != tt.want {
				t.Errorf("StepState{CompleteBy: %s}.Expired(%s) = %t, want %t", tt.completeBy, tt.now, got, tt.want)
			}
		})
	}
}

func TestWorkflowAssess(t *testing.T) {
	const threshold = 3
	timing := order.Timing{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute,
		FailureThreshold: threshold, ClaimWithin: time.Minute}
	w := ordertest.OrderWorkflow(timing)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	future := now.Add(time.Second)
	past := now.Add(-time.Second)
	nextClaim := now.Add(timing.ClaimWithin)

	state := func(ps order.ProcessState, completeBy time.Time, f func(*order.StepState)) order.StepState {
		s := order.StepState{OrderID: order.IDForKey("caller", "", "c-1", "k"), Step: ordertest.StepChargePayment, Index: 1,
			Agent: ordertest.AgentPayment, ProcessState: ps, CompleteBy: completeBy, Attempt: 2}
		if f != nil {
			f(&s)
		}
		return s
	}
	failures := func(n int) func(*order.StepState) { return func(s *order.StepState) { s.FailureCount = n } }
	nudges := func(n int) func(*order.StepState) { return func(s *order.StepState) { s.Nudges = n } }

	tests := []struct {
		name  string
		state order.StepState
		want  order.Recovery
		// wantReason is a fragment the Reason must contain; "" means the
		// Reason must be empty.
		wantReason string
	}{
		{"processing inside window", state(order.Processing, future, nil), order.Recovery{Action: order.Leave}, ""},
		{"processing inside window at threshold-1 is never failed", state(order.Processing, future, failures(threshold-1)), order.Recovery{Action: order.Leave}, ""},
		{"processing far past threshold but inside window", state(order.Processing, future, failures(threshold+5)), order.Recovery{Action: order.Leave}, ""},
		{"processing exactly at CompleteBy is not expired", state(order.Processing, now, failures(threshold-1)), order.Recovery{Action: order.Leave}, ""},
		{"processing expired, first timeout", state(order.Processing, past, nil), order.Recovery{Action: order.Retry, CompleteBy: nextClaim}, "attempt 2 timed out"},
		{"processing expired, below threshold", state(order.Processing, past, failures(threshold-2)), order.Recovery{Action: order.Retry, CompleteBy: nextClaim}, "timed out"},
		{"processing expired by a nanosecond", state(order.Processing, now.Add(-time.Nanosecond), nil), order.Recovery{Action: order.Retry, CompleteBy: nextClaim}, "timed out"},
		{"processing expired, reaches threshold: compensate, undoing it too", state(order.Processing, past, failures(threshold-1)), order.Recovery{Action: order.Compensate, MayHaveRun: true}, "3 of 3"},
		{"processing expired, past threshold", state(order.Processing, past, failures(threshold+2)), order.Recovery{Action: order.Compensate, MayHaveRun: true}, "timed out"},
		{"undo expired, reaches threshold: Error, an operator must act", state(order.Processing, past, func(s *order.StepState) { s.Undo, s.Index, s.FailureCount = true, 3, threshold-1 }),
			order.Recovery{Action: order.Fail, AlertKind: order.AlertUndoTimedOut}, "undo: attempt 2 timed out"},
		{"undo expired, below threshold: retried like a step", state(order.Processing, past, func(s *order.StepState) { s.Undo, s.Index = true, 3 }),
			order.Recovery{Action: order.Retry, CompleteBy: nextClaim}, "timed out"},
		{"cancelled, step in flight inside its window: left to finish", state(order.Processing, future, func(s *order.StepState) { s.CancelRequested = true }),
			order.Recovery{Action: order.Leave}, ""},
		{"cancelled, step in flight timed out: compensate at once", state(order.Processing, past, func(s *order.StepState) { s.CancelRequested = true }),
			order.Recovery{Action: order.Compensate, MayHaveRun: true}, "cancelled"},
		{"cancelled, step waiting for its first claim: compensate, it never ran", state(order.Pending, future, func(s *order.StepState) { s.CancelRequested, s.Attempt = true, 0 }),
			order.Recovery{Action: order.Compensate}, "cancelled"},
		{"cancelled, step waiting to be claimed again: compensate, undoing it too", state(order.Pending, future, func(s *order.StepState) { s.CancelRequested = true }),
			order.Recovery{Action: order.Compensate, MayHaveRun: true}, "attempt 2 may have done"},
		{"cancelled, undo waiting for a claim: nudged like any step", state(order.Pending, past, func(s *order.StepState) { s.CancelRequested, s.Undo, s.Index = true, true, 3 }),
			order.Recovery{Action: order.Nudge, CompleteBy: nextClaim}, "unclaimed"},
		{"processing expired, unknown step", state(order.Processing, past, func(s *order.StepState) { s.Step = "teleport" }), order.Recovery{Action: order.Fail, AlertKind: order.AlertStepFailed}, `"teleport"`},
		// Re-announcements back off: the claim window doubles, up to 8×.
		{"pending expired, 1st nudge", state(order.Pending, past, nudges(0)), order.Recovery{Action: order.Nudge, CompleteBy: nextClaim}, "re-announced 1 times"},
		{"pending expired, 2nd nudge", state(order.Pending, past, nudges(1)), order.Recovery{Action: order.Nudge, CompleteBy: now.Add(2 * timing.ClaimWithin)}, "unclaimed"},
		// Operators hear of it once, at the 3rd.
		{"pending expired, 3rd nudge alerts", state(order.Pending, past, nudges(2)), order.Recovery{Action: order.Nudge, CompleteBy: now.Add(4 * timing.ClaimWithin), AlertOperators: true}, "unclaimed"},
		{"pending expired, 4th nudge", state(order.Pending, past, nudges(3)), order.Recovery{Action: order.Nudge, CompleteBy: now.Add(8 * timing.ClaimWithin)}, "unclaimed"},
		{"pending expired, 8th nudge", state(order.Pending, past, nudges(7)), order.Recovery{Action: order.Nudge, CompleteBy: now.Add(8 * timing.ClaimWithin)}, "unclaimed"},
		// Then the order is given up, in Error, with an alert.
		{"pending expired after 8 nudges gives up", state(order.Pending, past, nudges(8)), order.Recovery{Action: order.Fail, AlertKind: order.AlertStepAbandoned}, "given up"},
		{"pending with an unsent alert sends it", state(order.Pending, future, func(s *order.StepState) { s.Nudges, s.AlertPending, s.LastError = 3, true, "unclaimed" }), order.Recovery{Action: order.SendAlert, Reason: "unclaimed"}, "unclaimed"},
		{"pending past its deadline with an unsent alert is still re-announced", state(order.Pending, past, func(s *order.StepState) { s.Nudges, s.AlertPending, s.LastError = 3, true, "unclaimed" }), order.Recovery{Action: order.Nudge, CompleteBy: now.Add(8 * timing.ClaimWithin)}, "unclaimed"},
		{"pending inside window", state(order.Pending, future, nudges(2)), order.Recovery{Action: order.Leave}, ""},
		{"pending exactly at CompleteBy", state(order.Pending, now, nudges(2)), order.Recovery{Action: order.Leave}, ""},
		{"error with alert pending, expired", state(order.Error, past, func(s *order.StepState) { s.AlertPending, s.LastError = true, "card declined" }), order.Recovery{Action: order.SendAlert, Reason: "card declined"}, "card declined"},
		{"error with alert pending, inside window", state(order.Error, future, func(s *order.StepState) { s.AlertPending, s.LastError = true, "card declined" }), order.Recovery{Action: order.SendAlert, Reason: "card declined"}, "card declined"},
		{"error with alert pending, leased to its writer", state(order.Error, past, func(s *order.StepState) {
			s.AlertPending, s.LastError, s.DueAt = true, "card declined", now.Add(time.Second)
		}), order.Recovery{Action: order.Leave}, ""},
		{"pending with an alert leased to the Supervisor that nudged it", state(order.Pending, future, func(s *order.StepState) {
			s.Nudges, s.AlertPending, s.LastError, s.DueAt = 3, true, "unclaimed", future
		}), order.Recovery{Action: order.Leave}, ""},
		{"error with alert pending, no deadline", state(order.Error, time.Time{}, func(s *order.StepState) { s.AlertPending, s.LastError = true, "card declined" }), order.Recovery{Action: order.SendAlert, Reason: "card declined"}, "card declined"},
		{"error without alert pending", state(order.Error, past, func(s *order.StepState) { s.LastError = "card declined" }), order.Recovery{Action: order.Leave}, ""},
		{"processed, expired deadline", state(order.Processed, past, nil), order.Recovery{Action: order.Leave}, ""},
		{"not started", state(order.NotStarted, time.Time{}, nil), order.Recovery{Action: order.Leave}, ""},
		{"not started with a stale deadline", state(order.NotStarted, past, nil), order.Recovery{Action: order.Leave}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.Assess(tt.state, now, order.NoBacklog)
			if got.MayHaveRun != tt.want.MayHaveRun {
				t.Errorf("Assess(%+v) MayHaveRun = %t, want %t", tt.state, got.MayHaveRun, tt.want.MayHaveRun)
			}
			if got.Action != tt.want.Action || !got.CompleteBy.Equal(tt.want.CompleteBy) || got.AlertOperators != tt.want.AlertOperators || got.AlertKind != tt.want.AlertKind {
				t.Errorf("Assess(%+v) = {%s CompleteBy:%s Alert:%t %s}, want {%s CompleteBy:%s Alert:%t %s}",
					tt.state, got.Action, got.CompleteBy, got.AlertOperators, got.AlertKind,
					tt.want.Action, tt.want.CompleteBy, tt.want.AlertOperators, tt.want.AlertKind)
			}
			if tt.want.Reason != "" && got.Reason != tt.want.Reason {
				t.Errorf("Assess() Reason = %q, want %q", got.Reason, tt.want.Reason)
			}
			if tt.wantReason == "" && got.Reason != "" {
				t.Errorf("Assess() Reason = %q, want none", got.Reason)
			}
			if !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("Assess() Reason = %q, want it to contain %q", got.Reason, tt.wantReason)
			}
		})
	}
}

// A workflow that stops on failure leaves the order in Error for an
// operator instead of compensating.
func TestWorkflowAssessStopOnFailure(t *testing.T) {
	w := ordertest.OrderWorkflow(order.Timing{Allowance: time.Second, MaxAllowance: time.Second, FailureThreshold: 1, ClaimWithin: time.Second})
	w.StopOnFailure = true
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	st := order.StepState{OrderID: order.NewID(), Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment,
		ProcessState: order.Processing, CompleteBy: now.Add(-time.Second), Attempt: 1}
	if got := w.Assess(st, now, order.NoBacklog); got.Action != order.Fail || got.AlertKind != order.AlertStepTimedOut {
		t.Errorf("Assess() = %s %s, want fail StepTimedOut", got.Action, got.AlertKind)
	}
}

func TestActionString(t *testing.T) {
	want := map[order.Action]string{order.Leave: "leave", order.Retry: "retry", order.Fail: "fail",
		order.Nudge: "nudge", order.SendAlert: "alert", order.Defer: "defer", order.Compensate: "compensate"}
	for a, w := range want {
		if got := a.String(); got != w {
			t.Errorf("Action(%d).String() = %q, want %q", int(a), got, w)
		}
	}
}

// Back-pressure: a Processing step past its deadline while its agent's
// queue has a backlog most likely waits in that queue; its deadline moves
// on and no failure is counted, up to MaxDeferrals times. A request the
// agent holds behind its open circuit (its remote service is down, or
// refuses its configuration) waits on purpose: its deadline moves on
// however long the circuit stays open, and no failure is counted however
// close the step is to its threshold.
func TestWorkflowAssessBackPressure(t *testing.T) {
	timing := order.Timing{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute, FailureThreshold: 3, ClaimWithin: time.Minute}
	w := ordertest.OrderWorkflow(timing)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	step := func(ps order.ProcessState, completeBy time.Time, failures, deferrals int) order.StepState {
		return order.StepState{OrderID: order.NewID(), Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment,
			ProcessState: ps, CompleteBy: completeBy, Attempt: 2, FailureCount: failures, Deferrals: deferrals}
	}
	cancelled := step(order.Processing, now.Add(-time.Second), 0, 0)
	cancelled.CancelRequested = true
	tests := []struct {
		name    string
		state   order.StepState
		backlog order.Backlog
		want    order.Action
		wantBy  time.Time
	}{
		{"expired with a backlog: deferred, the attempt's allowance again", step(order.Processing, now.Add(-time.Second), 2, 0), order.Queued, order.Defer, now.Add(timing.MaxAllowance)},
		{"expired with a backlog, deferred 3 times before: 8 allowances", step(order.Processing, now.Add(-time.Second), 0, 3), order.Queued, order.Defer, now.Add(8 * timing.Allowance)},
		{"deferred often: at most 16 allowances", step(order.Processing, now.Add(-time.Second), 0, order.MaxDeferrals-1), order.Queued, order.Defer, now.Add(16 * timing.Allowance)},
		{"deferred too often: a timeout again", step(order.Processing, now.Add(-time.Second), 0, order.MaxDeferrals), order.Queued, order.Retry, now.Add(timing.ClaimWithin)},
		{"expired without a backlog: a timeout", step(order.Processing, now.Add(-time.Second), 0, 0), order.NoBacklog, order.Retry, now.Add(timing.ClaimWithin)},
		{"inside the window: left alone", step(order.Processing, now.Add(time.Second), 0, 0), order.Queued, order.Leave, time.Time{}},
		{"pending is not about the agent's queue", step(order.Pending, now.Add(-time.Second), 0, 0), order.Queued, order.Nudge, now.Add(timing.ClaimWithin)},
		{"held: deferred", step(order.Processing, now.Add(-time.Second), 0, 0), order.Held, order.Defer, now.Add(timing.Allowance)},
		{"held past MaxDeferrals: deferred still, 16 allowances", step(order.Processing, now.Add(-time.Second), 0, order.MaxDeferrals), order.Held, order.Defer, now.Add(16 * timing.Allowance)},
		{"held for hours: deferred still", step(order.Processing, now.Add(-time.Second), 1, 500), order.Held, order.Defer, now.Add(16 * 2 * timing.Allowance)},
		{"held one timeout from the threshold: deferred, not compensated", step(order.Processing, now.Add(-time.Second), timing.FailureThreshold-1, order.MaxDeferrals), order.Held, order.Defer, now.Add(16 * timing.MaxAllowance)},
		{"held inside the window: left alone", step(order.Processing, now.Add(time.Second), 0, 0), order.Held, order.Leave, time.Time{}},
		{"held but cancelled: compensated, as any expired cancelled step", cancelled, order.Held, order.Compensate, time.Time{}},
		{"paused: deferred by PausedDeferral allowances", step(order.Processing, now.Add(-time.Second), 0, 0), order.Paused, order.Defer, now.Add(order.PausedDeferral * timing.Allowance)},
		{"paused, deferred before: the same, no backoff", step(order.Processing, now.Add(-time.Second), 0, 3), order.Paused, order.Defer, now.Add(order.PausedDeferral * timing.Allowance)},
		{"paused for days, one timeout from the threshold: deferred still", step(order.Processing, now.Add(-time.Second), timing.FailureThreshold-1, 5000), order.Paused, order.Defer, now.Add(order.PausedDeferral * timing.MaxAllowance)},
		{"paused but cancelled: compensated", cancelled, order.Paused, order.Compensate, time.Time{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.Assess(tt.state, now, tt.backlog)
			if got.Action != tt.want || !got.CompleteBy.Equal(tt.wantBy) {
				t.Errorf("Assess() = %s until %s, want %s until %s (%s)", got.Action, got.CompleteBy, tt.want, tt.wantBy, got.Reason)
			}
		})
	}
}

// A step whose order was parked (its workflow version was missing from
// the running build) while its attempt was in flight may have had its
// request dropped by an agent of that build, which neither calls nor
// replies. Once the version is back, a backlog in the queue says nothing
// about that request: past its deadline the step is sent again at once,
// and the rollback is not counted as the step's failure.
func TestWorkflowAssessAfterARollback(t *testing.T) {
	timing := order.Timing{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute, FailureThreshold: 3, ClaimWithin: time.Minute}
	w := ordertest.OrderWorkflow(timing)
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	parked := func(ps order.ProcessState, completeBy time.Time, f func(*order.StepState)) order.StepState {
		s := order.StepState{OrderID: order.NewID(), Version: "2", Parked: "2", Step: ordertest.StepChargePayment, Index: 1,
			Agent: ordertest.AgentPayment, ProcessState: ps, CompleteBy: completeBy, Attempt: 1}
		if f != nil {
			f(&s)
		}
		return s
	}
	past, future := now.Add(-time.Second), now.Add(time.Second)
	tests := []struct {
		name           string
		state          order.StepState
		backlog        order.Backlog
		want           order.Action
		wantNotFailure bool
		wantReason     string
	}{
		{"expired, queue backlogged: sent again, not a failure", parked(order.Processing, past, nil), order.Queued, order.Retry, true, "version order/2"},
		{"expired, agent holding requests: sent again, not a failure", parked(order.Processing, past, nil), order.Held, order.Retry, true, "version order/2"},
		{"expired, no backlog: sent again, not a failure", parked(order.Processing, past, nil), order.NoBacklog, order.Retry, true, "version order/2"},
		{"one timeout from the threshold: sent again, not compensated", parked(order.Processing, past, func(s *order.StepState) { s.FailureCount = 2 }), order.Queued, order.Retry, true, "no failure counted"},
		{"an undo: sent again, not a failure", parked(order.Processing, past, func(s *order.StepState) { s.Undo, s.Index = true, 3 }), order.Queued, order.Retry, true, "version order/2"},
		{"inside its window: left alone", parked(order.Processing, future, nil), order.Queued, order.Leave, false, ""},
		{"cancelled: compensated, as any expired cancelled step", parked(order.Processing, past, func(s *order.StepState) { s.CancelRequested = true }), order.Queued, order.Compensate, false, "cancelled"},
		{"pending: re-announced, as any unclaimed step", parked(order.Pending, past, nil), order.Queued, order.Nudge, false, "unclaimed"},
		{"never parked: deferred behind the backlog", parked(order.Processing, past, func(s *order.StepState) { s.Parked = "" }), order.Queued, order.Defer, false, "backlog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := w.Assess(tt.state, now, tt.backlog)
			if got.Action != tt.want || got.NotAFailure != tt.wantNotFailure || !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("Assess() = %s NotAFailure:%t %q, want %s NotAFailure:%t containing %q",
					got.Action, got.NotAFailure, got.Reason, tt.want, tt.wantNotFailure, tt.wantReason)
			}
			if got.Action == order.Retry && !got.CompleteBy.Equal(now.Add(timing.ClaimWithin)) {
				t.Errorf("Assess() retries until %s, want the claim window %s", got.CompleteBy, now.Add(timing.ClaimWithin))
			}
		})
	}
}
