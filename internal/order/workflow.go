package order

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"
)

// StepDef declares one step of a workflow.
type StepDef struct {
	Name string
	// Agent names the agent (and so the request queue) that does the step;
	// empty for a step that waits (Wait), which no agent does.
	Agent string
	// Wait, when set, makes the step one that waits instead of calling a
	// service: it has no agent, no call and nothing to undo.
	Wait *Wait
	// Callback, when set, makes the step's call asynchronous: its service
	// accepts it (202) and calls orderly back when the work is done.
	Callback *CallbackWait
	// Poll, when set, makes the step's call asynchronous another way: its
	// service accepts it (202) with a status URL, which orderly checks on
	// the Supervisor's schedule until the work is done.
	Poll *PollWait
	// When, when set, is the step's condition on the order's input and
	// earlier results: a step whose condition does not hold is Skipped
	// where it would start, and the next one starts instead.
	When Expr
	// Allowance is how long the agent has for the first attempt. Each retry
	// after a timeout gets twice the previous allowance, up to MaxAllowance,
	// so a slow remote service is given more room rather than hammered.
	Allowance    time.Duration
	MaxAllowance time.Duration
	// FailureThreshold is the number of timeouts after which the step is
	// taken as failed for good.
	FailureThreshold int
	// Undo names the step's compensation ("release the reservation"):
	// the agent's undo call, which reverses the step's remote work by the
	// step's idempotency key. Empty means the step has nothing to undo.
	Undo string
	// MaxHeartbeats bounds how often the agent may move one attempt's
	// deadline on (when it starts a request that waited, and every third
	// of the allowance while a long call runs), so an attempt lasts at
	// most about (1 + MaxHeartbeats/3) allowances, and never longer than
	// the agent's own invocation.
	MaxHeartbeats int
	// Call is the remote call that does the step's work, and UndoCall the
	// one that reverses it (zero when Undo is empty): the service takes
	// both with the step's Idempotency-Key.
	Call     Endpoint
	UndoCall Endpoint
	// Carries lists what the call's request body carries: CarriesOrder
	// (the order's input) and the names of earlier steps, whose results
	// go along. UndoCarries is the same for the undo call, which may name
	// the step itself (the charge a refund reverses).
	Carries     []string
	UndoCarries []string
	// ResultMaxBytes bounds the step's answer when it is kept (see
	// Workflow.Keeps); ResultSchema, when set, is the JSON Schema every
	// answer must match. An answer breaking either is a contract fault.
	ResultMaxBytes int
	ResultSchema   json.RawMessage
	// ResultShownToClient shows the step's answer (and its reference) to
	// the order's client; otherwise only operators see it. A service's
	// answer is its own business until the definition says otherwise:
	// a fraud score shown to clients lets a fraudster tune orders until
	// it passes.
	ResultShownToClient bool
}

// Wait is what a step that waits waits for: a durable timer (For), or
// an event (Event). No Lambda runs while a step waits: the Supervisor
// ends a timer, or an event's wait at its timeout, when the order is due.
type Wait struct {
	// For is a durable timer's length: the step is Processed this long
	// after it is reached. Until, instead, gives the time from the
	// order's input and earlier results, bounded by Max after the step is
	// reached (a time in the past ends the wait at once).
	For   time.Duration
	Until Expr
	Max   time.Duration
	// Event names the event the step waits for, sent by the order's
	// client, an operator or a service: its data, checked against Schema
	// (a JSON Schema; none takes any object), is the step's result.
	// Timeout bounds the wait; when no event arrived by then the step
	// fails (and the order is compensated, or stops in Error with
	// StopOnFailure), or, with Continue, is Processed with no result.
	Event    string
	Schema   json.RawMessage
	Timeout  time.Duration
	Continue bool
	// RejectWhen, when set, is a condition on the event's data (and the
	// order's input and results): an event for which it holds is taken,
	// and fails the step like a permanent fault.
	RejectWhen Expr
}

// Kind names what the wait waits for, for people and clients: "timer"
// or "event".
func (w Wait) Kind() string {
	if w.Event != "" {
		return WaitEvent
	}
	return WaitTimer
}

// Length is how long the wait lasts at most: a timer's length, an
// event's timeout.
func (w Wait) Length() time.Duration {
	switch {
	case w.Event != "":
		return w.Timeout
	case w.Until != nil:
		return w.Max
	}
	return w.For
}

// The kinds of wait (Wait.Kind).
const (
	WaitTimer = "timer"
	WaitEvent = "event"
)

// CallbackWait is how long a step whose service calls back waits for
// the callback: Timeout from when the call was accepted, moved on by each
// "working" callback by Timeout again, to at most MaxTimeout after it was
// accepted. A wait that ends with no callback is a timeout like any
// other: the call is made again with the same Idempotency-Key, up to the
// step's failure threshold.
type CallbackWait struct {
	Timeout, MaxTimeout time.Duration
}

// The kind of wait of a step whose service calls back (StepDef.WaitKind).
const WaitCallback = "callback"

// WaitKind names what the step waits for when it is Waiting: "timer",
// "event", "callback" or "poll"; "" for a step that never waits.
func (d StepDef) WaitKind() string {
	switch {
	case d.Wait != nil:
		return d.Wait.Kind()
	case d.Callback != nil:
		return WaitCallback
	case d.Poll != nil:
		return WaitPoll
	}
	return ""
}

// Waits reports whether the step is one that waits.
func (d StepDef) Waits() bool { return d.Wait != nil }

// AwaitsEvent reports whether the step waits for the named event.
func (d StepDef) AwaitsEvent(name string) bool {
	return d.Wait != nil && d.Wait.Event != "" && d.Wait.Event == name
}

// Start is how the step starts once it is reached at now: a step that
// waits goes Waiting until its wait ends; any other goes Processing under
// owner's claim with its first allowance or, with no owner, Pending, to be
// claimed within claimWithin. A timer until a time from the order's data
// (Wait.Until) needs it: see StartOn.
func (d StepDef) Start(owner string, claimWithin time.Duration, now time.Time) (ProcessState, time.Time) {
	state, until, _ := d.StartOn(ExprVars{}, owner, claimWithin, now)
	return state, until
}

// StartOn is Start on the order's data vars, which a timer until a time
// reads: it waits until that time, at most its Max from now; a time
// already past ends it at once (at the Supervisor's next look). A time
// the order's data cannot give (a value it lacks) waits the whole Max,
// and the error says why.
func (d StepDef) StartOn(vars ExprVars, owner string, claimWithin time.Duration, now time.Time) (ProcessState, time.Time, error) {
	switch {
	case d.Wait != nil && d.Wait.Until != nil:
		bound := now.Add(d.Wait.Max)
		t, err := d.Wait.Until.Time(vars)
		if err != nil {
			return Waiting, bound, fmt.Errorf("step %s waits its whole max, %s: its until (%s) has no time for this order: %w", d.Name, d.Wait.Max, d.Wait.Until, err)
		}
		switch {
		case t.Before(now):
			t = now
		case t.After(bound):
			t = bound
		}
		return Waiting, t.UTC().Truncate(time.Millisecond), nil
	case d.Wait != nil:
		return Waiting, now.Add(d.Wait.Length()), nil
	case owner != "":
		return Processing, now.Add(d.AllowanceFor(0)), nil
	}
	return Pending, now.Add(claimWithin), nil
}

// ReadsOrder reports whether the start of the step after done (a
// workflow step) depends on the order's data: its decider reads the order
// and decides the completion on it (Completion.On).
func (w Workflow) ReadsOrder(done StepState) bool {
	if done.Undo {
		return false
	}
	i, ok := w.Index(done.Step)
	return ok && w.readsFrom(i+1)
}

// readsFrom reports whether what starts from index i on depends on the
// order's data: step i has a condition (whether it and the ones after
// it run), or is a timer until a time.
func (w Workflow) readsFrom(i int) bool {
	if i >= len(w.Steps) {
		return false
	}
	d := w.Steps[i]
	// A condition is decided on the data whatever it says; a step without
	// one starts, and only a timer until a time reads the data to start.
	return d.When != nil || d.Wait != nil && d.Wait.Until != nil
}

// Runs decides whether the step runs on the order's data vars: its
// condition holds, or it has none. A condition that cannot be decided
// (it reads a value the order lacks) counts as holding, so that a step
// is never passed by for want of data; the error says why.
func (d StepDef) Runs(vars ExprVars) (bool, error) {
	if d.When == nil {
		return true, nil
	}
	holds, err := d.When.Bool(vars)
	if err != nil {
		return true, fmt.Errorf("step %s runs: its condition (%s) cannot be decided for this order: %w", d.Name, d.When, err)
	}
	return holds, nil
}

// firstRun returns, from index i on, the steps skipped (their conditions
// do not hold on vars) and the index of the first that runs (len(Steps)
// when none does); errs are Runs' errors.
func (w Workflow) firstRun(i int, vars ExprVars) (skip []int, next int, errs []error) {
	for ; i < len(w.Steps); i++ {
		runs, err := w.Steps[i].Runs(vars)
		if err != nil {
			errs = append(errs, err)
		}
		if runs {
			return skip, i, errs
		}
		skip = append(skip, i)
	}
	return skip, i, errs
}

// EventStep returns the step of w that waits for the named event.
func (w Workflow) EventStep(name string) (StepDef, bool) {
	for _, d := range w.Steps {
		if d.AwaitsEvent(name) {
			return d, true
		}
	}
	return StepDef{}, false
}

// CarriesOrder is the item of Carries that is the order's input.
const CarriesOrder = "order"

// DefaultResultMaxBytes bounds a kept result whose step sets no bound;
// MaxResultBytes is the most a step may set, so that results never crowd
// an order's item (400 KB in all).
const (
	DefaultResultMaxBytes = 4 << 10
	MaxResultBytes        = 16 << 10
)

// Carried lists what the request of the step's call, or of its undo call,
// carries.
func (d StepDef) Carried(undo bool) []string {
	if undo {
		return d.UndoCarries
	}
	return d.Carries
}

// Endpoint is a remote service's method and path, relative to the
// service's base URL.
type Endpoint struct {
	Method string
	Path   string
}

// AllowanceFor returns the allowance of the attempt that follows
// failureCount timeouts.
func (d StepDef) AllowanceFor(failureCount int) time.Duration {
	a := d.Allowance
	for i := 0; i < failureCount && a < d.MaxAllowance; i++ {
		a *= 2
	}
	return min(a, max(d.MaxAllowance, d.Allowance))
}

// Workflow is an ordered list of steps. Steps run one after another; undoing
// finished steps runs them in reverse, so order matters.
type Workflow struct {
	// Name names the workflow ("order"), Version this definition of it;
	// an order records both (see Versions). An empty Name is
	// LegacyWorkflow.
	Name    string
	Version string
	// Input is the JSON Schema of what a submission carries.
	Input json.RawMessage
	Steps []StepDef
	// ClaimWithin bounds how long a Pending step may wait for a Scheduler
	// before the Supervisor re-announces it.
	ClaimWithin time.Duration
	// SkewGrace is how long past a deadline the Supervisor waits before it
	// acts: it covers the clock skew allowed between actors and a reply
	// still on its way, so a success inside the window is never lost.
	SkewGrace time.Duration
	// StopOnFailure makes a step that fails for good put the order in
	// Error for an operator (who redrives it forward or into compensation)
	// instead of compensating at once.
	StopOnFailure bool
}

// UndoPlan returns the workflow indexes of the steps to undo, in the order
// they are undone, when the step at index active ends: every step before
// it (they are all Processed, since steps run one after another), from the
// latest back to the first, preceded by the active step itself when its
// work is done or may be (done: a success; or a timeout, whose outcome is
// unknown). Steps without an undo are left out.
func (w Workflow) UndoPlan(active int, activeMayHaveRun bool) []int {
	var plan []int
	from := active - 1
	if activeMayHaveRun {
		from = active
	}
	for i := min(from, len(w.Steps)-1); i >= 0; i-- {
		if w.Steps[i].Undo != "" {
			plan = append(plan, i)
		}
	}
	return plan
}

// Keeps reports whether the named step's answer is stored with the order:
// only when some call's request carries it or its client is shown it, so
// that workflows that pass and show no results pay nothing for them. An
// event's data is always kept: it says who decided what, and a second
// send of the same event is told from a different one by it.
func (w Workflow) Keeps(step string) bool {
	for _, d := range w.Steps {
		if d.Name == step && d.Wait != nil && d.Wait.Event != "" {
			return true
		}
		if reads(d.When, step) || d.Wait != nil && (reads(d.Wait.RejectWhen, step) || reads(d.Wait.Until, step)) {
			return true
		}
		if slices.Contains(d.Carries, step) || slices.Contains(d.UndoCarries, step) || (d.Name == step && d.ResultShownToClient) {
			return true
		}
	}
	return false
}

// reads reports whether e reads the named step's result.
func reads(e Expr, step string) bool { return e != nil && slices.Contains(e.Results(), step) }

// ShowsResult reports whether the order's client is shown the named
// step's answer and reference (StepDef.ResultShownToClient).
func (w Workflow) ShowsResult(step string) bool {
	d, ok := w.Step(step)
	return ok && d.ResultShownToClient
}

// Timing tunes a workflow's deadlines; tests shrink it to run fast.
type Timing struct {
	Allowance        time.Duration
	MaxAllowance     time.Duration
	FailureThreshold int
	ClaimWithin      time.Duration
	// SkewGrace: see Workflow.SkewGrace.
	SkewGrace time.Duration
	// MaxHeartbeats: see StepDef.MaxHeartbeats.
	MaxHeartbeats int
}

// DefaultTiming suits remote services that answer within seconds.
var DefaultTiming = Timing{
	SkewGrace:        5 * time.Second,
	Allowance:        30 * time.Second,
	MaxAllowance:     2 * time.Minute,
	FailureThreshold: 3,
	ClaimWithin:      time.Minute,
	MaxHeartbeats:    10,
}

// Validate checks that the timing makes a workable workflow.
func (t Timing) Validate() error {
	switch {
	case t.Allowance <= 0:
		return fmt.Errorf("allowance %s: must be positive: %w", t.Allowance, ErrInvalid)
	case t.MaxAllowance < t.Allowance:
		return fmt.Errorf("max allowance %s below allowance %s: %w", t.MaxAllowance, t.Allowance, ErrInvalid)
	case t.FailureThreshold < 1:
		return fmt.Errorf("failure threshold %d: must be at least 1: %w", t.FailureThreshold, ErrInvalid)
	case t.ClaimWithin <= 0:
		return fmt.Errorf("claim window %s: must be positive: %w", t.ClaimWithin, ErrInvalid)
	case t.SkewGrace < 0:
		return fmt.Errorf("skew grace %s: must not be negative: %w", t.SkewGrace, ErrInvalid)
	case t.MaxHeartbeats < 0:
		return fmt.Errorf("max heartbeats %d: must not be negative: %w", t.MaxHeartbeats, ErrInvalid)
	}
	return nil
}

// Step returns the definition of the named step.
func (w Workflow) Step(name string) (StepDef, bool) {
	for _, d := range w.Steps {
		if d.Name == name {
			return d, true
		}
	}
	return StepDef{}, false
}

// Index returns the named step's position in the workflow.
func (w Workflow) Index(name string) (int, bool) {
	for i, d := range w.Steps {
		if d.Name == name {
			return i, true
		}
	}
	return 0, false
}

// Next returns the step after the named one; ok is false after the last.
func (w Workflow) Next(name string) (next StepDef, ok bool) {
	i, found := w.Index(name)
	if !found || i+1 >= len(w.Steps) {
		return StepDef{}, false
	}
	return w.Steps[i+1], true
}

// UndoSteps is UndoPlan's steps themselves, in the order they are undone.
func (w Workflow) UndoSteps(active int, activeMayHaveRun bool) []StepDef {
	var defs []StepDef
	for _, i := range w.UndoPlan(active, activeMayHaveRun) {
		defs = append(defs, w.Steps[i])
	}
	return defs
}

// NextUndo returns the workflow step undone after the one at index undid:
// the closest before it that has an undo. ok is false after the last.
func (w Workflow) NextUndo(undid int) (next int, ok bool) {
	for i := min(undid, len(w.Steps)) - 1; i >= 0; i-- {
		if w.Steps[i].Undo != "" {
			return i, true
		}
	}
	return 0, false
}

// Agents lists the distinct agents the workflow uses, in step order
// (steps that wait use none).
func (w Workflow) Agents() []string {
	var agents []string
	seen := map[string]bool{}
	for _, d := range w.Steps {
		if d.Agent != "" && !seen[d.Agent] {
			seen[d.Agent] = true
			agents = append(agents, d.Agent)
		}
	}
	return agents
}

// StartStatus is what a freshly submitted order with records states
// (NewStatesOn's) shows: Pending, or Waiting when its first step that
// runs is one that waits.
func (w Workflow) StartStatus(states []StepState) Status {
	for _, st := range states {
		if st.ProcessState == Waiting {
			return StatusWaiting
		}
		if st.ProcessState != Skipped {
			break
		}
	}
	return StatusPending
}

// NewStates returns the state records of a freshly submitted order: the
// first step already claimed by owner (the submission sends its request
// itself, saving a claim write and a stream hop), or Waiting when it is a
// step that waits; the rest NotStarted.
func (w Workflow) NewStates(orderID, owner string, now time.Time) []StepState {
	states, _ := w.NewStatesOn(orderID, ExprVars{}, owner, now)
	return states
}

// NewStatesOn is NewStates for an order whose input is vars' (a first
// timer until a time reads it); the error is StartOn's.
func (w Workflow) NewStatesOn(orderID string, vars ExprVars, owner string, now time.Time) ([]StepState, error) {
	states := make([]StepState, len(w.Steps))
	for i, d := range w.Steps {
		states[i] = StepState{
			OrderID: orderID, Workflow: w.Name, Version: w.Version, Step: d.Name, Index: i, Agent: d.Agent,
			ProcessState: NotStarted, UpdatedAt: now,
		}
	}
	skip, i, errs := w.firstRun(0, vars)
	for _, k := range skip {
		states[k].ProcessState = Skipped
	}
	if i == len(states) {
		return states, fmt.Errorf("no step of workflow %s version %s runs for this input: every condition is false: %w", w.Name, w.Version, ErrInvalid)
	}
	var err error
	if len(states) > 0 {
		first := &states[i]
		first.ProcessState, first.CompleteBy, err = w.Steps[i].StartOn(vars, owner, w.ClaimWithin, now)
		err = errors.Join(append(errs, err)...)
		first.Attempt = 1
		if first.ProcessState == Waiting {
			first.Since = now
		} else {
			first.LockedBy = owner
		}
	}
	return states, err
}
