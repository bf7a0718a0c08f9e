package order_test

import (
	"reflect"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// Each decided transition has the guard its write must hold and the
// change it makes; the DynamoDB adapter's tests and the actors' tests
// prove the writes, this the decisions.
func TestTransitions(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	lease := now.Add(order.AlertLease)
	st := func(ps order.ProcessState, f func(*order.StepState)) order.StepState {
		s := order.StepState{OrderID: order.IDForKey("caller", "", "c-1", "k"), Workflow: "order", Version: "2",
			Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment, ProcessState: ps, Attempt: 2,
			LockedBy: "s1", Releases: 1, Deferrals: 2}
		if f != nil {
			f(&s)
		}
		return s
	}
	processing, pending := st(order.Processing, nil), st(order.Pending, func(s *order.StepState) { s.LockedBy = "" })
	undo := st(order.Processing, func(s *order.StepState) { s.Undo, s.Index = true, 4 })
	decide := func(r order.Recovery, s order.StepState) order.Transition {
		tr, ok := r.Transition(s, now)
		if !ok {
			t.Fatalf("%s of a %s record: no transition", r.Action, s.ProcessState)
		}
		return tr
	}
	tests := []struct {
		name       string
		got        order.Transition
		wantGuard  order.Guard
		wantChange order.Change
	}{
		{"a permanent failure", order.FailReply(processing, "card declined", now),
			order.Guard{State: order.Processing},
			order.Change{State: order.Error, Reason: "card declined", Error: true, Alert: order.AlertStepFailed, DueAt: lease}},
		{"an undo's permanent failure", order.FailReply(undo, "refused", now),
			order.Guard{State: order.Processing},
			order.Change{State: order.Error, Reason: "undo: refused", Error: true, Alert: order.AlertUndoFailed, DueAt: lease}},
		{"a release, announced", order.Release(processing, later, "not sent", true, now),
			order.Guard{State: order.Processing, LockedBy: "s1"},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, Reason: "not sent", Releases: 2}},
		{"a release left to the Supervisor", order.Release(processing, later, "not sent", false, now),
			order.Guard{State: order.Processing, LockedBy: "s1"},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Reason: "not sent", Releases: 2}},
		{"an agent gave up", order.GaveUp(processing, now),
			order.Guard{State: order.Processing}, order.Change{Deferrals: order.MaxDeferrals}},
		{"a park that alerts", order.Park(processing, later, true, "not in this build", now),
			order.Guard{State: order.Processing, NotParkedFor: "2"},
			order.Change{DueAt: later, Parked: "2", Alert: order.AlertVersionUnknown, Reason: "not in this build"}},
		{"a park once alerted", order.Park(pending, later, false, "not in this build", now),
			order.Guard{State: order.Pending}, order.Change{DueAt: later}},
		{"a deferral", decide(order.Recovery{Action: order.Defer, CompleteBy: later, Reason: "backlog"}, processing),
			order.Guard{State: order.Processing, Expired: true},
			order.Change{CompleteBy: later, DueAt: later, Deferrals: 3, Reason: "backlog"}},
		{"a retry", decide(order.Recovery{Action: order.Retry, CompleteBy: later, Reason: "timed out"}, processing),
			order.Guard{State: order.Processing, Expired: true, NotCancelled: true},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, Reason: "timed out", CountFailure: true}},
		{"a resend, no failure counted", decide(order.Recovery{Action: order.Retry, CompleteBy: later, Reason: "dropped", NotAFailure: true}, processing),
			order.Guard{State: order.Processing, Expired: true, NotCancelled: true},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, Reason: "dropped"}},
		{"an undo's retry, cancelled or not", decide(order.Recovery{Action: order.Retry, CompleteBy: later, Reason: "timed out"}, undo),
			order.Guard{State: order.Processing, Expired: true},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, Reason: "timed out", CountFailure: true}},
		{"the last timeout", decide(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepTimedOut, Reason: "3 of 3"}, processing),
			order.Guard{State: order.Processing, Expired: true},
			order.Change{State: order.Error, Reason: "3 of 3", Error: true, Alert: order.AlertStepTimedOut, CountFailure: true, DueAt: lease}},
		{"an unclaimed record given up", decide(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepAbandoned, Reason: "8 nudges"}, pending),
			order.Guard{State: order.Pending, Expired: true, Unlocked: true},
			order.Change{State: order.Error, Reason: "8 nudges", Error: true, Alert: order.AlertStepAbandoned, DueAt: lease}},
		{"a nudge", decide(order.Recovery{Action: order.Nudge, CompleteBy: later, Reason: "unclaimed"}, pending),
			order.Guard{State: order.Pending, Expired: true, Unlocked: true},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, CountNudge: true}},
		{"a nudge that alerts", decide(order.Recovery{Action: order.Nudge, CompleteBy: later, Reason: "unclaimed", AlertOperators: true}, pending),
			order.Guard{State: order.Pending, Expired: true, Unlocked: true},
			order.Change{State: order.Pending, CompleteBy: later, DueAt: later, Announce: true, CountNudge: true, Alert: order.AlertStepUnclaimed, Reason: "unclaimed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got.Guard != tt.wantGuard {
				t.Errorf("guard %+v, want %+v", tt.got.Guard, tt.wantGuard)
			}
			if !reflect.DeepEqual(tt.got.Change, tt.wantChange) {
				t.Errorf("change %+v, want %+v", tt.got.Change, tt.wantChange)
			}
			if !tt.got.At.Equal(now) || tt.got.Name == "" {
				t.Errorf("decided at %s as %q, want at %s with a name", tt.got.At, tt.got.Name, now)
			}
		})
	}
	for _, a := range []order.Action{order.Leave, order.Compensate, order.SendAlert} {
		if tr, ok := (order.Recovery{Action: a}).Transition(processing, now); ok {
			t.Errorf("%s: transition %+v, want none (not one record's write)", a, tr)
		}
	}
}
