package order

import (
	"encoding/json"
	"time"
)

// The writes of a step whose service is polled (StepDef.Poll), the
// Asynchronous Request-Reply pattern: its call is accepted (202) with a
// status URL, and orderly checks that URL on the Supervisor's schedule
// until the service says the work is done or failed, or the wait's
// deadline passes. No Lambda runs between two checks. Each write is
// fenced on the record's attempt and on Waiting, so a stale or duplicate
// answer of an earlier check changes nothing.

// PollWait is how a step whose service is polled waits: Timeout from
// when the call was accepted, after which the call is made again with
// the same Idempotency-Key (a timeout like any other); Every is how long
// after a check the next one is made when the service's answer gives no
// Retry-After.
type PollWait struct {
	Timeout, Every time.Duration
}

// The kind of wait of a step whose service is polled (StepDef.WaitKind).
const WaitPoll = "poll"

// MinPollInterval is the least time between two checks of one step,
// whatever Retry-After says: a service cannot make orderly poll it in a
// loop. The Supervisor's schedule spaces checks further apart anyway.
const MinPollInterval = time.Second

// MaxStatusURLBytes bounds a status URL: it is kept in the order's item.
const MaxStatusURLBytes = 2048

// Async reports whether the step's call may be accepted (202) and
// finished later: its service calls back, or is polled.
func (d StepDef) Async() bool { return d.Callback != nil || d.Poll != nil }

// nextPoll is when a step polled d is checked next after now: after
// retryAfter, the service's hint (Every when it gave none), at least
// MinPollInterval on, and never after deadline, when the wait ends.
func (d StepDef) nextPoll(retryAfter time.Duration, now, deadline time.Time) time.Time {
	if retryAfter <= 0 && d.Poll != nil {
		retryAfter = d.Poll.Every
	}
	next := now.Add(max(retryAfter, MinPollInterval))
	if !deadline.IsZero() && next.After(deadline) {
		next = deadline
	}
	return next
}

// PollAccepted is the write of the acceptance of st's call, a step whose
// service is polled, as its agent's reply names it: the record waits on
// the same attempt until now plus the step's timeout, keeping statusURL,
// where the service says how the work goes, and is due for its first
// check after retryAfter (see nextPoll). Like CallAccepted, it holds only
// while the order is not cancelled (see AcceptRefused).
func (w Workflow) PollAccepted(st StepState, statusURL string, retryAfter time.Duration, now time.Time) Transition {
	def, _ := w.Step(st.Step)
	var until time.Time
	if def.Poll != nil {
		until = now.Add(def.Poll.Timeout)
	}
	return Transition{Name: "await poll", Record: st, At: now,
		Guard: Guard{State: Processing, NotCancelled: true},
		Change: Change{State: Waiting, Await: true, CompleteBy: until, DueAt: def.nextPoll(retryAfter, now, until),
			Status: StatusWaiting, StatusURL: statusURL}}
}

// PollSent is the Supervisor's write before it sends a check of st, a
// step whose service is polled, due now: the next look is moved on by
// the step's allowance (the check's window), so a check whose request or
// reply is lost is made again then, and a second Supervisor that read
// the same due time finds the write made (its own is stale). It holds
// only inside the wait, on st's attempt.
func (w Workflow) PollSent(st StepState, now time.Time) Transition {
	def, _ := w.Step(st.Step)
	return Transition{Name: "poll", Record: st, At: now,
		Guard:  Guard{State: Waiting, InTime: true, SameDueAt: true},
		Change: Change{DueAt: def.nextPoll(def.Allowance, now, st.CompleteBy)}}
}

// PollWorking is a check of st's status URL (st.StatusURL, the one the
// check checked) that says the work goes on: the next check is after
// retryAfter (see nextPoll), at statusURL when the service named a new one
// ("" keeps it). It holds only inside the wait, on st's attempt, while the
// status URL is still the one checked: a late check of a URL the service
// moved since says nothing of the work now.
func (w Workflow) PollWorking(st StepState, statusURL string, retryAfter time.Duration, now time.Time) Transition {
	def, _ := w.Step(st.Step)
	return Transition{Name: "poll working", Record: st, At: now,
		Guard:  Guard{State: Waiting, InTime: true, SameStatusURL: true},
		Change: Change{DueAt: def.nextPoll(retryAfter, now, st.CompleteBy), StatusURL: statusURL}}
}

// PollDone is a check of st's status URL (st.StatusURL) that says the
// work is done: reference and result are its answer, the step is
// Processed and the next one starts (claimed by owner, the Scheduler that
// applies the check's reply), or the order ends Processed. It holds only
// inside the wait, on st's attempt, while the status URL is the one
// checked.
func (w Workflow) PollDone(st StepState, reference string, result json.RawMessage, owner string, now time.Time) Completion {
	c := w.Completion(st, reference, result, owner, now)
	c.Arrived = WaitPoll
	return c
}

// PollFailed is a check of st's status URL (st.StatusURL) that says the
// work failed, in a workflow that stops on failure: as CallbackFailed,
// the record and its order go to Error with a StepFailed alert, while the
// status URL is the one checked. Other workflows undo the order's work
// (UndoPollFailed).
func PollFailed(st StepState, reason string, now time.Time) Transition {
	t := CallbackFailed(st, reason, now)
	t.Guard.SameStatusURL = true
	return t
}

// UndoPollFailed is a check of st's status URL (st.StatusURL) that says
// the work failed: as UndoCallbackFailed, the service did no work, so the
// steps before it are undone, while the status URL is the one checked.
func (w Workflow) UndoPollFailed(st StepState, reason string, now time.Time) Undoing {
	u := w.UndoCallbackFailed(st, reason, now)
	u.SameStatusURL = true
	return u
}

// NewPollRequest is the request that asks st's agent to check its
// service's status URL (st's StatusURL) once, within window from now: a
// request with no allowance, so the agent never moves the record's
// deadline, on the record's attempt, so its reply is fenced like any
// other.
func NewPollRequest(o Order, st StepState, window time.Duration, now time.Time) StepRequest {
	r := NewRequest(o, st)
	r.CompleteBy, r.AllowanceMs, r.Poll = now.Add(window), 0, st.StatusURL
	return r
}
