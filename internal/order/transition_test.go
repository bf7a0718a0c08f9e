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
	pendingUndo := st(order.Pending, func(s *order.StepState) { s.Undo, s.Index, s.LockedBy = true, 4, "" })
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
			order.Guard{State: order.Processing, NotParkedFor: "2", NoAlertPending: true},
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
		{"a claim", order.Claim(pending, "s2", later, now),
			order.Guard{State: order.Pending, Unlocked: true, SameFailures: true, NotCancelled: true},
			order.Change{State: order.Processing, Claim: "s2", CompleteBy: later, DueAt: later}},
		{"an undo's claim, cancelled or not", order.Claim(pendingUndo, "s2", later, now),
			order.Guard{State: order.Pending, Unlocked: true, SameFailures: true},
			order.Change{State: order.Processing, Claim: "s2", CompleteBy: later, DueAt: later}},
		{"a client's cancel", order.Cancel(processing, now),
			order.Guard{State: order.Processing, NotCancelled: true}, order.Change{Cancel: true, Status: order.StatusCancelling}},
		{"a heartbeat", order.Heartbeat(processing, later, 3, now),
			order.Guard{State: order.Processing, EarlierThan: later, BeatsBelow: 3},
			order.Change{CompleteBy: later, CountHeartbeat: true}},
		{"a heartbeat of a step that allows none", order.Heartbeat(processing, later, 0, now),
			order.Guard{State: order.Processing, EarlierThan: later, BeatsBelow: 1},
			order.Change{CompleteBy: later, CountHeartbeat: true}},
		{"an alert's lease", order.LeaseAlert(pending, later, now),
			order.Guard{State: order.Pending, AlertPending: true, SameDueAt: true}, order.Change{DueAt: later}},
		{"an alert cleared, still watched", order.ClearAlert(pending, now),
			order.Guard{State: order.Pending, AlertPending: true, SameAlertKind: true}, order.Change{ClearAlert: true}},
		{"an alert cleared in Error", order.ClearAlert(st(order.Error, nil), now),
			order.Guard{State: order.Error, AlertPending: true, SameAlertKind: true}, order.Change{ClearAlert: true, Unwatch: true}},
		{"a reschedule", order.Reschedule(processing, later, now),
			order.Guard{State: order.Processing, SameCompleteBy: true}, order.Change{DueAt: later}},
		{"a version move of a running order", order.MoveVersion(order.Order{ID: processing.OrderID, Version: "2"}, &processing, "3", now),
			order.Guard{State: order.Processing, Version: "2"}, order.Change{Version: "3", DueAt: now}},
		{"a version move of an order in Error", order.MoveVersion(order.Order{ID: processing.OrderID, Version: "2"}, ptr(st(order.Error, nil)), "3", now),
			order.Guard{State: order.Error, Version: "2"}, order.Change{Version: "3"}},
		{"a version move of an order with no active record", order.MoveVersion(order.Order{ID: processing.OrderID, Version: "2"}, nil, "3", now),
			order.Guard{Version: "2"}, order.Change{Version: "3"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got.Guard, tt.wantGuard) {
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

func ptr[T any](v T) *T { return &v }

// Applied is the record as a transition's write leaves it: the fields its
// change names, the time of a change of the record, nothing else.
func TestApplied(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	stored := order.StepState{OrderID: "o-1", Step: ordertest.StepChargePayment, Index: 1, ProcessState: order.Pending, Attempt: 2,
		FailureCount: 1, Deferrals: 2, Heartbeats: 1, Parked: "3", AlertPending: true, AlertKind: order.AlertStepUnclaimed,
		CompleteBy: now, DueAt: now, UpdatedAt: now.Add(-time.Hour), Version: "3"}
	claimed := stored
	claimed.ProcessState, claimed.LockedBy, claimed.Attempt, claimed.Deferrals, claimed.Heartbeats, claimed.Parked = order.Processing, "s1", 3, 0, 0, ""
	claimed.AlertPending, claimed.AlertKind, claimed.CompleteBy, claimed.DueAt, claimed.UpdatedAt = false, "", later, later, now
	leased := stored
	leased.DueAt = later
	moved := stored
	moved.Version, moved.Parked, moved.DueAt = "4", "", now
	tests := []struct {
		name string
		tr   order.Transition
		want order.StepState
	}{
		{"a claim", order.Claim(stored, "s1", later, now), claimed},
		// Bookkeeping: the record's time stays.
		{"a lease", order.LeaseAlert(stored, later, now), leased},
		{"a version move", order.MoveVersion(order.Order{ID: "o-1", Version: "3"}, &stored, "4", now), moved},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.tr.Applied(stored); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("applied\n%+v\nwant\n%+v", got, tt.want)
			}
		})
	}
	if !(order.Change{DueAt: later}).Bookkeeping() || (order.Change{DueAt: later, Parked: "3"}).Bookkeeping() {
		t.Error("only a change of DueAt alone is bookkeeping")
	}
}
