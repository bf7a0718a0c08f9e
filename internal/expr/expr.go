// Package expr compiles and evaluates the CEL (Common Expression Language)
// expressions of workflow definitions: a step's condition ("when"), a
// timer's time ("until") and an event's rejection ("rejectWhen"). Each is
// type-checked once, when the definition is read, against the JSON
// Schemas of what it reads, and evaluated on the order's JSON.
//
// An expression reads three variables: input (the order's input),
// results (each earlier step's result, by step name:
// results['fraud-screen'].score, or results.reserve for a name without
// hyphens; 'fraud-screen' in results says whether that step has one) and,
// in a rejectWhen only, event (the event's data). There is no clock (no
// now): a step may be decided more than once (a redrive, a Supervisor
// retry), and must be decided the same way each time. Timestamp accessors
// use UTC unless given a time zone.
//
// Where a schema says "type": "object" with properties (and no
// additionalProperties or patternProperties), the checker knows its
// fields: a selection of any other field is a compile error naming the
// fields there are. "string", "integer", "number" and "boolean" are CEL's
// string, int, double and bool; "array" is a list of its items' type; any
// other object is map(string, dyn); anything else (no type, several
// types, $ref, a step without a result schema) is dyn, checked only at
// evaluation.
//
// Each schema object is a CEL object type named after where it is
// ("input", "input['lines'][]", "results['fraud-screen']"), declared by a
// custom types.Provider. At evaluation the values are the JSON decoded
// into Go maps and slices, with numbers made ints where the schema says
// integer and doubles elsewhere (CEL's reading of JSON). The provider
// gives these types no field getters, so CEL's interpreter selects their
// fields as map keys: one environment both checks and evaluates, and a
// field the JSON lacks is "no such key" (ErrNoValue), not a panic.
//
// An expression is at most MaxLength characters, and its evaluation is
// stopped at CostLimit (CEL's cost units), so that a hostile expression
// cannot stall the actor that evaluates it.
package expr

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"cel.dev/cel-go/cel"
	"cel.dev/cel-go/common"
	"cel.dev/cel-go/common/ast"
	"cel.dev/cel-go/common/operators"
	"cel.dev/cel-go/common/types"
	"cel.dev/cel-go/common/types/ref"
	"cel.dev/cel-go/interpreter"
)

// MaxLength is the most characters an expression may have: conditions
// and times are short, and the bound keeps parsing and checking cheap.
const MaxLength = 1000

// CostLimit is CEL's cost budget for one evaluation. An expression over a
// list of a few hundred lines costs a few thousand; one that runs into the
// limit is stopped after a few milliseconds.
const CostLimit = 100_000

var (
	// ErrNoValue says that the expression read a value the order does not
	// have: the result of a step that was skipped or is not kept, a field
	// the JSON leaves out, an index past a list's end.
	ErrNoValue = errors.New("the expression reads a value the order does not have")

	// ErrTooCostly says that an evaluation ran into CostLimit.
	ErrTooCostly = errors.New("the expression costs too much to evaluate")
)

// Kind is what an expression must give.
type Kind int

// The kinds an expression may give.
const (
	Bool Kind = iota + 1
	Timestamp
)

func (k Kind) String() string {
	switch k {
	case Bool:
		return "a bool"
	case Timestamp:
		return "a timestamp"
	default:
		return fmt.Sprintf("kind %d", int(k))
	}
}

// Schemas are what an expression may read, as JSON Schemas.
type Schemas struct {
	// Input is the schema of the order's input.
	Input json.RawMessage
	// Results holds the steps before this one, by name: their result
	// schemas, nil for a step without one (its result is dyn).
	Results map[string]json.RawMessage
	// Event is the schema of an event's data; nil means that there is no
	// event variable. "{}" or "true" makes it dyn.
	Event json.RawMessage
}

// Env compiles expressions that read what its Schemas describe. It is
// safe for concurrent use.
type Env struct {
	env     *cel.Env
	prov    *provider
	input   *shape
	results *object
	event   *shape // nil when there is no event

	mu sync.Mutex // held by Compile: prov's misses are one compilation's
}

// NewEnv makes the environment of expressions that read what s describes.
func NewEnv(s Schemas) (*Env, error) {
	r := &schemaReader{objects: map[string]*object{}}
	results := &object{name: "results", fields: make(map[string]*shape, len(s.Results))}
	r.objects[results.name] = results
	input, err := r.read("input", s.Input)
	if err != nil {
		return nil, err
	}
	for name, raw := range s.Results {
		f, err := r.read(key("results", name), raw)
		if err != nil {
			return nil, err
		}
		results.fields[name] = f
	}
	var event *shape
	if s.Event != nil {
		if event, err = r.read("event", s.Event); err != nil {
			return nil, err
		}
	}

	base, err := types.NewRegistry()
	if err != nil {
		return nil, fmt.Errorf("CEL type registry: %w", err)
	}
	prov := &provider{base: base, objects: r.objects, misses: map[string][]string{}}
	opts := []cel.EnvOption{
		cel.CustomTypeProvider(prov),
		cel.Variable("input", input.celType()),
		cel.Variable("results", types.NewObjectType(results.name)),
		// A result's score > 70 compares a double with an int.
		cel.CrossTypeNumericComparisons(true),
		// getHours() and its siblings read the same hour on every machine.
		cel.DefaultUTCTimeZone(true),
		cel.ParserExpressionSizeLimit(MaxLength),
	}
	if event != nil {
		opts = append(opts, cel.Variable("event", event.celType()))
	}
	env, err := cel.NewEnv(opts...)
	if err != nil {
		return nil, fmt.Errorf("CEL environment: %w", err)
	}
	return &Env{env: env, prov: prov, input: input, results: results, event: event}, nil
}

// Program is a compiled, type-checked expression. It is safe for
// concurrent use.
type Program struct {
	src   string
	want  Kind
	prg   cel.Program
	env   *Env
	reads reads
}

// String returns the expression's source.
func (p *Program) String() string { return p.src }

// Results names the steps whose results the expression reads, sorted, so
// that a definition can keep them where the expression is evaluated.
func (p *Program) Results() []string {
	var names []string
	for name := range p.env.results.fields {
		if p.reads.allResults || p.reads.results[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	return names
}

// Compile parses and type-checks src, which must give want. An
// expression whose type is dyn (it reads a result without a schema)
// compiles, and gives want or an error at evaluation.
func (e *Env) Compile(src string, want Kind) (*Program, error) {
	if want != Bool && want != Timestamp {
		return nil, fmt.Errorf("compile: %s is not a kind an expression may give", want)
	}
	if n := utf8.RuneCountInString(src); n > MaxLength {
		return nil, fmt.Errorf("is %d characters long, at most %d", n, MaxLength)
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("is empty")
	}

	e.mu.Lock()
	defer e.mu.Unlock()
	e.prov.takeMisses()

	parsed, iss := e.env.Parse(src)
	if iss.Err() != nil {
		return nil, e.issues(iss, nil)
	}
	w := &rewriter{fac: ast.NewExprFactory(), objects: e.objectRoots(), reads: reads{results: map[string]bool{}}}
	w.walk(parsed.NativeRep().Expr(), nil)
	if len(w.problems) > 0 {
		info := parsed.NativeRep().SourceInfo()
		msgs := make([]string, len(w.problems))
		for i, p := range w.problems {
			msgs[i] = at(info.GetStartLocation(p.id), p.msg)
		}
		return nil, errors.New(strings.Join(msgs, "; "))
	}
	checked, iss := e.env.Check(parsed)
	if iss.Err() != nil {
		return nil, e.issues(iss, e.prov.takeMisses())
	}
	if out := checked.OutputType(); !gives(out, want) {
		return nil, fmt.Errorf("must be %s, is %s%s", want, out, hint(out, want))
	}
	prg, err := e.env.Program(checked, cel.CostLimit(CostLimit))
	if err != nil {
		return nil, fmt.Errorf("plan: %w", err)
	}
	return &Program{src: src, want: want, prg: prg, env: e, reads: w.reads}, nil
}

// gives says whether a value of type t is a want, or may be one.
func gives(t *types.Type, want Kind) bool {
	switch t.Kind() {
	case types.DynKind:
		return true
	case types.BoolKind:
		return want == Bool
	case types.TimestampKind:
		return want == Timestamp
	default:
		return false
	}
}

func hint(t *types.Type, want Kind) string {
	if want == Timestamp && t.Kind() == types.StringKind {
		return ": timestamp(...) reads an RFC 3339 string"
	}
	return ""
}

// objectRoots are the variables of an object type, where 'name' in
// variable is a presence test.
func (e *Env) objectRoots() map[string]bool {
	roots := map[string]bool{"results": true}
	if e.input.kind == objectShape {
		roots["input"] = true
	}
	if e.event != nil && e.event.kind == objectShape {
		roots["event"] = true
	}
	return roots
}

// issues renders CEL's errors one line each, with their line and column,
// saying which fields an object has where a field was not one of them.
func (e *Env) issues(iss *cel.Issues, misses map[string][]string) error {
	var msgs []string
	for _, ce := range iss.Errors() {
		msg := ce.Message
		if field, ok := strings.CutPrefix(msg, "undefined field '"); ok {
			field = strings.TrimSuffix(field, "'")
			for _, name := range misses[field] {
				msg += " (" + e.fieldsOf(name) + ")"
			}
		}
		if strings.Contains(msg, "applied to '(double, int)'") || strings.Contains(msg, "applied to '(int, double)'") {
			msg += ": a JSON Schema number is a double, so write 70.0 rather than 70"
		}
		if strings.HasPrefix(msg, "undeclared reference to 'now'") {
			msg += ": expressions have no clock, as a step must be decided the same way each time it is decided"
		}
		if strings.HasPrefix(msg, "undeclared reference to 'event'") {
			msg += ": event is only there in an event's rejectWhen"
		}
		msgs = append(msgs, at(ce.Location, msg))
	}
	return errors.New(strings.Join(msgs, "; "))
}

func (e *Env) fieldsOf(name string) string {
	o := e.prov.objects[name]
	names := o.fieldNames()
	if name == "results" {
		if len(names) == 0 {
			return "no step comes before this one"
		}
		return "the steps before this one: " + strings.Join(names, ", ")
	}
	return name + " has: " + strings.Join(names, ", ")
}

// at prefixes msg with its line and column as CEL reports them.
func at(l common.Location, msg string) string {
	return fmt.Sprintf("%d:%d: %s", l.Line(), l.Column()+1, msg)
}

// reads is what an expression reads, so that evaluation decodes only that.
type reads struct {
	input, event, allResults bool
	results                  map[string]bool
}

type problem struct {
	id  int64
	msg string
}

// rewriter prepares a parsed expression for the checker. CEL checks
// m['key'] only against maps, and step names have hyphens, so a field
// selected with a quoted name is rewritten as the selection it means
// (results['fraud-screen'] as results.fraud-screen, which the parser
// cannot read but the checker can): the same value on a map, and a
// checked field on an object. 'name' in results becomes a presence test.
// It also notes what the expression reads, and refuses what this package
// does not offer.
type rewriter struct {
	fac      ast.ExprFactory
	objects  map[string]bool
	reads    reads
	problems []problem
}

// walk visits e; bound holds the comprehension variables in scope, which
// hide the variables of the same names.
func (w *rewriter) walk(e ast.Expr, bound map[string]bool) {
	switch e.Kind() {
	case ast.IdentKind:
		switch name := e.AsIdent(); {
		case bound[name]:
		case name == "input":
			w.reads.input = true
		case name == "event":
			w.reads.event = true
		case name == "results":
			w.reads.allResults = true
		}
	case ast.SelectKind:
		s := e.AsSelect()
		if op := s.Operand(); op.Kind() == ast.IdentKind && op.AsIdent() == "results" && !bound["results"] {
			w.reads.results[s.FieldName()] = true
			return
		}
		w.walk(s.Operand(), bound)
	case ast.CallKind:
		c := e.AsCall()
		args := c.Args()
		switch {
		case c.FunctionName() == operators.Index && len(args) == 2 && isString(args[1]):
			e.SetKindCase(w.fac.NewSelect(e.ID(), args[0], string(args[1].AsLiteral().(types.String))))
			w.walk(e, bound)
			return
		case c.FunctionName() == operators.Index && len(args) == 2 && isRoot(args[0], "results", bound):
			w.problems = append(w.problems, problem{e.ID(), "results is read by a step's name in quotes, as in results['fraud-screen']"})
			return
		case c.FunctionName() == operators.In && len(args) == 2 && isString(args[0]) &&
			args[1].Kind() == ast.IdentKind && w.objects[args[1].AsIdent()] && !bound[args[1].AsIdent()]:
			e.SetKindCase(w.fac.NewPresenceTest(e.ID(), args[1], string(args[0].AsLiteral().(types.String))))
			w.walk(e, bound)
			return
		}
		if c.IsMemberFunction() {
			w.walk(c.Target(), bound)
		}
		for _, a := range args {
			w.walk(a, bound)
		}
	case ast.ComprehensionKind:
		c := e.AsComprehension()
		w.walk(c.IterRange(), bound)
		w.walk(c.AccuInit(), bound)
		inner := with(bound, c.IterVar(), c.IterVar2(), c.AccuVar())
		w.walk(c.LoopCondition(), inner)
		w.walk(c.LoopStep(), inner)
		w.walk(c.Result(), with(bound, c.AccuVar()))
	case ast.ListKind:
		for _, el := range e.AsList().Elements() {
			w.walk(el, bound)
		}
	case ast.MapKind:
		for _, en := range e.AsMap().Entries() {
			w.walk(en.AsMapEntry().Key(), bound)
			w.walk(en.AsMapEntry().Value(), bound)
		}
	case ast.StructKind:
		w.problems = append(w.problems, problem{e.ID(), fmt.Sprintf("building an object (%s{...}) is not supported", e.AsStruct().TypeName())})
	}
}

func isString(e ast.Expr) bool {
	if e.Kind() != ast.LiteralKind {
		return false
	}
	_, ok := e.AsLiteral().(types.String)
	return ok
}

func isRoot(e ast.Expr, name string, bound map[string]bool) bool {
	return e.Kind() == ast.IdentKind && e.AsIdent() == name && !bound[name]
}

func with(bound map[string]bool, names ...string) map[string]bool {
	m := make(map[string]bool, len(bound)+len(names))
	for n := range bound {
		m[n] = true
	}
	for _, n := range names {
		if n != "" {
			m[n] = true
		}
	}
	return m
}

// Vars are the values an expression reads, as JSON.
type Vars struct {
	Input json.RawMessage
	// Results holds the results the order has, by step name; a step
	// without one (skipped, or its result not kept) is left out.
	Results map[string]json.RawMessage
	Event   json.RawMessage
}

// Bool evaluates a Bool expression.
func (p *Program) Bool(v Vars) (bool, error) {
	out, err := p.eval(v, Bool)
	if err != nil {
		return false, err
	}
	b, ok := out.(types.Bool)
	if !ok {
		return false, fmt.Errorf("must be a bool, is %s", out.Type().TypeName())
	}
	return bool(b), nil
}

// Time evaluates a Timestamp expression.
func (p *Program) Time(v Vars) (time.Time, error) {
	out, err := p.eval(v, Timestamp)
	if err != nil {
		return time.Time{}, err
	}
	t, ok := out.(types.Timestamp)
	if !ok {
		return time.Time{}, fmt.Errorf("must be a timestamp, is %s", out.Type().TypeName())
	}
	return t.Time, nil
}

func (p *Program) eval(v Vars, want Kind) (ref.Val, error) {
	if p.want != want {
		return nil, fmt.Errorf("evaluate %s as %s: it was compiled as %s", p.src, want, p.want)
	}
	act := make(map[string]any, 3)
	if p.reads.input && v.Input != nil {
		val, err := decode(v.Input, p.env.input)
		if err != nil {
			return nil, fmt.Errorf("read the input: %w", err)
		}
		act["input"] = val
	}
	if p.reads.event && v.Event != nil && p.env.event != nil {
		val, err := decode(v.Event, p.env.event)
		if err != nil {
			return nil, fmt.Errorf("read the event: %w", err)
		}
		act["event"] = val
	}
	if p.reads.allResults || len(p.reads.results) > 0 {
		results := make(map[string]any, len(p.reads.results))
		for name, raw := range v.Results {
			if raw == nil || !p.reads.allResults && !p.reads.results[name] {
				continue
			}
			s := p.env.results.fields[name]
			if s == nil {
				s = dyn
			}
			val, err := decode(raw, s)
			if err != nil {
				return nil, fmt.Errorf("read the result of %s: %w", name, err)
			}
			results[name] = val
		}
		act["results"] = results
	}
	out, _, err := p.prg.Eval(act)
	if err != nil {
		return nil, evalError(err)
	}
	return out, nil
}

// evalError tells apart the errors a caller acts on. CEL's missing key,
// index and variable errors are unexported types, so they are known by
// their messages.
func evalError(err error) error {
	var cancelled interpreter.EvalCancelledError
	if errors.As(err, &cancelled) && cancelled.Cause == interpreter.CostLimitExceeded {
		return fmt.Errorf("%w (limit %d): %w", ErrTooCostly, CostLimit, err)
	}
	msg := err.Error()
	for _, missing := range []string{"no such key:", "index out of bounds:", "no such attribute"} {
		if strings.HasPrefix(msg, missing) {
			return fmt.Errorf("%w: %w", ErrNoValue, err)
		}
	}
	return fmt.Errorf("evaluate: %w", err)
}
