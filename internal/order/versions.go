package order

import (
	"fmt"
	"slices"
	"strings"
)

// LegacyVersion is the workflow version of orders written before orders
// recorded one: the shipped workflow as it was then.
const LegacyVersion = "1"

// LegacyWorkflow is the workflow of orders written before orders
// recorded one: the shipped order workflow.
const LegacyWorkflow = "order"

// WorkflowOf reads a recorded workflow name: none is LegacyWorkflow.
func WorkflowOf(recorded string) string {
	if recorded == "" {
		return LegacyWorkflow
	}
	return recorded
}

// Ref names one version of one workflow for people: "order/1".
func Ref(workflow, version string) string { return WorkflowOf(workflow) + "/" + VersionOf(version) }

// Versions is the set of workflows, each in one or more versions, that a
// build runs. Every order records the workflow and version it was
// submitted under and is carried to its end by that version's definition,
// whatever is deployed later; new orders of a workflow get its latest
// version. A version is removed only once no order uses it (`orderly
// versions` counts them without a Scan).
type Versions struct {
	// def is the stage's default workflow: POST /orders submits to it.
	def    string
	latest map[string]string
	byRef  map[string]Workflow
	known  []string // refs, in the order given
	names  []string
}

// NewVersions returns the set of the given workflows, each with its own
// Name (none is LegacyWorkflow) and Version. For each workflow the last
// version given is the latest, which new orders get; the first workflow
// given is the stage's default.
func NewVersions(wfs ...Workflow) (Versions, error) {
	v := Versions{latest: map[string]string{}, byRef: map[string]Workflow{}}
	if len(wfs) == 0 {
		return v, fmt.Errorf("no workflow version: %w", ErrInvalid)
	}
	for _, w := range wfs {
		w.Name = WorkflowOf(w.Name)
		ref := Ref(w.Name, w.Version)
		switch {
		case w.Version == "":
			return v, fmt.Errorf("workflow %s: a version without a name: %w", w.Name, ErrInvalid)
		case v.byRef[ref].Steps != nil:
			return v, fmt.Errorf("workflow %s version %s twice: %w", w.Name, w.Version, ErrInvalid)
		case len(w.Steps) == 0:
			return v, fmt.Errorf("workflow %s version %s has no steps: %w", w.Name, w.Version, ErrInvalid)
		}
		if _, seen := v.latest[w.Name]; !seen {
			v.names = append(v.names, w.Name)
		}
		v.byRef[ref] = w
		v.latest[w.Name] = w.Version
		v.known = append(v.known, ref)
	}
	v.def = v.names[0]
	return v, nil
}

// MustVersions is NewVersions for definitions fixed in code.
func MustVersions(wfs ...Workflow) Versions {
	v, err := NewVersions(wfs...)
	if err != nil {
		panic(err)
	}
	return v
}

// Default names the stage's default workflow.
func (v Versions) Default() string { return v.def }

// Latest is the version new orders of the default workflow get.
func (v Versions) Latest() Workflow { return v.byRef[Ref(v.def, v.latest[v.def])] }

// LatestOf is the version new orders of the named workflow get; false
// when this build does not run that workflow.
func (v Versions) LatestOf(workflow string) (Workflow, bool) {
	ver, ok := v.latest[WorkflowOf(workflow)]
	if !ok {
		return Workflow{}, false
	}
	return v.byRef[Ref(workflow, ver)], true
}

// Get returns a version's definition; false when this build does not
// have it (an order of a newer build, after a rollback). An empty
// workflow is LegacyWorkflow, an empty version LegacyVersion.
func (v Versions) Get(workflow, version string) (Workflow, bool) {
	w, ok := v.byRef[Ref(workflow, version)]
	return w, ok
}

// Known lists the versions as refs ("order/1"), in the order given.
func (v Versions) Known() []string { return slices.Clone(v.known) }

// Missing says why an order of workflow and version waits in a build
// with the versions v: the reason its park records and its
// VersionUnknown alert gives.
func (v Versions) Missing(workflow, version string) string {
	return fmt.Sprintf("workflow version %s is not in this build (known: %s): the order waits for it; deploy it back, or move the order on (runbook: docs/operations.md#version-unknown)",
		Ref(workflow, version), strings.Join(v.known, ", "))
}

// Names lists the workflows, the default first.
func (v Versions) Names() []string { return slices.Clone(v.names) }

// Agents lists every agent any version uses, each once: every one of them
// needs its queue while an order of its version may run.
func (v Versions) Agents() []string {
	var out []string
	for _, ref := range v.known {
		for _, a := range v.byRef[ref].Agents() {
			if !slices.Contains(out, a) {
				out = append(out, a)
			}
		}
	}
	return out
}

// Rehearsal is w under another name, Version + ".rehearsal", with its
// middle step renamed (Name + "-rehearsal") and its allowances doubled:
// a version change of the kinds that strand in-flight orders when an
// engine has no versions. The local runtime adds it as the latest with
// ORDERLY_REHEARSE_VERSION=1 (see WithRehearsal), so that a version change
// and a rollback can be rehearsed with orders in flight (the chaos soak
// does) without a second build.
func Rehearsal(w Workflow) Workflow {
	r := w
	r.Version = w.Version + ".rehearsal"
	r.Steps = slices.Clone(w.Steps)
	for i := range r.Steps {
		r.Steps[i].Allowance *= 2
		r.Steps[i].MaxAllowance *= 2
	}
	mid := &r.Steps[len(r.Steps)/2]
	old := mid.Name
	mid.Name += "-rehearsal"
	// What the steps carry names it by its new name too.
	for i := range r.Steps {
		d := &r.Steps[i]
		d.Carries, d.UndoCarries = renamed(d.Carries, old, mid.Name), renamed(d.UndoCarries, old, mid.Name)
	}
	return r
}

// renamed is items with from replaced by to, in a new slice.
func renamed(items []string, from, to string) []string {
	if items == nil {
		return nil
	}
	out := slices.Clone(items)
	for i, it := range out {
		if it == from {
			out[i] = to
		}
	}
	return out
}

// WithRehearsal is v with the rehearsal of its default workflow's latest
// version added as that workflow's new latest.
func WithRehearsal(v Versions) Versions {
	return MustVersions(append(v.Workflows(), Rehearsal(v.Latest()))...)
}

// FirstAgents lists the agents of every workflow's first step, each once:
// a submission sends the first step's request itself. A first step that
// waits has none.
func (v Versions) FirstAgents() []string {
	var out []string
	for _, name := range v.names {
		if a := v.byRef[Ref(name, v.latest[name])].Steps[0].Agent; a != "" && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return out
}

// CallsBack reports whether any version has a step whose service calls
// back: only then does a stage take callbacks.
func (v Versions) CallsBack() bool {
	return v.HasStep(func(d StepDef) bool { return d.Callback != nil })
}

// HasStep reports whether any version has a step for which is holds.
func (v Versions) HasStep(is func(StepDef) bool) bool {
	for _, w := range v.Workflows() {
		if slices.ContainsFunc(w.Steps, is) {
			return true
		}
	}
	return false
}

// ReadsOrders reports whether any version has a step after its first
// whose start depends on its order's data (Workflow.ReadsOrder: a
// condition, or a timer until a time): only then do the actors that
// complete the step before it read an order's item. The first step's
// start is decided at submission, on the data submitted.
func (v Versions) ReadsOrders() bool {
	for _, w := range v.Workflows() {
		for i := 1; i < len(w.Steps); i++ {
			if w.readsFrom(i) {
				return true
			}
		}
	}
	return false
}

// Polls reports whether any version has a step whose service is polled.
func (v Versions) Polls() bool {
	return v.HasStep(func(d StepDef) bool { return d.Poll != nil })
}

// Workflows lists the definitions, oldest first.
func (v Versions) Workflows() []Workflow {
	out := make([]Workflow, 0, len(v.known))
	for _, ref := range v.known {
		out = append(out, v.byRef[ref])
	}
	return out
}

// VersionOf reads a recorded version: none is LegacyVersion.
func VersionOf(recorded string) string {
	if recorded == "" {
		return LegacyVersion
	}
	return recorded
}
