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
		v, err := definition.Shipped(tm)
		if err != nil {
			t.Fatalf("Shipped: %v", err)
		}
		if got := len(v.Workflows()); got != 1 {
			t.Errorf("Shipped has %d versions, want 1", got)
		}
		got, want := v.Latest(), ordertest.OrderWorkflow(tm)
		got.Input = nil // the Go copy has no input schema: tests submit what they like
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Shipped(%+v).Latest() =\n%+v\nwant\n%+v", tm, got, want)
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
	{"result-schema-not-schema", []string{`steps[0].result.schema: is not a valid JSON Schema: at /type: value must be one of 'array', 'boolean', 'integer', 'null', 'number', 'object', 'string'; at /type: got string, want array`}, true},
	{"input-reserved-name", []string{`input.properties.orderId: is a name orderly gives its own field (orderId, results, workflow, version, status, steps, lastError, createdAt, updatedAt, redrive); call it something else`}, false},
	{"timing-over-agent", []string{`steps[1].timing.maxAllowance: 5m0s: an attempt must end within the agent's 2m30s invocation: at most 2m20s`}, false},
	{"input-not-object", []string{`input.type: must be "object": a submission is a JSON object`}, false},
	{"many-problems", []string{
		`version: must not be empty`,
		`steps[0].call.path: "reservations": must start with "/"`,
		`steps[1].service: "Payment": must be lower-case letters, digits and "-" ([a-z0-9-])`,
		`steps[1].timing.maxAllowance: 1s is below allowance 10s`,
	}, true},
}

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
	data, err := os.ReadFile("testdata/good.json")
	if err != nil {
		t.Fatal(err)
	}
	def, err := definition.Parse("testdata/good.json", data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	stage := order.DefaultTiming
	w, err := def.Workflow(stage)
	if err != nil {
		t.Fatalf("Workflow: %v", err)
	}
	want := order.Workflow{Name: def.Name, Version: "1", Input: def.Input, ClaimWithin: stage.ClaimWithin, SkewGrace: stage.SkewGrace, Steps: []order.StepDef{
		{Name: "reserve", Agent: "inventory", Undo: "release the reservation",
			Allowance: stage.Allowance, MaxAllowance: stage.MaxAllowance, FailureThreshold: stage.FailureThreshold, MaxHeartbeats: stage.MaxHeartbeats,
			Call: order.Endpoint{Method: "POST", Path: "/reservations"}, UndoCall: order.Endpoint{Method: "POST", Path: "/releases"},
			Carries: []string{"order"}, UndoCarries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes},
		// Its own timing, no undo.
		{Name: "charge", Agent: "payment", Allowance: 10 * time.Second, MaxAllowance: time.Minute, FailureThreshold: 2, MaxHeartbeats: 3,
			Call: order.Endpoint{Method: "POST", Path: "/charges"}, Carries: []string{"order"}, ResultMaxBytes: order.DefaultResultMaxBytes},
	}}
	if !reflect.DeepEqual(w, want) {
		t.Errorf("Workflow =\n%+v\nwant\n%+v", w, want)
	}
}

// A step's own timing must fit the stage's for what it leaves out.
func TestWorkflowRefusesTimingThatDoesNotFitTheStage(t *testing.T) {
	data, _ := os.ReadFile("testdata/good.json")
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	doc["steps"].([]any)[0].(map[string]any)["timing"] = map[string]any{"allowance": "2m10s"}
	data, _ = json.Marshal(doc)
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
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	return sch.Validate(doc)
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
	for _, f := range append(shipped, "testdata/good.json") {
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
		_, err := definition.DeployedAs(order.DefaultTiming, names, "order", digest)
		return err
	}
	shipped, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	both := append(slices.Clone(shipped), examples...)
	if definition.Digest(both) != definition.Digest([]definition.Definition{both[1], both[0]}) {
		t.Error("the digest depends on the definitions' order")
	}
	if err := deployedAs([]string{"order", "checkout"}, definition.Digest(both)); err != nil {
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
