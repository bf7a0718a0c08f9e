package order_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// A row is one line of a record's state machine: a record in from, on
// event, goes to to (the same state when it stays), by the write named
// write, which the actors in by decide. guard is what the write holds
// beyond the fence every write has (the active record as found: its
// index, step, state and attempt); effects is what it changes besides
// the state. decide applies the domain's functions that decide the
// row's write to a sample, as the actors call them, and returns each form
// of the write the row's prose describes (a success that claims the next
// record, and one that ends the order): TestLifecycle checks the row's
// states, guard and effects against them.
type row struct {
	from    order.ProcessState
	event   string
	to      order.ProcessState
	by      string
	write   string
	guard   string
	effects string
	decide  func(sample) []order.Transition
}

// sample is what a row's decide applies its functions to: the shipped
// order workflow, and bare, the same steps with no undo (a workflow
// with nothing to undo); waits, the shipped workflow with a timer step
// (cool-off) after its second step, and bareWaits the same with no undo;
// records of its second step in each state, on attempt 2, and of the
// timer Waiting; and two times a minute apart.
type sample struct {
	wf, bare, waits, bareWaits   order.Workflow
	waiting                      order.StepState
	pending, processing, inError order.StepState
	now, later                   time.Time
}

func newSample() sample {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	bare := wf
	bare.Steps = slices.Clone(wf.Steps)
	for i := range bare.Steps {
		bare.Steps[i].Undo = ""
	}
	record := func(ps order.ProcessState) order.StepState {
		return order.StepState{OrderID: order.IDForKey("caller", "", "c-1", "k"), Workflow: wf.Name, Version: "1",
			Step: wf.Steps[1].Name, Index: 1, Agent: wf.Steps[1].Agent, ProcessState: ps, Attempt: 2, LockedBy: "s1"}
	}
	timer := order.StepDef{Name: "cool-off", Wait: &order.Wait{For: time.Hour}}
	waits, bareWaits := wf, bare
	waits.Steps = slices.Insert(slices.Clone(wf.Steps), 2, timer)
	bareWaits.Steps = slices.Insert(slices.Clone(bare.Steps), 2, timer)
	s := sample{wf: wf, bare: bare, waits: waits, bareWaits: bareWaits,
		pending: record(order.Pending), processing: record(order.Processing), inError: record(order.Error),
		now: now, later: now.Add(time.Minute)}
	s.waiting = order.StepState{OrderID: s.pending.OrderID, Workflow: wf.Name, Version: "1", Step: timer.Name, Index: 2,
		ProcessState: order.Waiting, Attempt: 1, Since: now.Add(-time.Hour), CompleteBy: now.Add(-time.Second)}
	s.pending.LockedBy, s.inError.LockedBy = "", ""
	s.inError.AlertPending, s.inError.AlertKind = true, order.AlertStepFailed
	return s
}

// holds is a condition that holds, or not, whatever the order's data.
type holds bool

func (h holds) Bool(order.ExprVars) (bool, error)      { return bool(h), nil }
func (h holds) Time(order.ExprVars) (time.Time, error) { return time.Time{}, nil }
func (h holds) Results() []string                      { return nil }
func (h holds) String() string                         { return fmt.Sprint(bool(h)) }

// waitingFor is a workflow and its record, Waiting, of a step that waits
// for an event.
type waitingFor struct {
	wf order.Workflow
	st order.StepState
}

// event is s.wf with a step that waits for the event "review" at index
// at (going on without it when goesOn), and its record Waiting, its
// deadline between s.now and s.later.
func (s sample) event(at int, goesOn bool) waitingFor {
	wf := s.wf
	wf.Steps = slices.Insert(slices.Clone(s.wf.Steps), at, order.StepDef{Name: "manual-review", Wait: &order.Wait{Event: "review", Timeout: time.Hour, Continue: goesOn}})
	st := s.waiting
	st.Step, st.Index, st.CompleteBy = "manual-review", at, s.now.Add(time.Second)
	return waitingFor{wf, st}
}

// callback is s.wf with its second step's service calling back, within an
// hour and at most two, and that step's record in state ps (Waiting since
// a minute before s.now, its deadline between s.now and s.later).
func (s sample) callback(ps order.ProcessState) waitingFor {
	wf := s.wf
	wf.Steps = slices.Clone(s.wf.Steps)
	wf.Steps[1].Callback = &order.CallbackWait{Timeout: time.Hour, MaxTimeout: 2 * time.Hour}
	st := s.processing
	if ps == order.Waiting {
		st.ProcessState, st.LockedBy, st.Since, st.CompleteBy = order.Waiting, "", s.now.Add(-time.Minute), s.now.Add(time.Second)
	}
	return waitingFor{wf, st}
}

// polled is s.callback with the second step's service polled instead:
// within an hour, checked every minute when it gives no Retry-After.
func (s sample) polled(ps order.ProcessState) waitingFor {
	c := s.callback(ps)
	c.wf.Steps[1].Callback, c.wf.Steps[1].Poll = nil, &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	c.st.StatusURL = "https://payments.example/status/1"
	c.st.DueAt = s.now.Add(-time.Millisecond)
	return c
}

// step is st as the record of the workflow's step i, in state ps.
func (s sample) step(st order.StepState, i int, ps order.ProcessState) order.StepState {
	st.Step, st.Index, st.Agent, st.ProcessState = s.wf.Steps[i].Name, i, s.wf.Steps[i].Agent, ps
	if ps != order.Processing {
		st.LockedBy = ""
	}
	return st
}

// undo is st as the undo record at index of the workflow's step i, in
// state ps.
func (s sample) undo(st order.StepState, i, index int, ps order.ProcessState) order.StepState {
	st = s.step(st, i, ps)
	st.Undo, st.Index = true, index
	return st
}

// cancelled is records, of an order the client cancelled: every record
// carries the order's cancel.
func cancelled(records ...order.StepState) []order.StepState {
	records = slices.Clone(records)
	for i := range records {
		records[i].CancelRequested = true
	}
	return records
}

// refused is the refusal of a write that found records, the one at
// active the active record: what the actor that made it asks Again about.
func refused(active int, records ...order.StepState) error {
	return &order.StaleWrite{Found: order.Found{Status: order.StatusProcessing, Active: active, Steps: records}}
}

// forms returns its arguments: the forms of a row's write.
func forms(ts ...order.Transition) []order.Transition { return ts }

// supervised is the Supervisor's write for r about st; a recovery that
// is not one record's write decides none (a zero Transition).
func supervised(r order.Recovery, st order.StepState, now time.Time) order.Transition {
	tr, _ := r.Transition(st, now)
	return tr
}

// undoing is u's write at now. The Scheduler claims the first undo
// itself (Undoing.ClaimedBy); the Supervisor and control announce it. A
// sample that is not a workflow step's is a broken test: it panics.
func undoing(u order.Undoing, now time.Time) order.Transition {
	tr, err := u.Transition(now)
	if err != nil {
		panic(err)
	}
	return tr
}

// undoingAgain is u's write made again after a refusal that found
// records (see Undoing.Again).
func undoingAgain(u order.Undoing, now time.Time, active int, records ...order.StepState) order.Transition {
	u, err := u.Again(refused(active, records...), now)
	if err != nil {
		panic(err)
	}
	return undoing(u, now)
}

// completedAgain is c's write made again after a refusal that found
// records (see Completion.Again).
func completedAgain(c order.Completion, now time.Time, active int, records ...order.StepState) order.Transition {
	c, err := c.Again(refused(active, records...), now)
	if err != nil {
		panic(err)
	}
	return c.Transition(now)
}

// redriven is an operator's redrive with action of an order in Error with
// records, as control makes it: the stuck record or the failed workflow
// step runs again (order.Resume), or the stuck step's work is undone.
func (s sample) redriven(wf order.Workflow, action string, records ...order.StepState) order.Transition {
	p, err := order.PlanRedrive(order.StatusError, records, action)
	if err != nil {
		panic(err)
	}
	claimBy, reason := s.now.Add(wf.ClaimWithin), order.RedriveReason(p.Action)
	switch p.Move {
	case order.UndoFromStuck:
		return undoing(wf.UndoFromError(p.Stuck, reason, s.now), s.now)
	case order.RunForward:
		forward := p.Forward
		return order.Resume{Step: p.Stuck, Forward: &forward, Steps: len(wf.Steps), Records: len(records),
			UndoFloor: p.UndoFloor, Status: p.Status, ClaimBy: claimBy, Reason: reason}.Transition(s.now)
	}
	return order.Resume{Step: p.Stuck, Status: p.Status, ClaimBy: claimBy, Reason: reason, Records: len(records)}.Transition(s.now)
}

// lifecycle is every (state, event) of a record, with its next state,
// its guard and its effects: the state machine in one table, and the
// table of transitions in docs/architecture.md (TestDocsShowTheLifecycle).
// It is a test's table: no binary needs it.
var lifecycle = []row{
	{order.Pending, "claimed", order.Processing, "Scheduler (stream)", "claim",
		"unclaimed; failures as the image showed (they set the allowance); a workflow step's order not cancelled",
		"attempt + 1 (the new fence), the claim's deadline and `DueAt`; the park and a `StepUnclaimed` alert cleared; the request sent",
		func(s sample) []order.Transition { return forms(order.Claim(s.pending, "s1", s.later, s.now)) }},
	{order.Pending, "cancelled while waiting", order.Cancelled, "Scheduler (stream), Supervisor, client's cancel", "start undoing",
		"unclaimed; no undo record yet; the order cancelled (the client's cancel: not cancelled yet); the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended (an earlier attempt's work too), the first claimed at once or announced, the next look at the first's deadline, in the due index; the order Cancelling, or ends Cancelled with nothing to undo; the client's: the cancel recorded",
		func(s sample) []order.Transition {
			waiting := s.pending
			waiting.CancelRequested = true
			return forms(
				undoing(s.wf.UndoUnclaimed(waiting, false, s.now).ClaimedBy("s1", s.now), s.now),
				undoing(s.wf.UndoRecovery(waiting, s.wf.Assess(waiting, s.now, order.NoBacklog), s.now), s.now),
				undoing(s.wf.UndoUnclaimed(s.pending, true, s.now), s.now),
				undoing(s.bare.UndoUnclaimed(waiting, false, s.now).ClaimedBy("s1", s.now), s.now))
		}},
	{order.Pending, "claim window passed", order.Pending, "Supervisor", "nudge",
		"deadline passed; unclaimed",
		"a doubled claim window and the next look at its end, announced; nudges + 1; a `StepUnclaimed` alert at the 3rd",
		func(s sample) []order.Transition {
			return forms(supervised(order.Recovery{Action: order.Nudge, CompleteBy: s.later, AlertOperators: true, Reason: "unclaimed"}, s.pending, s.now))
		}},
	{order.Pending, "nudged 8 times", order.Error, "Supervisor", "give up",
		"deadline passed; unclaimed",
		"the order in Error and the error index; a `StepAbandoned` alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(supervised(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepAbandoned, Reason: "abandoned"}, s.pending, s.now))
		}},
	{order.Pending, "held, its workflow still paused", order.Pending, "Supervisor", "keep held",
		"deadline passed; unclaimed",
		"the deadline and the next look 2 minutes on; no Scheduler told",
		func(s sample) []order.Transition {
			held := s.pending
			held.Held, held.LockedBy, held.CompleteBy = true, "", s.now
			return forms(supervised(s.wf.Assess(held, s.later, order.Paused), held, s.later))
		}},
	{order.Pending, "held, its workflow resumed", order.Pending, "Supervisor", "release hold",
		"deadline passed; unclaimed",
		"a claim window and the next look at its end, announced; the hold cleared",
		func(s sample) []order.Transition {
			held := s.pending
			held.Held, held.LockedBy, held.CompleteBy = true, "", s.now
			return forms(supervised(s.wf.Assess(held, s.later, order.NoBacklog), held, s.later))
		}},
	{order.Processing, "succeeded", order.Processed, "Scheduler (reply)", "complete",
		"a workflow step's order not cancelled; the next record NotStarted; `DueAt` no later than its deadline (else the write sets it); after the last undo, the order cancelled or not cancelled, as the write knows",
		"its reference and its result (when kept) recorded, no deadline left; the next record (step, or undo) claimed and its request sent, `DueAt` lowered to its deadline when it was later, the order Processing after a workflow step; or the order ends Processed, or after the last undo ends Failed or ends Cancelled; an undo's step Undone",
		func(s sample) []order.Transition {
			done, last := s.processing, s.step(s.processing, 2, order.Processing)
			undo, lastUndo := s.undo(s.processing, 1, 3, order.Processing), s.undo(s.processing, 0, 4, order.Processing)
			late := done
			late.DueAt = s.later.Add(time.Hour)
			undone := []order.StepState{s.step(done, 0, order.Processed), s.step(done, 1, order.Failed), s.step(done, 2, order.NotStarted),
				s.undo(done, 1, 3, order.Processed), lastUndo}
			return forms(
				s.wf.Completion(done, "ref-1", json.RawMessage(`{"charge":"c-1"}`), "s1", s.now).Transition(s.now),
				// DueAt was later than the next step's deadline.
				completedAgain(s.wf.Completion(done, "ref-1", nil, "s1", s.now), s.now,
					1, s.step(done, 0, order.Processed), late, s.step(done, 2, order.NotStarted)),
				s.wf.Completion(last, "ref-3", nil, "s1", s.now).Transition(s.now),
				s.wf.Completion(undo, "", nil, "s1", s.now).Transition(s.now),
				s.wf.Completion(lastUndo, "", nil, "s1", s.now).Transition(s.now),
				// The client cancelled the order: it ends Cancelled.
				completedAgain(s.wf.Completion(lastUndo, "", nil, "s1", s.now), s.now, 4, cancelled(undone...)...))
		}},
	{order.Processing, "succeeded, the next step's condition false", order.Processed, "Scheduler (reply)", "complete",
		"a workflow step's order not cancelled; the next record NotStarted; `DueAt` no later than its deadline (else the write sets it)",
		"its reference and its result (when kept) recorded, no deadline left; the steps whose conditions do not hold skipped, the next record that runs claimed and its request sent, the order Processing; or the order ends Processed",
		func(s sample) []order.Transition {
			skips := func(i int) order.Workflow {
				wf := s.wf
				wf.Steps = slices.Clone(s.wf.Steps)
				wf.Steps[i].When = holds(false)
				return wf
			}
			decided := func(wf order.Workflow, done order.StepState) order.Transition {
				c, err := wf.Completion(done, "ref-1", json.RawMessage(`{"n":1}`), "s1", s.now).On(order.ExprVars{}, s.now)
				if err != nil {
					panic(err)
				}
				return c.Transition(s.now)
			}
			return forms(decided(skips(1), s.step(s.processing, 0, order.Processing)), decided(skips(2), s.processing))
		}},
	{order.Processing, "succeeded, the next step waits", order.Processed, "Scheduler (reply)", "complete",
		"a workflow step's order not cancelled; the next record NotStarted",
		"its reference and its result (when kept) recorded, no deadline left; the next record waits, claimed by nobody, on an attempt one up, until its wait ends, `DueAt` at that end; the order Waiting",
		func(s sample) []order.Transition {
			return forms(s.waits.Completion(s.processing, "ref-1", json.RawMessage(`{"charge":"c-1"}`), "s1", s.now).Transition(s.now))
		}},
	{order.Pending, "claimed, a step that waits", order.Waiting, "Scheduler (stream)", "start wait",
		"unclaimed; the order not cancelled",
		"starts waiting on an attempt one up, no request sent: the deadline and `DueAt` at the wait's end; the order Waiting",
		func(s sample) []order.Transition {
			redriven := s.waiting
			redriven.ProcessState, redriven.CompleteBy = order.Pending, s.later
			return forms(order.StartWait(redriven, s.now.Add(time.Hour), s.now))
		}},
	{order.Waiting, "its event arrived", order.Processed, "client, operator (API)", "receive event",
		"deadline not passed; the order not cancelled; the next record NotStarted",
		"the event's data recorded as its result, no deadline left; the next record Pending for a Scheduler to claim, `DueAt` at the end of its window, the order Processing; or the order ends Processed",
		func(s sample) []order.Transition {
			review, last := s.event(2, false), s.event(3, false)
			return forms(review.wf.EventArrived(review.st, json.RawMessage(`{"decision":"approve"}`), s.now).Transition(s.now),
				last.wf.EventArrived(last.st, json.RawMessage(`{"decision":"approve"}`), s.now).Transition(s.now))
		}},
	{order.Waiting, "its event arrived, and its rejectWhen holds", order.Failed, "client, operator (API)", "start undoing",
		"deadline not passed; no undo record yet; the order not cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"the event's data recorded as its result, no deadline left, the alert cleared; undo records appended (the steps before it: it did no work), the first announced, the next look when it must be claimed by, in the due index; the order Compensating, or ends Failed with nothing to undo, announced no more",
		func(s sample) []order.Transition {
			review, bare := s.event(2, false), s.event(2, false)
			bare.wf.Steps = slices.Clone(s.bareWaits.Steps)
			bare.wf.Steps[2] = review.wf.Steps[2]
			data := json.RawMessage(`{"decision":"reject"}`)
			return forms(undoing(review.wf.UndoEventRejected(review.st, "review", data, s.now), s.now),
				undoing(bare.wf.UndoEventRejected(bare.st, "review", data, s.now), s.now))
		}},
	{order.Waiting, "its event arrived, and its rejectWhen holds, in a workflow that stops on failure", order.Error, "client, operator (API)", "fail",
		"deadline not passed",
		"the order in Error; a `StepFailed` alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(order.EventRejected(s.event(2, false).st, "review", s.now))
		}},
	{order.Waiting, "no event by its timeout", order.Failed, "Supervisor", "start undoing",
		"deadline passed; no undo record yet; the order not cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"failures + 1, no deadline left, the alert cleared; undo records appended (the steps before it: it did no work), the first announced, the next look when it must be claimed by, in the due index; the order Compensating, or ends Failed with nothing to undo, announced no more",
		func(s sample) []order.Transition {
			review, bare := s.event(2, false), s.event(2, false)
			bare.wf.Steps = slices.Clone(s.bareWaits.Steps)
			bare.wf.Steps[2] = review.wf.Steps[2]
			return forms(undoing(review.wf.UndoRecovery(review.st, review.wf.Assess(review.st, s.later, order.NoBacklog), s.later), s.later),
				undoing(bare.wf.UndoRecovery(bare.st, bare.wf.Assess(bare.st, s.later, order.NoBacklog), s.later), s.later))
		}},
	{order.Waiting, "no event by its timeout, in a workflow that stops on failure", order.Error, "Supervisor", "fail",
		"deadline passed",
		"failures + 1; the order in Error; a `StepTimedOut` alert leased to the writer",
		func(s sample) []order.Transition {
			review := s.event(2, false)
			review.wf.StopOnFailure = true
			return forms(supervised(review.wf.Assess(review.st, s.later, order.NoBacklog), review.st, s.later))
		}},
	{order.Waiting, "its time is up", order.Processed, "Supervisor", "end wait",
		"deadline passed; the order not cancelled; the next record NotStarted",
		"no deadline left; the next record Pending for a Scheduler to claim, `DueAt` at the end of its window, the order Processing; or the order ends Processed",
		func(s sample) []order.Transition {
			last := s.waiting
			last.Index, last.Step = 3, "cool-off"
			end := s.waits
			end.Steps = append(slices.Clone(s.wf.Steps), order.StepDef{Name: "cool-off", Wait: &order.Wait{For: time.Hour}})
			// An event's wait that goes on without it ends the same way.
			goesOn := s.event(2, true)
			return forms(s.waits.WaitEnded(s.waiting, s.now).Transition(s.now), end.WaitEnded(last, s.now).Transition(s.now),
				goesOn.wf.WaitEnded(goesOn.st, s.later).Transition(s.later))
		}},
	{order.Waiting, "cancelled", order.Cancelled, "client's cancel", "start undoing",
		"no undo record yet; the order not cancelled yet; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended, the first announced, the next look when it must be claimed by, in the due index; the order Cancelling, or ends Cancelled with nothing to undo, announced no more; the cancel recorded",
		func(s sample) []order.Transition {
			return forms(undoing(s.waits.UndoCancelledWait(s.waiting, s.now), s.now), undoing(s.bareWaits.UndoCancelledWait(s.waiting, s.now), s.now))
		}},
	{order.Processing, "its call accepted (202)", order.Waiting, "Scheduler (reply)", "await callback",
		"the order not cancelled",
		"waits for its callback since the write, on the same attempt: the deadline and `DueAt` at the step's callback timeout; the order Waiting",
		func(s sample) []order.Transition {
			c := s.callback(order.Processing)
			return forms(c.wf.CallAccepted(c.st, s.now))
		}},
	{order.Processing, "its call accepted after a cancel", order.Cancelled, "Scheduler (reply)", "start undoing",
		"the order cancelled; no undo record yet; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended, its own work first (its service may be doing it), then the rest, the first claimed at once, the next look at its deadline, in the due index; the order Cancelling",
		func(s sample) []order.Transition {
			c := s.callback(order.Processing)
			return forms(undoing(c.wf.UndoAcceptedAfterCancel(c.st, s.now).ClaimedBy("s1", s.now), s.now))
		}},
	{order.Waiting, "its service still working (callback)", order.Waiting, "service (API)", "callback working",
		"deadline not passed; the deadline earlier than the new one (it is later than the stored one)",
		"the deadline moved on by the step's callback timeout, to at most its maximum after the call was accepted; heartbeats + 1",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			t, ok := c.wf.CallbackWorking(c.st, s.now)
			if !ok {
				panic("the sample's wait does not move")
			}
			return forms(t)
		}},
	{order.Waiting, "its service succeeded (callback)", order.Processed, "service (API)", "receive callback",
		"deadline not passed; the order not cancelled; the next record NotStarted",
		"its reference and its result (when kept) recorded, no deadline left; the next record Pending for a Scheduler to claim, `DueAt` at the end of its window, the order Processing",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			return forms(c.wf.CallbackArrived(c.st, "ch-1", json.RawMessage(`{"id":"ch-1"}`), s.now).Transition(s.now))
		}},
	{order.Waiting, "its service failed (callback)", order.Failed, "service (API)", "start undoing",
		"deadline not passed; no undo record yet; the order not cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended (the steps before it: the service did no work), the first announced, the next look when it must be claimed by, in the due index; the order Compensating",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			return forms(undoing(c.wf.UndoCallbackFailed(c.st, "card declined", s.now), s.now))
		}},
	{order.Waiting, "its service failed (callback), in a workflow that stops on failure", order.Error, "service (API)", "fail",
		"deadline not passed",
		"the order in Error; a `StepFailed` alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(order.CallbackFailed(s.callback(order.Waiting).st, "card declined", s.now))
		}},
	{order.Waiting, "no callback by its deadline", order.Pending, "Supervisor", "retry",
		"deadline passed; a workflow step's order not cancelled",
		"a claim window and the next look at its end, announced; failures + 1: the call is made again with the same key",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			return forms(supervised(c.wf.Assess(c.st, s.later, order.NoBacklog), c.st, s.later))
		}},
	{order.Waiting, "no callback by its deadline, its service paused", order.Waiting, "Supervisor", "defer",
		"deadline passed",
		"the deadline and the next look moved on by 4 allowances: no failure counted, nothing else, the call not made again",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			c.st.FailureCount = order.DefaultTiming.FailureThreshold - 1
			return forms(supervised(c.wf.Assess(c.st, s.later, order.Paused), c.st, s.later))
		}},
	{order.Waiting, "no callback by its deadline, the last allowed timeout", order.Failed, "Supervisor", "start undoing",
		"deadline passed; no undo record yet; the order not cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"failures + 1, no deadline left, the alert cleared; undo records appended for its own work and the steps before it, announced, the next look when the first must be claimed by, in the due index; the order Compensating",
		func(s sample) []order.Transition {
			c := s.callback(order.Waiting)
			c.st.FailureCount = order.DefaultTiming.FailureThreshold - 1
			return forms(undoing(c.wf.UndoRecovery(c.st, c.wf.Assess(c.st, s.later, order.NoBacklog), s.later), s.later))
		}},
	{order.Processing, "its call accepted (202) with a status URL", order.Waiting, "Scheduler (reply)", "await poll",
		"the order not cancelled",
		"waits for its service since the write, on the same attempt, keeping the status URL: the deadline at the step's poll timeout, `DueAt` at the first check (after Retry-After, or the step's poll every); the order Waiting",
		func(s sample) []order.Transition {
			c := s.polled(order.Processing)
			return forms(c.wf.PollAccepted(c.st, c.st.StatusURL, 0, s.now))
		}},
	{order.Waiting, "its status check due", order.Waiting, "Supervisor", "poll",
		"deadline not passed; `DueAt` as found",
		"`DueAt` moved on by the step's allowance (the check's window); the check sent to the step's agent",
		func(s sample) []order.Transition {
			c := s.polled(order.Waiting)
			if r := c.wf.Assess(c.st, s.now, order.NoBacklog); r.Action != order.Poll {
				panic("the sample's check is not due: " + r.Action.String())
			}
			return forms(c.wf.PollSent(c.st, s.now))
		}},
	{order.Waiting, "its status says working (202)", order.Waiting, "Scheduler (reply)", "poll working",
		"deadline not passed; the status URL as checked (a late check of a moved one changes nothing)",
		"`DueAt` at the next check (after Retry-After, or the step's poll every; never past the wait's end); the status URL when the service moved it",
		func(s sample) []order.Transition {
			c := s.polled(order.Waiting)
			return forms(c.wf.PollWorking(c.st, "https://payments.example/status/2", 30*time.Second, s.now), c.wf.PollWorking(c.st, "", 0, s.now))
		}},
	{order.Waiting, "its status says done (200, or 303 to the answer)", order.Processed, "Scheduler (reply)", "receive poll",
		"deadline not passed; the status URL as checked; the order not cancelled; the next record NotStarted; `DueAt` no later than its deadline",
		"its reference and its result (when kept) recorded, no deadline left; the next record claimed and its request sent, the order Processing",
		func(s sample) []order.Transition {
			c := s.polled(order.Waiting)
			return forms(c.wf.PollDone(c.st, "ch-1", json.RawMessage(`{"id":"ch-1"}`), "s1", s.now).Transition(s.now))
		}},
	{order.Waiting, "its status says failed (4xx)", order.Failed, "Scheduler (reply)", "start undoing",
		"deadline not passed; the status URL as checked; no undo record yet; the order not cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended (the steps before it: the service did no work), the first claimed at once, the next look at its deadline, in the due index; the order Compensating",
		func(s sample) []order.Transition {
			c := s.polled(order.Waiting)
			return forms(undoing(c.wf.UndoPollFailed(c.st, "card declined", s.now).ClaimedBy("s1", s.now), s.now))
		}},
	{order.Waiting, "its status says failed (4xx), in a workflow that stops on failure", order.Error, "Scheduler (reply)", "fail",
		"deadline not passed; the status URL as checked",
		"the order in Error; a `StepFailed` alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(order.PollFailed(s.polled(order.Waiting).st, "card declined", s.now))
		}},
	{order.Processing, "succeeded after a cancel", order.Processed, "Scheduler (reply)", "start undoing",
		"the order cancelled; no undo record yet; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"its reference and its result (when kept) recorded, no deadline left, the alert cleared; undo records appended, its own work first, then the rest, the first claimed at once, the next look at its deadline, in the due index; the order Cancelling, or ends Cancelled with nothing to undo",
		func(s sample) []order.Transition {
			return forms(
				undoing(s.wf.UndoCancelledSuccess(s.processing, "ref-1", json.RawMessage(`{"charge":"c-1"}`), s.now).ClaimedBy("s1", s.now), s.now),
				undoing(s.bare.UndoCancelledSuccess(s.processing, "ref-1", nil, s.now).ClaimedBy("s1", s.now), s.now))
		}},
	{order.Processing, "permanent fault", order.Failed, "Scheduler (reply)", "start undoing",
		"no undo record yet; the order not cancelled, or the order cancelled, as the write finds; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended for the steps before it, in reverse, the first claimed at once, the next look at its deadline, in the due index; the order Compensating (the order Cancelling if cancelled), or ends Failed with nothing to undo",
		func(s sample) []order.Transition {
			fault := s.wf.UndoFault(s.processing, "declined", s.now).ClaimedBy("s1", s.now)
			return forms(
				undoing(fault, s.now),
				// The write found the client's cancel.
				undoingAgain(fault, s.now, 1, cancelled(s.step(s.processing, 0, order.Processed), s.processing, s.step(s.processing, 2, order.NotStarted))...),
				undoing(s.bare.UndoFault(s.processing, "declined", s.now).ClaimedBy("s1", s.now), s.now))
		}},
	{order.Processing, "permanent fault an operator must see", order.Error, "Scheduler (reply)", "fail",
		"",
		"an undo's fault, a workflow that stops on failure, or an unusable answer: the order in Error; a `StepFailed` (`UndoFailed`) alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(order.FailReply(s.processing, "declined", s.now), order.FailReply(s.undo(s.processing, 1, 3, order.Processing), "declined", s.now))
		}},
	{order.Processing, "agent's heartbeat", order.Processing, "agent", "heartbeat",
		"the new deadline later than the stored one; fewer heartbeats than the step allows",
		"the deadline moved on; heartbeats + 1 (a refusal: the attempt is over, or the limit is reached)",
		func(s sample) []order.Transition { return forms(order.Heartbeat(s.processing, s.later, 2, s.now)) }},
	{order.Processing, "agent gave up at its deadline", order.Processing, "agent", "record the agent gave up",
		"",
		"deferrals at their maximum: the timeout is not back-pressure",
		func(s sample) []order.Transition { return forms(order.GaveUp(s.processing, s.now)) }},
	{order.Processing, "request could not be sent", order.Pending, "its claimer", "release",
		"the claim is the writer's",
		"a claim window and the next look at its end; releases + 1; announced the first 2 times, then left to the Supervisor",
		func(s sample) []order.Transition {
			return forms(order.Release(s.processing, s.later, "not sent", true, s.now))
		}},
	{order.Processing, "client's cancel", order.Processing, "client", "cancel",
		"not cancelled yet",
		"the cancel recorded, the order Cancelling: the step finishes or times out, then the work done is undone",
		func(s sample) []order.Transition { return forms(order.Cancel(s.processing, s.now)) }},
	{order.Processing, "deadline passed, its queue backlogged", order.Processing, "Supervisor", "defer",
		"deadline passed",
		"the deadline and the next look moved on (backing off); deferrals + 1, at most 6",
		func(s sample) []order.Transition {
			return forms(supervised(order.Recovery{Action: order.Defer, CompleteBy: s.later, Reason: "backlog"}, s.processing, s.now))
		}},
	{order.Processing, "deadline passed, its service paused", order.Processing, "Supervisor", "defer",
		"deadline passed",
		"the deadline and the next look moved on by 4 allowances: no failure counted, nothing else",
		func(s sample) []order.Transition {
			st := s.processing
			st.CompleteBy, st.Deferrals = s.now, order.MaxDeferrals
			return forms(supervised(s.wf.Assess(st, s.later, order.Paused), st, s.later))
		}},
	{order.Processing, "deadline passed", order.Pending, "Supervisor", "retry",
		"deadline passed; a workflow step's order not cancelled",
		"a claim window and the next look at its end, announced; failures + 1 (not when the request was never sent)",
		func(s sample) []order.Transition {
			return forms(supervised(order.Recovery{Action: order.Retry, CompleteBy: s.later, Reason: "timed out"}, s.processing, s.now))
		}},
	{order.Processing, "last timeout, compensated", order.Failed, "Supervisor", "start undoing",
		"deadline passed; no undo record yet; the order not cancelled, or the order cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"failures + 1, no deadline left, the alert cleared; undo records appended for its own work and the steps before it, announced, the next look at the first's deadline, in the due index; the order Compensating, or the order Cancelling (a cancelled order's step, at any timeout); or ends Failed with nothing to undo, announced no more",
		func(s sample) []order.Transition {
			compensate := func(wf order.Workflow, st order.StepState) order.Transition {
				rec := wf.Assess(st, s.now, order.NoBacklog)
				if rec.Action != order.Compensate {
					panic("the sample's timeout is not compensated: " + rec.Reason)
				}
				return undoing(wf.UndoRecovery(st, rec, s.now), s.now)
			}
			last := s.processing
			last.CompleteBy, last.FailureCount = s.now.Add(-time.Minute), order.DefaultTiming.FailureThreshold-1
			first := last
			first.FailureCount, first.CancelRequested = 0, true
			return forms(compensate(s.wf, last), compensate(s.wf, first), compensate(s.bare, last))
		}},
	{order.Processing, "last timeout an operator must see", order.Error, "Supervisor", "fail",
		"deadline passed",
		"failures + 1; the order in Error; a `StepTimedOut` (`UndoTimedOut`) alert leased to the writer",
		func(s sample) []order.Transition {
			return forms(
				supervised(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepTimedOut, Reason: "timed out"}, s.processing, s.now),
				supervised(order.Recovery{Action: order.Fail, AlertKind: order.AlertUndoTimedOut, Reason: "undo: timed out"}, s.undo(s.processing, 1, 3, order.Processing), s.now))
		}},
	{order.Error, "operator's redrive", order.Pending, "operator", "redrive",
		"the order in Error with its records as counted",
		"a fresh failure count (the old one added to `PastFailures`), the attempt going on; a claim window and the next look at its end, in the due index, announced; the alert cleared, out of the error index; the order Processing again (the order Pending at its first step; at an undo, the order Compensating, or the order Cancelling)",
		func(s sample) []order.Transition {
			undoStuck := []order.StepState{s.step(s.inError, 0, order.Processed), s.step(s.inError, 1, order.Failed), s.step(s.inError, 2, order.NotStarted),
				s.undo(s.inError, 0, 3, order.Error)}
			return forms(
				s.redriven(s.wf, "", s.step(s.inError, 0, order.Processed), s.inError, s.step(s.inError, 2, order.NotStarted)),
				s.redriven(s.wf, "", s.step(s.inError, 0, order.Error), s.step(s.inError, 1, order.NotStarted), s.step(s.inError, 2, order.NotStarted)),
				s.redriven(s.wf, "", undoStuck...),
				s.redriven(s.wf, "", cancelled(undoStuck...)...))
		}},
	{order.Error, "operator's retry over an undo that did nothing", order.Pending, "operator", "redrive",
		"the order in Error with its records as counted; the failed step Failed; not cancelled",
		"the undo records dropped, the undo floor raised over their attempts; the failed step runs again: a fresh failure count, a claim window and the next look at its end, in the due index, announced; the alert cleared, out of the error index; the order Processing again (the order Pending at its first step)",
		func(s sample) []order.Transition {
			// The undo's one attempt was refused: it did nothing.
			stuck := s.undo(s.inError, 0, 3, order.Error)
			stuck.Attempt = 1
			return forms(
				s.redriven(s.wf, order.RedriveRetry, s.step(s.inError, 0, order.Processed), s.step(s.inError, 1, order.Failed), s.step(s.inError, 2, order.NotStarted), stuck),
				// The first step timed out for good, and its own undo did nothing.
				s.redriven(s.wf, order.RedriveRetry, s.step(s.inError, 0, order.Failed), s.step(s.inError, 1, order.NotStarted), s.step(s.inError, 2, order.NotStarted), stuck))
		}},
	{order.Error, "operator's compensate", order.Failed, "operator", "start undoing",
		"no undo record yet; the order not cancelled, or the order cancelled; the undo floor as known; the steps before it to undo Processed (none skipped)",
		"no deadline left, the alert cleared; undo records appended for its own work and the steps before it, announced, the next look at the first's deadline, in the due index; out of the error index; the order Compensating (the order Cancelling if cancelled), or ends Failed with nothing to undo, announced no more",
		func(s sample) []order.Transition {
			records := []order.StepState{s.step(s.inError, 0, order.Processed), s.inError, s.step(s.inError, 2, order.NotStarted)}
			return forms(
				s.redriven(s.wf, order.RedriveCompensate, records...),
				s.redriven(s.wf, order.RedriveCompensate, cancelled(records...)...),
				s.redriven(s.bare, order.RedriveCompensate, records...))
		}},
	{"any", "build lacks the order's version", "same", "Supervisor, agent", "park",
		"not parked for this version; with the alert, no alert pending (the agent writes the mark alone while another waits)",
		"the next look moved on; the `Parked` mark and a `VersionUnknown` alert, once per version",
		func(s sample) []order.Transition {
			return forms(order.Park(s.processing, s.later, true, "not in this build", s.now))
		}},
	{"any", "unsent alert found", "same", "Supervisor", "lease alert",
		"an alert pending; `DueAt` as found",
		"the next look at the lease's end: one Supervisor sends it",
		func(s sample) []order.Transition { return forms(order.LeaseAlert(s.processing, s.later, s.now)) }},
	{"any", "alert sent", "same", "Scheduler, Supervisor", "clear alert",
		"an alert pending, of the kind found",
		"the alert cleared; an order in Error leaves the due index",
		func(s sample) []order.Transition { return forms(order.ClearAlert(s.inError, s.now)) }},
	{"any", "found inside its window", "same", "Supervisor", "reschedule",
		"the deadline as found",
		"`DueAt` moved to the record's deadline",
		func(s sample) []order.Transition { return forms(order.Reschedule(s.processing, s.later, s.now)) }},
	{"any", "operator's version move", "same", "operator", "move version",
		"the order on its version",
		"the new version; the park cleared; the next look now (unless in Error)",
		func(s sample) []order.Transition {
			return forms(order.MoveVersion(order.Order{ID: s.processing.OrderID, Version: "1"}, &s.processing, "2", s.now))
		}},
}

// markdown is r as a row of the table in docs/architecture.md.
func (r row) markdown() string {
	cell := func(s string) string {
		if s == "" {
			return "–"
		}
		return strings.ReplaceAll(s, "|", `\|`)
	}
	return "| " + strings.Join([]string{string(r.from), cell(r.event), string(r.to), cell(r.by), "`" + r.write + "`", cell(r.guard), cell(r.effects)}, " | ") + " |"
}
