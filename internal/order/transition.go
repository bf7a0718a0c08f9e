package order

import (
	"encoding/json"
	"fmt"
	"reflect"
	"time"
)

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

// Change is what a transition's write changes; a zero field leaves its
// attribute as it is.
type Change struct {
	// State is the record's new state; with it the claim is given up.
	State ProcessState
	// CompleteBy is the record's new deadline (a claim's for a Pending
	// record); DueAt is the Supervisor's next look at the order.
	CompleteBy, DueAt time.Time
	// Announce marks the record unclaimed, which invokes a Scheduler
	// through the stream. Release also clears the order's hold (its
	// workflow's pause ended).
	Announce, Release bool
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
	// Claim is the Scheduler that claims the record (with State
	// Processing): it holds the claim, the attempt goes up by one (the
	// new fence), the attempt's deferrals and heartbeats start again, the
	// record is announced no more, an alert waiting (a Pending record's
	// only one, StepUnclaimed) is answered, and the park is cleared: the
	// claimer's build knows the order's version, so a later rollback
	// alerts again.
	Claim string
	// Cancel records the client's cancel.
	Cancel bool
	// Wait starts the record waiting (with State Waiting, until
	// CompleteBy): its attempt goes up by one (the new fence), it waits
	// since the write's time, and the order is announced no more. Await
	// is the same on the record's own attempt, which its call's callback
	// names: the claim's.
	Wait, Await bool
	// StatusURL is the status URL a polled record keeps from now on.
	StatusURL string
	// CountHeartbeat counts a heartbeat against the attempt.
	CountHeartbeat bool
	// ClearAlert records that operators were alerted; Unwatch takes the
	// order out of the Supervisor's due index (an order in Error waits for
	// an operator, not a Supervisor).
	ClearAlert, Unwatch bool
	// Version moves the order to this workflow version; its park goes
	// with the version it was parked for.
	Version string

	// The fields below are those of the writes that move an order on
	// from one record to another, or end it: a success, the start of
	// undoing, a redrive (see Completion, Undoing and Resume).

	// Reference and Result are a success's answer, kept on the record.
	Reference string
	Result    json.RawMessage
	// Settle removes the record's deadline: nothing waits for it.
	Settle bool
	// Fresh gives the record a fresh failure count, its old one added to
	// PastFailures, no nudges, and no deferrals or heartbeats: an
	// operator's redrive.
	Fresh bool
	// Undone marks these records Undone: the workflow steps an undo
	// undid. Skip marks these Skipped: steps whose conditions did not
	// hold, passed by on the way to the next record.
	Undone, Skip []int
	// Next is the record claimed in the same write, which becomes the
	// active one.
	Next *NextClaim
	// Append is the records appended after the order's, from index
	// Guard.Records on; the first becomes the active one.
	Append []StepState
	// Forward is the failed workflow step a forward redrive runs again:
	// the record's fields above change it instead of the fenced record,
	// and it becomes the active one. Drop is the records that go (the
	// undo records); UndoFloor, when set, is the order's undo floor from
	// now on.
	Forward   *StepState
	Drop      []int
	UndoFloor int
	// Status is what the order shows from now on. End ends the order in
	// this status: it has no active record any more, leaves the due
	// index, joins the search's ended orders and expires after the
	// retention period.
	Status, End Status
	// OrderReason is the order's LastError.
	OrderReason string
	// OutOfError takes the order out of the error index and, unless the
	// write ends it again, out of the ended orders.
	OutOfError bool
	// Watch puts the order in the Supervisor's due index, at DueAt.
	// Unannounce marks the order announced no more.
	Watch, Unannounce bool
}

// NextClaim is how a success starts the next record, Step at Index, in
// State until CompleteBy. Processing: Owner claims it, and its attempt
// goes up by one, as with any claim, but an alert waiting is left to the
// Supervisor. Pending: it is announced for a Scheduler to claim. Waiting:
// it waits, claimed by nobody, on an attempt one up (its fence).
type NextClaim struct {
	Index      int
	Step       string
	State      ProcessState
	Owner      string
	CompleteBy time.Time
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
		t.Guard.NotParkedFor, t.Guard.NoAlertPending = st.Version, true
		t.Change.Parked, t.Change.Alert, t.Change.Reason = st.Version, AlertVersionUnknown, reason
	}
	return t
}

// ParkRefused decides, from err, the refusal of park t with its alert,
// whether the order is parked without the alert: when another alert of
// the order waits to be sent (operators hear of the order with it) and
// the order is not parked for its version yet. The mark alone then
// records the drop, so that the step is sent again, no failure counted,
// once a build with the version takes the order up; without it, the
// drop would look like a request still waiting in a backlogged queue.
func ParkRefused(t Transition, err error) (Transition, bool) {
	f, ok := FoundBy(err)
	if !ok || t.Change.Alert == "" {
		return t, false
	}
	mark := t
	mark.Guard.NoAlertPending = false
	mark.Change.Alert, mark.Change.Reason = "", ""
	if !mark.Holds(f) {
		return t, false
	}
	return mark, true
}

// Claim is a Scheduler's exclusive claim of a Pending, unlocked record
// (seen, from the stream) until completeBy, the record's deadline and the
// Supervisor's next look (DueAt is never later than the active record's
// deadline). The claimer derives completeBy from seen's failure count, so
// the claim holds only while the stored count is the same: a stale image
// (a redelivered old record) claims nothing, and the image of the latest
// change claims instead. A cancelled order starts no workflow step.
func Claim(seen StepState, owner string, completeBy, now time.Time) Transition {
	return Transition{Name: "claim", Record: seen, At: now,
		Guard:  Guard{State: Pending, Unlocked: true, SameFailures: true, NotCancelled: !seen.Undo},
		Change: Change{State: Processing, Claim: owner, CompleteBy: completeBy, DueAt: completeBy}}
}

// StartWait starts the wait of a step that waits, found Pending and
// unclaimed (seen, from the stream: announced after an operator's
// redrive): it waits until until, with no request sent; the order shows
// Waiting. A cancelled order's step does not start.
func StartWait(seen StepState, until, now time.Time) Transition {
	return Transition{Name: "start wait", Record: seen, At: now,
		Guard:  Guard{State: Pending, Unlocked: true, NotCancelled: true},
		Change: Change{State: Waiting, Wait: true, CompleteBy: until, DueAt: until, Status: StatusWaiting}}
}

// Cancel records a client's cancel of an order whose active workflow
// step is in flight (Processing, as st was found): the step may finish or
// time out, then the work done is undone and the order ends Cancelled.
func Cancel(st StepState, now time.Time) Transition {
	return Transition{Name: "cancel", Record: st, At: now,
		Guard: Guard{State: Processing, NotCancelled: true}, Change: Change{Cancel: true, Status: StatusCancelling}}
}

// Heartbeat is an agent's heartbeat: it moves the deadline of a
// Processing record on to completeBy, fenced on the attempt, so a
// heartbeat of an attempt the Supervisor has already retried changes
// nothing. A deadline only moves later, and at most maxHeartbeats times
// per attempt (at least once). DueAt stays, since it may lag the deadline:
// the Supervisor moves it on when it finds the record in time.
func Heartbeat(st StepState, completeBy time.Time, maxHeartbeats int, now time.Time) Transition {
	return Transition{Name: "heartbeat", Record: st, At: now,
		Guard:  Guard{State: Processing, EarlierThan: completeBy, BeatsBelow: max(maxHeartbeats, 1)},
		Change: Change{CompleteBy: completeBy, CountHeartbeat: true}}
}

// HeartbeatRefused decides what err, the refusal of heartbeat t, means,
// from the order the write found. Only the attempt's fence is a reason to
// stop (ErrStale): a deadline already as late (another heartbeat, a
// Supervisor's deferral) is as good, and returns the record as stored; at
// the limit the attempt goes on until the deadline it has
// (ErrHeartbeatLimit, with the record). Any other error is returned as it
// is.
func HeartbeatRefused(t Transition, err error) (StepState, error) {
	f, ok := FoundBy(err)
	fenced := t.Guard
	fenced.EarlierThan, fenced.BeatsBelow = time.Time{}, 0
	if !ok || !fenced.Holds(t.Record, t.At, f) {
		return StepState{}, err
	}
	r, _ := f.Record()
	if !r.CompleteBy.Before(t.Change.CompleteBy) {
		return r, nil
	}
	return r, fmt.Errorf("heartbeat of step %s of order %s: %d heartbeats used: %w", r.Step, r.OrderID, r.Heartbeats, ErrHeartbeatLimit)
}

// LeaseAlert takes an unsent alert for its finder to send: the
// Supervisor's next look moves to until, only while the alert is pending
// and DueAt is where the finder found it, so of two Supervisors that found
// the same alert one sends it and the other's write is stale.
func LeaseAlert(st StepState, until, now time.Time) Transition {
	return Transition{Name: "lease alert", Record: st, At: now,
		Guard: Guard{State: st.ProcessState, AlertPending: true, SameDueAt: true}, Change: Change{DueAt: until}}
}

// ClearAlert records that operators were alerted, as st recorded the alert
// (its kind, on its attempt). An order in Error then leaves the due index;
// a record still Pending stays watched.
func ClearAlert(st StepState, now time.Time) Transition {
	return Transition{Name: "clear alert", Record: st, At: now,
		Guard:  Guard{State: st.ProcessState, AlertPending: true, SameAlertKind: true},
		Change: Change{ClearAlert: true, Unwatch: st.ProcessState == Error}}
}

// Reschedule moves the Supervisor's next look at an order to dueAt, when
// it found the active record still inside its window (DueAt lags behind
// deadlines on the happy path, to save index writes), while the record's
// deadline is as the Supervisor found it.
func Reschedule(st StepState, dueAt, now time.Time) Transition {
	return Transition{Name: "reschedule", Record: st, At: now,
		Guard: Guard{State: st.ProcessState, SameCompleteBy: true}, Change: Change{DueAt: dueAt}}
}

// MoveVersion is an operator's explicit move of an order parked under a
// workflow version the build lacks to version to, while it is still on
// its version and its active record (nil: none) is as read. The
// Supervisor looks at a running order at once.
func MoveVersion(o Order, active *StepState, to string, now time.Time) Transition {
	t := Transition{Name: "move version", Record: StepState{OrderID: o.ID, Index: -1}, At: now,
		Guard: Guard{Version: o.Version}, Change: Change{Version: to}}
	if active != nil {
		t.Record, t.Guard.State = *active, active.ProcessState
		if active.ProcessState != Error {
			t.Change.DueAt = now
		}
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
		if st.ProcessState == Pending {
			// A held order whose workflow is still paused: looked at
			// again later, still not announced.
			expired.Unlocked = true
			return Transition{Name: "keep held", Record: st, At: now, Guard: expired, Change: Change{
				CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Reason: r.Reason}}, true
		}
		t := Transition{Name: "defer", Record: st, At: now, Guard: expired, Change: Change{
			CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Deferrals: st.Deferrals + 1, Reason: r.Reason}}
		if r.Paused {
			t.Change.Deferrals = 0 // as it was
		}
		return t, true
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
		if r.Release {
			// Its workflow's pause ended: announced for the first time,
			// no nudge counted.
			return Transition{Name: "release hold", Record: st, At: now, Guard: expired, Change: Change{
				State: Pending, CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Announce: true, Release: true, Reason: r.Reason}}, true
		}
		t := Transition{Name: "nudge", Record: st, At: now, Guard: expired, Change: Change{
			State: Pending, CompleteBy: r.CompleteBy, DueAt: r.CompleteBy, Announce: true, CountNudge: true}}
		if r.AlertOperators {
			t.Change.Alert, t.Change.Reason = AlertStepUnclaimed, r.Reason
		}
		return t, true
	}
	return Transition{}, false
}

// Holds reports whether t's guard holds for the order as stored: the
// adapter's write lands exactly when this is true.
func (t Transition) Holds(f Found) bool { return t.Guard.Holds(t.Record, t.At, f) }

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
	if c.Claim != "" {
		r.LockedBy, r.Attempt, r.Deferrals, r.Heartbeats, r.Parked = c.Claim, r.Attempt+1, 0, 0, ""
	}
	if c.Claim != "" || c.ClearAlert {
		r.AlertPending, r.AlertKind = false, ""
	}
	if c.Cancel {
		r.CancelRequested = true
	}
	if c.Wait {
		r.Attempt, r.Since = r.Attempt+1, t.At
	}
	if c.Await {
		r.Since = t.At
	}
	switch {
	case c.StatusURL != "":
		r.StatusURL = c.StatusURL
	case c.State != "" && c.State != Waiting:
		r.StatusURL = ""
	}
	if c.CountHeartbeat {
		r.Heartbeats++
	}
	if c.Unwatch {
		r.DueAt = time.Time{}
	}
	if c.Version != "" {
		r.Version, r.Parked = c.Version, ""
	}
	if c.Reference != "" {
		r.Reference = c.Reference
	}
	if len(c.Result) > 0 {
		r.Result = c.Result
	}
	if c.Settle {
		r.CompleteBy = time.Time{}
	}
	if c.Fresh {
		r.PastFailures, r.FailureCount, r.Nudges, r.Deferrals, r.Heartbeats = r.PastFailures+r.FailureCount, 0, 0, 0, 0
	}
	if c.UndoFloor > 0 {
		r.UndoFloor = c.UndoFloor
	}
	if c.End != "" {
		r.DueAt = time.Time{}
	}
	if c.TouchesRecord() {
		r.UpdatedAt = t.At
	}
	return r
}

// Active is the index of the record t's write leaves active: the record
// claimed next, the first appended, the step a forward redrive runs
// again, or else the fenced record (also when the write ends the order).
func (t Transition) Active() int {
	c := t.Change
	switch {
	case c.Next != nil:
		return c.Next.Index
	case len(c.Append) > 0:
		return c.Append[0].Index
	case c.Forward != nil:
		return c.Forward.Index
	}
	return t.Record.Index
}

// TouchesRecord reports whether c changes the record itself, which then
// carries the time of the change; a change of the order's alone (a park)
// leaves the record's time as it is.
func (c Change) TouchesRecord() bool {
	return c.State != "" || c.Wait || c.Await || !c.CompleteBy.IsZero() || c.CountFailure || c.CountNudge || c.Releases > 0 || c.Deferrals > 0 ||
		c.CountHeartbeat || c.Reference != "" || len(c.Result) > 0 || c.Settle || c.Fresh
}

// Bookkeeping reports whether c only moves the Supervisor's next look at
// the order (a lease, a reschedule), which leaves the order's time as it
// is: nothing a reader of the order sees changed.
func (c Change) Bookkeeping() bool {
	c.DueAt = time.Time{}
	return reflect.ValueOf(c).IsZero()
}
