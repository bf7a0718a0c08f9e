package order

import (
	"fmt"
	"time"
)

// Action is what the Supervisor does about a step that needs attention.
type Action int

// Actions, in the order a Supervisor considers them.
const (
	// Leave the step alone: its deadline has not passed.
	Leave Action = iota
	// Retry resets a timed-out step to Pending so a Scheduler claims it again.
	Retry
	// Fail marks a step that timed out FailureThreshold times as Error.
	Fail
	// Nudge re-announces a Pending step nobody claimed in time.
	Nudge
	// SendAlert publishes an operator alert that was recorded but not yet sent.
	SendAlert
	// Defer moves the deadline of a step whose request is most likely
	// still waiting in a backlogged queue: back-pressure, not a failure.
	Defer
	// Compensate ends a workflow step (it failed for good, or its order
	// was cancelled) and starts undoing the work done, in reverse.
	Compensate
	// EndWait ends the wait of a step that waits, whose time is up: the
	// step is Processed and the next one starts (Workflow.WaitEnded).
	EndWait
	// Poll checks the status URL of a step whose service is polled, due
	// for its next check inside its wait (Workflow.PollSent, then a poll
	// request to its agent).
	Poll
)

func (a Action) String() string {
	return [...]string{"leave", "retry", "fail", "nudge", "alert", "defer", "compensate", "end wait", "poll"}[a]
}

// MaxDeferrals bounds how often one attempt's deadline is moved because
// its agent's queue has a backlog; after that a timeout counts as one.
// Each deferral moves the deadline on by the attempt's allowance, doubled
// for every deferral before it up to MaxDeferralBackoff doublings, so a
// long backlog costs the Supervisor a few reads and writes per step, not
// one every allowance. The backlog is the queue's, not the request's: a
// request that was lost (a crash between claim and send, a dropped
// message) looks the same while other requests wait, which is why the
// count is bounded: such a request is retried at most 47 allowances late.
const (
	MaxDeferrals       = 6
	MaxDeferralBackoff = 4
)

// Backlog is what the queues say about a Processing step past its
// deadline: whether its request, or its reply, most likely still waits in
// one.
type Backlog int

const (
	// NoBacklog: nothing waits in the agent's queue nor in the response
	// queue, so the step timed out.
	NoBacklog Backlog = iota
	// Queued: requests wait in the agent's queue, or replies in the
	// response queue (back-pressure); the step's most likely does too,
	// though a lost request looks the same.
	Queued
	// Held: the agent holds requests in its queue because its circuit
	// breaker is open: its remote service fails call after call, or
	// refuses the agent's configuration. No attempt is being spent, and the
	// agent probes the service meanwhile.
	Held
	// Paused: an operator paused the agent's service (see Pause), and the
	// agent holds its requests in its queue as behind an open circuit.
	Paused
)

// A Pending step that no Scheduler claims is re-announced (nudged) with a
// claim window that doubles each time, from ClaimWithin up to
// ClaimWithin << MaxNudgeBackoff. Operators are alerted once, at the
// UnclaimedAlertAfter-th nudge. After UnclaimedGiveUpAfter nudges the step
// and its order end in Error with an alert, so no order waits forever:
// by default about 48 × ClaimWithin after the first deadline.
const (
	UnclaimedAlertAfter  = 3
	UnclaimedGiveUpAfter = 8
	MaxNudgeBackoff      = 3
)

// Recovery is the Supervisor's decision about one step.
type Recovery struct {
	Action Action
	// CompleteBy is the new deadline for Retry and Nudge.
	CompleteBy time.Time
	// Reason explains the decision for the step's LastError and the alert.
	Reason string
	// AlertOperators is set when a Nudge has gone on long enough that a
	// person should look.
	AlertOperators bool
	// AlertKind is the alert a Fail raises.
	AlertKind AlertKind
	// MayHaveRun says, for Compensate, that the step's own work may have
	// been done (it timed out), so it is undone too.
	MayHaveRun bool
	// Paused says, for Defer, that the step's service is paused: the
	// deferral is not counted, so a long pause leaves the step's
	// back-pressure allowance (MaxDeferrals) and backoff as they were.
	Paused bool
	// Release says, for Nudge, that the step of an order held by its
	// workflow's pause is announced for the first time, the pause over.
	Release bool
	// NotAFailure says, for Retry, that the attempt is sent again without
	// counting a failure against the step: its request may have been
	// dropped by a build that lacked the order's workflow version.
	NotAFailure bool
}

// Assess decides what the Supervisor does about a step. Expiry is checked
// before anything else, so a step inside its CompleteBy window is never
// touched, however often it failed before. backlog says what the queues
// hold for a Processing step past its deadline. Queued: it most likely
// waits there too, and its deadline is moved on instead of counting a
// failure (up to MaxDeferrals times). Held (or Paused, by an operator): its agent holds requests
// behind an open circuit, so the step's deadline is moved on however long
// that lasts: an outage, or a configuration the remote service refuses,
// is not the order's failure and never compensates it. A cancel still
// compensates such a step.
func (w Workflow) Assess(s StepState, now time.Time, backlog Backlog) Recovery {
	// An unsent alert goes first, except that a Pending step past its
	// deadline is re-announced even so (the Supervisor sends the alert
	// with the nudge), so a publish that keeps failing holds nothing up.
	if s.AlertPending && (s.ProcessState != Pending || !s.Expired(now.Add(-w.SkewGrace))) {
		// The actor that recorded the alert (or a Supervisor that leased
		// it) holds it until DueAt: a Supervisor that reads the order
		// meanwhile leaves it, or both would send it.
		if s.DueAt.After(now) {
			return Recovery{Action: Leave}
		}
		return Recovery{Action: SendAlert, Reason: s.LastError}
	}
	// A cancelled order's step that waits for a claim is not run (again).
	if s.CancelRequested && !s.Undo && s.ProcessState == Pending {
		c := CancelUnclaimed(s)
		return Recovery{Action: Compensate, MayHaveRun: c.MayHaveRun, Reason: c.Reason}
	}
	// A wait ends at its time: no reply is on its way, and the due index
	// is read SkewGrace late already.
	if s.ProcessState == Waiting {
		return w.assessWait(s, now, backlog)
	}
	// A deadline counts as passed only SkewGrace after it: the actor that
	// set it may run on a clock behind this one, and a reply sent inside
	// the window may still be on its way.
	if !s.Expired(now.Add(-w.SkewGrace)) {
		return Recovery{Action: Leave}
	}
	switch s.ProcessState {
	case Processing:
		def, ok := w.Step(s.Step)
		if !ok {
			return Recovery{Action: Fail, AlertKind: AlertStepFailed, Reason: fmt.Sprintf("step %q is not in the workflow", s.Step)}
		}
		if s.CancelRequested && !s.Undo {
			// A cancel lets the step in flight finish or time out; it
			// timed out, so its work, if done, is undone too.
			return Recovery{Action: Compensate, MayHaveRun: true, Reason: fmt.Sprintf(
				cancelledTimedOut+"%d timed out: no reply by %s", s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano))}
		}
		if s.Parked != "" && s.Parked == s.Version {
			// The attempt was in flight while a build without its
			// version ran, whose agents drop such a request without
			// calling or replying: no queue says whether it is still
			// there, and a rollback is not the step's failure.
			return Recovery{Action: Retry, NotAFailure: true, CompleteBy: now.Add(w.ClaimWithin), Reason: fmt.Sprintf(
				"attempt %d not answered by %s; it was in flight while a build without workflow version %s ran, whose agents drop such requests unanswered: sent again, no failure counted",
				s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano), Ref(s.Workflow, s.Version))}
		}
		deferTo := now.Add(def.AllowanceFor(s.FailureCount) << min(s.Deferrals, MaxDeferralBackoff))
		switch {
		case backlog == Paused:
			return Recovery{Action: Defer, CompleteBy: now.Add(def.AllowanceFor(s.FailureCount) * PausedDeferral), Paused: true, Reason: fmt.Sprintf(
				"attempt %d not answered by %s while service %s is paused by an operator (its agent holds requests in its queue): deadline moved on, no failure counted",
				s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano), def.Agent)}
		case backlog == Held:
			return Recovery{Action: Defer, CompleteBy: deferTo, Reason: fmt.Sprintf(
				"attempt %d not answered by %s while the %s agent holds requests in its queue (its circuit breaker is open: the remote service is down or refuses its configuration): deadline moved on, no failure counted",
				s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano), def.Agent)}
		case backlog == Queued && s.Deferrals < MaxDeferrals:
			return Recovery{Action: Defer, CompleteBy: deferTo, Reason: fmt.Sprintf(
				"attempt %d not answered by %s while the %s queue has a backlog: deadline moved on (back-pressure, not a failure)",
				s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano), def.Agent)}
		}
		reason := fmt.Sprintf("attempt %d timed out: no reply by %s", s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano))
		if s.FailureCount+1 >= def.FailureThreshold {
			reason = fmt.Sprintf("%s; %d of %d allowed timeouts used", reason, s.FailureCount+1, def.FailureThreshold)
			switch {
			case s.Undo:
				return Recovery{Action: Fail, AlertKind: AlertUndoTimedOut, Reason: "undo: " + reason}
			case w.StopOnFailure:
				return Recovery{Action: Fail, AlertKind: AlertStepTimedOut, Reason: reason}
			}
			return Recovery{Action: Compensate, MayHaveRun: true, Reason: reason}
		}
		return Recovery{Action: Retry, CompleteBy: now.Add(w.ClaimWithin), Reason: reason}
	case Pending:
		if s.Held {
			return w.assessHeld(s, now, backlog)
		}
		since := s.CompleteBy.UTC().Format(time.RFC3339Nano)
		if s.Nudges >= UnclaimedGiveUpAfter {
			return Recovery{Action: Fail, AlertKind: AlertStepAbandoned, Reason: fmt.Sprintf(
				"no Scheduler claimed the step after %d re-announcements (the last deadline was %s); the order is given up",
				s.Nudges, since)}
		}
		return Recovery{
			Action:     Nudge,
			CompleteBy: now.Add(w.ClaimWithin << min(s.Nudges, MaxNudgeBackoff)),
			Reason: fmt.Sprintf("pending and unclaimed since before %s; re-announced %d times",
				since, s.Nudges+1),
			AlertOperators: s.Nudges+1 == UnclaimedAlertAfter,
		}
	}
	return Recovery{Action: Leave}
}

// PausedDeferral is how many allowances a paused service's step's
// deadline is moved on by, each time the Supervisor finds it past: a
// write every few allowances while the pause lasts, and a request lost
// meanwhile is sent again within as long after the resume.
const PausedDeferral = 4

// HeldRecheck is how often the Supervisor looks at an order held by its
// workflow's pause: each look costs one write, and a resume releases the
// order at the first look after it.
const HeldRecheck = 2 * time.Minute

// assessHeld decides about the first step of an order accepted while its
// workflow was paused with submissions held (StepState.Held): while the
// workflow is still paused (backlog Paused), it is looked at again
// HeldRecheck later, never nudged nor given up; once resumed, it is
// announced (released) and runs as any new order.
func (w Workflow) assessHeld(s StepState, now time.Time, backlog Backlog) Recovery {
	if backlog == Paused {
		return Recovery{Action: Defer, CompleteBy: now.Add(HeldRecheck), Reason: fmt.Sprintf(
			"held: workflow %s is paused; the order starts when it is resumed", w.Name)}
	}
	return Recovery{Action: Nudge, Release: true, CompleteBy: now.Add(w.ClaimWithin), Reason: fmt.Sprintf(
		"released: workflow %s is no longer paused", w.Name)}
}

// assessWait decides about a Waiting step: nothing before its time; then
// a timer ends, and so does an event's wait that goes on without it; an
// event that did not arrive fails the step like a permanent fault (it
// did no work, so only the steps before it are undone), or stops the
// order in Error for an operator when the workflow says so.
func (w Workflow) assessWait(s StepState, now time.Time, backlog Backlog) Recovery {
	def, ok := w.Step(s.Step)
	switch {
	case ok && def.Async() && s.Expired(now) && backlog == Paused:
		// Its service is paused: it can neither call back nor answer
		// a check, and that is not its failure.
		return Recovery{Action: Defer, CompleteBy: now.Add(def.AllowanceFor(s.FailureCount) * PausedDeferral), Paused: true, Reason: fmt.Sprintf(
			"attempt %d's wait ended at %s while service %s is paused by an operator: deadline moved on, no failure counted",
			s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano), def.Agent)}
	case ok && def.Poll != nil && !s.Expired(now) && !s.DueAt.After(now):
		return Recovery{Action: Poll}
	case !s.Expired(now):
		return Recovery{Action: Leave}
	case !ok || def.WaitKind() == "":
		return Recovery{Action: Fail, AlertKind: AlertStepFailed, Reason: fmt.Sprintf("step %q is not a step that waits in the workflow", s.Step)}
	case def.Async():
		return w.callbackTimedOut(def, s, now)
	case def.Wait.Event == "" || def.Wait.Continue:
		return Recovery{Action: EndWait}
	}
	reason := fmt.Sprintf(noEvent+"%q by %s", def.Wait.Event, s.CompleteBy.UTC().Format(time.RFC3339Nano))
	if w.StopOnFailure {
		return Recovery{Action: Fail, AlertKind: AlertStepTimedOut, Reason: reason}
	}
	return Recovery{Action: Compensate, Reason: reason}
}

// callbackTimedOut decides about a step whose service did not call back
// by its deadline, or whose status URL did not say the work was done by
// then: a timeout like a reply's, its call made again with the
// same Idempotency-Key until the step's failure threshold; then, since
// the service may have done the work, it is undone with the rest.
func (w Workflow) callbackTimedOut(def StepDef, s StepState, now time.Time) Recovery {
	reason := fmt.Sprintf("attempt %d timed out: no callback by %s", s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano))
	if def.Poll != nil {
		reason = fmt.Sprintf("attempt %d timed out: its status URL did not say the work was done by %s", s.Attempt, s.CompleteBy.UTC().Format(time.RFC3339Nano))
	}
	if s.FailureCount+1 < def.FailureThreshold {
		return Recovery{Action: Retry, CompleteBy: now.Add(w.ClaimWithin), Reason: reason}
	}
	reason = fmt.Sprintf("%s; %d of %d allowed timeouts used", reason, s.FailureCount+1, def.FailureThreshold)
	if w.StopOnFailure {
		return Recovery{Action: Fail, AlertKind: AlertStepTimedOut, Reason: reason}
	}
	return Recovery{Action: Compensate, MayHaveRun: true, Reason: reason}
}
