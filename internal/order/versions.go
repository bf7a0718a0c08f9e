package order

import (
	"fmt"
	"slices"
)

// LegacyVersion is the workflow version of orders written before orders
// recorded one: the shipped workflow as it was then.
const LegacyVersion = "1"

// Versions is the set of workflow versions a build runs. Every order
// records the version it was submitted under and is carried to its end by
// that version's definition, whatever is deployed later; new orders get
// the latest. A version is removed from the code only once no order uses
// it (`orderly versions` counts them without a Scan).
type Versions struct {
	latest    string
	byVersion map[string]Workflow
	known     []string
}

// NewVersions returns the set of the given workflows, each with its own
// Version; the last is the latest, which new orders get.
func NewVersions(wfs ...Workflow) (Versions, error) {
	v := Versions{byVersion: map[string]Workflow{}}
	if len(wfs) == 0 {
		return v, fmt.Errorf("no workflow version: %w", ErrInvalid)
	}
	for _, w := range wfs {
		switch {
		case w.Version == "":
			return v, fmt.Errorf("a workflow without a version: %w", ErrInvalid)
		case v.byVersion[w.Version].Steps != nil:
			return v, fmt.Errorf("workflow version %s twice: %w", w.Version, ErrInvalid)
		case len(w.Steps) == 0:
			return v, fmt.Errorf("workflow version %s has no steps: %w", w.Version, ErrInvalid)
		}
		v.byVersion[w.Version] = w
		v.known = append(v.known, w.Version)
	}
	v.latest = wfs[len(wfs)-1].Version
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

// Latest is the version new orders are submitted under.
func (v Versions) Latest() Workflow { return v.byVersion[v.latest] }

// Get returns a version's definition; false when this build does not
// have it (an order of a newer build, after a rollback). An empty version
// is LegacyVersion.
func (v Versions) Get(version string) (Workflow, bool) {
	w, ok := v.byVersion[VersionOf(version)]
	return w, ok
}

// Known lists the versions, oldest first.
func (v Versions) Known() []string { return slices.Clone(v.known) }

// Agents lists every agent any version uses, each once: every one of them
// needs its queue while an order of its version may run.
func (v Versions) Agents() []string {
	var out []string
	for _, ver := range v.known {
		for _, a := range v.byVersion[ver].Agents() {
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
	mid.Name += "-rehearsal"
	return r
}

// WithRehearsal is v with the rehearsal of its latest version added as the
// new latest.
func WithRehearsal(v Versions) Versions {
	return MustVersions(append(v.Workflows(), Rehearsal(v.Latest()))...)
}

// Workflows lists the definitions, oldest first.
func (v Versions) Workflows() []Workflow {
	out := make([]Workflow, 0, len(v.known))
	for _, ver := range v.known {
		out = append(out, v.byVersion[ver])
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

// OrderWorkflows returns the shipped workflow versions: version 1, the
// three-step order workflow. To change the workflow, add a version (copy
// the latest, change it, give it the next number) and keep the old ones
// until `orderly versions` shows no order uses them (README, Runbook).
func OrderWorkflows(t Timing) Versions {
	return MustVersions(OrderWorkflow(t))
}
