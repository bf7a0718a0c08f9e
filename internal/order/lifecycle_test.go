package order_test

import (
	"os"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// decided is what the domain's function decides for a row's event about a
// record: the write's name, the state its guard needs, and the state it
// leaves the record in.
type decided struct {
	write    string
	from, to order.ProcessState
}

// Every row of order.Lifecycle is what the domain's function for its
// event decides, and every event the domain decides has its row.
func TestLifecycle(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	later := now.Add(time.Minute)
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	record := func(ps order.ProcessState) order.StepState {
		return order.StepState{OrderID: order.IDForKey("caller", "", "c-1", "k"), Workflow: wf.Name, Version: "1",
			Step: wf.Steps[1].Name, Index: 1, Agent: wf.Steps[1].Agent, ProcessState: ps, Attempt: 2, LockedBy: "s1"}
	}
	pending, processing, inError := record(order.Pending), record(order.Processing), record(order.Error)
	pending.LockedBy, inError.LockedBy = "", ""
	transition := func(tr order.Transition) decided {
		return decided{tr.Name, tr.Guard.State, tr.Applied(tr.Record).ProcessState}
	}
	recovery := func(r order.Recovery, st order.StepState) decided {
		tr, ok := r.Transition(st, now)
		if !ok {
			t.Fatalf("%s of a %s record: no transition", r.Action, st.ProcessState)
		}
		return transition(tr)
	}
	undoing := func(u order.Undoing) decided { return decided{"start undoing", u.Guard().State, u.Ends} }
	completion := wf.Completion(processing, "ref-1", nil, "s1", now)
	forward := record(order.Failed)
	moved := order.MoveVersion(order.Order{ID: processing.OrderID, Version: "1"}, &processing, "2", now)
	decisions := map[string]decided{
		"claimed":                                        transition(order.Claim(pending, "s1", later, now)),
		"cancelled while waiting":                        undoing(wf.UndoWaiting(pending, true, now)),
		"claim window passed":                            recovery(order.Recovery{Action: order.Nudge, CompleteBy: later}, pending),
		"nudged 8 times":                                 recovery(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepAbandoned}, pending),
		"succeeded":                                      {"complete", completion.Guard().State, order.Processed},
		"succeeded after a cancel":                       undoing(wf.UndoCancelledSuccess(processing, "ref-1", nil, now)),
		"permanent fault":                                undoing(wf.UndoFault(processing, "declined", now)),
		"permanent fault an operator must see":           transition(order.FailReply(processing, "declined", now)),
		"agent's heartbeat":                              transition(order.Heartbeat(processing, later, 2, now)),
		"agent gave up at its deadline":                  transition(order.GaveUp(processing, now)),
		"request could not be sent":                      transition(order.Release(processing, later, "not sent", true, now)),
		"client's cancel":                                transition(order.Cancel(processing, now)),
		"deadline passed, its queue backlogged":          recovery(order.Recovery{Action: order.Defer, CompleteBy: later}, processing),
		"deadline passed":                                recovery(order.Recovery{Action: order.Retry, CompleteBy: later}, processing),
		"last timeout, compensated":                      undoing(wf.UndoRecovery(processing, order.Recovery{Action: order.Compensate}, now)),
		"last timeout an operator must see":              recovery(order.Recovery{Action: order.Fail, AlertKind: order.AlertStepTimedOut}, processing),
		"operator's redrive":                             {"redrive", order.Resume{Step: inError}.Guard().State, order.Pending},
		"operator's retry over an undo that did nothing": {"redrive", order.Resume{Step: inError, Forward: &forward}.Guard().State, order.Pending},
		"operator's compensate":                          undoing(wf.UndoFromError(inError, "redriven", now)),
		"build lacks the order's version":                transition(order.Park(processing, later, true, "not in this build", now)),
		"unsent alert found":                             transition(order.LeaseAlert(processing, later, now)),
		"alert sent":                                     transition(order.ClearAlert(processing, now)),
		"found inside its window":                        transition(order.Reschedule(processing, later, now)),
		"operator's version move":                        transition(moved),
	}
	for _, r := range order.Lifecycle {
		d, ok := decisions[r.Event]
		if !ok {
			t.Errorf("row %q: no function of the domain decides it", r.Event)
			continue
		}
		delete(decisions, r.Event)
		if r.From == "any" {
			// A write on a record in any state leaves its state as it is.
			if d.from != d.to && d.from != "any" || r.To != "same" {
				t.Errorf("row %q: %s from %s to %s, want it to stay", r.Event, d.write, d.from, d.to)
			}
		} else if d.from != r.From || d.to != r.To {
			t.Errorf("row %q: %s goes from %s to %s, the table says from %s to %s", r.Event, d.write, d.from, d.to, r.From, r.To)
		}
		if d.write != r.Write {
			t.Errorf("row %q: the domain's write is %q, the table says %q", r.Event, d.write, r.Write)
		}
	}
	for event := range decisions {
		t.Errorf("event %q is decided but has no row", event)
	}
}

// The table of transitions in docs/architecture.md (State model,
// Transitions) is order.Lifecycle, row for row.
func TestDocsShowTheLifecycle(t *testing.T) {
	doc, err := os.ReadFile("../../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range order.Lifecycle {
		if line := r.Markdown(); !strings.Contains(string(doc), line+"\n") {
			t.Errorf("docs/architecture.md lacks the row\n%s", line)
		}
	}
}
