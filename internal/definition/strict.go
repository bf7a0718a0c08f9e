package definition

import "orderly/internal/strictjson"

// The shape of a definition file, which strictjson checks before the rules
// of Validate: every field the format has, exactly as spelled, and the
// kind of its value. A nil shape takes any value (input and a result's
// schema: JSON Schemas, which have rules of their own).
var (
	integer   = &strictjson.Shape{Kind: strictjson.Integer}
	boolean   = &strictjson.Shape{Kind: strictjson.Bool}
	scalar    = &strictjson.Shape{Kind: strictjson.String}
	callShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"method": scalar, "path": scalar}}
	carries   = &strictjson.Shape{Elem: scalar}
	undoShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"method": scalar, "path": scalar, "description": scalar, "carries": carries}}
	// A timer's other form ("until", "max") is planned, not built: refused.
	waitShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"for": scalar, "event": scalar, "timeout": scalar, "onTimeout": scalar, "schema": nil},
		Unknown: `unknown field; a wait takes "for" (a timer), or "event" with "timeout", "schema" and "onTimeout"`}
	stepShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"name": scalar, "service": scalar, "call": callShape, "wait": waitShape, "undo": undoShape,
		"timing":  {Fields: map[string]*strictjson.Shape{"allowance": scalar, "maxAllowance": scalar, "failureThreshold": integer, "maxHeartbeats": integer}},
		"request": {Fields: map[string]*strictjson.Shape{"carries": carries}},
		"result":  {Fields: map[string]*strictjson.Shape{"schema": nil, "maxBytes": integer, "shownToClient": boolean}}}}
	definitionShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"$schema": scalar, "name": scalar, "version": scalar,
		"description": scalar, "input": nil, "steps": {Elem: stepShape}}}
)
