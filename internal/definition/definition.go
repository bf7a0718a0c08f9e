// Package definition reads workflow definitions, the versioned files under
// workflows/ (one per workflow version), checks them, and turns them into
// the domain's order.Workflow. It keeps file formats and JSON Schema out of
// package order.
package definition

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/strictjson"
)

// Definition is one version of one workflow, as its file says.
type Definition struct {
	// File is where the definition was read from; every Problem names it.
	File string `json:"-"`

	Schema      string          `json:"$schema,omitempty"`
	Name        string          `json:"name"`
	Version     string          `json:"version"`
	Description string          `json:"description,omitempty"`
	Input       json.RawMessage `json:"input"`
	Steps       []Step          `json:"steps"`
}

// Step is one step of a definition.
type Step struct {
	Name    string   `json:"name"`
	Service string   `json:"service"`
	Call    *Call    `json:"call"`
	Undo    *Undo    `json:"undo,omitempty"`
	Timing  *Timing  `json:"timing,omitempty"`
	Request *Request `json:"request,omitempty"`
	Result  *Result  `json:"result,omitempty"`
}

// Result is what the definition says of a step's answer.
type Result struct {
	// Schema is the JSON Schema every answer must match.
	Schema json.RawMessage `json:"schema,omitempty"`
	// MaxBytes bounds a kept answer (order.DefaultResultMaxBytes).
	MaxBytes *int `json:"maxBytes,omitempty"`
}

// Call is a remote call: a method and a path under the service's base URL.
type Call struct {
	Method string `json:"method"`
	Path   string `json:"path"`
}

// Undo is the call that reverses a step's work, and what it does, for
// people (history, alerts, the console).
type Undo struct {
	Method      string `json:"method"`
	Path        string `json:"path"`
	Description string `json:"description"`
	// Carries is what the undo's request carries; left out, the call's.
	Carries []string `json:"carries,omitempty"`
}

// Timing is a step's own deadlines; a field left out is the stage's.
type Timing struct {
	Allowance        string `json:"allowance,omitempty"`
	MaxAllowance     string `json:"maxAllowance,omitempty"`
	FailureThreshold *int   `json:"failureThreshold,omitempty"`
	MaxHeartbeats    *int   `json:"maxHeartbeats,omitempty"`
}

// Request says what a step's request body carries.
type Request struct {
	Carries []string `json:"carries"`
}

// CarriesOrder is the request item that is the order's input; any other
// item names an earlier step, whose result goes along.
const CarriesOrder = order.CarriesOrder

// ReservedInput are the names an input schema's properties may not use:
// the request body's own fields and the order view's.
var ReservedInput = order.ReservedInput

// agentMargin is what an agent's invocation keeps beyond an attempt's
// allowance, to reply.
const agentMargin = 10 * time.Second

// minResultBytes is the least result.maxBytes: room for a reference.
const minResultBytes = 64

// Methods are the HTTP methods a call may use.
var Methods = []string{"GET", "POST", "PUT", "PATCH", "DELETE"}

// Problem is one thing wrong with a definition file, Kubernetes-style:
// the file (Source), the field's path in it ("steps[2].undo.path") and
// the rule.
type Problem = strictjson.Problem

// Problems is every problem found in one or more files, so that all of
// them can be fixed at once.
type Problems []Problem

func (ps Problems) Error() string { return strictjson.Problems(ps).Error() }

// Unwrap makes errors.Is(err, order.ErrInvalid) true.
func (ps Problems) Unwrap() error { return order.ErrInvalid }

// maxNameLen bounds names, so they fit in resource names and keys.
const maxNameLen = 63

var namePattern = regexp.MustCompile(`^[a-z0-9-]+$`)

// Parse decodes and checks a definition strictly: unknown fields,
// repeated keys, wrong types and every rule of Validate. An error is
// always Problems, all of them at once.
func Parse(file string, data []byte) (Definition, error) {
	def := Definition{File: file}
	problems, err := strictjson.Check(data, definitionShape, strictjson.Options{Integers: true})
	if err != nil {
		return def, Problems{{Source: file, Rule: "is not valid JSON: " + strictjson.Describe(err)}}
	}
	for i := range problems {
		problems[i].Source = file
	}
	if slices.ContainsFunc(problems, func(p Problem) bool { return p.Field == "" }) {
		return def, Problems(problems) // not an object: no rule applies
	}
	if err := json.Unmarshal(data, &def); err != nil && len(problems) == 0 {
		// The check reports every wrong type with its path; this is a
		// case it does not know.
		return def, Problems{{Source: file, Rule: "is not a definition: " + err.Error()}}
	}
	def.File = file
	// One problem per field: a value of the wrong type is not also empty.
	for _, p := range def.Validate() {
		if !slices.ContainsFunc(problems, func(q Problem) bool { return q.Field == p.Field }) {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return def, Problems(problems)
	}
	return def, nil
}

// Validate reports every rule the definition breaks.
func (d Definition) Validate() Problems {
	var ps Problems
	add := func(field, rule string, args ...any) {
		ps = append(ps, Problem{Source: d.File, Field: field, Rule: fmt.Sprintf(rule, args...)})
	}
	checkName := func(field, v string) {
		switch {
		case v == "":
			add(field, "must not be empty")
		case len(v) > maxNameLen:
			add(field, "is %d characters, the limit is %d", len(v), maxNameLen)
		case !namePattern.MatchString(v):
			add(field, "%q: must be lower-case letters, digits and \"-\" ([a-z0-9-])", v)
		}
	}
	checkName("name", d.Name)
	checkName("version", d.Version)
	if len(d.Input) == 0 || string(d.Input) == "null" {
		add("input", "is required: the JSON Schema of what a submission carries")
	} else if err := checkInputSchema(d.Input); err != nil {
		add("input", "is not a valid JSON Schema: %s", err)
	} else {
		checkInput(add, d.Input)
	}
	if len(d.Steps) == 0 {
		add("steps", "must list at least one step")
	}
	seen := map[string]int{}
	for i, s := range d.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		checkName(at+".name", s.Name)
		if j, dup := seen[s.Name]; dup && s.Name != "" {
			add(at+".name", "%q: steps[%d] has this name already; step names must be unique", s.Name, j)
		} else {
			seen[s.Name] = i
		}
		checkName(at+".service", s.Service)
		if s.Call == nil {
			add(at+".call", "is required: the remote call that does the step's work")
		} else {
			checkCall(add, at+".call", s.Call.Method, s.Call.Path)
		}
		if s.Undo != nil {
			checkCall(add, at+".undo", s.Undo.Method, s.Undo.Path)
			if strings.TrimSpace(s.Undo.Description) == "" {
				add(at+".undo.description", "must say what the undo does (\"refund the payment\")")
			}
		}
		if s.Timing != nil {
			checkTiming(add, at+".timing", *s.Timing)
		}
		if s.Request != nil {
			if len(s.Request.Carries) == 0 {
				add(at+".request.carries", "must list at least one item (\"order\")")
			}
			d.checkCarries(add, at+".request.carries", i, s.Request.Carries, false)
		}
		if s.Undo != nil && s.Undo.Carries != nil {
			if len(s.Undo.Carries) == 0 {
				add(at+".undo.carries", "must list at least one item, or be left out (the call's)")
			}
			d.checkCarries(add, at+".undo.carries", i, s.Undo.Carries, true)
		}
		if r := s.Result; r != nil {
			if r.MaxBytes != nil && (*r.MaxBytes < minResultBytes || *r.MaxBytes > order.MaxResultBytes) {
				add(at+".result.maxBytes", "%d: must be between %d and %d", *r.MaxBytes, minResultBytes, order.MaxResultBytes)
			}
			if len(r.Schema) > 0 {
				if err := checkInputSchema(r.Schema); err != nil {
					add(at+".result.schema", "is not a valid JSON Schema: %s", err)
				}
			}
		}
	}
	return ps
}

// checkCarries checks what step i's call (or, with undo, its undo call)
// carries: the order, and earlier steps' results (an undo's also its own
// step's).
func (d Definition) checkCarries(add func(string, string, ...any), at string, i int, carries []string, undo bool) {
	for k, c := range carries {
		field := fmt.Sprintf("%s[%d]", at, k)
		j := slices.IndexFunc(d.Steps, func(s Step) bool { return s.Name == c })
		switch {
		case slices.Index(carries, c) != k:
			add(field, "%q: listed twice", c)
		case c == CarriesOrder:
		case j < 0:
			add(field, "%q: unknown; want %q or the name of an earlier step", c, CarriesOrder)
		case j == i && !undo:
			add(field, "%q: the step itself; a call carries earlier steps' results (its undo may carry its own)", c)
		case j > i:
			add(field, "%q: runs after this step (steps[%d]); a call carries earlier steps' results", c, j)
		}
	}
}

// checkInput reports an input schema that does not describe an object, or
// whose properties take names orderly gives its own fields.
func checkInput(add func(string, string, ...any), raw json.RawMessage) {
	var schema struct {
		Type       any                        `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &schema) != nil {
		return // checkInputSchema said so
	}
	if schema.Type != "object" {
		add("input.type", "must be \"object\": a submission is a JSON object")
	}
	for _, name := range ReservedInput {
		if _, taken := schema.Properties[name]; taken {
			add("input.properties."+name, "is a name orderly gives its own field (%s); call it something else", strings.Join(ReservedInput, ", "))
		}
	}
}

func checkCall(add func(string, string, ...any), at, method, path string) {
	if !slices.Contains(Methods, method) {
		add(at+".method", "%q: unknown, want one of %s", method, strings.Join(Methods, ", "))
	}
	switch {
	case !strings.HasPrefix(path, "/"):
		add(at+".path", "%q: must start with \"/\"", path)
	case strings.ContainsAny(path, " \t\r\n?#"):
		add(at+".path", "%q: must be a path alone, without spaces, query or fragment", path)
	}
}

func checkTiming(add func(string, string, ...any), at string, t Timing) {
	allowance, okA := checkDuration(add, at+".allowance", t.Allowance)
	maxAllowance, okM := checkDuration(add, at+".maxAllowance", t.MaxAllowance)
	if okA && okM && maxAllowance < allowance {
		add(at+".maxAllowance", "%s is below allowance %s", t.MaxAllowance, t.Allowance)
	}
	// An attempt must end within the agent's invocation, with a margin to
	// reply.
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"allowance", allowance}, {"maxAllowance", maxAllowance}} {
		if limit := resources.AgentTimeout - agentMargin; f.d > limit {
			add(at+"."+f.field, "%s: an attempt must end within the agent's %s invocation: at most %s", f.d, resources.AgentTimeout, limit)
		}
	}
	if t.FailureThreshold != nil && *t.FailureThreshold < 1 {
		add(at+".failureThreshold", "%d: must be at least 1", *t.FailureThreshold)
	}
	if t.MaxHeartbeats != nil && *t.MaxHeartbeats < 0 {
		add(at+".maxHeartbeats", "%d: must not be negative", *t.MaxHeartbeats)
	}
}

// checkDuration parses a set duration; ok is false when it is unset or wrong.
func checkDuration(add func(string, string, ...any), at, v string) (time.Duration, bool) {
	if v == "" {
		return 0, false
	}
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		add(at, "%q: not a duration; write one like \"30s\" or \"2m\"", v)
		return 0, false
	case d <= 0:
		add(at, "%q: must be positive", v)
		return 0, false
	}
	return d, true
}

// Workflow is the definition as the domain runs it, with the stage's
// timing t for whatever the definition's steps leave out. Its error is
// Problems, naming the file.
func (d Definition) Workflow(t order.Timing) (order.Workflow, error) {
	if ps := d.Validate(); len(ps) > 0 {
		return order.Workflow{}, ps
	}
	w := order.Workflow{Name: d.Name, Version: d.Version, Input: d.Input, ClaimWithin: t.ClaimWithin, SkewGrace: t.SkewGrace}
	var ps Problems
	for i, s := range d.Steps {
		def := order.StepDef{
			Name: s.Name, Agent: s.Service,
			Allowance: t.Allowance, MaxAllowance: t.MaxAllowance, FailureThreshold: t.FailureThreshold, MaxHeartbeats: t.MaxHeartbeats,
			Call:    order.Endpoint{Method: s.Call.Method, Path: s.Call.Path},
			Carries: []string{CarriesOrder}, ResultMaxBytes: order.DefaultResultMaxBytes,
		}
		if s.Request != nil {
			def.Carries = s.Request.Carries
		}
		if s.Undo != nil {
			def.Undo = s.Undo.Description
			def.UndoCall = order.Endpoint{Method: s.Undo.Method, Path: s.Undo.Path}
			def.UndoCarries = def.Carries
			if s.Undo.Carries != nil {
				def.UndoCarries = s.Undo.Carries
			}
		}
		if r := s.Result; r != nil {
			def.ResultSchema = r.Schema
			if r.MaxBytes != nil {
				def.ResultMaxBytes = *r.MaxBytes
			}
		}
		if tm := s.Timing; tm != nil {
			// Validate parsed them already.
			if tm.Allowance != "" {
				def.Allowance, _ = time.ParseDuration(tm.Allowance)
			}
			if tm.MaxAllowance != "" {
				def.MaxAllowance, _ = time.ParseDuration(tm.MaxAllowance)
			}
			if tm.FailureThreshold != nil {
				def.FailureThreshold = *tm.FailureThreshold
			}
			if tm.MaxHeartbeats != nil {
				def.MaxHeartbeats = *tm.MaxHeartbeats
			}
		}
		// The stage's timing and the step's together must still make sense.
		if def.MaxAllowance < def.Allowance {
			ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].timing", i),
				Rule: fmt.Sprintf("allowance %s with maxAllowance %s (the stage's where not set): maxAllowance is below allowance", def.Allowance, def.MaxAllowance)})
		}
		w.Steps = append(w.Steps, def)
	}
	if len(ps) > 0 {
		return order.Workflow{}, ps
	}
	return w, nil
}

// Same reports whether two definitions say the same, wherever each was
// read from.
func (d Definition) Same(o Definition) bool {
	a, errA := json.Marshal(d)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && string(a) == string(b)
}
