package order

import (
	"encoding/json"
	"maps"
	"time"
)

// Expr is an expression of a workflow definition on an order's data: a
// step's condition (StepDef.When), a timer's time (Wait.Until), an
// event's rejection (Wait.RejectWhen). Package definition compiles them
// (CEL, package expr), type-checked against the schemas of what they
// read, so that package order holds no expression language.
type Expr interface {
	// Bool and Time evaluate it; an error says the order lacks a value
	// it reads, or the evaluation cost too much.
	Bool(v ExprVars) (bool, error)
	Time(v ExprVars) (time.Time, error)
	// Results lists the steps whose results it reads: they are kept.
	Results() []string
	// String is its source, for people.
	String() string
}

// ExprVars is what an expression reads: the order's input, the results
// kept so far, by step, and, in an event's rejection, the event's data.
type ExprVars struct {
	Input   json.RawMessage
	Results map[string]json.RawMessage
	Event   json.RawMessage
}

// VarsWith is what an expression reads of o once step succeeded with
// result (nil: none kept): its input and its results, the step's among
// them.
func (o Order) VarsWith(step string, result json.RawMessage) ExprVars {
	results := make(map[string]json.RawMessage, len(o.Results)+1)
	maps.Copy(results, o.Results)
	if len(result) > 0 {
		results[step] = result
	}
	return ExprVars{Input: o.Input, Results: results}
}
