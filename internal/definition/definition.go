// Package definition reads workflow definitions, the versioned files under
// workflows/ (one per workflow version), checks them, and turns them into
// the domain's order.Workflow. It keeps file formats and JSON Schema out of
// package order.
//
// It has one entry for each place definitions come from. Deployed is what
// a stage runs: the definitions built into the binary (workflows/, and
// examples/workflows/ unless it was built with -tags noexamples), those
// the stage names, for its timing. Load, then Build, read a directory of
// files (the CLI's workflow commands, the stack's synth): Load checks every
// file and reports all problems at once, Build turns them into
// order.Versions for a timing and a default.
package definition

import (
	"encoding/json"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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

// Step is one step of a definition: one that calls a service (Service
// and Call), or one that waits (Wait), which calls nothing.
type Step struct {
	Name string `json:"name"`
	// When, a CEL expression on the input and earlier results (see
	// package expr), is the step's condition: where it does not hold, the
	// step is skipped.
	When    string   `json:"when,omitempty"`
	Service string   `json:"service,omitempty"`
	Call    *Call    `json:"call,omitempty"`
	Wait    *Wait    `json:"wait,omitempty"`
	Undo    *Undo    `json:"undo,omitempty"`
	Timing  *Timing  `json:"timing,omitempty"`
	Request *Request `json:"request,omitempty"`
	Result  *Result  `json:"result,omitempty"`
}

// Wait is what a step that waits waits for: a durable timer (For, or
// Until and Max), or an event (Event), one or the other.
type Wait struct {
	// For is how long the step waits once it is reached: a Go duration.
	// Until, instead, is a CEL expression giving the time it waits until,
	// from the input and earlier results; Max (a Go duration, required
	// with Until) bounds the wait after the step is reached.
	For   string `json:"for,omitempty"`
	Until string `json:"until,omitempty"`
	Max   string `json:"max,omitempty"`
	// Event names the event the step waits for, sent by the order's
	// client or an operator (POST /orders/{id}/events/{name}); its data,
	// a JSON object, is the step's result. Timeout (a Go duration)
	// bounds the wait; OnTimeout says what happens when no event came by
	// then: OnTimeoutFail (the default) or OnTimeoutContinue. Schema,
	// when set, is the JSON Schema the data must match.
	Event     string          `json:"event,omitempty"`
	Timeout   string          `json:"timeout,omitempty"`
	OnTimeout string          `json:"onTimeout,omitempty"`
	Schema    json.RawMessage `json:"schema,omitempty"`
	// RejectWhen, a CEL expression on the event's data (event), the
	// input and earlier results, fails the step when it holds for an
	// event: the event is taken, and the order compensated.
	RejectWhen string `json:"rejectWhen,omitempty"`
}

// isTimer reports whether the wait is a timer, not an event (a wait that
// is neither, or both, is not).
func (w Wait) isTimer() bool { return (w.For != "" || w.Until != "") && w.Event == "" }

// What a step that waits for an event does when it does not come in time
// (Wait.OnTimeout): fail, and the order is compensated; or continue, the
// step Processed with no result.
const (
	OnTimeoutFail     = "fail"
	OnTimeoutContinue = "continue"
)

// Result is what the definition says of a step's answer.
type Result struct {
	// Schema is the JSON Schema every answer must match.
	Schema json.RawMessage `json:"schema,omitempty"`
	// MaxBytes bounds a kept answer (order.DefaultResultMaxBytes).
	MaxBytes *int `json:"maxBytes,omitempty"`
	// ShownToClient shows the answer to the order's client (GET
	// /orders/{id} and its history), and so keeps it; left out, only
	// operators see it.
	ShownToClient bool `json:"shownToClient,omitempty"`
}

// Call is a remote call: a method and a path under the service's base URL.
type Call struct {
	Method string `json:"method"`
	Path   string `json:"path"`
	// Callback, when set, makes the call one whose service calls back:
	// it accepts the call (202) and calls orderly back when the work is
	// done.
	Callback *Callback `json:"callback,omitempty"`
	// Poll, when set, makes the call one whose service is polled: it
	// accepts the call (202) with a status URL (Location) that orderly
	// checks until the work is done.
	Poll *Poll `json:"poll,omitempty"`
}

// Poll is how a step whose service is polled waits, in Go durations:
// Timeout once the call was accepted, after which the call is made again
// with the same Idempotency-Key, up to the step's failureThreshold; Every
// between two checks when the service's answer gives no Retry-After
// (DefaultPollEvery when left out).
type Poll struct {
	Timeout string `json:"timeout"`
	Every   string `json:"every,omitempty"`
}

// DefaultPollEvery is how long after a check the next one is made when
// the service gives no Retry-After and the definition no poll.every.
const DefaultPollEvery = time.Minute

// Callback is how long a step whose service calls back waits for the
// callback, in Go durations: Timeout once the call was accepted, moved
// on by Timeout again by each "working" callback, up to MaxTimeout
// (Timeout when left out) after the call was accepted. A wait that ends
// with no callback is a timeout: the call is made again with the same
// Idempotency-Key, up to the step's failureThreshold.
type Callback struct {
	Timeout    string `json:"timeout"`
	MaxTimeout string `json:"maxTimeout,omitempty"`
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

// What carries an order, and how much each holds. Every request to an
// agent is one SQS message with the order's input and every kept result
// (order.NewRequest); the order with all its records is one DynamoDB
// item with the input, a copy of its customerId, every kept result, and
// a record per step and per undo. Validate adds up the most each may
// hold and refuses a definition whose orders might not fit.
const (
	// MaxMessageBytes is what an SQS message holds, its body and its
	// attributes together (the queues' default, 256 KiB).
	MaxMessageBytes = 256 << 10
	// MaxItemBytes is what a DynamoDB item holds, attribute names
	// included: 400 KB, DynamoDB's KB being 1,024 bytes.
	MaxItemBytes = 400 << 10
	// RequestOverheadBytes bounds a request message beside the input and
	// the results: its own fields at their longest (names of 63
	// characters) and the message's attributes; ResultOverheadBytes is
	// each kept result's name in it. TestLargestOrderFits
	// (internal/measure/cost) measures them on the largest order Validate
	// lets through: 567 and 68 bytes, rounded up here.
	RequestOverheadBytes = 1024
	ResultOverheadBytes  = 72
	// ItemOverheadBytes bounds the order item beside the input, its
	// customerId copy and its records: the order's own attributes at
	// their longest (a caller of 1 KiB, a LastError of 1 KiB);
	// RecordOverheadBytes bounds one record beside its result (a
	// reference of 256 characters of up to 4 bytes, a LastError of 1 KiB).
	// The same test measures 2981 and 2416 bytes.
	ItemOverheadBytes   = 4096
	RecordOverheadBytes = 2560
)

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

// maxFunctionNameLen is Lambda's limit on a function's name. A service's
// agent is the function orderly-<stage>-<service>-agent (infra/stack,
// resources.AgentFunction), so a service name leaves room for the
// shortest stage, one character; a longer stage leaves less, and synth
// refuses the function's name (CheckAgentNames checks a stage's own).
const (
	maxFunctionNameLen = 64
	maxServiceLen      = maxFunctionNameLen - len("orderly-") - len("x-") - len("-agent")
)

// Bounds on a step's timing.
const (
	// minAllowance is the least allowance a step may set: within it a
	// request crosses a queue and may start a function (a cold start takes
	// hundreds of milliseconds) before the call begins, and the agent
	// heartbeats every third of it, each heartbeat one write.
	minAllowance = time.Second
	// maxFailureThreshold bounds the timeouts a step may take: a service
	// that times out this often is down, not slow, and the order waits
	// for every attempt (each up to the agent's limit) before its
	// compensation starts.
	maxFailureThreshold = 100
	// maxHeartbeatsLimit is the most heartbeats one attempt can use: one
	// every third of the allowance (at least minAllowance) within the
	// agent's invocation. More would never be reached.
	maxHeartbeatsLimit = 3 * int(resources.AgentTimeout/minAllowance)
)

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
	// One problem per field: a value of the wrong type is not also empty,
	// nor are the fields it should have held missing.
	for _, p := range append(def.Validate(), def.checkGiven(data)...) {
		if !slices.ContainsFunc(problems, func(q Problem) bool { return q.Field == p.Field || strings.HasPrefix(p.Field, q.Field+".") }) {
			problems = append(problems, p)
		}
	}
	if len(problems) > 0 {
		return def, Problems(problems)
	}
	return def, nil
}

// checkGiven reports what Validate cannot see in the decoded definition,
// only in its file data: a step that waits with a service, even an empty
// one; an undo with a callback; a callback's maxTimeout given empty; an
// expression given empty.
func (d Definition) checkGiven(data []byte) Problems {
	var given struct {
		Steps []map[string]json.RawMessage `json:"steps"`
	}
	if json.Unmarshal(data, &given) != nil || len(given.Steps) != len(d.Steps) {
		return nil // Parse reports why
	}
	var ps Problems
	for i, s := range d.Steps {
		if _, ok := given.Steps[i]["service"]; ok && s.Wait != nil && s.Service == "" {
			ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].service", i), Rule: waitHasNoService})
		}
		// Left out, there is no condition; given empty, it is a mistake.
		var wait struct {
			RejectWhen *string `json:"rejectWhen"`
		}
		_ = json.Unmarshal(given.Steps[i]["wait"], &wait)
		for _, e := range []struct {
			field string
			given bool
		}{
			{"when", string(given.Steps[i]["when"]) == `""`},
			{"wait.rejectWhen", wait.RejectWhen != nil && *wait.RejectWhen == ""},
		} {
			if e.given {
				ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].%s", i, e.field), Rule: "is empty: write a condition, or leave it out"})
			}
		}
		var undo map[string]json.RawMessage
		if json.Unmarshal(given.Steps[i]["undo"], &undo) == nil {
			if _, ok := undo["callback"]; ok {
				ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].undo.callback", i), Rule: undoHasNoCallback})
			}
		}
		var call struct {
			Callback *struct {
				MaxTimeout *string `json:"maxTimeout"`
			} `json:"callback"`
			Poll *struct {
				Every *string `json:"every"`
			} `json:"poll"`
		}
		// Left out, maxTimeout is the timeout; given empty, it is a
		// duration that does not parse.
		if s.Wait == nil && json.Unmarshal(given.Steps[i]["call"], &call) == nil && call.Callback != nil && call.Callback.MaxTimeout != nil && *call.Callback.MaxTimeout == "" {
			checkWaitLength(func(field, rule string, args ...any) {
				ps = append(ps, Problem{Source: d.File, Field: field, Rule: fmt.Sprintf(rule, args...)})
			}, fmt.Sprintf("steps[%d].call.callback.maxTimeout", i), "")
		}
		if s.Wait == nil && call.Poll != nil && call.Poll.Every != nil && *call.Poll.Every == "" {
			checkWaitLength(func(field, rule string, args ...any) {
				ps = append(ps, Problem{Source: d.File, Field: field, Rule: fmt.Sprintf(rule, args...)})
			}, fmt.Sprintf("steps[%d].call.poll.every", i), "")
		}
		if _, ok := undo["poll"]; ok {
			ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].undo.poll", i), Rule: undoHasNoPoll})
		}
	}
	return ps
}

// undoHasNoCallback is the rule an undo with a callback breaks:
// compensation takes an undo's answer as the work undone and waits for
// no callback (StepReply.Check refuses an undo's acceptance).
const undoHasNoCallback = "an undo is a plain call, answered when the work is undone; only the step's call may be answered by a callback: leave it out"

// undoHasNoPoll is the rule an undo that is polled breaks, for the same
// reason as undoHasNoCallback.
const undoHasNoPoll = "an undo is a plain call, answered when the work is undone; only the step's call may be polled: leave it out"

// waitHasNoService is the rule a step that waits and names a service breaks.
const waitHasNoService = "a step that waits has no service; leave it out"

// Validate reports every rule the definition breaks.
func (d Definition) Validate() Problems {
	ps, _ := d.validate()
	return ps
}

// validate is Validate, with the definition's expressions compiled (nil
// when it breaks a rule).
func (d Definition) validate() (Problems, []stepExprs) {
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
	inputOK := false
	if len(d.Input) == 0 || string(d.Input) == "null" {
		add("input", "is required: the JSON Schema of what a submission carries")
	} else if err := checkInputSchema(d.Input); err != nil {
		add("input", "is not a valid JSON Schema: %s", err)
	} else {
		checkInput(add, d.Input)
		inputOK = true
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
		if s.Name == CarriesOrder {
			add(at+".name", "%q: is the item of \"carries\" that is the order's input; call the step something else", s.Name)
		}
		switch n := len(s.Service); {
		case s.Wait != nil:
			d.checkWaitStep(add, checkName, i, s)
			continue // it calls nothing: no call rule applies
		case n == 0 && s.Call == nil:
			add(at, "neither calls a service (\"service\" and \"call\") nor waits (\"wait\"): give it one or the other")
		case n > maxServiceLen:
			add(at+".service", "is %d characters, the limit is %d: the service's agent is the Lambda function orderly-<stage>-<service>-agent, and Lambda takes at most %d characters (a service of at most %d with stage \"dev\")",
				n, maxServiceLen, maxFunctionNameLen, maxServiceLen+1-len("dev"))
		default:
			checkName(at+".service", s.Service)
		}
		switch {
		case s.Call != nil:
			checkCall(add, at+".call", s.Call.Method, s.Call.Path)
			if s.Call.Callback != nil {
				checkCallback(add, at+".call.callback", *s.Call.Callback)
			}
			if s.Call.Poll != nil {
				checkPoll(add, at+".call.poll", *s.Call.Poll)
			}
			if s.Call.Callback != nil && s.Call.Poll != nil {
				add(at+".call", "has both callback and poll: its service either calls back or is polled; keep the one it does")
			}
		case s.Service != "":
			add(at+".call", "is required: the remote call that does the step's work")
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
		if s.Result != nil {
			checkResult(add, at+".result", *s.Result, false)
		}
	}
	// Expressions are checked against the input's schema: with none to
	// check them against, the input's problem is the one to fix first.
	var exprs []stepExprs
	if inputOK {
		exprs = d.compileExprs(add)
	}
	d.checkSize(add, readsOf(exprs))
	if len(ps) > 0 {
		return ps, nil
	}
	return ps, exprs
}

// Bounds on how long a step waits: a timer's duration, an event's
// timeout.
const (
	// minWait is the least a step waits. A wait ends on the Supervisor's
	// schedule, so a shorter one would end no sooner.
	minWait = time.Second
	// maxWait is the most a step waits, a year: a bound keeps every
	// order ending.
	maxWait = 8760 * time.Hour
)

// checkWaitStep checks step i, one that waits: it calls no service, so
// each field of a call is a mistake, named; its wait must end; and a
// timer has no result, while an event's data is its result.
func (d Definition) checkWaitStep(add func(string, string, ...any), checkName func(string, string), i int, s Step) {
	at := fmt.Sprintf("steps[%d]", i)
	event := s.Wait.Event != ""
	for _, f := range []struct {
		field string
		set   bool
		rule  string
	}{
		{"service", s.Service != "", waitHasNoService},
		{"call", s.Call != nil, "a step that waits calls no service; leave it out"},
		{"undo", s.Undo != nil, "a step that waits has nothing to undo; leave it out"},
		{"timing", s.Timing != nil, "a step that waits has no allowance (its wait says how long it takes); leave it out"},
		{"request", s.Request != nil, "a step that waits sends no request; leave it out"},
		{"result", s.Result != nil && s.Wait.isTimer(), "a step that waits has no result (a timer answers nothing); leave it out"},
	} {
		if f.set {
			add(at+"."+f.field, "%s", f.rule)
		}
	}
	if event && s.Result != nil {
		checkResult(add, at+".result", *s.Result, true)
	}
	d.checkWait(add, checkName, i, at+".wait", *s.Wait)
}

// checkResult checks a step's result: its bound, and its schema, which an
// event's step has in its wait (the event's data is its result).
func checkResult(add func(string, string, ...any), at string, r Result, event bool) {
	if r.MaxBytes != nil && (*r.MaxBytes < minResultBytes || *r.MaxBytes > order.MaxResultBytes) {
		add(at+".maxBytes", "%d: must be between %d and %d", *r.MaxBytes, minResultBytes, order.MaxResultBytes)
	}
	switch {
	case len(r.Schema) == 0:
	case event:
		add(at+".schema", "an event's data is checked by \"wait.schema\"; move the schema there")
	default:
		if err := checkInputSchema(r.Schema); err != nil {
			add(at+".schema", "is not a valid JSON Schema: %s", err)
		}
	}
}

// checkWait checks what step i waits for: a timer's duration, or its
// time and bound, or an event's name, timeout, schema and outcome. (The
// expressions are compileExprs'.)
func (d Definition) checkWait(add func(string, string, ...any), checkName func(string, string), i int, at string, w Wait) {
	timer := "for"
	if w.For == "" {
		timer = "until"
	}
	switch {
	case (w.For != "" || w.Until != "") && w.Event != "":
		add(at, "has both %q (a timer) and \"event\": a step waits for one or the other; keep one", timer)
		return
	case w.For != "" && w.Until != "":
		add(at, "has both \"for\" (how long a timer waits) and \"until\" (the time it waits until): a timer has one or the other; keep one")
		return
	case w.For == "" && w.Until == "" && w.Event == "":
		add(at, "has neither \"for\" (how long a timer waits, \"30m\"), \"until\" (the time a timer waits until, with its \"max\") nor \"event\" (the event the step waits for, with its \"timeout\"): give it one")
		return
	case w.For != "" || w.Until != "":
		switch {
		case w.For != "":
			checkWaitLength(add, at+".for", w.For)
			if w.Max != "" {
				add(at+".max", "bounds a timer's \"until\"; a timer with \"for\" waits exactly that long: leave it out")
			}
		case w.Max == "":
			add(at+".max", "is required with \"until\": a timer with no bound would keep its orders waiting for ever, whatever time its expression gives; say how long the step waits at most once reached (\"720h\")")
		default:
			checkWaitLength(add, at+".max", w.Max)
		}
		for _, f := range []struct {
			field string
			set   bool
			what  string
		}{
			{"timeout", w.Timeout != "", "how long the step waits for it); a timer has none (" + map[string]string{"for": `"for" is how long it waits`, "until": `"until" and "max" say how long it waits`}[timer] + ")"},
			{"schema", len(w.Schema) > 0, "the JSON Schema of its data); a timer has none"},
			{"onTimeout", w.OnTimeout != "", "what its timeout does); a timer has none"},
			{"rejectWhen", w.RejectWhen != "", "a condition on its data that fails the step); a timer has none"},
		} {
			if f.set {
				add(at+"."+f.field, "is an event's (%s: leave it out", f.what)
			}
		}
		return
	}
	if w.Max != "" {
		add(at+".max", "is a timer's (how long it waits at most after \"until\"); an event's wait is bounded by \"timeout\": leave it out")
	}
	checkName(at+".event", w.Event)
	// An event is sent by name: two steps waiting for one would leave
	// which one it completes to chance.
	if j := slices.IndexFunc(d.Steps[:i], func(o Step) bool { return o.Wait != nil && o.Wait.Event == w.Event }); j >= 0 {
		add(at+".event", "%q: steps[%d] waits for it already; an event completes one step of its workflow, or which one it completes would be ambiguous", w.Event, j)
	}
	if w.Timeout == "" {
		add(at+".timeout", "is required with \"event\": a wait with no bound would keep its orders waiting for ever; say how long the step waits for its event (\"48h\")")
	} else {
		checkWaitLength(add, at+".timeout", w.Timeout)
	}
	if len(w.Schema) > 0 {
		checkEventSchema(add, at+".schema", w.Schema)
	}
	switch w.OnTimeout {
	case "", OnTimeoutFail, OnTimeoutContinue:
	default:
		add(at+".onTimeout", "%q: want %q (the default: the step fails and the order is compensated) or %q (the step is Processed with no result and the order goes on)",
			w.OnTimeout, OnTimeoutFail, OnTimeoutContinue)
	}
}

// checkWaitLength checks how long a wait lasts at most: a timer's
// duration, an event's timeout, a callback's timeouts. ok is false when
// it breaks a rule.
func checkWaitLength(add func(string, string, ...any), at, v string) (d time.Duration, ok bool) {
	d, err := time.ParseDuration(v)
	switch {
	case err != nil:
		add(at, "%q: not a duration; write one like \"30m\" or \"48h\"", v)
	case d < minWait:
		add(at, "%q: must be at least %s: a wait ends on the Supervisor's schedule (once a minute by default), so a shorter one ends no sooner", v, minWait)
	case d > maxWait:
		add(at, "%q: at most 8760h (a year): a bound keeps every order ending", v)
	default:
		return d, true
	}
	return d, false
}

// checkCallback checks how long a step whose service calls back waits
// for the callback: a timeout, required, and a maxTimeout not below it,
// each a wait's length (a bound keeps every order ending).
func checkCallback(add func(string, string, ...any), at string, c Callback) {
	timeout, okT := checkRequiredWait(add, at+".timeout", c.Timeout, "how long the step waits for its service's callback once the call was accepted (\"2h\")")
	if c.MaxTimeout == "" {
		return // the timeout; given empty, checkGiven says so
	}
	if maxTimeout, okM := checkWaitLength(add, at+".maxTimeout", c.MaxTimeout); okT && okM && maxTimeout < timeout {
		add(at+".maxTimeout", "%s is below timeout %s: the wait starts at timeout, and \"working\" callbacks move it on up to maxTimeout after the call was accepted", c.MaxTimeout, c.Timeout)
	}
}

// checkRequiredWait checks value, a wait's length that must be given:
// what says what it is for when it is left out.
func checkRequiredWait(add func(string, string, ...any), at, value, what string) (time.Duration, bool) {
	if value == "" {
		add(at, "is required: %s", what)
		return 0, false
	}
	return checkWaitLength(add, at, value)
}

// checkPoll checks how long a step whose service is polled waits: a
// timeout, required, and an every, each a wait's length, every not over
// the timeout (a check after the wait ended is never made).
func checkPoll(add func(string, string, ...any), at string, p Poll) {
	timeout, okT := checkRequiredWait(add, at+".timeout", p.Timeout, "how long the step waits for its service to finish once the call was accepted (\"2h\")")
	if p.Every == "" {
		return // DefaultPollEvery; given empty, checkGiven says so
	}
	if every, okE := checkWaitLength(add, at+".every", p.Every); okT && okE && every > timeout {
		add(at+".every", "%s is over timeout %s: the wait would end before the first check", p.Every, p.Timeout)
	}
}

// checkEventSchema reports an event's schema that does not compile (with
// the compiler that checks the event's data, control.SendEvent's) or does
// not describe an object: an event's data is a JSON object.
func checkEventSchema(add func(string, string, ...any), at string, raw json.RawMessage) {
	if err := checkInputSchema(raw); err != nil {
		add(at, "is not a valid JSON Schema: %s", err)
		return
	}
	var schema struct {
		Type any `json:"type"`
	}
	if json.Unmarshal(raw, &schema) != nil || schema.Type != "object" {
		add(at+".type", "must be \"object\": an event's data is a JSON object")
	}
}

// CheckAgentNames reports each step whose service's agent, the Lambda
// function orderly-<stage>-<service>-agent (infra/stack), is named longer
// than Lambda takes in the given stage: cdk synth refuses it. Validate
// checks the bound of the shortest stage; this checks the stage's own. A
// service Validate refuses is not reported again.
func (d Definition) CheckAgentNames(stage string) Problems {
	var ps Problems
	for i, s := range d.Steps {
		if s.Wait != nil {
			continue // no agent
		}
		if len(s.Service) > maxServiceLen || !namePattern.MatchString(s.Service) {
			continue // Validate says what is wrong
		}
		fn := "orderly-" + stage + "-" + resources.AgentFunction(s.Service)
		if len(fn) <= maxFunctionNameLen {
			continue
		}
		ps = append(ps, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].service", i),
			Rule: fmt.Sprintf("%q: the service's agent is the Lambda function %q, %d characters with stage %q, and Lambda takes at most %d: use a service of at most %d characters, or a shorter stage",
				s.Service, fn, len(fn), stage, maxFunctionNameLen, maxFunctionNameLen-(len(fn)-len(s.Service)))})
	}
	return ps
}

// Warnings reports what the definition allows but may not mean, in the
// form of Problems: a definition with warnings loads and runs. An undo
// that carries its own step's result is sent without it when the step
// timed out after its work was done (its answer never came), so its
// service must then undo by the Idempotency-Key alone. A call or undo
// that carries the data of an event whose step goes on without it
// (onTimeout "continue") is sent without it when the event never came,
// and one that carries the result of a step with a condition, when the
// step was skipped.
func (d Definition) Warnings() Problems {
	var ws Problems
	// mayNotCome says why the named step may leave no result, or "".
	mayNotCome := func(name string) string {
		j := slices.IndexFunc(d.Steps, func(s Step) bool { return s.Name == name })
		switch {
		case j < 0:
		case d.Steps[j].When != "":
			return "it may be skipped (its when)"
		case d.Steps[j].Wait != nil && d.Steps[j].Wait.Event != "" && d.Steps[j].Wait.OnTimeout == OnTimeoutContinue:
			return fmt.Sprintf("its event may not come (its wait's onTimeout is %q)", OnTimeoutContinue)
		}
		return ""
	}
	for i, s := range d.Steps {
		for _, c := range []struct {
			field   string
			carries []string
		}{{"request.carries", carriesOf(s)}, {"undo.carries", undoCarriesOf(s)}} {
			if c.field == "undo.carries" && (s.Undo == nil || s.Undo.Carries == nil) {
				continue // the call's, reported once
			}
			for k, item := range c.carries {
				if why := mayNotCome(item); why != "" {
					ws = append(ws, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].%s[%d]", i, c.field, k),
						Rule: fmt.Sprintf("%q: %s: the request is then sent without results.%s", item, why, item)})
				}
			}
		}
		if s.Undo == nil {
			continue
		}
		for k, c := range s.Undo.Carries {
			if c == s.Name {
				ws = append(ws, Problem{Source: d.File, Field: fmt.Sprintf("steps[%d].undo.carries[%d]", i, k),
					Rule: fmt.Sprintf("%q: the step's own result: an undo after the step timed out (its work may be done, its answer never came) is sent without results.%s, so the service must undo by the Idempotency-Key alone", c, c)})
			}
		}
	}
	return ws
}

// Sizes are the most an order of a definition may hold: one request to
// an agent (an SQS message) and its item (DynamoDB).
type Sizes struct {
	// Kept is how many steps' results are kept, and Results the most
	// they hold together (their maxBytes, DefaultResultMaxBytes where
	// unset).
	Kept, Results int
	// Records is the item's records: one per step, one per undo.
	Records int
	// Message and Item are the largest request and item.
	Message, Item int
}

// Sizes adds up the most an order of d may hold. The input is at most
// order.MaxInputBytes; the item holds it and a copy of its customerId,
// which may be most of it.
func (d Definition) Sizes() Sizes {
	return d.sizes(readsOf(d.compileExprs(nil)))
}

// sizes is Sizes, read the results some expression reads.
func (d Definition) sizes(read map[string]bool) Sizes {
	var z Sizes
	for _, s := range d.Steps {
		z.Records++
		if s.Undo != nil {
			z.Records++
		}
		if !d.keeps(s.Name, read) {
			continue
		}
		z.Kept++
		z.Results += order.DefaultResultMaxBytes
		if s.Result != nil && s.Result.MaxBytes != nil {
			z.Results += *s.Result.MaxBytes - order.DefaultResultMaxBytes
		}
	}
	z.Message = RequestOverheadBytes + z.Kept*ResultOverheadBytes + order.MaxInputBytes + z.Results
	z.Item = ItemOverheadBytes + z.Records*RecordOverheadBytes + 2*order.MaxInputBytes + z.Results
	return z
}

// keeps reports whether the named step's result is kept: it is an
// event's data (always kept: it says who decided what, and tells a
// repeated event from another), some call or undo carries it, its client
// is shown it, or an expression reads it (read), as order.Workflow.Keeps
// says of the workflow.
func (d Definition) keeps(name string, read map[string]bool) bool {
	if read[name] {
		return true
	}
	for _, s := range d.Steps {
		if s.Name == name && s.Wait != nil && s.Wait.Event != "" {
			return true
		}
		if s.Name == name && s.Result != nil && s.Result.ShownToClient {
			return true
		}
		carries := []string{CarriesOrder}
		if s.Request != nil {
			carries = s.Request.Carries
		}
		if slices.Contains(carries, name) {
			return true
		}
		if s.Undo != nil && s.Undo.Carries != nil && slices.Contains(s.Undo.Carries, name) {
			return true
		}
	}
	return false
}

// checkSize refuses a definition whose largest order would not fit an
// SQS message or a DynamoDB item.
func (d Definition) checkSize(add func(string, string, ...any), read map[string]bool) {
	z := d.sizes(read)
	kept := fmt.Sprintf("kept results: their maxBytes add up to %d bytes (%d steps' results, %d each where unset)", z.Results, z.Kept, order.DefaultResultMaxBytes)
	if z.Message > MaxMessageBytes {
		add("steps", "%s; with the input (at most %d bytes) and the request's own fields (at most %d bytes), a request to an agent may be %d bytes, %d over the %d an SQS message holds; lower some result.maxBytes, or carry fewer results",
			kept, order.MaxInputBytes, z.Message-order.MaxInputBytes-z.Results, z.Message, z.Message-MaxMessageBytes, MaxMessageBytes)
	}
	if z.Item > MaxItemBytes {
		add("steps", "%s; with the input and its customerId (at most %d bytes) and %d records (at most %d bytes), the order's item may be %d bytes, %d over the %d a DynamoDB item holds; lower some result.maxBytes, or carry fewer results",
			kept, 2*order.MaxInputBytes, z.Records, z.Item-2*order.MaxInputBytes-z.Results, z.Item, z.Item-MaxItemBytes, MaxItemBytes)
	}
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
		case d.Steps[j].Wait != nil && d.Steps[j].Wait.isTimer():
			add(field, "%q: a timer has no result to carry (an event's step has: its data)", c)
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
	if rule := pathRule(path); rule != "" {
		add(at+".path", "%q: %s", path, rule)
	}
}

// pathRule is the first rule a call's path breaks, or "". A path is
// appended to the service's base URL as written, and (for a service
// behind API Gateway with IAM auth) named in the agent's IAM policy as
// written (services.APIResource), so it must be a URL path that means one
// thing to everyone: what is sent, what the service resolves, what IAM
// grants.
func pathRule(path string) string {
	switch {
	case !strings.HasPrefix(path, "/"):
		return "must start with \"/\""
	case strings.ContainsFunc(path, unicode.IsControl):
		// Refused, not shown escaped: escaped, it is refused below too.
		return "must not hold control characters"
	case strings.ContainsAny(path, " ?#"):
		return "must be a path alone, without spaces, query or fragment"
	}
	for i := 0; i < len(path); i++ {
		if path[i] != '%' {
			continue
		}
		if esc := path[i:min(i+3, len(path))]; len(esc) < 3 || !isHex(esc[1:]) {
			return fmt.Sprintf("%q is not an escape: \"%%\" starts two hex digits (\"%%2F\"), and \"%%\" itself is written \"%%25\"", esc)
		}
	}
	// A server unescapes the path, and an escaped control character is
	// one again there ("%0D%0A" ends a header line, "%00" a C string).
	if esc, ok := escapedControl(path); ok {
		return fmt.Sprintf("%q escapes a control character: a path must not hold control characters, escaped or not", esc)
	}
	if strings.Contains(path, "*") {
		return "\"*\" is refused: a service behind API Gateway with IAM auth is granted execute-api:Invoke on each call's method and path, where \"*\" is a wildcard that would grant every path"
	}
	// Escaped, a dot segment is one still to a server that unescapes
	// first ("%2e%2e", "a%2F.."); and some take "\" for "/".
	dotSegment := func(seg string) bool { return seg == "." || seg == ".." }
	for seg := range strings.SplitSeq(path, "/") {
		unescaped, err := url.PathUnescape(seg)
		if err == nil && slices.ContainsFunc(strings.FieldsFunc(unescaped, func(r rune) bool { return r == '/' || r == '\\' }), dotSegment) {
			return "dot segments (\".\" and \"..\") are refused: a server or proxy resolves them to another path than the one called, and than the one the agent's IAM policy names"
		}
	}
	if r, ok := unsafePathRune(path); ok {
		return fmt.Sprintf("must be written as sent, %q escaped: %q", string(r), escapePath(path))
	}
	// What the checks above let through parses; this says so if not.
	if _, err := url.Parse("https://service.example" + path); err != nil {
		return "is not a URL path: " + err.Error()
	}
	return ""
}

// escapedControl returns the first escape in path, as written, that
// unescapes to a control character: one byte ("%0D", "%7F") or the
// UTF-8 of one (C1's "%C2%85"). Every "%" in path starts an escape.
func escapedControl(path string) (string, bool) {
	for i := 0; i < len(path); {
		if path[i] != '%' {
			i++
			continue
		}
		// The bytes of the run of escapes from i, as many as a rune takes.
		var b []byte
		for j := i; len(b) < utf8.UTFMax && j+3 <= len(path) && path[j] == '%'; j += 3 {
			c, err := strconv.ParseUint(path[j+1:j+3], 16, 8)
			if err != nil {
				break
			}
			b = append(b, byte(c))
		}
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError && unicode.IsControl(r) {
			return path[i : i+3*n], true
		}
		i += 3 * n
	}
	return "", false
}

// pathByte reports whether c may stand for itself in a path: RFC 3986's
// unreserved characters, its sub-delimiters but "*", ":", "@", "/" and
// "%" (checked as escapes).
func pathByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || strings.IndexByte("-._~!$&'()+,;=:@/%", c) >= 0
}

// unsafePathRune returns the first rune of path that must be escaped.
func unsafePathRune(path string) (rune, bool) {
	for i, r := range path {
		if r >= utf8.RuneSelf || !pathByte(path[i]) {
			return r, true
		}
	}
	return 0, false
}

// escapePath is path with every byte that must be escaped escaped.
func escapePath(path string) string {
	var b strings.Builder
	for i := 0; i < len(path); i++ {
		if c := path[i]; pathByte(c) {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
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
	for _, f := range []struct {
		field string
		d     time.Duration
	}{{"allowance", allowance}, {"maxAllowance", maxAllowance}} {
		if f.d > 0 && f.d < minAllowance {
			add(at+"."+f.field, "%s: must be at least %s: a request crosses a queue and starts a function before its call begins, and the agent heartbeats every third of the allowance", f.d, minAllowance)
		}
	}
	switch ft := t.FailureThreshold; {
	case ft == nil:
	case *ft < 1:
		add(at+".failureThreshold", "%d: must be at least 1", *ft)
	case *ft > maxFailureThreshold:
		longest := resources.AgentTimeout - agentMargin
		add(at+".failureThreshold", "%d: at most %d: a step that times out that often is down, not slow, and %d timeouts of up to %s each hold the order about %.0f hours before its compensation starts",
			*ft, maxFailureThreshold, maxFailureThreshold, longest, (maxFailureThreshold * longest).Hours())
	}
	switch hb := t.MaxHeartbeats; {
	case hb == nil:
	case *hb < 0:
		add(at+".maxHeartbeats", "%d: must not be negative", *hb)
	case *hb > maxHeartbeatsLimit:
		add(at+".maxHeartbeats", "%d: at most %d: the agent heartbeats every third of the allowance (at least %s) within its %s invocation, so no attempt can use more",
			*hb, maxHeartbeatsLimit, minAllowance, resources.AgentTimeout)
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
	ps, exprs := d.validate()
	if len(ps) > 0 {
		return order.Workflow{}, ps
	}
	w := order.Workflow{Name: d.Name, Version: d.Version, Input: d.Input, ClaimWithin: t.ClaimWithin, SkewGrace: t.SkewGrace}
	for i, s := range d.Steps {
		if s.Wait != nil {
			w.Steps = append(w.Steps, waitStep(s, t, exprs[i]))
			continue
		}
		def := order.StepDef{
			Name: s.Name, Agent: s.Service, When: AsExpr(exprs[i].when),
			Allowance: t.Allowance, MaxAllowance: t.MaxAllowance, FailureThreshold: t.FailureThreshold, MaxHeartbeats: t.MaxHeartbeats,
			Call:    order.Endpoint{Method: s.Call.Method, Path: s.Call.Path},
			Carries: []string{CarriesOrder}, ResultMaxBytes: order.DefaultResultMaxBytes,
		}
		if s.Request != nil {
			def.Carries = s.Request.Carries
		}
		if cb := s.Call.Callback; cb != nil {
			// Validate parsed them already; maxTimeout left out is the
			// timeout.
			def.Callback = &order.CallbackWait{}
			def.Callback.Timeout, _ = time.ParseDuration(cb.Timeout)
			def.Callback.MaxTimeout = def.Callback.Timeout
			if cb.MaxTimeout != "" {
				def.Callback.MaxTimeout, _ = time.ParseDuration(cb.MaxTimeout)
			}
		}
		if p := s.Call.Poll; p != nil {
			// Validate parsed them already.
			def.Poll = &order.PollWait{Every: DefaultPollEvery}
			def.Poll.Timeout, _ = time.ParseDuration(p.Timeout)
			if p.Every != "" {
				def.Poll.Every, _ = time.ParseDuration(p.Every)
			}
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
			def.ResultSchema, def.ResultShownToClient = r.Schema, r.ShownToClient
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

// waitStep is s, a valid step that waits, as the domain runs it. It has no
// agent, call, undo or carries: nothing calls a service for it. The
// stage's timing stays on it, unread while it waits, so that no code
// reading a step's timing finds zeros.
func waitStep(s Step, t order.Timing, e stepExprs) order.StepDef {
	def := order.StepDef{Name: s.Name, Wait: &order.Wait{}, When: AsExpr(e.when),
		Allowance: t.Allowance, MaxAllowance: t.MaxAllowance, FailureThreshold: t.FailureThreshold, MaxHeartbeats: t.MaxHeartbeats,
		ResultMaxBytes: order.DefaultResultMaxBytes}
	// Validate parsed the durations.
	if s.Wait.Event == "" {
		if s.Wait.Until != "" {
			def.Wait.Until = AsExpr(e.until)
			def.Wait.Max, _ = time.ParseDuration(s.Wait.Max)
			return def
		}
		def.Wait.For, _ = time.ParseDuration(s.Wait.For)
		return def
	}
	def.Wait.Event, def.Wait.Schema, def.Wait.Continue = s.Wait.Event, s.Wait.Schema, s.Wait.OnTimeout == OnTimeoutContinue
	def.Wait.RejectWhen = AsExpr(e.rejectWhen)
	def.Wait.Timeout, _ = time.ParseDuration(s.Wait.Timeout)
	// The event's data is the step's result: result bounds it, and shows
	// it to the order's client.
	if r := s.Result; r != nil {
		def.ResultShownToClient = r.ShownToClient
		if r.MaxBytes != nil {
			def.ResultMaxBytes = *r.MaxBytes
		}
	}
	return def
}

// Same reports whether two definitions say the same, wherever each was
// read from.
func (d Definition) Same(o Definition) bool {
	a, errA := json.Marshal(d)
	b, errB := json.Marshal(o)
	return errA == nil && errB == nil && string(a) == string(b)
}
