package control

import (
	"strings"
	"testing"
	"time"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// `orderly workflow diff` (definition.Compare) predicts which orders Move
// refuses: it never says an order moves that Move refuses, and where the
// only changes are ones Move checks, it says an order cannot move only if
// Move refuses some order at that position. The record sets are every one
// an order of the old version can hold: its workflow steps, and the undo
// records of each compensation plan that reaches the position.
func TestCompareAgreesWithMove(t *testing.T) {
	tests := []struct {
		name   string
		change func(old, new *definition.Definition)
		// moveChecksAll: Move checks every change (no undo added, no
		// result newly carried), so Compare's refusals are all Move's.
		moveChecksAll bool
	}{
		{"identical", func(_, _ *definition.Definition) {}, true},
		{"timing and calls", func(_, n *definition.Definition) {
			n.Steps[1].Timing = &definition.Timing{Allowance: "1m", MaxAllowance: "2m"}
			n.Steps[0].Call.Path, n.Steps[2].Undo.Path = "/v2/reservations", "/v2/cancellations"
		}, true},
		{"first undo removed", func(_, n *definition.Definition) { n.Steps[0].Undo = nil }, true},
		{"middle undo removed", func(_, n *definition.Definition) { n.Steps[1].Undo = nil }, true},
		{"last undo removed", func(_, n *definition.Definition) { n.Steps[2].Undo = nil }, true},
		{"middle undo added", func(o, _ *definition.Definition) { o.Steps[1].Undo = nil }, false},
		{"first undo added", func(o, _ *definition.Definition) { o.Steps[0].Undo = nil }, false},
		{"step added", func(_, n *definition.Definition) {
			n.Steps = append(n.Steps, definition.Step{Name: "notify", Service: "mail", Call: &definition.Call{Method: "POST", Path: "/mails"}})
		}, true},
		{"step removed", func(_, n *definition.Definition) { n.Steps = n.Steps[1:] }, true},
		{"step renamed", func(_, n *definition.Definition) { n.Steps[1].Name = "charge" }, true},
		{"steps swapped", func(_, n *definition.Definition) { n.Steps[0], n.Steps[1] = n.Steps[1], n.Steps[0] }, true},
		{"service changed", func(_, n *definition.Definition) { n.Steps[2].Service = "delivery" }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, new := shippedDefinition(t), shippedDefinition(t)
			new.Version = "2"
			tt.change(&old, &new)
			d, err := definition.Compare(old, new, order.DefaultTiming)
			if err != nil {
				t.Fatalf("Compare: %v", err)
			}
			from, err := old.Workflow(order.DefaultTiming)
			if err != nil {
				t.Fatal(err)
			}
			to, err := new.Workflow(order.DefaultTiming)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range d.Positions {
				refused := []string{}
				for _, records := range recordSets(from, p) {
					if err := fits(to, records); err != nil {
						refused = append(refused, err.Error())
					}
				}
				if len(refused) > 0 && p.Moves {
					t.Errorf("%s: Compare says it moves, Move refuses: %s", p, strings.Join(refused, "; "))
				}
				if tt.moveChecksAll && len(refused) == 0 && !p.Moves {
					t.Errorf("%s: Compare says it cannot move (%s), Move refuses no order there", p, strings.Join(p.Cannot, "; "))
				}
			}
		})
	}
}

// recordSets is every list of records an order of wf at p can hold.
func recordSets(wf order.Workflow, p definition.Position) [][]order.StepState {
	forward := wf.NewStates("o", "scheduler", time.Unix(0, 0))
	if !p.Undo {
		return [][]order.StepState{forward}
	}
	var sets [][]order.StepState
	// Compensation began at step a, whose work may have been done or not;
	// its plan reaches p when p's step is in it.
	for a := p.Index; a < len(wf.Steps); a++ {
		for _, mayHaveRun := range []bool{false, true} {
			plan := wf.UndoPlan(a, mayHaveRun)
			reaches := false
			records := append([]order.StepState(nil), forward...)
			for k, i := range plan {
				// The undos before p's are done; p's runs; the rest wait.
				state := order.NotStarted
				switch {
				case i == p.Index:
					state = order.Processing
				case !reaches:
					state = order.Processed
				}
				reaches = reaches || i == p.Index
				records = append(records, order.StepState{OrderID: "o", Step: wf.Steps[i].Name, Index: len(forward) + k, Agent: wf.Steps[i].Agent, Undo: true, ProcessState: state})
			}
			if reaches {
				sets = append(sets, records)
			}
		}
	}
	return sets
}

func shippedDefinition(t *testing.T) definition.Definition {
	t.Helper()
	// Parsed afresh each call: tests change steps in place.
	shipped, _, err := definition.Embedded()
	if err != nil || len(shipped) != 1 {
		t.Fatalf("the shipped definitions: %d, %v", len(shipped), err)
	}
	return shipped[0]
}

// An order waiting in a step moves only onto a version whose step there
// waits too: one that calls a service would see a wait it cannot end.
func TestAWaitMovesOnlyOntoAStepThatWaits(t *testing.T) {
	waits := order.Workflow{Name: "w", Version: "1", Steps: []order.StepDef{
		{Name: "hold", Wait: &order.Wait{For: time.Hour}}, {Name: "ship", Agent: "shipping"}}}
	calls := waits
	calls.Version, calls.Steps = "2", []order.StepDef{{Name: "hold"}, {Name: "ship", Agent: "shipping"}}
	longer := waits
	longer.Version, longer.Steps = "3", []order.StepDef{{Name: "hold", Wait: &order.Wait{For: 2 * time.Hour}}, waits.Steps[1]}
	records := waits.NewStates("o", "api", time.Unix(0, 0))
	if err := fits(calls, records); err == nil || !strings.Contains(err.Error(), "waits") {
		t.Errorf("onto a step that calls: %v, want it refused", err)
	}
	if err := fits(longer, records); err != nil {
		t.Errorf("onto a longer wait: %v, want it to fit", err)
	}
}
