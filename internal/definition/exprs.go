package definition

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"orderly/internal/expr"
	"orderly/internal/order"
)

// stepExprs are one step's compiled expressions, nil where it has none.
type stepExprs struct {
	when, until, rejectWhen *expr.Program
}

// compileExprs compiles every step's expressions (when, wait.until,
// wait.rejectWhen), type-checked against the schemas of what each reads:
// the input, and the results of the steps before it; a rejectWhen also
// its event's data. add, when not nil, is told each one that does not
// compile, at its field, in the checker's words. It returns one entry
// per step.
func (d Definition) compileExprs(add func(string, string, ...any)) []stepExprs {
	out := make([]stepExprs, len(d.Steps))
	for i, s := range d.Steps {
		at := fmt.Sprintf("steps[%d]", i)
		report := func(field string, err error) {
			if add != nil {
				add(field, "%s", d.explain(i, err.Error()))
			}
		}
		w := s.Wait
		var until, rejectWhen string
		if w != nil && w.isTimer() && w.For == "" {
			until = w.Until // with "for" too, checkWait says to keep one
		}
		if w != nil && w.Event != "" {
			rejectWhen = w.RejectWhen
		}
		schemas := expr.Schemas{Input: d.Input}
		if s.When != "" || until != "" {
			schemas.Results = d.resultSchemas(i)
			env, err := expr.NewEnv(schemas)
			if err != nil {
				report(at, fmt.Errorf("its expressions cannot be checked: %w", err))
				continue
			}
			out[i].when = compileAt(env, s.When, expr.Bool, at+".when", report)
			out[i].until = compileAt(env, until, expr.Timestamp, at+".wait.until", report)
		}
		if rejectWhen == "" {
			continue
		}
		// Its own environment: event is there in a rejectWhen only.
		if schemas.Results == nil {
			schemas.Results = d.resultSchemas(i)
		}
		// Left out, the event's schema takes any object: event is dyn.
		schemas.Event = json.RawMessage(`{}`)
		if len(w.Schema) > 0 {
			schemas.Event = w.Schema
		}
		env, err := expr.NewEnv(schemas)
		if err != nil {
			report(at+".wait.rejectWhen", fmt.Errorf("cannot be checked: %w", err))
			continue
		}
		out[i].rejectWhen = compileAt(env, rejectWhen, expr.Bool, at+".wait.rejectWhen", report)
	}
	return out
}

// explain adds to the checker's message of step i's expression why a
// result it reads is not there: the step runs after this one (or is this
// one), or is a timer, which has no result.
func (d Definition) explain(i int, msg string) string {
	for j, s := range d.Steps {
		if !strings.Contains(msg, "undefined field '"+s.Name+"' (the steps before this one") &&
			!strings.Contains(msg, "undefined field '"+s.Name+"' (no step comes before this one") {
			continue
		}
		switch {
		case j == i:
			msg += fmt.Sprintf("; %s is this step: an expression reads earlier steps' results", s.Name)
		case j > i:
			msg += fmt.Sprintf("; %s is steps[%d], which runs after this one: an expression reads earlier steps' results", s.Name, j)
		case s.Wait != nil && s.Wait.isTimer():
			msg += fmt.Sprintf("; %s is a timer, which has no result", s.Name)
		}
	}
	return msg
}

// compileAt compiles src, when set, reporting its error at field.
func compileAt(env *expr.Env, src string, kind expr.Kind, field string, report func(string, error)) *expr.Program {
	if src == "" {
		return nil
	}
	p, err := env.Compile(src, kind)
	if err != nil {
		report(field, err)
		return nil
	}
	return p
}

// resultSchemas are the results an expression of step i may read: each
// earlier step's, by name, with its JSON Schema (a service's
// result.schema, an event's wait.schema; nil, unchecked, where there is
// none). A timer has no result, so it is left out: reading it is an
// undefined field.
func (d Definition) resultSchemas(i int) map[string]json.RawMessage {
	results := make(map[string]json.RawMessage, i)
	for _, s := range d.Steps[:i] {
		switch {
		case s.Wait != nil && s.Wait.isTimer():
		case s.Wait != nil:
			results[s.Name] = s.Wait.Schema
		case s.Result != nil:
			results[s.Name] = s.Result.Schema
		default:
			results[s.Name] = nil
		}
	}
	return results
}

// readsOf is the steps whose results some expression reads: they are
// kept (order.Workflow.Keeps).
func readsOf(exprs []stepExprs) map[string]bool {
	read := map[string]bool{}
	for _, e := range exprs {
		for _, p := range []*expr.Program{e.when, e.until, e.rejectWhen} {
			if p == nil {
				continue
			}
			for _, name := range p.Results() {
				read[name] = true
			}
		}
	}
	return read
}

// program is a compiled expression as the domain evaluates it.
type program struct{ p *expr.Program }

var _ order.Expr = program{}

// AsExpr is p as an order.Expr (tests build workflows with it); nil (no interface value) when p is nil.
func AsExpr(p *expr.Program) order.Expr {
	if p == nil {
		return nil
	}
	return program{p}
}

func (e program) Bool(v order.ExprVars) (bool, error)      { return e.p.Bool(exprVars(v)) }
func (e program) Time(v order.ExprVars) (time.Time, error) { return e.p.Time(exprVars(v)) }
func (e program) Results() []string                        { return e.p.Results() }
func (e program) String() string                           { return e.p.String() }

func exprVars(v order.ExprVars) expr.Vars {
	return expr.Vars{Input: v.Input, Results: v.Results, Event: v.Event}
}
