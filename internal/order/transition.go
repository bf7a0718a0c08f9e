package order

import "time"

// A Transition is one decided change of an order's active record: the
// guard its write must hold and the change it makes. The domain decides
// transitions (the functions below, and Recovery.Transition for the
// Supervisor's); an adapter persists each in one conditional write, which
// changes nothing and reports ErrStale when the guard no longer holds: a
// duplicate or stale message, a racing actor, a deadline another actor
// moved.
type Transition struct {
	// Name says what the transition is ("retry"), for errors and logs.
	Name string
	// Record is the record as the deciding actor found it: its order,
	// index, step and attempt are the fence of every guard.
	Record StepState
	Guard  Guard
	Change Change
	// At is when the transition is decided: it stamps the record and the
	// order, and starts an alert's lease.
	At time.Time
}

// Guard is what must still hold when a transition's write lands, beyond
// the fence every transition has: the order's active record is Record's
// index, holds Record's step and is on Record's attempt.
type Guard struct {
	// State is the record's state.
	State ProcessState
	// Expired: the record's deadline has passed (CompleteBy before At).
	Expired bool
	// Unlocked: no Scheduler holds the record's claim; LockedBy: this
	// Scheduler does.
	Unlocked bool
	LockedBy string
	// NotCancelled: the client has not cancelled the order.
	NotCancelled bool
	// NotParkedFor: the order is not parked for this workflow version
	// already, and no alert of it waits to be sent.
	NotParkedFor string
}

// Change is what a transition's write changes; a zero field leaves its
// attribute as it is.
type Change struct {
	// State is the record's new state; with it the claim is given up.
	State ProcessState
	// CompleteBy is the record's new deadline (a claim's for a Pending
	// record); DueAt is the Supervisor's next look at the order.
	CompleteBy, DueAt time.Time
	// Announce marks the record unclaimed, which invokes a Scheduler
	// through the stream.
	Announce bool
	// Reason is the record's LastError.
	Reason string
	// CountFailure counts a failure against the record; CountNudge a
	// re-announcement; Releases and Deferrals, when set, are the record's
	// counts from now on (the write is fenced on the attempt, so the
	// record's count as found is the stored one).
	CountFailure, CountNudge bool
	Releases, Deferrals      int
	// Alert records an alert of this kind to send (the outbox): a
	// Supervisor sends it if its writer does not by DueAt.
	Alert AlertKind
	// Error puts the order in Error, with Reason as its LastError, in the
	// error index, announced no more.
	Error bool
	// Parked marks the order parked for this workflow version.
	Parked string
}

// FailReply is a permanent-failure reply applied: the record and its
// order go to Error, with an alert (StepFailed, or UndoFailed for an undo)
// leased to the writer, which sends it next.
func FailReply(st StepState, reason string, now time.Time) Transition {
	kind := AlertStepFailed
	if st.Undo {
		kind, reason = AlertUndoFailed, "undo: "+reason
	}
	return failure("fail", st, Guard{State: Processing}, kind, false, reason, now)
}

// failure puts the record and its order in Error with an alert of kind,
// leased to the writer for AlertLease: a Supervisor looks at the order only
// once the lease is over, to send an alert a crash left unsent.
func failure(name string, st StepState, g Guard, kind AlertKind, countFailure bool, reason string, now time.Time) Transition {
	return Transition{Name: name, Record: st, Guard: g, At: now, Change: Change{
		State: Error, Reason: reason, Error: true, Alert: kind, CountFailure: countFailure, DueAt: now.Add(AlertLease),
	}}
}

// Release gives back the claim of a record whose request could not be
// sent: only its owner, on the same attempt, can. The record is Pending
// again, to be claimed by claimBy, with no failure counted (no agent saw
// it) and the release counted. With announce a Scheduler is invoked
// through the stream at once; without it the record waits for the
// Supervisor's re-announcements, which back off, alert and finally give
// it up.
func Release(st StepState, claimBy time.Time, reason string, announce bool, now time.Time) Transition {
	return Transition{Name: "release", Record: st, At: now,
		Guard:  Guard{State: Processing, LockedBy: st.LockedBy},
		Change: Change{State: Pending, CompleteBy: claimBy, DueAt: claimBy, Announce: announce, Reason: reason, Releases: st.Releases + 1}}
}

// GaveUp records that the agent working on a Processing record's attempt
// gave it up at its deadline: it took the request, so a backlog in its
// queue is no reason to defer the timeout (Deferrals reach MaxDeferrals).
func GaveUp(st StepState, now time.Time) Transition {
	return Transition{Name: "record the agent gave up", Record: st, At: now,
		Guard: Guard{State: Processing}, Change: Change{Deferrals: MaxDeferrals}}
}

// Park moves the Supervisor's next look at an order whose workflow
// version the running build lacks to until, while its active record is as
// found. With alert, the same write records a VersionUnknown alert with
// reason and marks the order parked for its version, once: a second
// writer finds the mark and gets ErrStale. The record itself is left as
// it is.
func Park(st StepState, until time.Time, alert bool, reason string, now time.Time) Transition {
	t := Transition{Name: "park", Record: st, At: now, Guard: Guard{State: st.ProcessState}, Change: Change{DueAt: until}}
	if alert {
		t.Guard.NotParkedFor = st.Version
		t.Change.Parked, t.Change.Alert, t.Change.Reason = st.Version, AlertVersionUnknown, reason
	}
	return t
}

// Transition is the write that carries out the Supervisor's decision
// about st (Defer, Retry, Fail or Nudge), guarded on the record as found
// and on its deadline having passed; ok is false for other actions, which
// are not one record's write.
func (r Recovery) Transition(st StepState, now time.Time) (t Transition, ok bool) {
	expired := Guard{State: st.ProcessState, Expired: true}
	switch r.Action {
	case Defer:
		return Transition{Name: "defer", Record: st, At: now, Guard: expired, Change: Change{
			CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Deferrals: st.Deferrals + 1, Reason: r.Reason}}, true
	case Retry:
		// A cancelled order's step is not run again: the Supervisor
		// compensates instead.
		expired.NotCancelled = !st.Undo
		return Transition{Name: "retry", Record: st, At: now, Guard: expired, Change: Change{
			State: Pending, CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Announce: true, Reason: r.Reason,
			CountFailure: !r.NotAFailure}}, true
	case Fail:
		if st.ProcessState == Pending {
			expired.Unlocked = true
			return failure("give up", st, expired, r.AlertKind, false, r.Reason, now), true
		}
		return failure("fail", st, expired, r.AlertKind, true, r.Reason, now), true
	case Nudge:
		expired.Unlocked = true
		t := Transition{Name: "nudge", Record: st, At: now, Guard: expired, Change: Change{
			State: Pending, CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Announce: true, CountNudge: true}}
		if r.AlertOperators {
			t.Change.Alert, t.Change.Reason = AlertStepUnclaimed, r.Reason
		}
		return t, true
	}
	return Transition{}, false
}

// Holds reports whether t's guard holds for r, the order's active record
// as stored (with the order's own attributes it carries: the cancel, the
// park, the pending alert): the adapter's write lands exactly when this
// is true.
func (t Transition) Holds(r StepState) bool {
	f, g := t.Record, t.Guard
	switch {
	case r.Index != f.Index || r.Step != f.Step || r.Attempt != f.Attempt || r.ProcessState != g.State:
		return false
	case g.Expired && !r.CompleteBy.Before(t.At):
		return false
	case g.Unlocked && r.LockedBy != "":
		return false
	case g.LockedBy != "" && r.LockedBy != g.LockedBy:
		return false
	case g.NotCancelled && r.CancelRequested:
		return false
	case g.NotParkedFor != "" && (r.Parked == g.NotParkedFor || r.AlertPending):
		return false
	}
	return true
}

// Applied is r as t's write leaves it, when its guard holds.
func (t Transition) Applied(r StepState) StepState {
	c := t.Change
	if c.State != "" {
		r.ProcessState, r.LockedBy = c.State, ""
	}
	if !c.CompleteBy.IsZero() {
		r.CompleteBy = c.CompleteBy
	}
	if !c.DueAt.IsZero() {
		r.DueAt = c.DueAt
	}
	if c.Reason != "" {
		r.LastError = c.Reason
	}
	if c.CountFailure {
		r.FailureCount++
	}
	if c.CountNudge {
		r.Nudges++
	}
	if c.Releases > 0 {
		r.Releases = c.Releases
	}
	if c.Deferrals > 0 {
		r.Deferrals = c.Deferrals
	}
	if c.Alert != "" {
		r.AlertPending, r.AlertKind = true, c.Alert
	}
	if c.Parked != "" {
		r.Parked = c.Parked
	}
	if c.TouchesRecord() {
		r.UpdatedAt = t.At
	}
	return r
}

// TouchesRecord reports whether c changes the record itself, which then
// carries the time of the change; a change of the order's alone (a park)
// leaves the record's time as it is.
func (c Change) TouchesRecord() bool {
	return c.State != "" || !c.CompleteBy.IsZero() || c.CountFailure || c.CountNudge || c.Releases > 0 || c.Deferrals > 0
}
