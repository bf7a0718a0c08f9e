package definition

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"orderly/internal/expr"
	"orderly/internal/order"
)

// Diff is what the orders in flight under one version of a workflow would
// do under another: every difference between the two definitions that
// such an order can meet (Findings), and for each place an order of the
// old version can be at (Positions) whether it can move onto the new one
// and what changes for it from there.
//
// An order is carried to its end by its own version; it meets another
// only when an operator moves it (`orderly move`, control.Move: for an
// order parked under a version the build lacks). A move keeps the order's
// records as they are: one per step of the old version, written at
// submission, matched to the new version by place (the same name and
// service at the same index, as many steps), and, once it compensates,
// one per undo of the old version's plan, matched by step name (the new
// version must undo that step, with the same service). Compare follows
// those rules, and what the functions then do: the next call, timing and
// compensation plan are the new version's.
type Diff struct {
	Workflow string `json:"workflow"`
	From     string `json:"from"`
	To       string `json:"to"`
	// Stage is the timing of the stage compared for, which applies where
	// a step sets none of its own.
	Stage     StageTiming `json:"stage"`
	Findings  []Finding   `json:"findings"`
	Positions []Position  `json:"positions"`
	// Moves is true when an order at every position can move safely.
	Moves bool `json:"moves"`
}

// StageTiming is the stage's timing that Compare applies where a step sets
// none, as the definition files write it.
type StageTiming struct {
	Allowance        string `json:"allowance"`
	MaxAllowance     string `json:"maxAllowance"`
	FailureThreshold int    `json:"failureThreshold"`
	MaxHeartbeats    int    `json:"maxHeartbeats"`
}

// Finding is one difference between the versions, for one step (none: the
// workflow as a whole): the field, its value in each version ("" for
// none) and what it means for the orders in flight.
type Finding struct {
	Step   string `json:"step,omitempty"`
	Field  string `json:"field"`
	Old    string `json:"old"`
	New    string `json:"new"`
	Effect string `json:"effect"`
	// Blocks is true when some order cannot move safely because of it.
	Blocks bool `json:"blocks"`
}

// Position is a place an order of the old version can be at: a workflow
// step waiting, running or stopped in Error (Undo false), or the undo of
// a step during compensation (Undo true). Index is the step's in the old
// version.
type Position struct {
	Step  string `json:"step"`
	Index int    `json:"index"`
	Undo  bool   `json:"undo"`
	Moves bool   `json:"moves"`
	// Cannot says why an order here cannot move safely, one reason per
	// finding that stops it.
	Cannot []string `json:"cannot,omitempty"`
	// Changes names the findings ("STEP FIELD") that change what an order
	// here does from now on.
	Changes []string `json:"changes,omitempty"`
}

func (p Position) String() string {
	if p.Undo {
		return "undoing " + p.Step
	}
	return "at " + p.Step
}

// rule is a finding and what it does to an order at each position: hit
// when it changes what the order does from there; cannot, when the order
// cannot move safely, and why.
type rule struct {
	Finding
	at func(p Position) (hit bool, cannot string)
}

// Compare reports what orders in flight under old would do under new, for
// a stage of timing stage. Both must be valid definitions (Parse) of the
// same workflow; versions of two workflows are Problems naming new's name.
func Compare(old, new Definition, stage order.Timing) (Diff, error) {
	if old.Name != new.Name {
		return Diff{}, Problems{{Source: new.File, Field: "name", Rule: fmt.Sprintf("%q: %s is workflow %q; an order moves only between versions of its own workflow", new.Name, old.File, old.Name)}}
	}
	c := comparison{old: old, new: new, stage: stage, from: "version " + old.Version, to: "version " + new.Version,
		newExprs: new.compileExprs(nil)}
	c.compareInput()
	c.compareShape()
	for i, s := range old.Steps {
		j := slices.IndexFunc(new.Steps, func(n Step) bool { return n.Name == s.Name })
		if j < 0 {
			continue
		}
		n := new.Steps[j]
		c.compareWhen(i, s, n)
		if s.Wait != nil || n.Wait != nil {
			// A step that waits has no call, undo, timing or request; one
			// turned into or from a wait is compareShape's.
			c.compareWait(i, s, n)
			continue
		}
		c.compareCall(i, s, n)
		c.compareCallback(i, s, n)
		c.comparePoll(i, s, n)
		c.compareUndo(i, s, n)
		c.compareTiming(i, s, n)
		c.compareRequestCarries(i, s, n)
		c.compareUndoCarriesAndResult(i, s, n)
	}
	c.compareKeptResults()
	c.compareExprReads()

	d := Diff{Workflow: old.Name, From: old.Version, To: new.Version, Moves: true, Stage: StageTiming{
		Allowance: stage.Allowance.String(), MaxAllowance: stage.MaxAllowance.String(),
		FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats,
	}}
	for i, s := range old.Steps {
		d.Positions = append(d.Positions, Position{Step: s.Name, Index: i})
	}
	// Then the undos, in the order they run: the latest step's first.
	for i := len(old.Steps) - 1; i >= 0; i-- {
		if old.Steps[i].Undo != nil {
			d.Positions = append(d.Positions, Position{Step: old.Steps[i].Name, Index: i, Undo: true})
		}
	}
	for k := range d.Positions {
		p := &d.Positions[k]
		for _, r := range c.rules {
			hit, cannot := r.at(*p)
			if cannot != "" {
				p.Cannot = append(p.Cannot, cannot)
			} else if hit {
				p.Changes = append(p.Changes, strings.TrimSpace(r.Step+" "+r.Field))
			}
		}
		p.Moves = len(p.Cannot) == 0
		d.Moves = d.Moves && p.Moves
	}
	d.Findings = c.ordered()
	return d, nil
}

type comparison struct {
	old, new Definition
	stage    order.Timing
	from, to string
	rules    []rule
	// newExprs are new's expressions, compiled, by new's step index.
	newExprs []stepExprs
}

func (c *comparison) add(step, field, old, new, effect string, at func(Position) (bool, string)) {
	c.rules = append(c.rules, rule{Finding: Finding{Step: step, Field: field, Old: old, New: new, Effect: effect}, at: at})
}

// ordered is the findings grouped per step, in a stable order: the
// workflow's own first, then the old version's steps in their order, then
// the steps only the new one has, in its order. Within a step, in the
// order they were found.
func (c *comparison) ordered() []Finding {
	var out []Finding
	group := func(step string) {
		for _, r := range c.rules {
			if r.Step == step {
				f := r.Finding
				f.Blocks = c.blocks(r)
				out = append(out, f)
			}
		}
	}
	group("")
	for _, s := range c.old.Steps {
		group(s.Name)
	}
	for _, s := range c.new.Steps {
		if !slices.ContainsFunc(c.old.Steps, func(o Step) bool { return o.Name == s.Name }) {
			group(s.Name)
		}
	}
	return out
}

// blocks says whether r stops an order at any position of the old version.
func (c *comparison) blocks(r rule) bool {
	for i, s := range c.old.Steps {
		for _, undo := range []bool{false, true} {
			if undo && s.Undo == nil {
				continue
			}
			if _, cannot := r.at(Position{Step: s.Name, Index: i, Undo: undo}); cannot != "" {
				return true
			}
		}
	}
	return false
}

// everywhere is a rule's positions for a change that concerns every order.
func everywhere(cannot string) func(Position) (bool, string) {
	return func(Position) (bool, string) { return true, cannot }
}

// compareInput reports a changed input schema: orders submitted already
// carry what the old one took.
func (c *comparison) compareInput() {
	if jsonEqual(c.old.Input, c.new.Input) {
		return
	}
	c.add("", "input", "(a schema)", "(another schema)",
		fmt.Sprintf("orders in flight keep the input %s took; the steps of %s that carry the order get it as it was", c.from, c.to),
		everywhere(""))
}

// compareShape reports the steps that do not line up: removed, added,
// moved, renamed or on another service. Every order of the old version
// holds a record of each of its steps, which a move needs in the same
// place with the same service, as many as the new version has: any of
// these stops every order.
func (c *comparison) compareShape() {
	stop := func(step, field, old, new, effect, reason string) {
		c.add(step, field, old, new, effect+": no order of "+c.from+" can move (each holds a record of every step of "+c.from+
			", and a move needs the same steps in the same places with the same services)", everywhere(reason))
	}
	at := func(d Definition, name string) int {
		return slices.IndexFunc(d.Steps, func(s Step) bool { return s.Name == name })
	}
	// A step's rank among the steps both versions have: a step shifted
	// only by one added or removed before it has not moved (the added or
	// removed one is the finding).
	rank := func(d Definition, name string) int {
		r := 0
		for _, s := range d.Steps {
			if s.Name == name {
				return r
			}
			if at(c.old, s.Name) >= 0 && at(c.new, s.Name) >= 0 {
				r++
			}
		}
		return -1
	}
	place := func(i int, s Step) string {
		if s.Wait != nil {
			return fmt.Sprintf("steps[%d], %s", i, waits(s))
		}
		return fmt.Sprintf("steps[%d] on %s", i, s.Service)
	}
	does := func(s Step) string {
		if s.Wait != nil {
			return waits(s)
		}
		return "calls service " + s.Service
	}
	for i, s := range c.old.Steps {
		j := at(c.new, s.Name)
		switch {
		case j < 0 && i < len(c.new.Steps) && at(c.old, c.new.Steps[i].Name) < 0:
			n := c.new.Steps[i]
			stop(s.Name, "name", s.Name, n.Name, "renamed or replaced by "+n.Name+" in "+c.to,
				fmt.Sprintf("%s is not in %s (steps[%d] is %s there)", s.Name, c.to, i, n.Name))
		case j < 0:
			stop(s.Name, "step", place(i, s), "", "removed in "+c.to, s.Name+" is not in "+c.to)
		case rank(c.old, s.Name) != rank(c.new, s.Name):
			stop(s.Name, "place", fmt.Sprintf("steps[%d]", i), fmt.Sprintf("steps[%d]", j), "moved among the steps both versions have",
				fmt.Sprintf("%s is steps[%d] in %s, steps[%d] in %s", s.Name, i, c.from, j, c.to))
		}
		if j < 0 {
			continue
		}
		n := c.new.Steps[j]
		// A move matches records by agent too, and a step that waits has
		// none.
		switch {
		case s.Wait == nil && n.Wait != nil:
			stop(s.Name, "wait", "", waitValue(n), does(s)+" no more: it "+does(n)+" instead",
				fmt.Sprintf("%s %s in %s and %s in %s", s.Name, does(s), c.from, does(n), c.to))
		case s.Wait != nil && n.Wait == nil:
			stop(s.Name, "wait", waitValue(s), "", "waits no more: it "+does(n)+" instead",
				fmt.Sprintf("%s %s in %s and %s in %s", s.Name, does(s), c.from, does(n), c.to))
		case s.Service != n.Service:
			stop(s.Name, "service", s.Service, n.Service, "another agent and request queue",
				fmt.Sprintf("%s is on service %s in %s, %s in %s", s.Name, s.Service, c.from, n.Service, c.to))
		}
	}
	for j, n := range c.new.Steps {
		if at(c.old, n.Name) >= 0 || (j < len(c.old.Steps) && at(c.new, c.old.Steps[j].Name) < 0) {
			continue // in both, or reported as a rename
		}
		stop(n.Name, "step", "", place(j, n), "added in "+c.to+"; orders of "+c.from+" have no record of it",
			n.Name+" is new in "+c.to)
	}
}

func endpoint(method, path string) string { return method + " " + path }

// canonical is a duration in its canonical form, so that "60m" and "1h"
// are the same; as written when it does not parse.
func canonical(v string) string {
	if d, err := time.ParseDuration(v); err == nil {
		return d.String()
	}
	return v
}

// waitValue is what a step waits for, as a finding shows it: "timer
// 30m0s", "timer until EXPR, at most 720h0m0s" or "event review".
func waitValue(s Step) string {
	switch {
	case s.Wait.Event != "":
		return "event " + s.Wait.Event
	case s.Wait.For == "" && s.Wait.Until != "":
		return "timer until " + s.Wait.Until + ", at most " + canonical(s.Wait.Max)
	}
	return "timer " + canonical(s.Wait.For)
}

// waits says what a step waits for, for people: "waits 30m0s", "waits
// until the time EXPR gives, at most 720h0m0s" or "waits for event
// review".
func waits(s Step) string {
	switch {
	case s.Wait.Event != "":
		return "waits for event " + s.Wait.Event
	case s.Wait.For == "" && s.Wait.Until != "":
		return "waits until the time " + s.Wait.Until + " gives, at most " + canonical(s.Wait.Max)
	}
	return "waits " + canonical(s.Wait.For)
}

// compareWhen reports a step's condition added, changed or removed. It
// is decided where the step would start: an order before the step meets
// the new one when it gets there; an order at or past it is not
// affected, its step decided (run, or Skipped) when it was reached.
func (c *comparison) compareWhen(i int, s, n Step) {
	if s.When == n.When {
		return
	}
	effect := "an order before this step meets the new condition when it gets there, and skips the step where " + n.When + " does not hold"
	if n.When == "" {
		effect = "an order before this step runs it when it gets there, whatever its input and results"
	}
	c.add(s.Name, "when", s.When, n.When,
		effect+"; an order at or past it is not affected: its step was decided (run, or skipped) when it was reached",
		func(p Position) (bool, string) { return !p.Undo && p.Index < i, "" })
}

// onTimeout is what an event's timeout does, the default said.
func onTimeout(w *Wait) string { return cmp.Or(w.OnTimeout, OnTimeoutFail) }

// compareWait reports a changed wait of the step at index i, both
// versions' step waiting (one turned into or from a wait is
// compareShape's). A moved order's records are kept as they are: one
// already waiting keeps the deadline it was given when it started
// waiting (CompleteBy), and what ends its wait, an event or the time, is
// read from the new version.
func (c *comparison) compareWait(i int, s, n Step) {
	if s.Wait == nil || n.Wait == nil {
		return
	}
	before := func(p Position) (bool, string) { return !p.Undo && p.Index < i, "" }
	atOrBefore := func(p Position) (bool, string) { return !p.Undo && p.Index <= i, "" }
	sEvent, nEvent := s.Wait.Event != "", n.Wait.Event != ""
	switch {
	case sEvent != nEvent:
		o, nw := waitValue(s), waitValue(n)
		why := fmt.Sprintf("it waits for a timer under %s; under %s its deadline would end the wait as %s's timeout, and the step would %s",
			c.from, c.to, n.Wait.Event, map[string]string{OnTimeoutFail: "fail", OnTimeoutContinue: "go on with no result"}[onTimeout(n.Wait)])
		if sEvent {
			why = fmt.Sprintf("it waits for event %s under %s; under %s that event is refused (it waits for no such event) and its deadline would end the wait as a timer's, with no data",
				s.Wait.Event, c.from, c.to)
		}
		c.add(s.Name, "wait", o, nw,
			"an order that reaches this step under "+c.to+" "+waits(n)+", where it "+strings.Replace(waits(s), "waits", "waited", 1)+" under "+c.from+"; an order already waiting in it cannot move",
			func(p Position) (bool, string) {
				if !p.Undo && p.Index == i {
					return true, why
				}
				return before(p)
			})
	case !nEvent:
		// A timer's form (for, or until and max) is compared field by
		// field; each change takes effect where an order reaches it.
		effect := "an order that reaches this step under " + c.to + " " + waits(n) +
			"; an order already waiting in it keeps the deadline it was given when it started waiting (its end time is stored with it)"
		for _, f := range []struct{ field, o, nw string }{
			{"wait.for", canonical(s.Wait.For), canonical(n.Wait.For)},
			{"wait.until", s.Wait.Until, n.Wait.Until},
			{"wait.max", canonical(s.Wait.Max), canonical(n.Wait.Max)},
		} {
			if f.o != f.nw {
				c.add(s.Name, f.field, f.o, f.nw, effect, before)
			}
		}
	default:
		c.compareEvent(i, s, n, before, atOrBefore)
	}
}

// compareEvent reports a changed event of the step at index i, both
// versions' step waiting for one.
func (c *comparison) compareEvent(i int, s, n Step, before, atOrBefore func(Position) (bool, string)) {
	o, nw := s.Wait, n.Wait
	if o.Event != nw.Event {
		c.add(s.Name, "wait.event", o.Event, nw.Event,
			"new orders, and an order moved to "+c.to+" before or waiting in this step, take "+nw.Event+", not "+o.Event+
				": their clients and operators must send POST .../events/"+nw.Event+"; an order that stays on "+c.from+" takes "+o.Event+" only",
			atOrBefore)
	}
	if ot, nt := canonical(o.Timeout), canonical(nw.Timeout); ot != nt {
		c.add(s.Name, "wait.timeout", ot, nt,
			"an order that reaches this step under "+c.to+" waits at most "+nt+" for its event; an order already waiting in it keeps the deadline it was given when it started waiting (its end time is stored with it)",
			before)
	}
	if !jsonEqual(o.Schema, nw.Schema) {
		schema := func(raw json.RawMessage) string {
			if len(raw) == 0 {
				return ""
			}
			return "(a schema)"
		}
		os, ns := schema(o.Schema), schema(nw.Schema)
		if os != "" && ns != "" {
			ns = "(another schema)"
		}
		c.add(s.Name, "wait.schema", os, ns,
			"an event sent to an order of "+c.to+" is checked against "+c.to+"'s schema, one sent to an order that stays on "+c.from+
				" against "+c.from+"'s (an order keeps its version unless it is moved); data taken already is kept as it was, and the steps after this one that carry it get it as it was taken",
			atOrBefore)
	}
	if ot, nt := onTimeout(o), onTimeout(nw); ot != nt {
		effect := "an order of " + c.to + " before or waiting in this step whose event does not come in time goes on with no result of this step (the steps that carry it get none) instead of failing"
		if nt == OnTimeoutFail {
			effect = "an order of " + c.to + " before or waiting in this step whose event does not come in time fails there and is compensated, instead of going on"
		}
		c.add(s.Name, "wait.onTimeout", ot, nt, effect, atOrBefore)
	}
	if o.RejectWhen != nw.RejectWhen {
		effect := "an event sent to an order of " + c.to + " before or waiting in this step fails the step (and the order is compensated) where " + nw.RejectWhen + " holds"
		if nw.RejectWhen == "" {
			effect = "no condition rejects an event sent to an order of " + c.to + " before or waiting in this step: its event completes the step"
		}
		c.add(s.Name, "wait.rejectWhen", o.RejectWhen, nw.RejectWhen,
			effect+"; an event taken already is kept as it was", atOrBefore)
	}
	if or, nr := resultOf(s), resultOf(n); or != nr {
		c.add(n.Name, "result", or, nr,
			"events sent from now on are bounded by "+c.to+"'s result.maxBytes, and the client of an order of "+c.to+" is shown the data as "+c.to+"'s result.shownToClient says; data taken under "+c.from+" is kept as it was",
			atOrBefore)
	}
}

// compareCall reports a changed forward call of the step at index i: its
// method and path (its callback is compareCallback's).
func (c *comparison) compareCall(i int, s, n Step) {
	if s.Call == nil || n.Call == nil || s.Call.Method == n.Call.Method && s.Call.Path == n.Call.Path {
		return
	}
	c.add(s.Name, "call", endpoint(s.Call.Method, s.Call.Path), endpoint(n.Call.Method, n.Call.Path),
		"orders before this step call the new one; an order at it makes its next attempt there with the same Idempotency-Key, "+
			"so the new call must recognise work the old one did under that key",
		func(p Position) (bool, string) { return !p.Undo && p.Index <= i, "" })
}

// callbackTimeouts is how long a step whose service calls back waits for
// the callback, as it runs: its timeout, and its maxTimeout, which left
// out (own false) is the timeout.
func callbackTimeouts(cb *Callback) (timeout, maxTimeout string, own bool) {
	timeout = canonical(cb.Timeout)
	if cb.MaxTimeout == "" {
		return timeout, timeout, false
	}
	return timeout, canonical(cb.MaxTimeout), true
}

// compareCallback reports a step's call turned into one whose service
// calls back, or back, and a changed timeout or maxTimeout. A moved
// order's records are kept as they are: one already waiting for its
// callback keeps the deadline it has (CompleteBy); its next "working"
// callback moves it on by the new version's timeout, up to its
// maxTimeout.
func (c *comparison) compareCallback(i int, s, n Step) {
	if s.Call == nil || n.Call == nil {
		return
	}
	o, nw := s.Call.Callback, n.Call.Callback
	atOrBefore := func(p Position) (bool, string) { return !p.Undo && p.Index <= i, "" }
	value := func(cb *Callback) string {
		if cb == nil {
			return ""
		}
		t, m, _ := callbackTimeouts(cb)
		return "timeout " + t + ", maxTimeout " + m
	}
	switch {
	case o == nil && nw == nil:
	case o == nil:
		t, _, _ := callbackTimeouts(nw)
		c.add(s.Name, "call.callback", "", value(nw),
			"orders before this step make a callback call under "+c.to+": its request carries where to call back, and the service answers 202 and calls back (within "+t+
				", or the call is made again); an order at it makes its next attempt that way, with the same Idempotency-Key, so the service must recognise work the plain call did under that key",
			atOrBefore)
	case nw == nil:
		c.add(s.Name, "call.callback", value(o), "",
			"orders before this step make a plain call under "+c.to+", which its service must answer within the step's allowance; an order at it cannot move: its call may be accepted, or its wait for the callback begun, and "+
				c.to+"'s step takes no callback; an order that stays on "+c.from+" is not concerned: its service's callback is still taken, since an order keeps its version",
			func(p Position) (bool, string) {
				if !p.Undo && p.Index == i {
					return true, fmt.Sprintf("its call may be accepted, or its wait for the callback begun, under %s; under %s %s calls back no more, so neither its acceptance nor its callback would be taken", c.from, c.to, s.Name)
				}
				return atOrBefore(p)
			})
	default:
		ot, om, oOwn := callbackTimeouts(o)
		nt, nm, nOwn := callbackTimeouts(nw)
		if ot != nt {
			c.add(s.Name, "call.callback.timeout", ot, nt,
				"an order whose call is accepted under "+c.to+" waits "+nt+" for its callback, and each \"working\" callback moves the wait on by "+nt+
					"; an order already waiting for its callback keeps the deadline it has (stored with it) until its next \"working\" callback",
				atOrBefore)
		}
		show := func(v string, own bool) string {
			if own {
				return v
			}
			return v + " (the timeout)"
		}
		if om != nm {
			c.add(s.Name, "call.callback.maxTimeout", show(om, oOwn), show(nm, nOwn),
				"\"working\" callbacks move the wait on up to "+nm+" after the call was accepted, for an order of "+c.to+
					" before this step and for one already waiting in it; an order already waiting for its callback keeps the deadline it has (stored with it), never shortened",
				atOrBefore)
		}
	}
}

// comparePoll reports a step's call turned into one whose service is
// polled, or back, and a changed timeout or every. An order already
// waiting keeps the deadline it has (CompleteBy); the next check after a
// move is spaced by the new version's every.
func (c *comparison) comparePoll(i int, s, n Step) {
	if s.Call == nil || n.Call == nil {
		return
	}
	o, nw := s.Call.Poll, n.Call.Poll
	atOrBefore := func(p Position) (bool, string) { return !p.Undo && p.Index <= i, "" }
	every := func(p *Poll) string {
		if p.Every == "" {
			return canonical(DefaultPollEvery.String()) + " (the default)"
		}
		return canonical(p.Every)
	}
	value := func(p *Poll) string {
		if p == nil {
			return ""
		}
		return "timeout " + canonical(p.Timeout) + ", every " + every(p)
	}
	switch {
	case o == nil && nw == nil:
	case o == nil:
		c.add(s.Name, "call.poll", "", value(nw),
			"orders before this step make a polled call under "+c.to+": the service answers 202 with a status URL, which orderly checks until the work is done (within "+canonical(nw.Timeout)+
				", or the call is made again); an order at it makes its next attempt that way, with the same Idempotency-Key, so the service must recognise work the plain call did under that key",
			atOrBefore)
	case nw == nil:
		c.add(s.Name, "call.poll", value(o), "",
			"orders before this step make a plain call under "+c.to+", which its service must answer within the step's allowance; an order at it cannot move: its call may be accepted, or its checks begun, and "+
				c.to+"'s step polls no status URL; an order that stays on "+c.from+" is not concerned, since an order keeps its version",
			func(p Position) (bool, string) {
				if !p.Undo && p.Index == i {
					return true, fmt.Sprintf("its call may be accepted, or its checks begun, under %s; under %s %s is polled no more, so neither its acceptance nor a check's answer would be taken", c.from, c.to, s.Name)
				}
				return atOrBefore(p)
			})
	default:
		if canonical(o.Timeout) != canonical(nw.Timeout) {
			c.add(s.Name, "call.poll.timeout", canonical(o.Timeout), canonical(nw.Timeout),
				"an order whose call is accepted under "+c.to+" waits "+canonical(nw.Timeout)+" for its service to finish; an order already waiting keeps the deadline it has (stored with it)",
				atOrBefore)
		}
		if effectiveEvery(o) != effectiveEvery(nw) {
			c.add(s.Name, "call.poll.every", every(o), every(nw),
				"checks after an answer with no Retry-After are spaced "+every(nw)+" apart, for an order of "+c.to+" before this step and for one already waiting in it from its next check on",
				atOrBefore)
		}
	}
}

// effectiveEvery is how far apart p's checks are when the service gives no
// Retry-After, as it runs.
func effectiveEvery(p *Poll) string {
	if p.Every == "" {
		return DefaultPollEvery.String()
	}
	return canonical(p.Every)
}

// compareUndo reports a changed, added or removed undo of the step at
// index i. Compensation writes one undo record per step of its plan when
// it starts, from the order's version then; after a move, each finished
// undo claims the next record by the new version's next undo, by name.
func (c *comparison) compareUndo(i int, s, n Step) {
	// The undo of step i runs for a workflow step at i (whose work may be
	// done) or after it, and for an undo at i or after it.
	reaches := func(p Position) bool { return p.Index >= i }
	switch {
	case s.Undo == nil && n.Undo == nil:
	case s.Undo != nil && n.Undo != nil:
		if s.Undo.Method != n.Undo.Method || s.Undo.Path != n.Undo.Path {
			c.add(s.Name, "undo", endpoint(s.Undo.Method, s.Undo.Path), endpoint(n.Undo.Method, n.Undo.Path),
				"an order that compensates at or past this step calls the new undo with the step's Idempotency-Key, "+
					"so it must reverse what the old call did under that key",
				func(p Position) (bool, string) { return reaches(p), "" })
		}
		if s.Undo.Description != n.Undo.Description {
			c.add(s.Name, "undo.description", strconv.Quote(s.Undo.Description), strconv.Quote(n.Undo.Description),
				"history and alerts of undos not yet begun say the new description",
				func(p Position) (bool, string) { return reaches(p), "" })
		}
	case s.Undo == nil:
		c.add(s.Name, "undo", "", endpoint(n.Undo.Method, n.Undo.Path),
			"an order at or past this step that begins compensating undoes it too; an order already undoing a later step cannot move safely: "+
				"its undo records come from "+c.from+", which had none for this step, and "+c.to+" names this step's undo as the next one, "+
				"so the success of the undo before it cannot claim a record and is dropped as stale: the order stalls compensating "+
				"(orderly move does not refuse this)",
			func(p Position) (bool, string) {
				if p.Undo && p.Index > i {
					return true, fmt.Sprintf("its next undos come from %s, and %s adds an undo of %s, which the order has no record of: it would stall compensating", c.from, c.to, s.Name)
				}
				return !p.Undo && reaches(p), ""
			})
	default:
		c.add(s.Name, "undo", endpoint(s.Undo.Method, s.Undo.Path), "",
			"an order at or past this step that begins compensating leaves this step's work done; an order already compensating "+
				"that holds an undo record of this step (it is undoing this step or a later one, or its compensation began here or later) cannot move: "+
				c.to+" cannot undo it",
			func(p Position) (bool, string) {
				switch {
				case p.Undo && p.Index >= i:
					return true, fmt.Sprintf("it holds an undo record of %s, which %s cannot undo", s.Name, c.to)
				case p.Undo:
					return true, fmt.Sprintf("when its compensation began at %s or later, it holds an undo record of %s, which %s cannot undo", s.Name, s.Name, c.to)
				}
				return reaches(p), ""
			})
	}
}

// stepTiming is a step's timing as it runs on the stage, as the files
// write it, and which of the fields the step sets itself.
func stepTiming(s Step, stage order.Timing) (values [4]string, own [4]bool) {
	values = [4]string{stage.Allowance.String(), stage.MaxAllowance.String(), strconv.Itoa(stage.FailureThreshold), strconv.Itoa(stage.MaxHeartbeats)}
	t := s.Timing
	if t == nil {
		return values, own
	}
	// Durations in their canonical form, so "60s" and "1m" are the same.
	if d, err := time.ParseDuration(t.Allowance); err == nil {
		values[0], own[0] = d.String(), true
	}
	if d, err := time.ParseDuration(t.MaxAllowance); err == nil {
		values[1], own[1] = d.String(), true
	}
	if t.FailureThreshold != nil {
		values[2], own[2] = strconv.Itoa(*t.FailureThreshold), true
	}
	if t.MaxHeartbeats != nil {
		values[3], own[3] = strconv.Itoa(*t.MaxHeartbeats), true
	}
	return values, own
}

var timingFields = [4]string{"timing.allowance", "timing.maxAllowance", "timing.failureThreshold", "timing.maxHeartbeats"}

// compareTiming reports the step's timing, as it runs on the stage, where
// it changed. It applies to the next attempt of the step and of its undo.
func (c *comparison) compareTiming(i int, s, n Step) {
	oldV, oldOwn := stepTiming(s, c.stage)
	newV, newOwn := stepTiming(n, c.stage)
	show := func(v string, own bool) string {
		if own {
			return v
		}
		return v + " (the stage's)"
	}
	for k, field := range timingFields {
		if oldV[k] == newV[k] {
			continue
		}
		effect := "applies from the next attempt of this step"
		if n.Undo != nil {
			effect += " and of its undo"
		}
		if k == 2 {
			// A step is given up when its timeouts reach the threshold.
			o, _ := strconv.Atoi(oldV[k])
			if nv, _ := strconv.Atoi(newV[k]); nv < o {
				effect += fmt.Sprintf("; an order at it whose failure count is %d or more gives it up at its next timeout", nv-1)
			}
		}
		// An order past the step meets the new timing too when it
		// compensates: the step's undo runs with it.
		c.add(s.Name, field, show(oldV[k], oldOwn[k]), show(newV[k], newOwn[k]), effect,
			func(p Position) (bool, string) {
				if p.Undo {
					return n.Undo != nil && p.Index >= i, ""
				}
				return p.Index <= i || n.Undo != nil, ""
			})
	}
}

// carriesOf is what a step's request carries: the order when it says none.
func carriesOf(s Step) []string {
	if s.Request == nil {
		return []string{CarriesOrder}
	}
	return s.Request.Carries
}

// compareRequestCarries reports a change in what the step's request
// carries. Its undo carries the same unless undo.carries says otherwise,
// so both are concerned.
func (c *comparison) compareRequestCarries(i int, s, n Step) {
	o, nw := carriesOf(s), carriesOf(n)
	if slices.Equal(o, nw) {
		return
	}
	// The undo carries the same only when it says nothing of its own; an
	// order past the step then meets the change if it compensates.
	undoToo := n.Undo != nil && n.Undo.Carries == nil
	effect := "the request of an order before or at this step carries what " + c.to + " says"
	if undoToo {
		effect += ", and so does this step's undo"
	}
	c.add(s.Name, "request.carries", strings.Join(o, ", "), strings.Join(nw, ", "), effect,
		func(p Position) (bool, string) {
			if p.Undo {
				return undoToo && p.Index >= i, ""
			}
			return p.Index <= i || undoToo, ""
		})
}

// compareUndoCarriesAndResult reports a change in what a step's undo
// carries (undo.carries) and in what its answer must be (result): an undo
// run under the new version sends what the new one names, and an answer
// stored under the old version was checked against the old bound and
// schema only.
func (c *comparison) compareUndoCarriesAndResult(i int, s, n Step) {
	// Left out, an undo carries what its call does: compareRequestCarries
	// reports that.
	if s.Undo != nil && n.Undo != nil && (s.Undo.Carries != nil || n.Undo.Carries != nil) {
		if o, nw := undoCarriesOf(s), undoCarriesOf(n); !slices.Equal(o, nw) {
			c.add(n.Name, "undo.carries", strings.Join(o, ", "), strings.Join(nw, ", "),
				"its undo, when it runs under "+c.to+", sends what "+c.to+" names",
				func(p Position) (bool, string) { return p.Undo && p.Index >= i, "" })
		}
	}
	if o, nw := resultOf(s), resultOf(n); o != nw {
		c.add(n.Name, "result", o, nw,
			"answers from now on are checked against "+c.to+"'s result bound and schema; one stored under "+c.from+" is kept as it was",
			func(p Position) (bool, string) { return !p.Undo && p.Index <= i, "" })
	}
}

// resultOf is what a step says of its result, as a finding shows it.
func resultOf(s Step) string {
	if s.Result == nil {
		return "(none)"
	}
	raw, _ := json.Marshal(s.Result)
	return string(raw)
}

// undoCarriesOf is what a step's undo request carries: undo.carries, else
// what its call's request carries.
func undoCarriesOf(s Step) []string {
	if s.Undo != nil && s.Undo.Carries != nil {
		return s.Undo.Carries
	}
	return carriesOf(s)
}

// keptResults is the steps whose results an order of d stores: those some
// step's request or undo names, those shown to clients, those an
// expression reads, and every event's data. A result is stored when the
// step answers (or its event comes), under the order's version then.
func keptResults(d Definition) map[string]bool {
	kept := readsOf(d.compileExprs(nil))
	for _, s := range d.Steps {
		if s.Result != nil && s.Result.ShownToClient || s.Wait != nil && s.Wait.Event != "" {
			kept[s.Name] = true // shown to clients, or an event's data: kept
		}
		for _, item := range append(carriesOf(s), undoCarriesOf(s)...) {
			if item != CarriesOrder {
				kept[item] = true
			}
		}
	}
	return kept
}

// compareKeptResults reports a result the new version passes to a step
// (or its undo) that the old one did not keep: an order past the step
// that answered it has no such result to pass.
func (c *comparison) compareKeptResults() {
	kept := keptResults(c.old)
	for _, n := range c.new.Steps {
		i := slices.IndexFunc(c.old.Steps, func(s Step) bool { return s.Name == n.Name })
		items := carriesOf(n)
		for _, item := range undoCarriesOf(n) {
			if !slices.Contains(items, item) {
				items = append(items, item)
			}
		}
		for _, item := range items {
			k := slices.IndexFunc(c.old.Steps, func(s Step) bool { return s.Name == item })
			if item == CarriesOrder || kept[item] || k < 0 || i < 0 {
				// A step new to the new version stops every order already.
				continue
			}
			c.add(n.Name, "request.carries "+item, "(not kept by "+c.from+")", item,
				"an order past "+item+" has no result of it (it answered under "+c.from+", which did not keep it) to pass to this step or its undo",
				func(p Position) (bool, string) {
					// Past k: k answered under the old version. The step at
					// i calls with it, and its undo too.
					why := fmt.Sprintf("it is past %s, whose result %s did not keep and %s passes to %s", item, c.from, c.to, n.Name)
					switch {
					case !p.Undo && p.Index > k && (p.Index <= i || n.Undo != nil):
						return true, why
					case p.Undo && p.Index >= i && n.Undo != nil:
						return true, why
					}
					return false, ""
				})
		}
	}
}

// compareExprReads reports a result an expression of the new version
// reads that the old one did not keep: an order past the step that
// answered it has no such result, and the expression finds none. A
// condition that reads it without testing 'NAME' in results first
// cannot be decided, and counts as holding (the step runs); a rejection
// cannot be decided, and the event is refused; a timer's time is not there, and it waits its
// whole max. Each is evaluated where the step is reached (a rejection,
// when its event comes, while the step waits).
func (c *comparison) compareExprReads() {
	kept := keptResults(c.old)
	for j, n := range c.new.Steps {
		i := slices.IndexFunc(c.old.Steps, func(s Step) bool { return s.Name == n.Name })
		if i < 0 || j >= len(c.newExprs) {
			continue // a step new to the new version stops every order already
		}
		e := c.newExprs[j]
		for _, x := range []struct {
			field    string
			p        *expr.Program
			waiting  bool // evaluated while the step waits, too
			decision bool // a decision that cannot be made, not a time left to its bound
		}{
			{"when", e.when, false, true},
			{"wait.until", e.until, false, false},
			{"wait.rejectWhen", e.rejectWhen, true, true},
		} {
			if x.p == nil {
				continue
			}
			for _, item := range x.p.Results() {
				k := slices.IndexFunc(c.old.Steps, func(s Step) bool { return s.Name == item })
				if kept[item] || k < 0 {
					continue
				}
				effect := "an order past " + item + " has no result of it (it answered under " + c.from + ", which did not keep it) for this step's " + x.field + " to read: "
				if x.decision {
					effect += "unless it tests '" + item + "' in results first, it cannot be decided: a condition counts as holding (the step runs), an event is refused"
				} else {
					effect += "unless it tests '" + item + "' in results first, it gives no time, and the timer waits its whole max"
				}
				why := fmt.Sprintf("it is past %s, whose result %s did not keep and %s's %s of %s reads", item, c.from, c.to, x.field, n.Name)
				c.add(n.Name, x.field+" reads "+item, "(not kept by "+c.from+")", item, effect,
					func(p Position) (bool, string) {
						reached := p.Index < i || x.waiting && p.Index == i
						if p.Undo || p.Index <= k || !reached {
							return false, ""
						}
						if x.decision {
							return true, why
						}
						return true, ""
					})
			}
		}
	}
}

// jsonEqual reports whether two JSON documents hold the same value.
func jsonEqual(a, b json.RawMessage) bool {
	if bytes.Equal(a, b) {
		return true
	}
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	ca, _ := json.Marshal(va)
	cb, _ := json.Marshal(vb)
	return bytes.Equal(ca, cb)
}

// Text is the diff for people: a heading, one line per finding
// ("STEP: FIELD: OLD -> NEW: EFFECT"), grouped per step, then one line per
// position and a verdict.
func (d Diff) Text() string {
	var b strings.Builder
	fmt.Fprintf(&b, "workflow %s, version %s -> %s (where a step sets no timing, the stage's: allowance %s, maxAllowance %s, failureThreshold %d, maxHeartbeats %d)\n",
		d.Workflow, d.From, d.To, d.Stage.Allowance, d.Stage.MaxAllowance, d.Stage.FailureThreshold, d.Stage.MaxHeartbeats)
	none := func(v string) string { return cmp.Or(v, "(none)") }
	for _, f := range d.Findings {
		fmt.Fprintf(&b, "%s: %s: %s -> %s: %s\n", cmp.Or(f.Step, "(workflow)"), f.Field, none(f.Old), none(f.New), f.Effect)
	}
	if len(d.Findings) == 0 {
		b.WriteString("no differences an order in flight can meet\n")
	}
	var stuck []string
	for _, p := range d.Positions {
		switch {
		case !p.Moves:
			stuck = append(stuck, p.String())
			fmt.Fprintf(&b, "%s: cannot move: %s\n", p, strings.Join(p.Cannot, "; "))
		case len(p.Changes) > 0:
			fmt.Fprintf(&b, "%s: moves; changed from here: %s\n", p, strings.Join(p.Changes, ", "))
		default:
			fmt.Fprintf(&b, "%s: moves; nothing changes from here\n", p)
		}
	}
	if d.Moves {
		fmt.Fprintf(&b, "every order in flight under version %s can move to version %s\n", d.From, d.To)
	} else {
		fmt.Fprintf(&b, "%d of %d positions cannot move to version %s: %s\n", len(stuck), len(d.Positions), d.To, strings.Join(stuck, ", "))
	}
	return b.String()
}
