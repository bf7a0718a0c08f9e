package order

import "strings"

// A Row is one line of a record's state machine: a record in From, on
// Event, goes to To (the same state when it stays), by the write named
// Write, which the actors in By decide. Guard is what the write holds
// beyond the fence every write has (the active record as found: its
// index, step, state and attempt); Effects is what it changes besides
// the state.
type Row struct {
	From    ProcessState
	Event   string
	To      ProcessState
	By      string
	Write   string
	Guard   string
	Effects string
}

// Lifecycle is every (state, event) of a record, with its next state,
// its guard and its effects: the state machine in one table. Each row is
// decided by one of the domain's functions (Claim, Workflow.Completion,
// Workflow.UndoFault, Recovery.Transition and the others); TestLifecycle
// checks every row against the function that decides it, and the table in
// docs/architecture.md is this one (TestDocsShowTheLifecycle).
var Lifecycle = []Row{
	{Pending, "claimed", Processing, "Scheduler (stream)", "claim",
		"unclaimed; failures as the image showed (they set the allowance); a workflow step's order not cancelled",
		"attempt + 1 (the new fence), the claim's deadline and `DueAt`; the park and a `StepUnclaimed` alert cleared; the request sent"},
	{Pending, "cancelled while waiting", Cancelled, "Scheduler (stream), Supervisor, client's cancel", "start undoing",
		"unclaimed; no undo record yet; the cancel and the undo floor as known (the client's cancel: not cancelled yet)",
		"undo records appended (an earlier attempt's work too), the first claimed or announced; the order Cancelling, or Cancelled with nothing to undo"},
	{Pending, "claim window passed", Pending, "Supervisor", "nudge",
		"deadline passed; unclaimed",
		"a doubled claim window, announced; nudges + 1; a `StepUnclaimed` alert at the 3rd"},
	{Pending, "nudged 8 times", Error, "Supervisor", "give up",
		"deadline passed; unclaimed",
		"the order in Error and the error index; a `StepAbandoned` alert leased to the writer"},
	{Processing, "succeeded", Processed, "Scheduler (reply)", "complete",
		"a workflow step's order not cancelled; the next record NotStarted; `DueAt` no later than its deadline (else the write sets it)",
		"the next record (step, or undo) claimed and its request sent, or the order ends: Processed, or after the last undo Failed or Cancelled; an undo's step Undone"},
	{Processing, "succeeded after a cancel", Processed, "Scheduler (reply)", "start undoing",
		"the order cancelled; no undo record yet; the undo floor as known",
		"the reference kept; its own work undone first, then the rest; the order Cancelling"},
	{Processing, "permanent fault", Failed, "Scheduler (reply)", "start undoing",
		"no undo record yet; not cancelled or cancelled, as the write finds",
		"the steps before it undone in reverse, the first claimed at once; the order Compensating (Cancelling), or Failed with nothing to undo"},
	{Processing, "permanent fault an operator must see", Error, "Scheduler (reply)", "fail",
		"",
		"an undo's fault, a workflow that stops on failure, or an unusable answer: the order in Error; a `StepFailed` (`UndoFailed`) alert leased to the writer"},
	{Processing, "agent's heartbeat", Processing, "agent", "heartbeat",
		"the new deadline later than the stored one; fewer heartbeats than the step allows",
		"the deadline moved on; heartbeats + 1 (a refusal: the attempt is over, or the limit is reached)"},
	{Processing, "agent gave up at its deadline", Processing, "agent", "record the agent gave up",
		"",
		"deferrals at their maximum: the timeout is not back-pressure"},
	{Processing, "request could not be sent", Pending, "its claimer", "release",
		"the claim is the writer's",
		"a claim window; releases + 1; announced the first 2 times, then left to the Supervisor"},
	{Processing, "client's cancel", Processing, "client", "cancel",
		"not cancelled yet",
		"the order Cancelling: the step finishes or times out, then the work done is undone"},
	{Processing, "deadline passed, its queue backlogged", Processing, "Supervisor", "defer",
		"deadline passed",
		"the deadline moved on (backing off); deferrals + 1, at most 6"},
	{Processing, "deadline passed", Pending, "Supervisor", "retry",
		"deadline passed; a workflow step's order not cancelled",
		"a claim window, announced; failures + 1 (not when the request was never sent)"},
	{Processing, "last timeout, compensated", Failed, "Supervisor", "start undoing",
		"deadline passed; no undo record yet",
		"failures + 1; its own work and the steps before it undone; the order Compensating (Cancelling)"},
	{Processing, "last timeout an operator must see", Error, "Supervisor", "fail",
		"deadline passed",
		"failures + 1; the order in Error; a `StepTimedOut` (`UndoTimedOut`) alert leased to the writer"},
	{Error, "operator's redrive", Pending, "operator", "redrive",
		"the order in Error with its records as counted",
		"a fresh failure count (the old one added to `PastFailures`), the attempt going on, announced; the order running again"},
	{Error, "operator's retry over an undo that did nothing", Pending, "operator", "redrive",
		"the order in Error with its records as counted; the failed step Failed; not cancelled",
		"the undo records dropped, the undo floor raised over their attempts; the failed step runs again"},
	{Error, "operator's compensate", Failed, "operator", "start undoing",
		"no undo record yet; the undo floor as known",
		"its own work and the steps before it undone; out of the error index"},
	{"any", "build lacks the order's version", "same", "Supervisor, agent", "park",
		"not parked for this version; with the alert, no alert pending (the agent writes the mark alone while another waits)",
		"the next look moved on; the `Parked` mark and a `VersionUnknown` alert, once per version"},
	{"any", "unsent alert found", "same", "Supervisor", "lease alert",
		"an alert pending; `DueAt` as found",
		"the next look at the lease's end: one Supervisor sends it"},
	{"any", "alert sent", "same", "Scheduler, Supervisor", "clear alert",
		"an alert pending, of the kind found",
		"the alert cleared; an order in Error leaves the due index"},
	{"any", "found inside its window", "same", "Supervisor", "reschedule",
		"the deadline as found",
		"`DueAt` moved to the deadline"},
	{"any", "operator's version move", "same", "operator", "move version",
		"the order on its version",
		"the new version; the park cleared; the next look now (unless in Error)"},
}

// Markdown is r as a row of the table in docs/architecture.md.
func (r Row) Markdown() string {
	cell := func(s string) string {
		if s == "" {
			return "–"
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	return "| " + strings.Join([]string{string(r.From), cell(r.Event), string(r.To), cell(r.By), "`" + r.Write + "`", cell(r.Guard), cell(r.Effects)}, " | ") + " |"
}
