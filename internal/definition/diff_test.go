package definition_test

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// shipped reads the shipped order workflow, a fresh copy each time.
func shipped(t *testing.T) definition.Definition {
	t.Helper()
	// Parsed afresh each call: tests change steps in place.
	shipped, _, err := definition.Embedded()
	if err != nil || len(shipped) != 1 {
		t.Fatalf("the shipped definitions: %d, %v", len(shipped), err)
	}
	return shipped[0]
}

func intp(n int) *int { return &n }

// step returns the named step of d, for a test to change.
func step(t *testing.T, d *definition.Definition, name string) *definition.Step {
	t.Helper()
	for i := range d.Steps {
		if d.Steps[i].Name == name {
			return &d.Steps[i]
		}
	}
	t.Fatalf("no step %s", name)
	return nil
}

const (
	reserve = ordertest.StepReserveInventory
	charge  = ordertest.StepChargePayment
	ship    = ordertest.StepArrangeShipping
)

// The positions of the shipped workflow, as Compare lists them.
var (
	atReserve      = "at " + reserve
	atCharge       = "at " + charge
	atShip         = "at " + ship
	undoingShip    = "undoing " + ship
	undoingCharge  = "undoing " + charge
	undoingReserve = "undoing " + reserve
)

func TestCompare(t *testing.T) {
	tests := []struct {
		name   string
		change func(t *testing.T, old, new *definition.Definition)
		// findings are "STEP FIELD: OLD -> NEW" and "!" when it blocks.
		findings []string
		// changed and cannot are the positions each finding changes or
		// stops (each reason's start); the others move unchanged.
		changed map[string][]string
		cannot  map[string][]string
	}{
		{name: "identical", change: func(*testing.T, *definition.Definition, *definition.Definition) {}},
		{
			name: "another version, only the description and version differ",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Version, new.Description = "2", "something else"
			},
		},
		{
			name: "an allowance set where the stage's applied",
			change: func(t *testing.T, _, new *definition.Definition) {
				step(t, new, charge).Timing = &definition.Timing{Allowance: "45s"}
			},
			findings: []string{charge + " timing.allowance: 30s (the stage's) -> 45s"},
			// The step's next attempt, and its undo's: an order past it
			// meets the new allowance when it compensates.
			changed: map[string][]string{
				atReserve: {charge + " timing.allowance"}, atCharge: {charge + " timing.allowance"}, atShip: {charge + " timing.allowance"},
				undoingShip: {charge + " timing.allowance"}, undoingCharge: {charge + " timing.allowance"},
			},
		},
		{
			name: "the stage's value written out, and one written another way",
			change: func(t *testing.T, old, new *definition.Definition) {
				step(t, old, charge).Timing = &definition.Timing{MaxAllowance: "120s"}
				step(t, new, charge).Timing = &definition.Timing{Allowance: "30s", MaxAllowance: "2m", FailureThreshold: intp(3)}
			},
		},
		{
			name: "a lower failure threshold, on a step without undo",
			change: func(t *testing.T, old, new *definition.Definition) {
				step(t, old, ship).Undo, step(t, new, ship).Undo = nil, nil
				step(t, new, ship).Timing = &definition.Timing{FailureThreshold: intp(2), MaxHeartbeats: intp(0)}
			},
			findings: []string{ship + " timing.failureThreshold: 3 (the stage's) -> 2", ship + " timing.maxHeartbeats: 10 (the stage's) -> 0"},
			changed: map[string][]string{
				atReserve: {ship + " timing.failureThreshold", ship + " timing.maxHeartbeats"},
				atCharge:  {ship + " timing.failureThreshold", ship + " timing.maxHeartbeats"},
				atShip:    {ship + " timing.failureThreshold", ship + " timing.maxHeartbeats"},
			},
		},
		{
			name: "a call's path",
			change: func(t *testing.T, _, new *definition.Definition) {
				step(t, new, charge).Call.Path = "/payment/v2/charges"
			},
			findings: []string{charge + " call: POST /payment/charges -> POST /payment/v2/charges"},
			changed:  map[string][]string{atReserve: {charge + " call"}, atCharge: {charge + " call"}},
		},
		{
			name: "an undo's call and description",
			change: func(t *testing.T, _, new *definition.Definition) {
				u := step(t, new, reserve).Undo
				u.Method, u.Description = "DELETE", "free the stock"
			},
			findings: []string{
				reserve + ` undo: POST /inventory/releases -> DELETE /inventory/releases`,
				reserve + ` undo.description: "release the reservation" -> "free the stock"`,
			},
			// Every order that compensates undoes the first step.
			changed: map[string][]string{
				atReserve: {reserve + " undo", reserve + " undo.description"}, atCharge: {reserve + " undo", reserve + " undo.description"},
				atShip: {reserve + " undo", reserve + " undo.description"}, undoingShip: {reserve + " undo", reserve + " undo.description"},
				undoingCharge: {reserve + " undo", reserve + " undo.description"}, undoingReserve: {reserve + " undo", reserve + " undo.description"},
			},
		},
		{
			name: "an undo added",
			change: func(t *testing.T, old, _ *definition.Definition) {
				step(t, old, charge).Undo = nil
			},
			findings: []string{charge + " undo: (none) -> POST /payment/refunds !"},
			changed:  map[string][]string{atCharge: {charge + " undo"}, atShip: {charge + " undo"}},
			// Its undo records were written without it.
			cannot: map[string][]string{undoingShip: {"its next undos come from version 1, and version 2 adds an undo of " + charge}},
		},
		{
			name: "an undo removed",
			change: func(t *testing.T, _, new *definition.Definition) {
				step(t, new, charge).Undo = nil
			},
			findings: []string{charge + " undo: POST /payment/refunds -> (none) !"},
			changed:  map[string][]string{atCharge: {charge + " undo"}, atShip: {charge + " undo"}},
			cannot: map[string][]string{
				undoingShip:    {"it holds an undo record of " + charge},
				undoingCharge:  {"it holds an undo record of " + charge},
				undoingReserve: {"when its compensation began at " + charge + " or later"},
			},
		},
		{
			name: "the order's input",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Input = json.RawMessage(`{"type": "object"}`)
			},
			findings: []string{"input: (a schema) -> (another schema)"},
			changed: map[string][]string{
				atReserve: {"input"}, atCharge: {"input"}, atShip: {"input"},
				undoingShip: {"input"}, undoingCharge: {"input"}, undoingReserve: {"input"},
			},
		},
		{
			name: "a result carried that the old version did not keep",
			change: func(t *testing.T, _, new *definition.Definition) {
				step(t, new, ship).Request.Carries = []string{"order", charge}
			},
			findings: []string{
				ship + " request.carries: order -> order, " + charge,
				ship + " request.carries " + charge + ": (not kept by version 1) -> " + charge + " !",
			},
			// At the charge, the answer is still to come, and kept under
			// the new version.
			changed: map[string][]string{
				atReserve: {ship + " request.carries"}, atCharge: {ship + " request.carries"},
				atShip: {ship + " request.carries"}, undoingShip: {ship + " request.carries"},
			},
			// Past the charge: its answer was not kept.
			cannot: map[string][]string{
				atShip:      {"it is past " + charge + ", whose result version 1 did not keep"},
				undoingShip: {"it is past " + charge},
			},
		},
		{
			name: "a result carried that the old version kept to show its clients",
			change: func(t *testing.T, old, new *definition.Definition) {
				step(t, old, charge).Result = &definition.Result{ShownToClient: true}
				step(t, new, charge).Result = &definition.Result{ShownToClient: true}
				step(t, new, ship).Request.Carries = []string{"order", charge}
			},
			findings: []string{ship + " request.carries: order -> order, " + charge},
			changed: map[string][]string{
				atReserve: {ship + " request.carries"}, atCharge: {ship + " request.carries"}, atShip: {ship + " request.carries"},
				undoingShip: {ship + " request.carries"},
			},
		},
		{
			name: "a result carried that the old version kept already",
			change: func(t *testing.T, old, new *definition.Definition) {
				step(t, old, ship).Request.Carries = []string{"order", charge}
				step(t, new, ship).Request.Carries = []string{charge}
			},
			findings: []string{ship + " request.carries: order, " + charge + " -> " + charge},
			changed: map[string][]string{
				atReserve: {ship + " request.carries"}, atCharge: {ship + " request.carries"}, atShip: {ship + " request.carries"},
				undoingShip: {ship + " request.carries"},
			},
		},
		{
			name: "what a step with an undo carries",
			change: func(t *testing.T, old, new *definition.Definition) {
				step(t, old, charge).Request.Carries = []string{"order", reserve}
				step(t, new, charge).Request.Carries = []string{"order"}
			},
			findings: []string{charge + " request.carries: order, " + reserve + " -> order"},
			// Its undo carries the same: an order past it meets the
			// change when it compensates.
			changed: map[string][]string{
				atReserve: {charge + " request.carries"}, atCharge: {charge + " request.carries"}, atShip: {charge + " request.carries"},
				undoingShip: {charge + " request.carries"}, undoingCharge: {charge + " request.carries"},
			},
		},
		{
			name: "what a step carries, its undo carrying its own",
			change: func(t *testing.T, old, new *definition.Definition) {
				for _, d := range []*definition.Definition{old, new} {
					step(t, d, charge).Undo.Carries = []string{"order"}
				}
				step(t, old, charge).Request.Carries = []string{"order", reserve}
				step(t, new, charge).Request.Carries = []string{"order"}
			},
			findings: []string{charge + " request.carries: order, " + reserve + " -> order"},
			changed:  map[string][]string{atReserve: {charge + " request.carries"}, atCharge: {charge + " request.carries"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, d := compareShipped(t, func(old, new *definition.Definition) { tt.change(t, old, new) })
			checkFindings(t, d, tt.findings)
			checkPositions(t, old, d)
			for _, p := range d.Positions {
				if want := tt.changed[p.String()]; !slices.Equal(p.Changes, want) {
					t.Errorf("%s: changes %q, want %q", p, p.Changes, want)
				}
				want := tt.cannot[p.String()]
				if len(p.Cannot) != len(want) || p.Moves != (len(want) == 0) {
					t.Errorf("%s: moves %t, cannot %q; want cannot %q", p, p.Moves, p.Cannot, want)
					continue
				}
				for k := range want {
					if !strings.HasPrefix(p.Cannot[k], want[k]) {
						t.Errorf("%s: cannot %q, want it to start %q", p, p.Cannot[k], want[k])
					}
				}
			}
			if d.Moves != (len(tt.cannot) == 0) {
				t.Errorf("Moves %t, want %t", d.Moves, len(tt.cannot) == 0)
			}
		})
	}
}

func checkFindings(t *testing.T, d definition.Diff, want []string) {
	t.Helper()
	var got []string
	for _, f := range d.Findings {
		line := strings.TrimSpace(fmt.Sprintf("%s %s: %s -> %s", f.Step, f.Field, cmpOr(f.Old, "(none)"), cmpOr(f.New, "(none)")))
		if f.Blocks {
			line += " !"
		}
		got = append(got, line)
		if f.Effect == "" {
			t.Errorf("%s: no effect said", line)
		}
	}
	if !slices.Equal(got, want) {
		t.Errorf("findings:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func cmpOr(v, def string) string {
	if v == "" {
		return def
	}
	return v
}

// compareShipped compares the shipped workflow with version 2 of it, each
// as change leaves it; both must be valid, as Compare's callers load them.
func compareShipped(t *testing.T, change func(old, new *definition.Definition)) (definition.Definition, definition.Diff) {
	t.Helper()
	old, new := shipped(t), shipped(t)
	new.Version = "2"
	change(&old, &new)
	for _, d := range []definition.Definition{old, new} {
		if ps := d.Validate(); len(ps) > 0 {
			t.Fatalf("a test definition is invalid: %v", ps)
		}
	}
	d, err := definition.Compare(old, new, order.DefaultTiming)
	if err != nil {
		t.Fatalf("Compare: %v", err)
	}
	return old, d
}

// checkPositions checks that d lists every position of old: at each step,
// then undoing each step that has an undo, the last first. A step that
// waits has no undo, so no position undoes it.
func checkPositions(t *testing.T, old definition.Definition, d definition.Diff) {
	t.Helper()
	var want, got []string
	for _, s := range old.Steps {
		want = append(want, "at "+s.Name)
	}
	for i := len(old.Steps) - 1; i >= 0; i-- {
		if old.Steps[i].Undo != nil {
			want = append(want, "undoing "+old.Steps[i].Name)
		}
	}
	for _, p := range d.Positions {
		got = append(got, p.String())
	}
	if !slices.Equal(got, want) {
		t.Errorf("positions %q, want %q", got, want)
	}
}

// compareCase is a change to the shipped workflow and what Compare must say
// of it, for the tests of steps that wait, call back or hold expressions.
type compareCase struct {
	name   string
	change func(old, new *definition.Definition)
	// findings are "STEP FIELD: OLD -> NEW", with " !" where it blocks.
	findings []string
	// changed: the findings each position changes, checked where an
	// order can move; cannot: each position's reason's start, where an
	// order cannot move ("*": every position not named).
	changed map[string][]string
	cannot  map[string]string
	// effect is a part of the first finding's effect.
	effect string
}

// checkCompareCases runs each case through compareShipped and checks its
// findings, the first's effect, every position, and which move.
func checkCompareCases(t *testing.T, tests []compareCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			old, d := compareShipped(t, tt.change)
			checkFindings(t, d, tt.findings)
			if tt.effect != "" && (len(d.Findings) == 0 || !strings.Contains(d.Findings[0].Effect, tt.effect)) {
				t.Errorf("findings %+v, want the first's effect to say %q", d.Findings, tt.effect)
			}
			checkPositions(t, old, d)
			for _, p := range d.Positions {
				want, ok := tt.cannot[p.String()]
				if !ok {
					want = tt.cannot["*"]
				}
				if p.Moves != (want == "") || want != "" && (len(p.Cannot) != 1 || !strings.HasPrefix(p.Cannot[0], want)) {
					t.Errorf("%s: moves %t, cannot %q; want cannot %q", p, p.Moves, p.Cannot, want)
				}
				if want == "" && !slices.Equal(p.Changes, tt.changed[p.String()]) {
					t.Errorf("%s: changes %q, want %q", p, p.Changes, tt.changed[p.String()])
				}
			}
			if d.Moves != (len(tt.cannot) == 0) {
				t.Errorf("Moves %t, want %t", d.Moves, len(tt.cannot) == 0)
			}
		})
	}
}

// Steps that do not line up stop every order: each holds a record of
// every step of its version, matched by place.
func TestCompareSteps(t *testing.T) {
	fraud := definition.Step{Name: "fraud-check", Service: "fraud", Call: &definition.Call{Method: "POST", Path: "/fraud/checks"}}
	tests := []struct {
		name     string
		change   func(t *testing.T, old, new *definition.Definition)
		findings []string
		cannot   []string
	}{
		{
			name: "a step added before the others",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Steps = append([]definition.Step{fraud}, new.Steps...)
			},
			findings: []string{"fraud-check step: (none) -> steps[0] on fraud !"},
			cannot:   []string{"fraud-check is new in version 2"},
		},
		{
			name: "a step removed",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Steps = new.Steps[:2]
			},
			findings: []string{ship + " step: steps[2] on shipping -> (none) !"},
			cannot:   []string{ship + " is not in version 2"},
		},
		{
			name: "a step renamed, its timing changed too",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Steps[1].Name = "charge"
				new.Steps[2].Timing = &definition.Timing{Allowance: "1m"}
			},
			findings: []string{
				charge + " name: " + charge + " -> charge !",
				ship + " timing.allowance: 30s (the stage's) -> 1m0s",
			},
			cannot: []string{charge + " is not in version 2 (steps[1] is charge there)"},
		},
		{
			name: "two steps swapped",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Steps[1], new.Steps[2] = new.Steps[2], new.Steps[1]
			},
			findings: []string{charge + " place: steps[1] -> steps[2] !", ship + " place: steps[2] -> steps[1] !"},
			cannot: []string{
				charge + " is steps[1] in version 1, steps[2] in version 2",
				ship + " is steps[2] in version 1, steps[1] in version 2",
			},
		},
		{
			name: "a step on another service",
			change: func(_ *testing.T, _, new *definition.Definition) {
				new.Steps[1].Service = "billing"
			},
			findings: []string{charge + " service: payment -> billing !"},
			cannot:   []string{charge + " is on service payment in version 1, billing in version 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, d := compareShipped(t, func(old, new *definition.Definition) { tt.change(t, old, new) })
			checkFindings(t, d, tt.findings)
			if d.Moves {
				t.Error("Moves true, want false")
			}
			for _, p := range d.Positions {
				if p.Moves || !slices.Equal(p.Cannot, tt.cannot) {
					t.Errorf("%s: moves %t, cannot %q; want cannot %q", p, p.Moves, p.Cannot, tt.cannot)
				}
			}
		})
	}
}

// Orders move only between versions of one workflow.
func TestCompareRefusesAnotherWorkflow(t *testing.T) {
	old, new := shipped(t), shipped(t)
	new.Name, new.File = "checkout", "workflows/checkout/v1.json"
	_, err := definition.Compare(old, new, order.DefaultTiming)
	want := `workflows/checkout/v1.json: name: "checkout": workflows/order/v1.json is workflow "order"; an order moves only between versions of its own workflow`
	if !errors.Is(err, order.ErrInvalid) || err.Error() != want {
		t.Errorf("Compare = %v, want %s", err, want)
	}
}

// The text is one line per finding, grouped per step, one per position,
// and a verdict.
func TestDiffText(t *testing.T) {
	old, new := shipped(t), shipped(t)
	new.Version = "2"
	step(t, &new, reserve).Undo.Path = "/inventory/v2/releases"
	step(t, &new, charge).Timing = &definition.Timing{Allowance: "45s"}
	step(t, &new, charge).Undo = nil
	d, err := definition.Compare(old, new, order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	want := `workflow order, version 1 -> 2 (where a step sets no timing, the stage's: allowance 30s, maxAllowance 2m0s, failureThreshold 3, maxHeartbeats 10)
reserve-inventory: undo: POST /inventory/releases -> POST /inventory/v2/releases: an order that compensates at or past this step calls the new undo with the step's Idempotency-Key, so it must reverse what the old call did under that key
charge-payment: undo: POST /payment/refunds -> (none): an order at or past this step that begins compensating leaves this step's work done; an order already compensating that holds an undo record of this step (it is undoing this step or a later one, or its compensation began here or later) cannot move: version 2 cannot undo it
charge-payment: timing.allowance: 30s (the stage's) -> 45s: applies from the next attempt of this step
at reserve-inventory: moves; changed from here: reserve-inventory undo, charge-payment timing.allowance
at charge-payment: moves; changed from here: reserve-inventory undo, charge-payment undo, charge-payment timing.allowance
at arrange-shipping: moves; changed from here: reserve-inventory undo, charge-payment undo
undoing arrange-shipping: cannot move: it holds an undo record of charge-payment, which version 2 cannot undo
undoing charge-payment: cannot move: it holds an undo record of charge-payment, which version 2 cannot undo
undoing reserve-inventory: cannot move: when its compensation began at charge-payment or later, it holds an undo record of charge-payment, which version 2 cannot undo
3 of 6 positions cannot move to version 2: undoing arrange-shipping, undoing charge-payment, undoing reserve-inventory
`
	if got := d.Text(); got != want {
		t.Errorf("Text:\n%s\nwant:\n%s", got, want)
	}
}

// What an undo carries and what an answer must be are compared too.
func TestCompareUndoCarriesAndResult(t *testing.T) {
	old := shipped(t)
	next := old
	next.Version = "2"
	next.Steps = slices.Clone(old.Steps)
	undo := *old.Steps[1].Undo
	undo.Carries = []string{"order", "charge-payment"}
	next.Steps[1].Undo = &undo
	bound := 512
	next.Steps[1].Result = &definition.Result{MaxBytes: &bound}
	d, err := definition.Compare(old, next, order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	var fields []string
	for _, f := range d.Findings {
		fields = append(fields, f.Step+" "+f.Field)
	}
	for _, want := range []string{"charge-payment undo.carries", "charge-payment result"} {
		if !slices.Contains(fields, want) {
			t.Errorf("findings %q, want %q among them", fields, want)
		}
	}
	// charge-payment's answer is kept by the new version only: an order
	// past it under the old one has none for the refund to carry.
	if d.Moves {
		t.Error("every position moves; an order past charge-payment has no kept charge for its refund")
	}
}

// A step that waits is compared like any other: added, removed or turned
// into one (or from one), it stops every order, whose records are matched
// by place and agent (a step that waits has none); its timer changed, it
// changes what orders before it will wait, and an order already waiting
// keeps the deadline it was given.
func TestCompareWaits(t *testing.T) {
	const coolOff = "cool-off"
	wait := func(name, d string) definition.Step {
		return definition.Step{Name: name, Wait: &definition.Wait{For: d}}
	}
	// withWait is d with a step that waits d long after the reservation.
	withWait := func(d *definition.Definition, dur string) {
		d.Steps = slices.Insert(slices.Clone(d.Steps), 1, wait(coolOff, dur))
	}
	tests := []compareCase{
		{
			name: "a timer lengthened",
			change: func(old, new *definition.Definition) {
				withWait(old, "30m")
				withWait(new, "1h")
			},
			findings: []string{coolOff + " wait.for: 30m0s -> 1h0m0s"},
			// An order at the wait keeps its deadline: nothing changes
			// for it.
			changed: map[string][]string{atReserve: {coolOff + " wait.for"}},
			effect:  "an order already waiting in it keeps the deadline it was given when it started waiting",
		},
		{
			name:   "the same timer written another way",
			change: func(old, new *definition.Definition) { withWait(old, "60m"); withWait(new, "1h") },
		},
		{
			name:     "a wait added",
			change:   func(_, new *definition.Definition) { withWait(new, "30m") },
			findings: []string{coolOff + " step: (none) -> steps[1], waits 30m0s !"},
			cannot:   map[string]string{"*": coolOff + " is new in version 2"},
			effect:   "added in version 2",
		},
		{
			name:     "a wait removed",
			change:   func(old, _ *definition.Definition) { withWait(old, "30m") },
			findings: []string{coolOff + " step: steps[1], waits 30m0s -> (none) !"},
			cannot:   map[string]string{"*": coolOff + " is not in version 2"},
			effect:   "removed in version 2",
		},
		{
			name:     "a call turned into a wait",
			change:   func(_, new *definition.Definition) { new.Steps[1] = wait(charge, "30m") },
			findings: []string{charge + " wait: (none) -> timer 30m0s !"},
			cannot:   map[string]string{"*": charge + " calls service payment in version 1 and waits 30m0s in version 2"},
			effect:   "calls service payment no more: it waits 30m0s instead",
		},
		{
			name:     "a wait turned into a call",
			change:   func(old, _ *definition.Definition) { old.Steps[1] = wait(charge, "30m") },
			findings: []string{charge + " wait: timer 30m0s -> (none) !"},
			cannot:   map[string]string{"*": charge + " waits 30m0s in version 1 and calls service payment in version 2"},
			effect:   "waits no more: it calls service payment instead",
		},
	}
	checkCompareCases(t, tests)
}

// A step that waits for an event is compared field by field: its name,
// timeout, schema, what its timeout does and its result. An order that
// moves takes the new version's event, schema and outcome from then on;
// an order already waiting keeps its deadline. A timer turned into an
// event, or back, stops an order waiting in it: its wait would end as
// the other kind.
func TestCompareEvents(t *testing.T) {
	const review = "manual-review"
	atReview := "at " + review
	schema := json.RawMessage(`{"type": "object", "required": ["decision"]}`)
	event := func(change func(w *definition.Wait, s *definition.Step)) definition.Step {
		s := definition.Step{Name: review, Wait: &definition.Wait{Event: "review", Timeout: "48h", Schema: schema},
			Result: &definition.Result{MaxBytes: intp(2048), ShownToClient: true}}
		if change != nil {
			change(s.Wait, &s)
		}
		return s
	}
	timer := definition.Step{Name: review, Wait: &definition.Wait{For: "30m"}}
	// insert puts s after the reservation.
	insert := func(d *definition.Definition, s definition.Step) {
		d.Steps = slices.Insert(slices.Clone(d.Steps), 1, s)
	}
	both := func(change func(w *definition.Wait, s *definition.Step)) func(*definition.Definition, *definition.Definition) {
		return func(old, new *definition.Definition) { insert(old, event(nil)); insert(new, event(change)) }
	}
	changesToReview := func(field string) map[string][]string {
		return map[string][]string{atReserve: {review + " " + field}, atReview: {review + " " + field}}
	}
	tests := []compareCase{
		{
			name:     "the event renamed",
			change:   both(func(w *definition.Wait, _ *definition.Step) { w.Event = "approval" }),
			findings: []string{review + " wait.event: review -> approval"},
			changed:  changesToReview("wait.event"),
			effect:   "new orders, and an order moved to version 2 before or waiting in this step, take approval, not review",
		},
		{
			name:     "the timeout lengthened",
			change:   both(func(w *definition.Wait, _ *definition.Step) { w.Timeout = "72h" }),
			findings: []string{review + " wait.timeout: 48h0m0s -> 72h0m0s"},
			// An order at the wait keeps its deadline.
			changed: map[string][]string{atReserve: {review + " wait.timeout"}},
			effect:  "an order already waiting in it keeps the deadline it was given",
		},
		{
			name:   "the same timeout written another way",
			change: both(func(w *definition.Wait, _ *definition.Step) { w.Timeout = "2880m" }),
		},
		{
			name:     "the schema changed",
			change:   both(func(w *definition.Wait, _ *definition.Step) { w.Schema = json.RawMessage(`{"type": "object"}`) }),
			findings: []string{review + " wait.schema: (a schema) -> (another schema)"},
			changed:  changesToReview("wait.schema"),
			effect:   "an event sent to an order of version 2 is checked against version 2's schema",
		},
		{
			name:     "the schema removed",
			change:   both(func(w *definition.Wait, _ *definition.Step) { w.Schema = nil }),
			findings: []string{review + " wait.schema: (a schema) -> (none)"},
			changed:  changesToReview("wait.schema"),
		},
		{
			name: "the same schema written another way",
			change: both(func(w *definition.Wait, _ *definition.Step) {
				w.Schema = json.RawMessage(`{"required":["decision"],"type":"object"}`)
			}),
		},
		{
			name:     "continue on timeout",
			change:   both(func(w *definition.Wait, _ *definition.Step) { w.OnTimeout = "continue" }),
			findings: []string{review + " wait.onTimeout: fail -> continue"},
			changed:  changesToReview("wait.onTimeout"),
			effect:   "goes on with no result of this step",
		},
		{
			name:   "fail on timeout said outright",
			change: both(func(w *definition.Wait, _ *definition.Step) { w.OnTimeout = "fail" }),
		},
		{
			name: "the result's bound raised",
			change: both(func(_ *definition.Wait, s *definition.Step) {
				s.Result = &definition.Result{MaxBytes: intp(4096), ShownToClient: true}
			}),
			findings: []string{review + ` result: {"maxBytes":2048,"shownToClient":true} -> {"maxBytes":4096,"shownToClient":true}`},
			changed:  changesToReview("result"),
			effect:   "events sent from now on are bounded",
		},
		{
			name:     "an event wait added",
			change:   func(_, new *definition.Definition) { insert(new, event(nil)) },
			findings: []string{review + " step: (none) -> steps[1], waits for event review !"},
			cannot:   map[string]string{"*": review + " is new in version 2"},
		},
		{
			name:     "a timer turned into an event",
			change:   func(old, new *definition.Definition) { insert(old, timer); insert(new, event(nil)) },
			findings: []string{review + " wait: timer 30m0s -> event review !"},
			cannot:   map[string]string{atReview: "it waits for a timer under version 1"},
			changed:  map[string][]string{atReserve: {review + " wait"}},
			effect:   "an order that reaches this step under version 2 waits for event review",
		},
		{
			name:     "an event turned into a timer",
			change:   func(old, new *definition.Definition) { insert(old, event(nil)); insert(new, timer) },
			findings: []string{review + " wait: event review -> timer 30m0s !"},
			cannot:   map[string]string{atReview: "it waits for event review under version 1"},
			changed:  map[string][]string{atReserve: {review + " wait"}},
		},
		{
			// An event's data is always kept: an order past the step has
			// it for a call that newly carries it.
			name: "a later call carries the event's data",
			change: func(old, new *definition.Definition) {
				insert(old, event(nil))
				insert(new, event(nil))
				new.Steps[2].Request = &definition.Request{Carries: []string{"order", review}}
			},
			findings: []string{charge + " request.carries: order -> order, " + review},
			// The charge's undo carries what its call does: an order past
			// it meets the change when it compensates.
			changed: map[string][]string{
				atReserve: {charge + " request.carries"}, atReview: {charge + " request.carries"}, atCharge: {charge + " request.carries"},
				atShip: {charge + " request.carries"}, undoingShip: {charge + " request.carries"}, undoingCharge: {charge + " request.carries"},
			},
		},
	}
	checkCompareCases(t, tests)
}

// A step whose service calls back is compared as a call, and its
// callback too: turned on or off, its timeout and maxTimeout (as they
// run, maxTimeout being the timeout where left out). An order already
// waiting for a callback keeps the deadline it has; one moved while its
// step's call is a callback call, to a version where it is a plain one,
// cannot move: the wait it may be in is one the new version's step does
// not have.
func TestCompareCallbacks(t *testing.T) {
	callback := func(timeout, maxTimeout string) func(d *definition.Definition) {
		return func(d *definition.Definition) {
			s := step(t, d, charge)
			c := *s.Call
			c.Callback = &definition.Callback{Timeout: timeout, MaxTimeout: maxTimeout}
			s.Call = &c
		}
	}
	both, none, changes := versions, unchanged, chargeChanges
	tests := []compareCase{
		{
			name:     "a call turned into a callback call",
			change:   both(none, callback("2h", "24h")),
			findings: []string{charge + " call.callback: (none) -> timeout 2h0m0s, maxTimeout 24h0m0s"},
			changed:  changes("call.callback"),
			effect:   "an order at it makes its next attempt that way, with the same Idempotency-Key",
		},
		{
			name:     "a callback call turned into a plain one",
			change:   both(callback("2h", "24h"), none),
			findings: []string{charge + " call.callback: timeout 2h0m0s, maxTimeout 24h0m0s -> (none) !"},
			changed:  map[string][]string{atReserve: {charge + " call.callback"}},
			cannot:   map[string]string{atCharge: "its call may be accepted, or its wait for the callback begun, under version 1"},
			effect:   "an order that stays on version 1 is not concerned: its service's callback is still taken, since an order keeps its version",
		},
		{
			name:     "the timeout lengthened",
			change:   both(callback("2h", "24h"), callback("3h", "24h")),
			findings: []string{charge + " call.callback.timeout: 2h0m0s -> 3h0m0s"},
			changed:  changes("call.callback.timeout"),
			effect:   "an order already waiting for its callback keeps the deadline it has",
		},
		{
			name:   "the same timeout written another way",
			change: both(callback("2h", "24h"), callback("120m", "1440m")),
		},
		{
			name:     "maxTimeout raised",
			change:   both(callback("2h", "24h"), callback("2h", "48h")),
			findings: []string{charge + " call.callback.maxTimeout: 24h0m0s -> 48h0m0s"},
			changed:  changes("call.callback.maxTimeout"),
			effect:   "\"working\" callbacks move the wait on up to 48h0m0s after the call was accepted",
		},
		{
			name:   "maxTimeout written out as the timeout",
			change: both(callback("2h", ""), callback("2h", "2h")),
		},
		{
			// Left out, maxTimeout is the timeout: it changes with it.
			name:   "the timeout lengthened, maxTimeout left out",
			change: both(callback("2h", ""), callback("3h", "")),
			findings: []string{
				charge + " call.callback.timeout: 2h0m0s -> 3h0m0s",
				charge + " call.callback.maxTimeout: 2h0m0s (the timeout) -> 3h0m0s (the timeout)",
			},
			changed: changes("call.callback.timeout", "call.callback.maxTimeout"),
		},
		{
			name: "the path changed, the callback not",
			change: both(callback("2h", "24h"), func(d *definition.Definition) {
				callback("2h", "24h")(d)
				step(t, d, charge).Call.Path = "/payment/v2/charges"
			}),
			findings: []string{charge + " call: POST /payment/charges -> POST /payment/v2/charges"},
			changed:  changes("call"),
		},
	}
	checkCompareCases(t, tests)
}

// versions makes a change of two versions from one change of each.
func versions(o, n func(*definition.Definition)) func(old, new *definition.Definition) {
	return func(old, new *definition.Definition) { o(old); n(new) }
}

// unchanged leaves a version as it is.
func unchanged(*definition.Definition) {}

// chargeChanges are findings of the charge step's fields, as orders at
// the reservation and at the charge meet them.
func chargeChanges(fields ...string) map[string][]string {
	var on []string
	for _, f := range fields {
		on = append(on, charge+" "+f)
	}
	return map[string][]string{atReserve: on, atCharge: on}
}

// A step whose service is polled is compared like one that calls back:
// turned on or off, its timeout and every (every as it runs: the default
// where left out). An order already waiting keeps its deadline; one at
// the step cannot move to a version where it is a plain call.
func TestComparePolls(t *testing.T) {
	poll := func(timeout, every string) func(d *definition.Definition) {
		return func(d *definition.Definition) {
			s := step(t, d, charge)
			c := *s.Call
			c.Poll = &definition.Poll{Timeout: timeout, Every: every}
			s.Call = &c
		}
	}
	both, none, changes := versions, unchanged, chargeChanges
	checkCompareCases(t, []compareCase{
		{
			name:     "a call turned into a polled one",
			change:   both(none, poll("2h", "")),
			findings: []string{charge + " call.poll: (none) -> timeout 2h0m0s, every 1m0s (the default)"},
			changed:  changes("call.poll"),
			effect:   "an order at it makes its next attempt that way, with the same Idempotency-Key",
		},
		{
			name:     "a polled call turned into a plain one",
			change:   both(poll("2h", "30s"), none),
			findings: []string{charge + " call.poll: timeout 2h0m0s, every 30s -> (none) !"},
			changed:  map[string][]string{atReserve: {charge + " call.poll"}},
			cannot:   map[string]string{atCharge: "its call may be accepted, or its checks begun, under version 1"},
		},
		{
			name:     "the timeout lengthened",
			change:   both(poll("2h", "30s"), poll("3h", "30s")),
			findings: []string{charge + " call.poll.timeout: 2h0m0s -> 3h0m0s"},
			changed:  changes("call.poll.timeout"),
			effect:   "an order already waiting keeps the deadline it has",
		},
		{
			name:   "every written out as the default",
			change: both(poll("2h", ""), poll("2h", "1m")),
		},
		{
			name:     "every shortened",
			change:   both(poll("2h", ""), poll("2h", "10s")),
			findings: []string{charge + " call.poll.every: 1m0s (the default) -> 10s"},
			changed:  changes("call.poll.every"),
		},
		{
			name:   "the same timeout written another way",
			change: both(poll("2h", "30s"), poll("120m", "30s")),
		},
	})
}

// A condition, a timer's time and bound, and an event's rejection are
// compared as written: an order before the step meets the new one when
// it gets there (an order waiting for its event, the new rejection when
// its event comes); an order past it is not affected, and one waiting in
// a timer keeps its deadline. An expression that reads a result the old
// version did not keep stops the orders past that step: they have none.
func TestCompareExpressions(t *testing.T) {
	const (
		coolOff = "cool-off"
		review  = "manual-review"
		reads   = "results['" + reserve + "'].id != ''"
	)
	atReview := "at " + review
	// insert puts s at index i.
	insert := func(d *definition.Definition, i int, s definition.Step) {
		d.Steps = slices.Insert(slices.Clone(d.Steps), i, s)
	}
	// timers puts a timer at index i: o in version 1, n in version 2.
	timers := func(i int, o, n definition.Wait) func(old, new *definition.Definition) {
		return func(old, new *definition.Definition) {
			insert(old, i, definition.Step{Name: coolOff, Wait: &o})
			insert(new, i, definition.Step{Name: coolOff, Wait: &n})
		}
	}
	// events puts a step that waits for an event after the reservation,
	// rejecting it where o holds in version 1 and n in version 2 ("": none).
	events := func(o, n string) func(old, new *definition.Definition) {
		event := func(rejectWhen string) definition.Step {
			return definition.Step{Name: review, Wait: &definition.Wait{Event: "review", Timeout: "48h", RejectWhen: rejectWhen}}
		}
		return func(old, new *definition.Definition) { insert(old, 1, event(o)); insert(new, 1, event(n)) }
	}
	when := func(d *definition.Definition, name, cond string) {
		for i := range d.Steps {
			if d.Steps[i].Name == name {
				d.Steps[i].When = cond
			}
		}
	}
	const (
		y30 = "timestamp('2030-01-01T00:00:00Z')"
		y31 = "timestamp('2031-01-01T00:00:00Z')"
	)
	tests := []compareCase{
		{
			name:     "a condition added",
			change:   func(_, new *definition.Definition) { when(new, ship, "input.customerId != 'c-0'") },
			findings: []string{ship + " when: (none) -> input.customerId != 'c-0'"},
			changed:  map[string][]string{atReserve: {ship + " when"}, atCharge: {ship + " when"}},
			effect:   "an order before this step meets the new condition when it gets there, and skips the step where input.customerId != 'c-0' does not hold; an order at or past it is not affected",
		},
		{
			name: "a condition changed",
			change: func(old, new *definition.Definition) {
				when(old, charge, "input.customerId != 'c-0'")
				when(new, charge, "input.customerId != 'c-1'")
			},
			findings: []string{charge + " when: input.customerId != 'c-0' -> input.customerId != 'c-1'"},
			changed:  map[string][]string{atReserve: {charge + " when"}},
		},
		{
			name:     "a condition removed",
			change:   func(old, _ *definition.Definition) { when(old, charge, "input.customerId != 'c-0'") },
			findings: []string{charge + " when: input.customerId != 'c-0' -> (none)"},
			changed:  map[string][]string{atReserve: {charge + " when"}},
			effect:   "an order before this step runs it when it gets there, whatever its input and results",
		},
		{
			name:   "the same condition",
			change: func(old, new *definition.Definition) { when(old, ship, "true"); when(new, ship, "true") },
		},
		{
			name:     "a condition reading a result the old version did not keep",
			change:   func(_, new *definition.Definition) { when(new, ship, reads) },
			findings: []string{ship + " when: (none) -> " + reads, ship + " when reads " + reserve + ": (not kept by version 1) -> " + reserve + " !"},
			// At the reservation, its result is kept when it answers.
			changed: map[string][]string{atReserve: {ship + " when"}},
			cannot:  map[string]string{atCharge: "it is past " + reserve + ", whose result version 1 did not keep and version 2's when of " + ship + " reads"},
		},
		{
			name: "a condition reading a result the old version kept for its own",
			change: func(old, new *definition.Definition) {
				when(old, ship, "'"+reserve+"' in results")
				when(new, ship, reads)
			},
			findings: []string{ship + " when: '" + reserve + "' in results -> " + reads},
			changed:  map[string][]string{atReserve: {ship + " when"}, atCharge: {ship + " when"}},
		},
		{
			name:     "a timer's time changed",
			change:   timers(1, definition.Wait{Until: y30, Max: "720h"}, definition.Wait{Until: y31, Max: "720h"}),
			findings: []string{coolOff + " wait.until: " + y30 + " -> " + y31},
			changed:  map[string][]string{atReserve: {coolOff + " wait.until"}},
			effect:   "an order that reaches this step under version 2 waits until the time " + y31 + " gives, at most 720h0m0s; an order already waiting in it keeps the deadline it was given",
		},
		{
			name:     "a timer's bound shortened",
			change:   timers(1, definition.Wait{Until: y30, Max: "720h"}, definition.Wait{Until: y30, Max: "1h"}),
			findings: []string{coolOff + " wait.max: 720h0m0s -> 1h0m0s"},
			changed:  map[string][]string{atReserve: {coolOff + " wait.max"}},
		},
		{
			name:   "a timer's bound written another way",
			change: timers(1, definition.Wait{Until: y30, Max: "720h"}, definition.Wait{Until: y30, Max: "43200m"}),
		},
		{
			name:     "a timer's length turned into a time",
			change:   timers(1, definition.Wait{For: "30m"}, definition.Wait{Until: y30, Max: "720h"}),
			findings: []string{coolOff + " wait.for: 30m0s -> (none)", coolOff + " wait.until: (none) -> " + y30, coolOff + " wait.max: (none) -> 720h0m0s"},
			changed:  map[string][]string{atReserve: {coolOff + " wait.for", coolOff + " wait.until", coolOff + " wait.max"}},
		},
		{
			// Reading a result the old version did not keep, the time
			// is not there: the timer waits its whole max.
			name:   "a timer's time reading a result the old version did not keep",
			change: timers(2, definition.Wait{Until: y30, Max: "720h"}, definition.Wait{Until: "timestamp(results['" + reserve + "'].at)", Max: "720h"}),
			findings: []string{
				coolOff + " wait.until: " + y30 + " -> timestamp(results['" + reserve + "'].at)",
				coolOff + " wait.until reads " + reserve + ": (not kept by version 1) -> " + reserve,
			},
			changed: map[string][]string{atReserve: {coolOff + " wait.until"}, atCharge: {coolOff + " wait.until", coolOff + " wait.until reads " + reserve}},
		},
		{
			name:     "a rejection added",
			change:   events("", "event.decision == 'reject'"),
			findings: []string{review + " wait.rejectWhen: (none) -> event.decision == 'reject'"},
			// An order waiting for its event meets it when the event comes.
			changed: map[string][]string{atReserve: {review + " wait.rejectWhen"}, atReview: {review + " wait.rejectWhen"}},
			effect:  "an event sent to an order of version 2 before or waiting in this step fails the step (and the order is compensated) where event.decision == 'reject' holds",
		},
		{
			name:     "a rejection removed",
			change:   events("event.decision == 'reject'", ""),
			findings: []string{review + " wait.rejectWhen: event.decision == 'reject' -> (none)"},
			changed:  map[string][]string{atReserve: {review + " wait.rejectWhen"}, atReview: {review + " wait.rejectWhen"}},
			effect:   "no condition rejects an event sent to an order of version 2 before or waiting in this step",
		},
		{
			name:     "a rejection reading a result the old version did not keep",
			change:   events("", reads),
			findings: []string{review + " wait.rejectWhen: (none) -> " + reads, review + " wait.rejectWhen reads " + reserve + ": (not kept by version 1) -> " + reserve + " !"},
			changed:  map[string][]string{atReserve: {review + " wait.rejectWhen"}},
			cannot:   map[string]string{atReview: "it is past " + reserve + ", whose result version 1 did not keep and version 2's wait.rejectWhen of " + review + " reads"},
		},
	}
	checkCompareCases(t, tests)
}
