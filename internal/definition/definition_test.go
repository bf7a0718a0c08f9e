package definition_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"orderly/internal/definition"
	"orderly/internal/expr"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/workflows"
)

// timings are stage timings the shipped file must follow exactly.
var timings = []order.Timing{
	order.DefaultTiming,
	{Allowance: 200 * time.Millisecond, MaxAllowance: time.Second, FailureThreshold: 1, ClaimWithin: 3 * time.Second, SkewGrace: 50 * time.Millisecond, MaxHeartbeats: 2},
}

// The shipped workflow, read from its file, is the one the Go code had:
// the same steps, agents, undo descriptions and calls, the stage's timing.
func TestShippedIsTheOrderWorkflow(t *testing.T) {
	for _, tm := range timings {
		v, err := definition.Deployed(tm, nil, definition.ShippedWorkflow, "")
		if err != nil {
			t.Fatalf("Deployed: %v", err)
		}
		if got := len(v.Workflows()); got != 1 {
			t.Errorf("Deployed has %d versions, want 1", got)
		}
		got, want := v.Latest(), ordertest.OrderWorkflow(tm)
		got.Input = nil // the Go copy has no input schema: tests submit what they like
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Deployed(%+v).Latest() =\n%+v\nwant\n%+v", tm, got, want)
		}
	}
}

// The shipped file's input is today's submission: the schema the API and
// its API Gateway model enforce.
func TestShippedInputIsTheSubmissionSchema(t *testing.T) {
	defs, err := definition.Load(workflows.FS, "workflows")
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	// It takes a submission as the API does: the schema, and the API's
	// strict reading of JSON.
	sch, err := definition.CompileInput(defs[0].Input)
	if err != nil {
		t.Fatalf("CompileInput: %v", err)
	}
	compiled, err := definition.CompileSchema(defs[0].Input)
	if err != nil {
		t.Fatal(err)
	}
	check := func(doc []byte) []order.FieldError {
		var out []order.FieldError
		for _, p := range compiled.Check(doc) {
			out = append(out, order.FieldError{Field: p.Field, Problem: p.Problem})
		}
		return out
	}
	for body, ok := range map[string]bool{
		`{"customerId":"c1","lines":[{"sku":"WIDGET-1","quantity":2}]}`:                          true,
		`{"customerId":"c1","lines":[]}`:                                                         false,
		`{"customerId":"c\u200b1","lines":[{"sku":"WIDGET-1","quantity":2}]}`:                    false,
		`{"customerId":"c1","lines":[{"sku":"WIDGET-1","quantity":2}],"x":1}`:                    false,
		`{"customerId":"c1","lines":[{"sku":"WIDGET 1","quantity":2}]}`:                          false,
		`{"customerId":"c1","lines":[{"sku":"WIDGET-1","quantity":2}],"notificationTarget":"q"}`: true,
	} {
		doc, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		_, _, apiErr := order.ParseInput([]byte(body), check)
		if err := sch.Validate(doc); (err == nil) != ok || (apiErr == nil) != ok {
			t.Errorf("%s: input schema says %v, ParseInput says %v; want valid=%v", body, err, apiErr, ok)
		}
	}
}

// badDefinitions are the rules the loader enforces, one file each; schema
// says whether the published workflow.schema.json can state the rule too
// (repeated keys, unique names and one field compared with another it
// cannot).
var badDefinitions = []struct {
	file   string
	want   []string
	schema bool
}{
	{"unknown-field", []string{`steps[0].retries: unknown field`}, true},
	{"duplicate-key", []string{`name: repeated key; each key once`}, false},
	{"no-call", []string{`steps[1].call: is required: the remote call that does the step's work`}, true},
	{"duplicate-step", []string{`steps[1].name: "reserve": steps[0] has this name already; step names must be unique`}, false},
	{"input-not-schema", []string{`input: is not a valid JSON Schema: at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at /type: got string, want array`}, true},
	{"max-below-allowance", []string{`steps[1].timing.maxAllowance: 5s is below allowance 10s`}, false},
	{"zero-allowance", []string{`steps[1].timing.allowance: "0s": must be positive`}, true},
	{"unparsable-duration", []string{`steps[1].timing.allowance: "ten seconds": not a duration; write one like "30s" or "2m"`}, true},
	{"zero-threshold", []string{`steps[1].timing.failureThreshold: 0: must be at least 1`}, true},
	{"negative-heartbeats", []string{`steps[1].timing.maxHeartbeats: -1: must not be negative`}, true},
	{"unknown-method", []string{`steps[0].call.method: "FETCH": unknown, want one of GET, POST, PUT, PATCH, DELETE`}, true},
	{"undo-path-no-slash", []string{`steps[0].undo.path: "releases": must start with "/"`}, true},
	{"empty-service", []string{`steps[1].service: must not be empty`}, true},
	{"bad-name", []string{`name: "Order_Flow": must be lower-case letters, digits and "-" ([a-z0-9-])`}, true},
	{"no-steps", []string{`steps: must list at least one step`}, true},
	{"undo-without-description", []string{`steps[0].undo.description: must say what the undo does ("refund the payment")`}, true},
	{"unknown-carries", []string{`steps[0].request.carries[1]: "results": unknown; want "order" or the name of an earlier step`}, false},
	{"not-an-object", []string{`must be an object, not an array`}, true},
	{"wrong-type", []string{`steps[1].name: must be a string, not an integer`}, true},
	{"carries-later-step", []string{`steps[0].request.carries[1]: "charge": runs after this step (steps[1]); a call carries earlier steps' results`}, false},
	{"carries-itself", []string{`steps[1].request.carries[0]: "charge": the step itself; a call carries earlier steps' results (its undo may carry its own)`}, false},
	{"undo-carries-unknown", []string{`steps[0].undo.carries[1]: "ship": unknown; want "order" or the name of an earlier step`}, false},
	{"result-bound", []string{`steps[0].result.maxBytes: 100000: must be between 64 and 16384`}, true},
	{"result-shown-not-boolean", []string{`steps[0].result.shownToClient: must be true or false, not a string`}, true},
	{"result-schema-not-schema", []string{`steps[0].result.schema: is not a valid JSON Schema: at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at /type: got string, want array`}, true},
	{"input-reserved-name", []string{`input.properties.orderId: is a name orderly gives its own field (orderId, results, callback, workflow, version, status, steps, lastError, createdAt, updatedAt, redrive); call it something else`}, false},
	{"timing-over-agent", []string{`steps[1].timing.maxAllowance: 5m0s: an attempt must end within the agent's 2m30s invocation: at most 2m20s`}, false},
	{"input-not-object", []string{`input.type: must be "object": a submission is a JSON object`}, false},
	{"path-dot-segment", []string{`steps[0].call.path: "/reservations/../admin": dot segments ("." and "..") are refused: a server or proxy resolves them to another path than the one called, and than the one the agent's IAM policy names`}, true},
	{"path-escaped-dot-segment", []string{`steps[0].call.path: "/reservations/%2e%2E/admin": dot segments ("." and "..") are refused: a server or proxy resolves them to another path than the one called, and than the one the agent's IAM policy names`}, true},
	{"path-bad-escape", []string{`steps[1].call.path: "/charges/%zz": "%zz" is not an escape: "%" starts two hex digits ("%2F"), and "%" itself is written "%25"`}, true},
	{"path-control-character", []string{`steps[1].call.path: "/charges\a": must not hold control characters`}, true},
	{"path-escaped-control-character", []string{`steps[1].call.path: "/charges%0D%0AX-Admin:%20yes": "%0D" escapes a control character: a path must not hold control characters, escaped or not`}, true},
	{"path-wildcard", []string{`steps[0].undo.path: "/releases/*": "*" is refused: a service behind API Gateway with IAM auth is granted execute-api:Invoke on each call's method and path, where "*" is a wildcard that would grant every path`}, true},
	{"path-not-escaped", []string{`steps[1].call.path: "/café": must be written as sent, "é" escaped: "/caf%C3%A9"`}, true},
	{"step-named-order", []string{`steps[1].name: "order": is the item of "carries" that is the order's input; call the step something else`}, true},
	{"allowance-too-short", []string{`steps[1].timing.allowance: 500ms: must be at least 1s: a request crosses a queue and starts a function before its call begins, and the agent heartbeats every third of the allowance`}, false},
	{"threshold-too-high", []string{`steps[1].timing.failureThreshold: 101: at most 100: a step that times out that often is down, not slow, and 100 timeouts of up to 2m20s each hold the order about 4 hours before its compensation starts`}, true},
	{"heartbeats-too-many", []string{`steps[1].timing.maxHeartbeats: 451: at most 450: the agent heartbeats every third of the allowance (at least 1s) within its 2m30s invocation, so no attempt can use more`}, true},
	{"service-name-too-long", []string{`steps[1].service: is 49 characters, the limit is 48: the service's agent is the Lambda function orderly-<stage>-<service>-agent, and Lambda takes at most 64 characters (a service of at most 46 with stage "dev")`}, true},
	{"results-over-message", []string{`steps: kept results: their maxBytes add up to 212992 bytes (13 steps' results, 4096 each where unset); with the input (at most 65536 bytes) and the request's own fields (at most 1960 bytes), a request to an agent may be 280488 bytes, 18344 over the 262144 an SQS message holds; lower some result.maxBytes, or carry fewer results`}, false},
	{"wait-with-call", []string{`steps[1].call: a step that waits calls no service; leave it out`}, true},
	{"wait-with-fields", []string{
		`steps[1].service: a step that waits has no service; leave it out`,
		`steps[1].undo: a step that waits has nothing to undo; leave it out`,
		`steps[1].timing: a step that waits has no allowance (its wait says how long it takes); leave it out`,
		`steps[1].request: a step that waits sends no request; leave it out`,
		`steps[1].result: a step that waits has no result (a timer answers nothing); leave it out`,
	}, true},
	// The schema cannot tell an empty service from none; the file can.
	{"wait-with-empty-service", []string{`steps[1].service: a step that waits has no service; leave it out`}, true},
	// A wrong type, and nothing more about the field it holds.
	{"wait-not-an-object", []string{`steps[1].wait: must be an object, not a string`}, true},
	{"wait-without-for", []string{waitNeither}, true},
	// Expressions, on a copy of testdata/wait.json with captureAfter in
	// its input: each is type-checked against the schemas of what it
	// reads, the checker's message at the field.
	{"when-type-error", []string{`steps[2].when: 1:18: found no matching overload for '_==_' applied to '(string, int)'`}, false},
	{"when-input-typo", []string{`steps[2].when: 1:6: undefined field 'custmerId' (input has: captureAfter, customerId)`}, false},
	{"when-later-result", []string{`steps[1].when: 1:8: undefined field 'charge' (the steps before this one: reserve); charge is steps[2], which runs after this one: an expression reads earlier steps' results`}, false},
	{"when-not-bool", []string{`steps[2].when: must be a bool, is string`}, false},
	{"until-not-a-timestamp", []string{`steps[1].wait.until: must be a timestamp, is string: timestamp(...) reads an RFC 3339 string`}, false},
	// A timer until a time has a bound; it waits for "for" or "until".
	{"until-without-max", []string{`steps[1].wait.max: is required with "until": a timer with no bound would keep its orders waiting for ever, whatever time its expression gives; say how long the step waits at most once reached ("720h")`}, true},
	{"until-with-for", []string{`steps[1].wait: has both "for" (how long a timer waits) and "until" (the time it waits until): a timer has one or the other; keep one`}, true},
	{"max-without-until", []string{`steps[1].wait.max: bounds a timer's "until"; a timer with "for" waits exactly that long: leave it out`}, true},
	{"reject-when-on-timer", []string{`steps[1].wait.rejectWhen: is an event's (a condition on its data that fails the step); a timer has none: leave it out`}, true},
	{"step-neither-calls-nor-waits", []string{`steps[1]: neither calls a service ("service" and "call") nor waits ("wait"): give it one or the other`}, true},
	{"carries-wait-step", []string{
		`steps[2].request.carries[1]: "cool-off": a timer has no result to carry (an event's step has: its data)`,
		`steps[2].undo.carries[0]: "cool-off": a timer has no result to carry (an event's step has: its data)`,
	}, false},
	// Events, on a copy of testdata/event.json.
	{"wait-for-and-event", []string{`steps[1].wait: has both "for" (a timer) and "event": a step waits for one or the other; keep one`}, true},
	{"event-without-timeout", []string{`steps[1].wait.timeout: is required with "event": a wait with no bound would keep its orders waiting for ever; say how long the step waits for its event ("48h")`}, true},
	{"timer-with-event-fields", []string{
		`steps[1].wait.timeout: is an event's (how long the step waits for it); a timer has none ("for" is how long it waits): leave it out`,
		`steps[1].wait.schema: is an event's (the JSON Schema of its data); a timer has none: leave it out`,
		`steps[1].wait.onTimeout: is an event's (what its timeout does); a timer has none: leave it out`,
	}, true},
	{"event-bad-name", []string{`steps[1].wait.event: "Review!": must be lower-case letters, digits and "-" ([a-z0-9-])`}, true},
	{"event-schema-not-schema", []string{`steps[1].wait.schema: is not a valid JSON Schema: at /required: got string, want array`}, true},
	{"event-schema-not-object", []string{`steps[1].wait.schema.type: must be "object": an event's data is a JSON object`}, true},
	{"event-on-timeout-unknown", []string{`steps[1].wait.onTimeout: "retry": want "fail" (the default: the step fails and the order is compensated) or "continue" (the step is Processed with no result and the order goes on)`}, true},
	{"event-twice", []string{`steps[3].wait.event: "review": steps[1] waits for it already; an event completes one step of its workflow, or which one it completes would be ambiguous`}, false},
	{"event-result-schema", []string{`steps[1].result.schema: an event's data is checked by "wait.schema"; move the schema there`}, true},
	// Services that call back, on a copy of testdata/callback.json.
	{"callback-without-timeout", []string{`steps[1].call.callback.timeout: is required: how long the step waits for its service's callback once the call was accepted ("2h")`}, true},
	{"callback-max-below-timeout", []string{`steps[1].call.callback.maxTimeout: 90m is below timeout 2h: the wait starts at timeout, and "working" callbacks move it on up to maxTimeout after the call was accepted`}, false},
	{"callback-max-over-a-year", []string{`steps[1].call.callback.maxTimeout: "9000h": at most 8760h (a year): a bound keeps every order ending`}, false},
	{"callback-unknown-field", []string{`steps[1].call.callback.url: unknown field; a callback takes "timeout" and "maxTimeout" (where to call back is sent with each call)`}, true},
	{"callback-not-an-object", []string{`steps[1].call.callback: must be an object, not a string`}, true},
	{"undo-callback", []string{`steps[1].undo.callback: an undo is a plain call, answered when the work is undone; only the step's call may be answered by a callback: leave it out`}, true},
	// Services that are polled, on a copy of testdata/poll.json.
	{"poll-without-timeout", []string{`steps[1].call.poll.timeout: is required: how long the step waits for its service to finish once the call was accepted ("2h")`}, true},
	{"poll-every-over-timeout", []string{`steps[1].call.poll.every: 2m is over timeout 1m: the wait would end before the first check`}, false},
	{"poll-unknown-field", []string{`steps[1].call.poll.url: unknown field; a poll takes "timeout" and "every" (where to poll is the Location of the service's 202 answer)`}, true},
	{"poll-and-callback", []string{`steps[1].call: has both callback and poll: its service either calls back or is polled; keep the one it does`}, false},
	{"undo-poll", []string{`steps[1].undo.poll: an undo is a plain call, answered when the work is undone; only the step's call may be polled: leave it out`}, true},
	{"many-problems", []string{
		`version: must not be empty`,
		`steps[0].call.path: "reservations": must start with "/"`,
		`steps[1].service: "Payment": must be lower-case letters, digits and "-" ([a-z0-9-])`,
		`steps[1].timing.maxAllowance: 1s is below allowance 10s`,
	}, true},
}

// waitNeither is the problem of testdata's step 1 waiting for nothing.
const waitNeither = `steps[1].wait: has neither "for" (how long a timer waits, "30m"), "until" (the time a timer waits until, with its "max") nor "event" (the event the step waits for, with its "timeout"): give it one`

func TestParseRefusesBadDefinitions(t *testing.T) {
	files, _ := filepath.Glob("testdata/bad/*.json")
	if len(files) != len(badDefinitions) {
		t.Errorf("testdata/bad has %d files, the table %d: every bad example needs its expected problems", len(files), len(badDefinitions))
	}
	for _, tt := range badDefinitions {
		t.Run(tt.file, func(t *testing.T) {
			name := "testdata/bad/" + tt.file + ".json"
			data, err := os.ReadFile(name)
			if err != nil {
				t.Fatal(err)
			}
			_, err = definition.Parse(name, data)
			var ps definition.Problems
			if !errors.As(err, &ps) || !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("Parse = %v, want Problems wrapping ErrInvalid", err)
			}
			var want []string
			for _, w := range tt.want {
				want = append(want, name+": "+w)
			}
			if got := strings.Split(err.Error(), "\n"); !slices.Equal(got, want) {
				t.Errorf("problems:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
		})
	}
}

func TestParseAcceptsAGoodDefinition(t *testing.T) {
	stage := order.DefaultTiming
	def, w := parsed(t, "testdata/good.json", stage, 2)
	want := order.Workflow{Name: def.Name, Version: "1", Input: def.Input, ClaimWithin: stage.ClaimWithin, SkewGrace: stage.SkewGrace, Steps: []order.StepDef{
		{Name: "reserve", Agent: "inventory", Undo: "release the reservation",
			Allowance: stage.Allowance, MaxAllowance: stage.MaxAllowance, FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats,
			Call: order.Endpoint{Method: "POST", Path: "/reservations"}, UndoCall: order.Endpoint{Method: "POST", Path: "/releases"},
			Carries: []string{"order"}, UndoCarries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes},
		// Its own timing, no undo, its answer shown to clients.
		{Name: "charge", Agent: "payment", Allowance: 10 * time.Second, MaxAllowance: time.Minute, FailureThreshold: 2, MaxHeartbeats: 3,
			Call: order.Endpoint{Method: "POST", Path: "/charges"}, Carries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes,
			ResultShownToClient: true},
	}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("Workflow =\n%+v\nwant\n%+v", w, want)
	}
}

// parse is the definition in file, which must parse.
func parse(t *testing.T, file string) definition.Definition {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	def, err := definition.Parse(file, data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	return def
}

// parsed is the definition in file, which must parse with no warnings,
// and its workflow for stage, which must have steps steps.
func parsed(t *testing.T, file string, stage order.Timing, steps int) (definition.Definition, order.Workflow) {
	t.Helper()
	def := parse(t, file)
	if ws := def.Warnings(); len(ws) > 0 {
		t.Errorf("Warnings = %v, want none", ws)
	}
	w, err := def.Workflow(stage)
	if err != nil {
		t.Fatalf("Workflow: %v", err)
	}
	if len(w.Steps) != steps {
		t.Fatalf("Workflow has %d steps, want %d", len(w.Steps), steps)
	}
	return def, w
}

// checkWrittenBack checks that def, parsed from file, marshals as the
// file says and parses back the same.
func checkWrittenBack(t *testing.T, def definition.Definition, file string) {
	t.Helper()
	raw, err := json.Marshal(def)
	if err != nil {
		t.Fatal(err)
	}
	if data, _ := os.ReadFile(file); !order.SameJSON(raw, data) {
		t.Errorf("the definition marshals as\n%s\nnot as its file", raw)
	}
	again, err := definition.Parse("again.json", raw)
	if err != nil || !again.Same(def) {
		t.Errorf("Parse of the definition written back: %v; same %t", err, again.Same(def))
	}
}

// A step that waits becomes a StepDef with its timer and no agent, call,
// undo or carries: nothing calls a service for it.
func TestParseAcceptsAWaitStep(t *testing.T) {
	stage := order.DefaultTiming
	def, w := parsed(t, "testdata/wait.json", stage, 3)
	// The stage's timing stays on it, unread while it waits, so that no
	// code reading a step's timing finds zeros.
	want := order.StepDef{Name: "cool-off", Wait: &order.Wait{For: 30 * time.Minute},
		Allowance: stage.Allowance, MaxAllowance: stage.MaxAllowance, FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats,
		ResultMaxBytes: order.DefaultResultMaxBytes}
	if got := w.Steps[1]; !reflect.DeepEqual(got, want) {
		t.Errorf("the wait step =\n%+v\nwant\n%+v", got, want)
	}
	if !w.Steps[1].Waits() || w.Steps[0].Waits() || w.Steps[2].Waits() {
		t.Error("only cool-off should wait")
	}
	if got := w.Agents(); !slices.Equal(got, []string{"inventory", "payment"}) {
		t.Errorf("Agents = %q, want inventory and payment", got)
	}
	if w.Keeps("cool-off") {
		t.Error("the wait step's result is kept; it has none")
	}
	if ps := def.CheckAgentNames("dev"); len(ps) > 0 {
		t.Errorf("CheckAgentNames = %v, want none: a step that waits has no agent", ps)
	}
	// Written back, it is what the file says: no empty service or call.
	raw, err := json.Marshal(def.Steps[1])
	if err != nil {
		t.Fatal(err)
	}
	if got := string(raw); got != `{"name":"cool-off","wait":{"for":"30m"}}` {
		t.Errorf("the wait step marshals as %s", got)
	}
}

// waitDurations are the lengths a wait takes, at least a second and at
// most a year, whatever the field: problem is "" when one is taken, and
// schema says whether the published schema refuses it too (it can state
// a duration's form and zero, not the bounds).
var waitDurations = []struct {
	value   string
	problem string
	schema  bool
}{
	{"1s", "", false},
	{"30m", "", false},
	{"1h30m", "", false},
	{"8760h", "", false},
	{"525600m", "", false},
	{"999ms", `"999ms": must be at least 1s: a wait ends on the Supervisor's schedule (once a minute by default), so a shorter one ends no sooner`, false},
	{"0s", `"0s": must be at least 1s`, true},
	{"-1h", `"-1h": must be at least 1s`, true},
	{"8760h1s", `"8760h1s": at most 8760h (a year): a bound keeps every order ending`, false},
	{"9000h", `"9000h": at most 8760h (a year)`, false},
	{"half an hour", `"half an hour": not a duration; write one like "30m" or "48h"`, true},
	{"1d", `"1d": not a duration`, true},
	{"", "", true},
}

// durationField is a field of step 1 that holds a wait's duration.
type durationField struct {
	name string
	// set writes the duration v in the step, in the field.
	set func(step map[string]any, v string)
	// empty is the problem of an empty duration.
	empty string
}

// checkDurations writes each of waitDurations in each field of file's
// step 1, whose path starts with prefix ("steps[1].wait."), and checks the
// loader's problem and the published schema's verdict.
func checkDurations(t *testing.T, file, prefix string, fields []durationField) {
	t.Helper()
	sch := publishedSchema(t)
	for _, f := range fields {
		for _, tt := range waitDurations {
			t.Run(f.name+"="+tt.value, func(t *testing.T) {
				raw := stepEdited(t, file, 1, func(step map[string]any) { f.set(step, tt.value) })
				want := "x.json: " + prefix + f.name + ": " + tt.problem
				switch {
				case tt.value == "":
					want = f.empty
				case tt.problem == "":
					want = ""
				}
				checkParse(t, raw, want)
				checkSchema(t, sch, raw, tt.schema)
			})
		}
	}
}

// A timer waits, and a step waits for its event, at least a second and
// at most a year; the published schema refuses what it can state (a
// duration's form, zero), not the bounds.
func TestWaitDurations(t *testing.T) {
	// Each duration as a timer's "for", as an event's "timeout" and as
	// the bound of a timer until a time.
	const yearEnd = "timestamp('2030-12-31T00:00:00Z')"
	checkDurations(t, "testdata/wait.json", "steps[1].wait.", []durationField{
		{"for", func(step map[string]any, v string) { step["wait"] = map[string]any{"for": v} }, "x.json: " + waitNeither},
		{"timeout", func(step map[string]any, v string) { step["wait"] = map[string]any{"event": "review", "timeout": v} },
			`x.json: steps[1].wait.timeout: is required with "event"`},
		{"max", func(step map[string]any, v string) { step["wait"] = map[string]any{"until": yearEnd, "max": v} },
			`x.json: steps[1].wait.max: is required with "until"`},
	})
}

// An event's name is a name like a step's: the route that takes it
// (POST /orders/{id}/events/{name}) takes no other.
func TestEventNames(t *testing.T) {
	sch := publishedSchema(t)
	tests := []struct {
		name    string
		problem string // "" when it is taken; the schema agrees
	}{
		{"review", ""},
		{"payment-confirmed-2", ""},
		{strings.Repeat("e", 63), ""},
		{strings.Repeat("e", 64), "is 64 characters, the limit is 63"},
		{"Review", `"Review": must be lower-case letters, digits and "-" ([a-z0-9-])`},
		{"review/approve", `"review/approve": must be lower-case letters`},
		{"re view", `"re view": must be lower-case letters`},
		// Empty, the wait waits for nothing: it says what it lacks.
		{"", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := stepEdited(t, "testdata/event.json", 1, func(step map[string]any) {
				step["wait"].(map[string]any)["event"] = tt.name
			})
			want := "x.json: steps[1].wait.event: " + tt.problem
			switch {
			case tt.name == "":
				want = "x.json: " + waitNeither
			case tt.problem == "":
				want = ""
			}
			checkParse(t, raw, want)
			checkSchema(t, sch, raw, want != "")
		})
	}
}

// A step that waits for an event becomes a StepDef with its event, schema,
// timeout and what its timeout does, and its result's bound and
// visibility: the event's data is its result, always kept, and a later
// call (and its undo) may carry it.
func TestParseAcceptsAnEventStep(t *testing.T) {
	stage := order.DefaultTiming
	def, w := parsed(t, "testdata/event.json", stage, 4)
	review, delivery := w.Steps[1], w.Steps[3]
	schema := `{"type": "object", "required": ["decision"], "properties": {"decision": {"enum": ["approve", "reject"]}}}`
	if review.Wait == nil || !order.SameJSON(review.Wait.Schema, json.RawMessage(schema)) {
		t.Errorf("manual-review's schema = %s, want the file's %s", review.Wait.Schema, schema)
	} else {
		review.Wait = &order.Wait{Event: review.Wait.Event, Timeout: review.Wait.Timeout, Continue: review.Wait.Continue}
	}
	timing := order.StepDef{Allowance: stage.Allowance, MaxAllowance: stage.MaxAllowance, FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats}
	want := timing
	want.Name, want.Wait = "manual-review", &order.Wait{Event: "review", Timeout: 48 * time.Hour}
	want.ResultMaxBytes, want.ResultShownToClient = 2048, true
	if !reflect.DeepEqual(review, want) {
		t.Errorf("manual-review =\n%+v\nwant\n%+v", review, want)
	}
	want = timing
	want.Name, want.Wait, want.ResultMaxBytes = "delivery", &order.Wait{Event: "delivered", Timeout: 720 * time.Hour, Continue: true}, order.DefaultResultMaxBytes
	if !reflect.DeepEqual(delivery, want) {
		t.Errorf("delivery =\n%+v\nwant\n%+v", delivery, want)
	}
	if got := w.Steps[2]; !slices.Equal(got.Carries, []string{"order", "manual-review"}) || !slices.Equal(got.UndoCarries, []string{"manual-review"}) {
		t.Errorf("charge carries %q, its undo %q; want the order and manual-review's data, and the data", got.Carries, got.UndoCarries)
	}
	for _, d := range []order.StepDef{review, delivery} {
		if !d.Waits() || d.Wait.Kind() != order.WaitEvent || d.Agent != "" || d.Undo != "" || d.Carries != nil {
			t.Errorf("%s: waits %t for a %s, agent %q, undo %q, carries %q; want an event, and nothing that calls", d.Name, d.Waits(), d.Wait.Kind(), d.Agent, d.Undo, d.Carries)
		}
		if !w.Keeps(d.Name) {
			t.Errorf("%s: its data is not kept", d.Name)
		}
	}
	if got, ok := w.EventStep("review"); !ok || got.Name != "manual-review" {
		t.Errorf("EventStep(review) = %s, %t; want manual-review", got.Name, ok)
	}
	if got := w.Agents(); !slices.Equal(got, []string{"inventory", "payment"}) {
		t.Errorf("Agents = %q, want inventory and payment", got)
	}
	// Both events' data is kept, and charge's shown answer: 3 results.
	if z := def.Sizes(); z.Kept != 3 || z.Results != 2048+2*order.DefaultResultMaxBytes || z.Records != 6 {
		t.Errorf("Sizes = %+v, want 3 kept (2048 bytes and two of %d), 6 records", z, order.DefaultResultMaxBytes)
	}
	// Written back, it is what the file says, and reads back the same.
	checkWrittenBack(t, def, "testdata/event.json")
}

// A step whose service is polled becomes a StepDef with its call and how
// it waits (every, left out, is DefaultPollEvery); it waits for "poll".
func TestParseAcceptsAPolledStep(t *testing.T) {
	stage := order.DefaultTiming
	def, w := parsed(t, "testdata/poll.json", stage, 3)
	want := []*order.PollWait{{Timeout: 2 * time.Hour, Every: 30 * time.Second}, {Timeout: 48 * time.Hour, Every: definition.DefaultPollEvery}}
	for i, d := range w.Steps[1:] {
		if d.Poll == nil || *d.Poll != *want[i] || d.Callback != nil {
			t.Errorf("%s: Poll %+v, Callback %+v; want %+v and no callback", d.Name, d.Poll, d.Callback, *want[i])
		}
		if d.WaitKind() != order.WaitPoll || d.Waits() || !d.Async() {
			t.Errorf("%s: WaitKind %q, Waits %t, Async %t; want poll, a step that calls its service, asynchronously", d.Name, d.WaitKind(), d.Waits(), d.Async())
		}
	}
	checkWrittenBack(t, def, "testdata/poll.json")
}

// A step whose service calls back becomes a StepDef with its call and
// its callback's timeouts (maxTimeout, left out, is the timeout); its
// timing and its undo are a plain step's: the timing bounds the call up
// to its acceptance, the undo is a plain call.
func TestParseAcceptsACallbackStep(t *testing.T) {
	stage := order.DefaultTiming
	def, w := parsed(t, "testdata/callback.json", stage, 3)
	want := []order.StepDef{
		{Name: "charge-payment", Agent: "payment", Undo: "refund the payment",
			Callback:  &order.CallbackWait{Timeout: 2 * time.Hour, MaxTimeout: 24 * time.Hour},
			Allowance: stage.Allowance, MaxAllowance: stage.MaxAllowance, FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats,
			Call: order.Endpoint{Method: "POST", Path: "/payment/charges"}, UndoCall: order.Endpoint{Method: "POST", Path: "/payment/refunds"},
			Carries: []string{"order"}, UndoCarries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes},
		{Name: "pick-and-pack", Agent: "warehouse",
			Callback:  &order.CallbackWait{Timeout: 48 * time.Hour, MaxTimeout: 48 * time.Hour},
			Allowance: 10 * time.Second, MaxAllowance: stage.MaxAllowance, FailureThreshold: 2, MaxHeartbeats: stage.MaxHeartbeats,
			Call: order.Endpoint{Method: "POST", Path: "/picks"}, Carries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes,
			ResultShownToClient: true},
	}
	if !reflect.DeepEqual(w.Steps[1:], want) {
		t.Errorf("the callback steps =\n%+v\nwant\n%+v", w.Steps[1:], want)
	}
	for i, d := range w.Steps {
		kind := map[bool]string{true: order.WaitCallback, false: ""}[i > 0]
		if got := d.WaitKind(); got != kind || d.Waits() {
			t.Errorf("%s: WaitKind %q, Waits %t; want %q, and not a step that waits (it calls its service)", d.Name, got, d.Waits(), kind)
		}
	}
	if got := w.Agents(); !slices.Equal(got, []string{"inventory", "payment", "warehouse"}) {
		t.Errorf("Agents = %q, want inventory, payment and warehouse", got)
	}
	// Written back, it is what the file says, and reads back the same.
	checkWrittenBack(t, def, "testdata/callback.json")
}

// A step's condition, a timer's time and an event's rejection become
// order.Expr on the StepDef, type-checked against the schemas of what
// each reads, and evaluate the order's JSON: the definition read back
// decides an order as the file says.
func TestParseAcceptsExpressions(t *testing.T) {
	def, w := parsed(t, "testdata/expr.json", order.DefaultTiming, 4)
	screen, review, capture, pay := w.Steps[0], w.Steps[1], w.Steps[2], w.Steps[3]
	if screen.When != nil || capture.When != nil {
		t.Errorf("conditions where the file has none: %v, %v", screen.When, capture.When)
	}
	if review.When == nil || review.Wait.RejectWhen == nil || capture.Wait.Until == nil || pay.When == nil {
		t.Fatalf("an expression of the file is missing: when %v, rejectWhen %v, until %v, when %v", review.When, review.Wait.RejectWhen, capture.Wait.Until, pay.When)
	}
	if c := capture.Wait; c.Max != 720*time.Hour || c.For != 0 || c.Kind() != order.WaitTimer || c.Length() != 720*time.Hour || c.RejectWhen != nil {
		t.Errorf("capture-after waits %+v, want a timer until its expression, at most 720h", c)
	}
	if got := review.When.String(); got != def.Steps[1].When {
		t.Errorf("the condition's source is %q, want the file's %q", got, def.Steps[1].When)
	}
	if got := review.When.Results(); !slices.Equal(got, []string{"fraud-screen"}) {
		t.Errorf("manual-review's condition reads %q, want fraud-screen", got)
	}
	// fraud-screen's result is carried by no call nor shown: a condition
	// reads it, so it is kept.
	if !w.Keeps("fraud-screen") {
		t.Error("fraud-screen's result is not kept, and a condition reads it")
	}
	input := json.RawMessage(`{"customerId":"c-1","captureAfter":"2030-01-02T03:04:05Z"}`)
	results := func(kv ...string) map[string]json.RawMessage {
		m := map[string]json.RawMessage{}
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = json.RawMessage(kv[i+1])
		}
		return m
	}
	tests := []struct {
		name string
		e    order.Expr
		vars order.ExprVars
		want bool
	}{
		{"a high score is reviewed", review.When, order.ExprVars{Input: input, Results: results("fraud-screen", `{"score": 80}`)}, true},
		{"a low score is not", review.When, order.ExprVars{Input: input, Results: results("fraud-screen", `{"score": 12.5}`)}, false},
		{"a reject is rejected", review.Wait.RejectWhen, order.ExprVars{Input: input, Results: results("fraud-screen", `{"score": 80}`), Event: json.RawMessage(`{"decision": "reject"}`)}, true},
		{"an approval is not", review.Wait.RejectWhen, order.ExprVars{Input: input, Event: json.RawMessage(`{"decision": "approve"}`)}, false},
		{"a charge with no review", pay.When, order.ExprVars{Input: input, Results: results("fraud-screen", `{"score": 12.5}`)}, true},
		{"a charge after an approval", pay.When, order.ExprVars{Input: input, Results: results("fraud-screen", `{"score": 80}`, "manual-review", `{"decision": "approve"}`)}, true},
		{"no charge after a reject", pay.When, order.ExprVars{Input: input, Results: results("manual-review", `{"decision": "reject"}`)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.e.Bool(tt.vars)
			if err != nil || got != tt.want {
				t.Errorf("%s = %t, %v; want %t", tt.e, got, err, tt.want)
			}
		})
	}
	if got, err := capture.Wait.Until.Time(order.ExprVars{Input: input}); err != nil || !got.Equal(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)) {
		t.Errorf("until = %s, %v; want the input's captureAfter", got, err)
	}
	// A result it reads that the order does not have is an error, not
	// false.
	if _, err := review.When.Bool(order.ExprVars{Input: input}); !errors.Is(err, expr.ErrNoValue) {
		t.Errorf("the condition with no fraud-screen result: %v, want ErrNoValue", err)
	}
	// Written back, it is what the file says, and reads back the same.
	checkWrittenBack(t, def, "testdata/expr.json")
}

// Each expression is checked where it stands: what it reads (earlier
// steps' results, an event's data in a rejectWhen only), what it gives,
// its length. The published schema checks that it is a string of 1 to
// 1,000 characters; the rest is the loader's.
func TestExpressionProblems(t *testing.T) {
	sch := publishedSchema(t)
	tests := []struct {
		name, file string
		step       int
		field      string // "when", "wait.until" or "wait.rejectWhen"
		value      string
		problem    string // "" when it is taken
		schema     bool   // the schema refuses it too
	}{
		{"a condition on a timer", "testdata/wait.json", 1, "when", "input.customerId != ''", "", false},
		{"a condition on the first step", "testdata/wait.json", 0, "when", "input.customerId.startsWith('c-')", "", false},
		{"a result with no schema is checked when evaluated", "testdata/wait.json", 2, "when", "results.reserve.anything == 1", "", false},
		{"a timer's result", "testdata/wait.json", 2, "when", "results['cool-off'].done",
			`steps[2].when: 1:8: undefined field 'cool-off' (the steps before this one: reserve); cool-off is a timer, which has no result`, false},
		{"the step's own result", "testdata/wait.json", 0, "when", "results.reserve.id == 'r'",
			`steps[0].when: 1:8: undefined field 'reserve' (no step comes before this one); reserve is this step: an expression reads earlier steps' results`, false},
		{"an event outside a rejectWhen", "testdata/wait.json", 2, "when", "event.decision == 'reject'",
			`steps[2].when: 1:1: undeclared reference to 'event': event is only there in an event's rejectWhen`, false},
		{"a clock", "testdata/wait.json", 2, "when", "now > timestamp('2030-01-01T00:00:00Z')",
			`steps[2].when: 1:1: undeclared reference to 'now': expressions have no clock`, false},
		{"an integer for a number", "testdata/expr.json", 3, "when", "results['fraud-screen'].score == 70",
			`steps[3].when: 1:31: found no matching overload for '_==_' applied to '(double, int)': a JSON Schema number is a double, so write 70.0 rather than 70`, false},
		{"a typo in the event's data", "testdata/expr.json", 1, "wait.rejectWhen", "event.decison == 'reject'",
			`steps[1].wait.rejectWhen: 1:6: undefined field 'decison' (event has: decision)`, false},
		{"a rejection that is not a bool", "testdata/expr.json", 1, "wait.rejectWhen", "event.decision", `steps[1].wait.rejectWhen: must be a bool, is string`, false},
		{"a rejection reading earlier results", "testdata/expr.json", 1, "wait.rejectWhen", "results['fraud-screen'].score > 99.0 && event.decision != 'approve'", "", false},
		{"a time from a result", "testdata/expr.json", 2, "wait.until", "timestamp(input.captureAfter) + duration('24h')", "", false},
		{"a time reading the event", "testdata/expr.json", 2, "wait.until", "timestamp(event.at)", `steps[2].wait.until: 1:11: undeclared reference to 'event': event is only there in an event's rejectWhen`, false},
		{"an empty condition", "testdata/wait.json", 2, "when", "", `steps[2].when: is empty: write a condition, or leave it out`, true},
		{"an empty rejection", "testdata/expr.json", 1, "wait.rejectWhen", "", `steps[1].wait.rejectWhen: is empty: write a condition, or leave it out`, true},
		{"the longest", "testdata/wait.json", 2, "when", "true" + strings.Repeat(" ", 996), "", false},
		{"too long", "testdata/wait.json", 2, "when", "true" + strings.Repeat(" ", 997), `steps[2].when: is 1001 characters long, at most 1000`, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			raw := stepEdited(t, tt.file, tt.step, func(at map[string]any) {
				if f, ok := strings.CutPrefix(tt.field, "wait."); ok {
					at = at["wait"].(map[string]any)
					at[f] = tt.value
				} else {
					at[tt.field] = tt.value
				}
			})
			want := ""
			if tt.problem != "" {
				want = "x.json: " + tt.problem
			}
			checkParse(t, raw, want)
			checkSchema(t, sch, raw, tt.schema)
		})
	}
}

// A callback's timeout and maxTimeout are waits: at least a second and at
// most a year, as a timer's; maxTimeout not below timeout. The published
// schema refuses what it can state (a duration's form, zero), not the
// bounds nor one field against the other.
func TestCallbackDurations(t *testing.T) {
	// Each duration as a timeout, and as a maxTimeout over a timeout of
	// 1s.
	checkDurations(t, "testdata/callback.json", "steps[1].call.callback.", []durationField{
		{"timeout", func(step map[string]any, v string) {
			step["call"].(map[string]any)["callback"] = map[string]any{"timeout": v}
		}, `x.json: steps[1].call.callback.timeout: is required: how long the step waits`},
		{"maxTimeout", func(step map[string]any, v string) {
			step["call"].(map[string]any)["callback"] = map[string]any{"timeout": "1s", "maxTimeout": v}
		}, `x.json: steps[1].call.callback.maxTimeout: "": not a duration`},
	})
	// maxTimeout against timeout, which the schema cannot compare.
	for _, tt := range []struct {
		timeout, maxTimeout string
		problem             string // "" when taken
	}{
		{"2h", "2h", ""},
		{"2h", "120m", ""},
		{"2h", "24h", ""},
		{"2h", "1h59m59s", `x.json: steps[1].call.callback.maxTimeout: 1h59m59s is below timeout 2h`},
		{"48h", "1h", `x.json: steps[1].call.callback.maxTimeout: 1h is below timeout 48h`},
		// A timeout that is wrong is said once, not compared.
		{"1d", "1h", `x.json: steps[1].call.callback.timeout: "1d": not a duration`},
	} {
		t.Run(tt.timeout+"/"+tt.maxTimeout, func(t *testing.T) {
			checkParse(t, stepEdited(t, "testdata/callback.json", 1, func(step map[string]any) {
				step["call"].(map[string]any)["callback"] = map[string]any{"timeout": tt.timeout, "maxTimeout": tt.maxTimeout}
			}), tt.problem)
		})
	}
}

// A step's own timing must fit the stage's for what it leaves out.
func TestWorkflowRefusesTimingThatDoesNotFitTheStage(t *testing.T) {
	data := stepEdited(t, "testdata/good.json", 0, func(step map[string]any) {
		step["timing"] = map[string]any{"allowance": "2m10s"}
	})
	def, err := definition.Parse("x.json", data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	_, err = def.Workflow(order.DefaultTiming)
	want := `x.json: steps[0].timing: allowance 2m10s with maxAllowance 2m0s (the stage's where not set): maxAllowance is below allowance`
	if err == nil || err.Error() != want {
		t.Errorf("Workflow = %v, want %s", err, want)
	}
}

// publishedSchema compiles workflows/workflow.schema.json as editors read it.
func publishedSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	raw, err := workflows.FS.ReadFile(workflows.SchemaFile)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := definition.NewCompiler()
	const url = "https://orderly.example/workflows/workflow.schema.json"
	if err := c.AddResource(url, doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile(url)
	if err != nil {
		t.Fatalf("compile %s: %v", workflows.SchemaFile, err)
	}
	return sch
}

func validateFile(t *testing.T, sch *jsonschema.Schema, name string) error {
	t.Helper()
	raw, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return validate(t, sch, raw)
}

// validate is what the published schema sch says of raw.
func validate(t *testing.T, sch *jsonschema.Schema, raw []byte) error {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(doc)
}

// stepEdited is the document in file with edit made to its step i.
func stepEdited(t *testing.T, file string, i int, edit func(step map[string]any)) []byte {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	edit(doc["steps"].([]any)[i].(map[string]any))
	raw, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

// checkParse parses raw as x.json: want "" says it is taken; otherwise
// it is refused with one problem, which starts with want.
func checkParse(t *testing.T, raw []byte, want string) {
	t.Helper()
	_, err := definition.Parse("x.json", raw)
	if want == "" && err != nil {
		t.Errorf("Parse = %v, want it taken", err)
	}
	if want != "" && (err == nil || !strings.HasPrefix(err.Error(), want) || strings.Contains(err.Error(), "\n")) {
		t.Errorf("Parse = %v, want one problem starting %q", err, want)
	}
}

// checkSchema checks whether the published schema sch refuses raw.
func checkSchema(t *testing.T, sch *jsonschema.Schema, raw []byte, refuses bool) {
	t.Helper()
	if refused := validate(t, sch, raw) != nil; refused != refuses {
		t.Errorf("the published schema refuses it: %t, want %t", refused, refuses)
	}
}

// The published schema agrees with the loader: it takes every shipped file
// and the good example, and refuses every bad example whose rule a schema
// can state.
func TestPublishedSchemaAgreesWithTheLoader(t *testing.T) {
	sch := publishedSchema(t)
	shipped, _ := filepath.Glob("../../workflows/*/*.json")
	if len(shipped) == 0 {
		t.Fatal("no shipped definition under workflows/")
	}
	for _, f := range append(shipped, "testdata/good.json", "testdata/wait.json", "testdata/event.json", "testdata/callback.json", "testdata/expr.json") {
		if err := validateFile(t, sch, f); err != nil {
			t.Errorf("%s: the published schema refuses it: %v", f, err)
		}
	}
	for _, tt := range badDefinitions {
		err := validateFile(t, sch, "testdata/bad/"+tt.file+".json")
		if tt.schema && err == nil {
			t.Errorf("%s: the published schema takes it, want it refused", tt.file)
		}
		if !tt.schema && err != nil {
			t.Errorf("%s: the published schema refuses it (%v); mark the rule as one the schema states", tt.file, err)
		}
	}
}

// Every file under workflows/ names its workflow and version as its path does.
func TestLoadChecksFileNames(t *testing.T) {
	data, err := os.ReadFile("testdata/good.json")
	if err != nil {
		t.Fatal(err)
	}
	fsys := fstest.MapFS{"order/v2.json": {Data: data}}
	_, err = definition.Load(fsys, "workflows")
	want := "workflows/order/v2.json: name: \"trial\": must be the directory's name, \"order\"\n" +
		"workflows/order/v2.json: version: \"1\": the file must be named v1.json"
	if err == nil || err.Error() != want {
		t.Errorf("Load = %v, want\n%s", err, want)
	}
}

// A function built with other definitions than the stack deployed (a
// deploy without make build) refuses to start.
func TestCheckBuiltRefusesAStaleBinary(t *testing.T) {
	deployedAs := func(names []string, digest string) error {
		_, err := definition.Deployed(order.DefaultTiming, names, "order", digest)
		return err
	}
	shipped, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	if len(examples) == 0 {
		t.Skip("built without the examples (-tags noexamples): TestNoExamplesRefusesAnExample checks that build")
	}
	both := append(slices.Clone(shipped), examples...)
	reversed := slices.Clone(both)
	slices.Reverse(reversed)
	if definition.Digest(both) != definition.Digest(reversed) {
		t.Error("the digest depends on the definitions' order")
	}
	var names []string
	for _, d := range both {
		if !slices.Contains(names, d.Name) {
			names = append(names, d.Name)
		}
	}
	if err := deployedAs(names, definition.Digest(both)); err != nil {
		t.Errorf("the definitions it was built with: %v", err)
	}
	if err := deployedAs(nil, definition.Digest(shipped)); err != nil {
		t.Errorf("the shipped definitions, named by none: %v", err)
	}
	if err := deployedAs(nil, ""); err != nil {
		t.Errorf("no digest: %v, want no check", err)
	}
	edited := slices.Clone(shipped)
	edited[0].Steps = slices.Clone(edited[0].Steps)
	edited[0].Steps[1].Call = &definition.Call{Method: "POST", Path: "/v2/charges"}
	if err := deployedAs(nil, definition.Digest(edited)); !errors.Is(err, order.ErrInvalid) || !strings.Contains(err.Error(), "make build") {
		t.Errorf("an edited definition: %v, want it refused, saying to run make build", err)
	}
}

// A value that breaks a format (asserted by drafts before 2019-09) is not
// quoted back either.
func TestSchemaCheckNeverQuotesAFormatsValue(t *testing.T) {
	s, err := definition.CompileSchema([]byte(`{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"email":{"type":"string","format":"email"}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := s.Check([]byte(`{"email":"not-an-email-s3cr3t"}`))
	if len(got) != 1 || got[0].Field != "email" || strings.Contains(got[0].Problem, "s3cr3t") {
		t.Errorf("problems %+v, want one at email that does not quote the value", got)
	}
}

// A property the schema requires and the document lacks is named as the
// field, as every other problem is (address: is required), not left at
// the object that lacks it.
func TestSchemaCheckNamesAMissingProperty(t *testing.T) {
	s, err := definition.CompileSchema([]byte(`{"type":"object","required":["customerId","address"],
		"properties":{"lines":{"type":"array","items":{"type":"object","required":["sku"]}},
		"card":{"type":"object","dependentRequired":{"number":["expiry"]}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		doc  string
		want []definition.FieldProblem
	}{
		{"one missing", `{"customerId":"c"}`, []definition.FieldProblem{{Field: "address", Problem: "is required"}}},
		{"two missing", `{}`, []definition.FieldProblem{{Field: "customerId", Problem: "is required"}, {Field: "address", Problem: "is required"}}},
		{"missing in an item", `{"customerId":"c","address":"a","lines":[{"sku":"A"},{}]}`,
			[]definition.FieldProblem{{Field: "lines[1].sku", Problem: "is required"}}},
		{"missing with another", `{"customerId":"c","address":"a","card":{"number":"4"}}`,
			[]definition.FieldProblem{{Field: "card.expiry", Problem: `is required when "number" is given`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := s.Check([]byte(tt.doc)); !slices.Equal(got, tt.want) {
				t.Errorf("Check(%s) = %+v, want %+v", tt.doc, got, tt.want)
			}
		})
	}
}

// An undo that carries its own step's result is warned of, not refused:
// after a timeout the undo is sent without that result.
func TestWarningsNameAnUndoCarryingItsOwnStep(t *testing.T) {
	ownUndo := parse(t, "testdata/good.json")
	ownUndo.Steps[0].Undo.Carries = []string{"order", "reserve"}
	// charge carries manual-review's data, which may never come.
	goesOn := parse(t, "testdata/event.json")
	goesOn.Steps[1].Wait.OnTimeout = definition.OnTimeoutContinue
	// charge carries manual-review's data, and the review may be skipped.
	mayBeSkipped := parse(t, "testdata/event.json")
	mayBeSkipped.Steps[1].When = "input.customerId != 'c-0'"
	tests := []struct {
		name string
		def  definition.Definition
		want []string
	}{
		{"no undo carries its step", parse(t, "testdata/good.json"), nil},
		{"the checkout example's refund", parse(t, "../../examples/workflows/checkout/v1.json"), []string{
			`../../examples/workflows/checkout/v1.json: steps[2].undo.carries[1]: "charge-payment": the step's own result: an undo after the step timed out (its work may be done, its answer never came) is sent without results.charge-payment, so the service must undo by the Idempotency-Key alone`}},
		{"an undo carrying its step", ownUndo, []string{
			`testdata/good.json: steps[0].undo.carries[1]: "reserve": the step's own result: an undo after the step timed out (its work may be done, its answer never came) is sent without results.reserve, so the service must undo by the Idempotency-Key alone`}},
		{"events carried", parse(t, "testdata/event.json"), nil},
		{"an event that may not come carried", goesOn, []string{
			`testdata/event.json: steps[2].request.carries[1]: "manual-review": its event may not come (its wait's onTimeout is "continue"): the request is then sent without results.manual-review`,
			`testdata/event.json: steps[2].undo.carries[0]: "manual-review": its event may not come (its wait's onTimeout is "continue"): the request is then sent without results.manual-review`,
		}},
		{"a step that may be skipped carried", mayBeSkipped, []string{
			`testdata/event.json: steps[2].request.carries[1]: "manual-review": it may be skipped (its when): the request is then sent without results.manual-review`,
			`testdata/event.json: steps[2].undo.carries[0]: "manual-review": it may be skipped (its when): the request is then sent without results.manual-review`,
		}},
		{"expressions that read a step that may be skipped", parse(t, "testdata/expr.json"), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if ps := tt.def.Validate(); len(ps) > 0 {
				t.Fatalf("Validate = %v, want a valid definition: a warning is not a problem", ps)
			}
			var got []string
			for _, w := range tt.def.Warnings() {
				got = append(got, w.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("Warnings =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tt.want, "\n"))
			}
		})
	}
}

// Sizes counts the results the workflow keeps, as the engine does
// (order.Workflow.Keeps), for every embedded definition and ones that keep
// results in each way: carried on, carried by an undo, shown to clients.
func TestSizesCountWhatTheWorkflowKeeps(t *testing.T) {
	shipped, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	defs := append(slices.Clone(shipped), examples...)
	// A step that waits is one record, with no undo, and keeps nothing.
	def := parse(t, "testdata/wait.json")
	if z := def.Sizes(); z.Records != 4 || z.Kept != 1 {
		t.Errorf("wait.json: Sizes = %+v, want 4 records (reserve and its undo, cool-off, charge), 1 kept", z)
	}
	defs = append(defs, def)
	// A step that waits for an event keeps its data, whoever carries it.
	defs = append(defs, parse(t, "testdata/event.json"))
	// A result an expression reads is kept: fraud-screen's, read by
	// manual-review's condition alone.
	def = parse(t, "testdata/expr.json")
	if z := def.Sizes(); z.Kept != 2 {
		t.Errorf("expr.json: Sizes = %+v, want 2 kept (fraud-screen, read by a condition, and manual-review's event)", z)
	}
	defs = append(defs, def)
	for _, change := range []func(*definition.Definition){
		func(d *definition.Definition) {
			d.Steps[1].Request = &definition.Request{Carries: []string{"order", "reserve"}}
		},
		func(d *definition.Definition) { d.Steps[0].Undo.Carries = []string{"reserve"} },
		func(d *definition.Definition) { d.Steps[1].Result = &definition.Result{ShownToClient: true} },
		func(d *definition.Definition) { d.Steps[1].Result, d.Steps[1].When = nil, "results.reserve.id != ''" },
		// Asking whether it has one is reading it.
		func(d *definition.Definition) { d.Steps[1].Result, d.Steps[1].When = nil, "'reserve' in results" },
	} {
		def := parse(t, "testdata/good.json")
		change(&def)
		defs = append(defs, def)
	}
	for _, def := range defs {
		w, err := def.Workflow(order.DefaultTiming)
		if err != nil {
			t.Fatalf("%s: %v", def.File, err)
		}
		want, records := 0, 0
		for _, s := range w.Steps {
			if w.Keeps(s.Name) {
				want++
			}
			records++
			if s.Undo != "" {
				records++
			}
		}
		if z := def.Sizes(); z.Kept != want || z.Records != records || z.Kept == 0 && z.Results != 0 {
			t.Errorf("%s %s: Sizes = %+v, want %d kept, %d records", def.Name, def.File, z, want, records)
		}
	}
}

// A call's path is a URL path written as sent: the loader and the
// published schema take the same ones, but for dot segments hidden
// behind an escaped "/", which only the loader sees.
func TestCallPaths(t *testing.T) {
	sch := publishedSchema(t)
	tests := []struct {
		path    string
		problem string // "" when the path is taken
		schema  bool   // the schema refuses it too
	}{
		{"/", "", false},
		{"/v1/orders:cancel", "", false},
		{"/a/.b/...", "", false},
		{"/caf%C3%A9/%2F/a%25b", "", false},
		{"/-._~!$&'()+,;=:@", "", false},
		{"/a/%2", `"%2" is not an escape`, true},
		{"/a/./b", "dot segments", true},
		{"/a/b/..", "dot segments", true},
		{"/a/%2E", "dot segments", true},
		{"/a%2F..%2Fb", "dot segments", false},
		{"/a%5C..", "dot segments", false},
		{"/a*", `"*" is refused`, true},
		{"/a%2A", "", false},
		{"/a\x7f", "control characters", true},
		// A control character is refused, not shown escaped: escaped, a
		// server unescapes it ("%0D%0A" splits a header), so it is
		// refused there too.
		{"/a\v", "must not hold control characters", true},
		{"/a\f", "must not hold control characters", true},
		{"/a\t", "must not hold control characters", true},
		{"/a\u0085", "must not hold control characters", true},
		{"/a%0B", `"%0B" escapes a control character`, true},
		{"/a%00", `"%00" escapes a control character`, true},
		{"/a%0d%0a", `"%0d" escapes a control character`, true},
		{"/a%1F", `"%1F" escapes a control character`, true},
		{"/a%7f", `"%7f" escapes a control character`, true},
		{"/a%C2%85", `"%C2%85" escapes a control character`, true},
		{"/a%c2%9F", `"%c2%9F" escapes a control character`, true},
		{"/a%20b%7E%C2%A0%2F", "", false},
		{"/a b", "without spaces", true},
		{"/a[b]", `must be written as sent, "[" escaped: "/a%5Bb%5D"`, true},
		{"/a\"b", `"\"" escaped`, true},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			raw := stepEdited(t, "testdata/good.json", 1, func(step map[string]any) {
				step["call"].(map[string]any)["path"] = tt.path
			})
			_, err := definition.Parse("x.json", raw)
			if tt.problem == "" && err != nil || tt.problem != "" && (err == nil || !strings.Contains(err.Error(), `steps[1].call.path: `) || !strings.Contains(err.Error(), tt.problem)) {
				t.Errorf("Parse = %v, want a problem with %q", err, tt.problem)
			}
			checkSchema(t, sch, raw, tt.schema)
		})
	}
}

// A service's agent, orderly-<stage>-<service>-agent, must fit Lambda's 64
// characters in the stage deployed: the longest service Validate takes
// (48) fits a stage of one character only.
func TestCheckAgentNames(t *testing.T) {
	tests := []struct {
		service, stage string
		want           string // "" when it fits
	}{
		{"payment", "dev", ""},
		{strings.Repeat("s", 46), "dev", ""},
		{strings.Repeat("s", 47), "dev", `x.json: steps[1].service: "` + strings.Repeat("s", 47) + `": the service's agent is the Lambda function "orderly-dev-` + strings.Repeat("s", 47) + `-agent", 65 characters with stage "dev", and Lambda takes at most 64: use a service of at most 46 characters, or a shorter stage`},
		{strings.Repeat("s", 48), "x", ""},
		{strings.Repeat("s", 48), "qa", `x.json: steps[1].service: "` + strings.Repeat("s", 48) + `": the service's agent is the Lambda function "orderly-qa-` + strings.Repeat("s", 48) + `-agent", 65 characters with stage "qa", and Lambda takes at most 64: use a service of at most 47 characters, or a shorter stage`},
		// Validate refuses it already, with its own words.
		{strings.Repeat("s", 49), "dev", ""},
		{"Payment", "dev", ""},
	}
	for _, tt := range tests {
		t.Run(tt.stage+"/"+tt.service, func(t *testing.T) {
			raw := stepEdited(t, "testdata/good.json", 1, func(step map[string]any) { step["service"] = tt.service })
			def, _ := definition.Parse("x.json", raw) // the bad ones are Validate's
			got := def.CheckAgentNames(tt.stage)
			if tt.want == "" && len(got) > 0 || tt.want != "" && (len(got) == 0 || got.Error() != tt.want) {
				t.Errorf("CheckAgentNames(%q) = %v, want %q", tt.stage, got, tt.want)
			}
		})
	}
}
