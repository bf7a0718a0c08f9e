package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

const inputSchema = `{
	"type": "object",
	"required": ["customerId", "lines"],
	"additionalProperties": false,
	"properties": {
		"customerId": {"type": "string"},
		"total": {"type": "number"},
		"vip": {"type": "boolean"},
		"captureAfter": {"type": "string", "format": "date-time"},
		"coupon": {"type": "string"},
		"lines": {"type": "array", "items": {
			"type": "object",
			"properties": {"sku": {"type": "string"}, "quantity": {"type": "integer"}, "price": {"type": "number"}}
		}},
		"tags": {"type": "array", "items": {"type": "string"}},
		"grid": {"type": "array", "items": {"type": "array", "items": {"type": "integer"}}},
		"notes": {"type": "object"},
		"meta": {"type": "object", "properties": {"x": {"type": "integer"}}, "additionalProperties": true},
		"customer": {"type": "object", "properties": {"address": {"type": "object", "properties": {"country": {"type": "string"}}}}},
		"either": {"type": ["string", "integer"]}
	}
}`

const input = `{
	"customerId": "c-42",
	"total": 10,
	"vip": true,
	"captureAfter": "2030-01-02T03:04:05Z",
	"lines": [{"sku": "BOOK-1", "quantity": 3, "price": 2.5}, {"sku": "PEN", "quantity": 1, "price": 5}],
	"tags": ["gift", "fragile"],
	"grid": [[1, 2], [3, 4.0]],
	"notes": {"door": "back"},
	"meta": {"x": 1, "other": "y"},
	"customer": {"address": {"country": "NL"}},
	"either": 7
}`

func testEnv(t testing.TB, event bool) *Env {
	t.Helper()
	s := Schemas{
		Input: json.RawMessage(inputSchema),
		Results: map[string]json.RawMessage{
			"fraud-screen": json.RawMessage(`{"type": "object", "properties": {"score": {"type": "number"}, "flagged": {"type": "boolean"}}}`),
			"reserve":      nil, // no schema: dyn
			"ship":         json.RawMessage(`{"type": "object", "properties": {"deliverBy": {"type": "string"}}}`),
		},
	}
	if event {
		s.Event = json.RawMessage(`{"type": "object", "properties": {"decision": {"type": "string", "enum": ["approve", "reject"]}, "reason": {"type": "string"}}}`)
	}
	env, err := NewEnv(s)
	if err != nil {
		t.Fatalf("NewEnv: %v", err)
	}
	return env
}

func testVars() Vars {
	return Vars{
		Input: json.RawMessage(input),
		Results: map[string]json.RawMessage{
			"fraud-screen": json.RawMessage(`{"score": 80, "flagged": true}`),
			"reserve":      json.RawMessage(`{"count": 3, "ok": "yes", "items": [{"n": 1}]}`),
			"ship":         json.RawMessage(`{"deliverBy": "2030-02-01T00:00:00+01:00"}`),
		},
		Event: json.RawMessage(`{"decision": "reject", "reason": "stolen card"}`),
	}
}

// varsWith is testVars as change leaves them (nil: unchanged).
func varsWith(change func(*Vars)) Vars {
	v := testVars()
	if change != nil {
		change(&v)
	}
	return v
}

// compile is src compiled in env to give want; it must compile.
func compile(t testing.TB, env *Env, src string, want Kind) *Program {
	t.Helper()
	p, err := env.Compile(src, want)
	if err != nil {
		t.Fatalf("Compile(%q): %v", src, err)
	}
	return p
}

func TestCompileRefuses(t *testing.T) {
	tests := []struct {
		name  string
		src   string
		want  Kind
		event bool
		errs  []string // each must be in the error
	}{
		{"a typo in an input field", "input.custmerId == 'c-42'", Bool, false,
			[]string{"1:6: undefined field 'custmerId'", "input has: captureAfter, coupon, customer, customerId, either, grid, lines, meta, notes, tags, total, vip"}},
		{"a typo in a field of a list's items", "input.lines[0].quantty > 2", Bool, false,
			[]string{"undefined field 'quantty'", "input['lines'][] has: price, quantity, sku"}},
		{"a typo in a nested object", "input.customer.address.contry == 'NL'", Bool, false,
			[]string{"undefined field 'contry'", "input['customer']['address'] has: country"}},
		{"a typo inside a comprehension", "input.lines.exists(l, l.qty > 2)", Bool, false,
			[]string{"undefined field 'qty'", "has: price, quantity, sku"}},
		{"a step that does not come before", "results['fraud-scren'].score > 70", Bool, false,
			[]string{"1:8: undefined field 'fraud-scren'", "the steps before this one: fraud-screen, reserve, ship"}},
		{"a typo in a result's field", "results['fraud-screen'].scor > 70", Bool, false,
			[]string{"undefined field 'scor'", "results['fraud-screen'] has: flagged, score"}},
		{"a string compared with an int", "input.customerId > 2", Bool, false,
			[]string{"1:18: found no matching overload for '_>_' applied to '(string, int)'"}},
		{"a string equal to an int", "input.customerId == 2", Bool, false,
			[]string{"no matching overload for '_==_' applied to '(string, int)'"}},
		{"a number equal to an int literal", "input.total == 10", Bool, false,
			[]string{"applied to '(double, int)'", "write 70.0 rather than 70"}},
		{"an integer field as a string", "input.lines[0].quantity.startsWith('1')", Bool, false,
			[]string{"found no matching overload for 'startsWith' applied to 'int.(string)'"}},
		{"a number where a bool is wanted", "input.total", Bool, false,
			[]string{"must be a bool, is double"}},
		{"a string where a timestamp is wanted", "input.captureAfter", Timestamp, false,
			[]string{"must be a timestamp, is string: timestamp(...) reads an RFC 3339 string"}},
		{"a bool where a timestamp is wanted", "input.vip", Timestamp, false,
			[]string{"must be a timestamp, is bool"}},
		{"a timestamp where a bool is wanted", "timestamp(input.captureAfter)", Bool, false,
			[]string{"must be a bool, is google.protobuf.Timestamp"}},
		{"a clock", "timestamp(input.captureAfter) < now", Bool, false,
			[]string{"undeclared reference to 'now'", "expressions have no clock"}},
		{"an event outside rejectWhen", "event.decision == 'reject'", Bool, false,
			[]string{"undeclared reference to 'event'", "only there in an event's rejectWhen"}},
		{"a typo in an event field", "event.decison == 'reject'", Bool, true,
			[]string{"undefined field 'decison'", "event has: decision, reason"}},
		{"results indexed by a value", "results[input.customerId].score > 1", Bool, false,
			[]string{"1:8: results is read by a step's name in quotes"}},
		{"an object built", "input{customerId: 'x'} == input", Bool, false,
			[]string{"1:6: building an object (input{...}) is not supported"}},
		{"a well-known object built", "google.protobuf.Timestamp{seconds: 1} == timestamp(input.captureAfter)", Bool, false,
			[]string{"building an object (google.protobuf.Timestamp{...}) is not supported"}},
		{"a syntax error", "input.total >", Bool, false,
			[]string{"1:14: Syntax error"}},
		{"a line and column past the first line", "input.vip &&\n  input.nope", Bool, false,
			[]string{"2:8: undefined field 'nope'"}},
		{"empty", "  ", Bool, false, []string{"is empty"}},
		{"too long", strings.Repeat("true && ", 125) + "true", Bool, false,
			[]string{"is 1004 characters long, at most 1000"}},
		{"an unknown kind", "true", Kind(7), false, []string{"kind 7 is not a kind"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := testEnv(t, tt.event).Compile(tt.src, tt.want)
			if err == nil {
				t.Fatalf("Compile(%q) = %v, want an error", tt.src, p)
			}
			for _, want := range tt.errs {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("Compile(%q) error\n%v\nlacks %q", tt.src, err, want)
				}
			}
		})
	}
}

func TestBool(t *testing.T) {
	tests := []struct {
		name string
		src  string
		vars func(*Vars)
		want bool
	}{
		{"an integer field is an int", "input.lines[0].quantity > 2 && type(input.lines[0].quantity) == int", nil, true},
		{"a number field is a double even when integral", "type(input.total) == double && input.total == 10.0", nil, true},
		{"a number compares with an int", "input.total > 9 && input.lines[1].price >= 5", nil, true},
		{"a result's number", "results['fraud-screen'].score > 70", nil, true},
		{"a result's number, below", "results['fraud-screen'].score > 70",
			func(v *Vars) { v.Results["fraud-screen"] = json.RawMessage(`{"score": 70.0}`) }, false},
		{"a result without a schema is dyn, its numbers doubles", "type(results.reserve.count) == double && results.reserve.count == 3.0", nil, true},
		{"a dyn number compares with an int at evaluation", "results.reserve.items[0].n == 1", nil, true},
		{"nested arrays of integers", "input.grid[1][1] == 4 && type(input.grid[1][1]) == int", nil, true},
		{"a list of strings", "input.tags.exists(t, t == 'gift') && size(input.tags) == 2", nil, true},
		{"a comprehension over objects", "input.lines.all(l, l.quantity >= 1) && input.lines.exists(l, l.sku == 'PEN')", nil, true},
		{"an object without properties is a map", "input.notes.door == 'back' && input.notes['door'] == 'back'", nil, true},
		{"additionalProperties makes a map", "input.meta.other == 'y' && input.meta.x == 1", nil, true},
		{"a nested object", "input.customer.address.country == 'NL'", nil, true},
		{"several types is dyn", "input.either == 7", nil, true},
		{"a bool field", "input.vip", nil, true},
		{"a step's presence", "'fraud-screen' in results", nil, true},
		{"a step's absence", "'fraud-screen' in results",
			func(v *Vars) { delete(v.Results, "fraud-screen") }, false},
		{"a guarded read of a skipped step", "!('fraud-screen' in results) || results['fraud-screen'].score > 90",
			func(v *Vars) { delete(v.Results, "fraud-screen") }, true},
		{"has on a result", "has(results.reserve) && has(results.reserve.count)", nil, true},
		{"an optional field absent", "has(input.coupon) || 'coupon' in input", nil, false},
		{"a comprehension variable hides results", "[1].exists(results, results == 1)", nil, true},
		{"a comprehension variable hides input", "[2].all(input, input > 1)", nil, true},
		{"timestamps compare", "timestamp(input.captureAfter) < timestamp(results.ship.deliverBy)", nil, true},
		{"timestamp accessors are UTC", "timestamp(results.ship.deliverBy).getHours() == 23", nil, true},
	}
	env := testEnv(t, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := compile(t, env, tt.src, Bool).Bool(varsWith(tt.vars))
			if err != nil {
				t.Fatalf("Bool(%q): %v", tt.src, err)
			}
			if got != tt.want {
				t.Errorf("Bool(%q) = %v, want %v", tt.src, got, tt.want)
			}
		})
	}
}

func TestRejectWhen(t *testing.T) {
	p, err := testEnv(t, true).Compile("event.decision == 'reject'", Bool)
	if err != nil {
		t.Fatal(err)
	}
	for data, want := range map[string]bool{
		`{"decision": "reject", "reason": "stolen card"}`: true,
		`{"decision": "approve"}`:                         false,
	} {
		got, err := p.Bool(Vars{Event: json.RawMessage(data)})
		if err != nil || got != want {
			t.Errorf("Bool(event %s) = %v, %v, want %v", data, got, err, want)
		}
	}
}

func TestTime(t *testing.T) {
	tests := []struct {
		src  string
		want time.Time
	}{
		{"timestamp(input.captureAfter)", time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
		{"timestamp(input.captureAfter) + duration('72h')", time.Date(2030, 1, 5, 3, 4, 5, 0, time.UTC)},
		{"timestamp(results.ship.deliverBy) - duration('1h')", time.Date(2030, 1, 31, 22, 0, 0, 0, time.UTC)},
		{"input.vip ? timestamp(input.captureAfter) : timestamp(results.ship.deliverBy)", time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)},
	}
	env := testEnv(t, false)
	for _, tt := range tests {
		got, err := compile(t, env, tt.src, Timestamp).Time(testVars())
		if err != nil {
			t.Fatalf("Time(%q): %v", tt.src, err)
		}
		if !got.Equal(tt.want) {
			t.Errorf("Time(%q) = %v, want %v", tt.src, got, tt.want)
		}
	}
}

func TestEvaluationErrors(t *testing.T) {
	tests := []struct {
		name    string
		src     string
		want    Kind
		vars    func(*Vars)
		noValue bool   // errors.Is ErrNoValue
		costly  bool   // errors.Is ErrTooCostly
		err     string // in the error
	}{
		{"a skipped step's result", "results['fraud-screen'].score > 70", Bool,
			func(v *Vars) { delete(v.Results, "fraud-screen") }, true, false, "no such key: fraud-screen"},
		{"a result not kept", "results.reserve.count > 1", Bool,
			func(v *Vars) { v.Results["reserve"] = nil }, true, false, "no such key: reserve"},
		{"an optional field left out", "input.coupon == 'SPRING'", Bool, nil, true, false, "no such key: coupon"},
		{"an index past the end", "input.lines[5].quantity > 1", Bool, nil, true, false, "index out of bounds: 5"},
		{"no input at all", "input.vip", Bool,
			func(v *Vars) { v.Input = nil }, true, false, "no such attribute"},
		{"a dyn result that is not a bool", "results.reserve.ok", Bool, nil, false, false, "must be a bool, is string"},
		{"a dyn result that is not a timestamp", "results.reserve.ok", Timestamp, nil, false, false, "must be a timestamp, is string"},
		{"a string that is not a timestamp", "timestamp(input.customerId)", Timestamp, nil, false, false, "c-42"},
		{"a value that breaks its schema", "input.lines[0].quantity > 1", Bool,
			func(v *Vars) { v.Input = json.RawMessage(`{"lines": [{"quantity": "three"}]}`) }, false, false, "no such overload"},
		{"input that is not JSON", "input.vip", Bool,
			func(v *Vars) { v.Input = json.RawMessage(`{"vip": tru`) }, false, false, "read the input"},
		{"a huge comprehension", strings.Repeat("[0,1,2,3,4,5,6,7,8,9].all(x, ", 8) + "true" + strings.Repeat(")", 8), Bool,
			nil, false, true, "cost limit exceeded"},
	}
	env := testEnv(t, false)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, vars := compile(t, env, tt.src, tt.want), varsWith(tt.vars)
			var err error
			if tt.want == Bool {
				_, err = p.Bool(vars)
			} else {
				_, err = p.Time(vars)
			}
			if err == nil {
				t.Fatalf("%q evaluated with no error", tt.src)
			}
			if got := errors.Is(err, ErrNoValue); got != tt.noValue {
				t.Errorf("errors.Is(%v, ErrNoValue) = %v, want %v", err, got, tt.noValue)
			}
			if got := errors.Is(err, ErrTooCostly); got != tt.costly {
				t.Errorf("errors.Is(%v, ErrTooCostly) = %v, want %v", err, got, tt.costly)
			}
			if !strings.Contains(err.Error(), tt.err) {
				t.Errorf("error %v lacks %q", err, tt.err)
			}
		})
	}
}

// A hostile expression is stopped by the cost limit quickly, not after
// its hundred million iterations (about 20 seconds).
func TestCostLimitStopsQuickly(t *testing.T) {
	src := strings.Repeat("[0,1,2,3,4,5,6,7,8,9].all(x, ", 8) + "true" + strings.Repeat(")", 8)
	p, err := testEnv(t, false).Compile(src, Bool)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Bool(testVars())
	if !errors.Is(err, ErrTooCostly) {
		t.Fatalf("Bool = %v, want ErrTooCostly", err)
	}
	if took := time.Since(start); took > time.Second {
		t.Errorf("stopped after %v", took)
	}
}

func TestResultsRead(t *testing.T) {
	tests := []struct {
		src  string
		want []string
	}{
		{"input.vip", nil},
		{"results['fraud-screen'].score > 70.0 || 'ship' in results", []string{"fraud-screen", "ship"}},
		{"has(results.reserve.count)", []string{"reserve"}},
		{"[1].exists(results, results == 1)", nil},
		{"results == results", []string{"fraud-screen", "reserve", "ship"}},
	}
	env := testEnv(t, false)
	for _, tt := range tests {
		if got := compile(t, env, tt.src, Bool).Results(); !slices.Equal(got, tt.want) {
			t.Errorf("Results of %q = %q, want %q", tt.src, got, tt.want)
		}
	}
}

func TestKindMismatch(t *testing.T) {
	p, err := testEnv(t, false).Compile("input.vip", Bool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.Time(testVars()); err == nil || !strings.Contains(err.Error(), "compiled as a bool") {
		t.Errorf("Time on a bool expression: %v", err)
	}
}

// Environments from schemas that say little: no input schema, no steps,
// an event with any data.
func TestLooseSchemas(t *testing.T) {
	env, err := NewEnv(Schemas{Event: json.RawMessage(`true`)})
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.Compile("input.anything == 1 && event.x == 'y'", Bool)
	if err != nil {
		t.Fatal(err)
	}
	got, err := p.Bool(Vars{Input: json.RawMessage(`{"anything": 1}`), Event: json.RawMessage(`{"x": "y"}`)})
	if err != nil || !got {
		t.Errorf("Bool = %v, %v, want true", got, err)
	}
	if _, err := env.Compile("results['a'].x", Bool); err == nil || !strings.Contains(err.Error(), "no step comes before this one") {
		t.Errorf("Compile with no steps before: %v", err)
	}
}

func TestNewEnvRefusesBadSchema(t *testing.T) {
	_, err := NewEnv(Schemas{Results: map[string]json.RawMessage{"a": json.RawMessage(`{"type": `)}})
	if err == nil || !strings.Contains(err.Error(), "schema of results['a']") {
		t.Errorf("NewEnv with a broken schema: %v", err)
	}
}

// Programs and environments are shared by an actor's goroutines.
func TestConcurrentUse(t *testing.T) {
	env := testEnv(t, false)
	p, err := env.Compile("results['fraud-screen'].score > 70", Bool)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	for range 8 {
		go func() {
			for range 50 {
				if ok, err := p.Bool(testVars()); err != nil || !ok {
					done <- errors.Join(err, errors.New("not true"))
					return
				}
				if _, err := env.Compile("input.nope", Bool); err == nil || !strings.Contains(err.Error(), "input has:") {
					done <- errors.Join(err, errors.New("no field list"))
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}

func FuzzCompile(f *testing.F) {
	for _, s := range []string{
		"results['fraud-screen'].score > 70",
		"timestamp(input.captureAfter)",
		"event.decision == 'reject'",
		"input.lines.exists(l, l.quantity > 2)",
		"'fraud-screen' in results",
		"[1].exists(results, results['x'] == 1)",
		"input{}",
		"has(input.customer.address.country)",
		"input.grid[0][1] + 1 == 3",
		"a.b.c.d[",
	} {
		f.Add(s)
	}
	env := testEnv(f, true)
	f.Fuzz(func(t *testing.T, src string) {
		// A hang would never return to be reported; this names its input.
		watchdog := time.AfterFunc(10*time.Second, func() { panic(fmt.Sprintf("compiling and evaluating %q took over 10s", src)) })
		defer watchdog.Stop()
		p, err := env.Compile(src, Bool)
		if err == nil {
			_, _ = p.Bool(testVars())
		}
		if p, err := env.Compile(src, Timestamp); err == nil {
			_, _ = p.Time(testVars())
		}
	})
}

// The costs of a definition's load (NewEnv, Compile per expression) and of
// each decision (Bool, Time with the JSON decoded).
func BenchmarkNewEnv(b *testing.B) {
	for b.Loop() {
		testEnv(b, true)
	}
}

func BenchmarkCompile(b *testing.B) {
	env := testEnv(b, false)
	for b.Loop() {
		if _, err := env.Compile("results['fraud-screen'].score > 70 && input.lines.exists(l, l.quantity > 2)", Bool); err != nil {
			b.Fatal(err)
		}
	}
}

// benchmarkBool measures deciding src, which must be true of testVars.
func benchmarkBool(b *testing.B, src string) {
	p, vars := compile(b, testEnv(b, false), src, Bool), testVars()
	for b.Loop() {
		if ok, err := p.Bool(vars); err != nil || !ok {
			b.Fatal(ok, err)
		}
	}
}

func BenchmarkBool(b *testing.B) {
	benchmarkBool(b, "results['fraud-screen'].score > 70")
}

func BenchmarkBoolOverInput(b *testing.B) {
	benchmarkBool(b, "input.lines.exists(l, l.quantity > 2) && input.total > 5")
}

func BenchmarkTime(b *testing.B) {
	p, vars := compile(b, testEnv(b, false), "timestamp(input.captureAfter) + duration('72h')", Timestamp), testVars()
	for b.Loop() {
		if _, err := p.Time(vars); err != nil {
			b.Fatal(err)
		}
	}
}
