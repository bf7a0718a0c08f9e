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
	callShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"method": scalar, "path": scalar, "callback": callbackShape, "poll": pollShape}}
	carries   = &strictjson.Shape{Elem: scalar}
	// An undo takes no callback and is not polled: taken here as any value, it is refused
	// with its reason (checkGiven), not as an unknown field.
	undoShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"method": scalar, "path": scalar, "description": scalar, "carries": carries, "callback": nil, "poll": nil}}
	waitShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"for": scalar, "until": scalar, "max": scalar,
		"event": scalar, "timeout": scalar, "onTimeout": scalar, "schema": nil, "rejectWhen": scalar},
		Unknown: `unknown field; a wait takes "for" (a timer), "until" with "max" (a timer until a time), or "event" with "timeout", "schema", "onTimeout" and "rejectWhen"`}
	stepShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"name": scalar, "when": scalar, "service": scalar, "call": callShape, "wait": waitShape, "undo": undoShape,
		"timing":  {Fields: map[string]*strictjson.Shape{"allowance": scalar, "maxAllowance": scalar, "failureThreshold": integer, "maxHeartbeats": integer}},
		"request": {Fields: map[string]*strictjson.Shape{"carries": carries}},
		"result":  {Fields: map[string]*strictjson.Shape{"schema": nil, "maxBytes": integer, "shownToClient": boolean}}}}
	definitionShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"$schema": scalar, "name": scalar, "version": scalar,
		"description": scalar, "input": nil, "steps": {Elem: stepShape}}}

	// Where to call back is orderly's to say, with each call: a URL or a
	// token in a definition is refused as unknown, naming what it takes.
	callbackShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"timeout": scalar, "maxTimeout": scalar},
		Unknown: `unknown field; a callback takes "timeout" and "maxTimeout" (where to call back is sent with each call)`}
	// Where to poll is the service's to say, in its answer's Location.
	pollShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"timeout": scalar, "every": scalar},
		Unknown: `unknown field; a poll takes "timeout" and "every" (where to poll is the Location of the service's 202 answer)`}
)
