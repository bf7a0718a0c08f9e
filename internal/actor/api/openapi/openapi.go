// Package openapi describes orderly's public API as an OpenAPI 3.1
// document, built from the rules the API enforces (internal/order): the
// routes of internal/actor/api, the submission's JSON Schema (the one the stack's
// API Gateway request model must equal; its test checks), the error shape
// and codes, and the Idempotency-Key rules. The local API serves it at
// GET /openapi.json.
package openapi

import (
	"encoding/json"
	"fmt"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// inputSchema is a workflow's input schema, as its definition says.
func inputSchema(w order.Workflow) map[string]any {
	var schema map[string]any
	if json.Unmarshal(w.Input, &schema) != nil || schema == nil {
		return map[string]any{"type": "object"} // a workflow made in Go, in tests
	}
	delete(schema, "$schema") // OpenAPI 3.1 reads draft 2020-12 itself
	return schema
}

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func jsonBody(schema map[string]any) map[string]any {
	return map[string]any{"application/json": map[string]any{"schema": schema}}
}

func response(desc string, schema map[string]any) map[string]any {
	r := map[string]any{"description": desc}
	if schema != nil {
		r["content"] = jsonBody(schema)
	}
	return r
}

func errorResponse(desc string) map[string]any { return response(desc, ref("Error")) }

// Document returns the OpenAPI 3.1 description of the API of a stage that
// runs wfs: each workflow's submission body is its latest version's input
// schema.
func Document(wfs order.Versions) map[string]any {
	idParam := map[string]any{"name": "id", "in": "path", "required": true,
		"description": "the order id (26 characters, base32)", "schema": map[string]any{"type": "string", "pattern": "^[A-Z2-7]{26}$"}}
	accepted := response("accepted: the order and the status it has now", ref("Accepted"))
	accepted["headers"] = map[string]any{"Location": map[string]any{"schema": map[string]any{"type": "string"}}}
	common := map[string]any{
		"400": errorResponse("invalid_request: the body or a header breaks a rule (the message names each field)"),
		"403": errorResponse("forbidden: no caller identity (in AWS, sign the request with SigV4)"),
		"404": errorResponse("not_found (an order that is not the caller's is not found either) or no_route"),
		"405": errorResponse("method_not_allowed; see the Allow header"),
		"413": errorResponse("too_large: the body is over 64 KiB"),
		"415": errorResponse("unsupported_media_type: send application/json in UTF-8"),
		"502": response("the function failed (API Gateway's own body); retry with the same Idempotency-Key", nil),
		"503": errorResponse("busy: the order kept changing; or unavailable: a search cannot read the stage's page token key now; retry"),
	}
	with := func(codes map[string]any) map[string]any { return merge(common, codes) }
	// A submission is also refused while an operator pauses its workflow
	// with submissions refused: retry after Retry-After.
	paused := errorResponse("paused: the workflow takes no new orders for now (an operator's pause); retry after Retry-After seconds, " +
		"with the same Idempotency-Key. Or busy, or unavailable, as on every route; retry")
	paused["headers"] = map[string]any{"Retry-After": map[string]any{"description": "seconds until the pause's stated end",
		"schema": map[string]any{"type": "integer", "minimum": 1}}}
	getOrder := func(summary, schema string) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "parameters": []any{idParam},
			"responses": with(map[string]any{"200": response("the order and its records", ref(schema))})}}
	}
	getHistory := func(summary, desc string) map[string]any {
		return map[string]any{"get": map[string]any{"summary": summary, "parameters": []any{idParam},
			"responses": with(map[string]any{"200": response(desc, ref("History"))})}}
	}
	submit := func(summary, body string) map[string]any {
		return map[string]any{"post": map[string]any{
			"summary": summary,
			"parameters": []any{map[string]any{"name": "Idempotency-Key", "in": "header", "required": false,
				"description": fmt.Sprintf("printable ASCII without spaces, at most %d characters, sent once. The same key with the same body "+
					"(for the same caller, workflow and customer) replays the first answer (202, Idempotent-Replayed: true); with another body it is 409 idempotency_conflict.",
					order.MaxIdempotencyKeyLen),
				"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": order.MaxIdempotencyKeyLen, "pattern": "^[!-~]+$"}}},
			"requestBody": map[string]any{"required": true, "content": jsonBody(ref(body))},
			"responses": with(map[string]any{"202": accepted,
				"409": errorResponse("idempotency_conflict: the key was used with another body"),
				"503": paused}),
		}}
	}
	search := func(summary string) map[string]any {
		text := func(name, desc string) map[string]any {
			return map[string]any{"name": name, "in": "query", "required": false, "description": desc,
				"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": order.MaxFilterBytes}}
		}
		at := func(name, desc string) map[string]any {
			return map[string]any{"name": name, "in": "query", "required": false, "description": desc + " (RFC 3339)",
				"schema": map[string]any{"type": "string", "format": "date-time"}}
		}
		return map[string]any{"summary": summary, "parameters": []any{
			map[string]any{"name": api.ParamStatus, "in": "query", "required": false, "schema": ref("Status")},
			text(api.ParamCustomer, "the order's customerId"),
			text(api.ParamWorkflow, "the workflow's name"), text(api.ParamVersion, "the workflow version"),
			at(api.ParamCreatedFrom, "submitted at or after"), at(api.ParamCreatedTo, "submitted before"),
			at(api.ParamEndedFrom, "reached a terminal status at or after; excludes running orders"),
			at(api.ParamEndedTo, "reached a terminal status before; excludes running orders"),
			map[string]any{"name": api.ParamLimit, "in": "query", "required": false, "description": "orders per page at most",
				"schema": map[string]any{"type": "integer", "minimum": 1, "maximum": order.MaxSearchLimit, "default": order.DefaultSearchLimit}},
			map[string]any{"name": api.ParamCursor, "in": "query", "required": false,
				"description": "the nextCursor of the page before, with the same other parameters; opaque, sealed by the stage",
				"schema":      map[string]any{"type": "string"}},
		}, "responses": with(map[string]any{"200": response("a page of orders, newest first; go on while nextCursor is set "+
			"(a page may hold fewer orders than the limit and still have one)", ref("Search"))})}
	}
	paths := map[string]any{
		"/orders": merge(submit("submit an order of the stage's default workflow ("+wfs.Default()+")", "Submission"),
			map[string]any{"get": search("the caller's own orders, newest first, filtered; every parameter at most once")}),
		"/ops/orders": map[string]any{"get": search("every caller's orders, newest first, filtered (operators)")},
		"/orders/{id}": getOrder("the caller's order: each step's state, and a step's result only where its workflow shows it to clients "+
			"(result.shownToClient); the engine's internals are the operators'", "Order"),
		"/orders/{id}/history": getHistory("the caller's order's history",
			"every change of the order's status and of each record's state, in order; why the order moved (reason, on the order's own entries); "+
				"who acted only when a person did (by: client cancel, client event, operator redrive, operator cancel, operator event); a result only where the workflow shows it"),
		"/ops/orders/{id}": getOrder("any order, with every record as the engine keeps it (operators)", "OperatorOrder"),
		"/ops/orders/{id}/history": getHistory("any order's history (operators)",
			"every transition, in order, with its attempt, its writer, its reason and any result kept"),
		"/orders/{id}/cancel":  action("cancel the caller's order (Pending, Processing or Waiting): 202 Cancelling, or Cancelled at once", nil),
		"/orders/{id}/redrive": action("resume an order in Error where it stopped (operators)", ref("Redrive")),
		"/orders/{id}/events/{name}": event("send an event to the caller's order: the step that waits for it takes the body, " +
			"checked against its schema, as its result, and the order goes on"),
		"/ops/orders/{id}/events/{name}": event("send an event to any order (operators)"),
		"/callbacks":                     callback(false),
		api.ResourceCallbacksIAM:         callback(true),
	}
	schemas := map[string]any{}
	for _, name := range wfs.Names() {
		w, _ := wfs.LatestOf(name)
		schemas["Input."+name] = inputSchema(w)
		paths["/workflows/"+name+"/orders"] = submit("submit an order of workflow "+name+" (a name no workflow has is 400, listing those there are)", "Input."+name)
	}
	schemas["Submission"] = ref("Input." + wfs.Default())
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{"title": "orderly", "version": "1",
			"description": "Submit orders and follow them to a terminal status. In AWS every method is IAM-authorized (SigV4); " +
				"cancel is a client's permission, redrive and /ops/* an operator's."},
		"paths": paths,
		"components": map[string]any{"schemas": merge(schemas, map[string]any{
			"Redrive": map[string]any{"type": "object", "additionalProperties": false, "properties": map[string]any{
				"action": map[string]any{"type": "string", "enum": []string{order.RedriveRetry, order.RedriveCompensate}}}},
			"Accepted": map[string]any{"type": "object", "required": []string{"orderId", "status"}, "properties": map[string]any{
				"orderId": map[string]any{"type": "string"}, "status": ref("Status"),
				"links": map[string]any{"type": "object", "properties": map[string]any{"self": map[string]any{"type": "string"}}}}},
			"Status": map[string]any{"type": "string", "enum": statuses()},
			"Search": map[string]any{"type": "object", "required": []string{"orders"}, "properties": map[string]any{
				"orders": map[string]any{"type": "array", "items": map[string]any{"type": "object",
					"required": []string{"orderId", "status", "workflow", "version", "createdAt"}, "properties": map[string]any{
						"orderId": map[string]any{"type": "string"}, "status": ref("Status"),
						"caller":     map[string]any{"type": "string", "description": "who submitted it: operators' route only"},
						"customerId": map[string]any{"type": "string"}, "workflow": map[string]any{"type": "string"}, "version": map[string]any{"type": "string"},
						"createdAt": map[string]any{"type": "string", "format": "date-time"},
						"endedAt":   map[string]any{"type": "string", "format": "date-time", "description": "when it reached a terminal status"}}}},
				"nextCursor": map[string]any{"type": "string"},
				"links":      map[string]any{"type": "object", "properties": map[string]any{"next": map[string]any{"type": "string"}}}}},
			"Order": orderSchema(map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []string{"step", "state", "updatedAt"}, "properties": merge(clientStep, map[string]any{
					"reference": map[string]any{"type": "string", "description": "the service's id for the work: only where the workflow shows the step's result"},
					"result":    map[string]any{"type": "object", "description": "the service's answer: only where the workflow shows it (result.shownToClient)"}})}}, nil),
			"OperatorOrder": orderSchema(map[string]any{"type": "array", "items": map[string]any{
				"type": "object", "required": []string{"step", "agent", "state", "attempt", "failureCount", "updatedAt"}, "properties": merge(clientStep, map[string]any{
					"agent":        map[string]any{"type": "string", "description": "the service that does the step"},
					"attempt":      map[string]any{"type": "integer", "description": "claims so far: the fencing token"},
					"failureCount": map[string]any{"type": "integer", "description": "timeouts since the last redrive"},
					"completeBy":   map[string]any{"type": "string", "format": "date-time", "description": "the deadline of the attempt or of its claim; for a Waiting step, when its wait ends"},
					"lockedBy":     map[string]any{"type": "string", "description": "the instance that holds the claim"},
					"lastError":    map[string]any{"type": "string", "description": "the record's latest reason"},
					"reference":    map[string]any{"type": "string", "description": "the service's id for the work"},
					"result":       map[string]any{"type": "object", "description": "the service's answer, when the workflow keeps it"}})}},
				map[string]any{"redrive": map[string]any{"type": "array", "description": "an order in Error: what each redrive action does (what), " +
					"or why it is refused and what to do instead (refused); default marks the action taken when none is given",
					"items": map[string]any{"type": "object", "required": []string{"action"}, "properties": map[string]any{
						"action":  map[string]any{"type": "string", "enum": []string{order.RedriveRetry, order.RedriveCompensate}},
						"default": map[string]any{"type": "boolean"}, "what": map[string]any{"type": "string"}, "refused": map[string]any{"type": "string"}}}}}),
			"History": map[string]any{"type": "object", "required": []string{"orderId", "history"}, "properties": map[string]any{
				"orderId": map[string]any{"type": "string"}, "status": ref("Status"), "history": map[string]any{"type": "array", "items": map[string]any{
					"type": "object", "required": []string{"at", "record", "event"}, "properties": map[string]any{
						"at":     map[string]any{"type": "string", "format": "date-time"},
						"record": map[string]any{"type": "integer", "description": "the record's index in steps; -1 is the order itself"},
						"step":   map[string]any{"type": "string"}, "undo": map[string]any{"type": "boolean"},
						"event": map[string]any{"type": "string", "description": "status, cancel requested, state, removed; operators also read heartbeat, deferred, re-announced and the alert events"},
						"from":  map[string]any{"type": "string"}, "to": map[string]any{"type": "string"},
						"attempt": map[string]any{"type": "integer", "description": "operators' route only"},
						"by":      map[string]any{"type": "string", "description": "who made the change; on a client's route only a person's action"},
						"reason":  map[string]any{"type": "string", "description": "why; on a client's route only on the order's own entries, a shown step's reference and a step's start of a wait (waits until …)"},
						"result":  map[string]any{"type": "object", "description": "the answer a step's success kept; on a client's route only where the workflow shows it"}}}}}},
			"Error": map[string]any{"type": "object", "required": []string{"error", "message"}, "properties": map[string]any{
				"error": map[string]any{"type": "string", "enum": api.ErrorCodes()}, "message": map[string]any{"type": "string"},
				"fields": map[string]any{"type": "array"}}},
		})},
	}
}

// clientStep are the fields of a record every view shows.
var clientStep = map[string]any{
	"step": map[string]any{"type": "string"}, "undo": map[string]any{"type": "boolean", "description": "an undo record: the undo of step's work"},
	"state": map[string]any{"type": "string"}, "updatedAt": map[string]any{"type": "string", "format": "date-time"},
	"waiting": map[string]any{"type": "object", "description": "a Waiting step: what it waits for, since when and until when (no service works on it meanwhile)",
		"required": []string{"until"}, "properties": map[string]any{
			"for": map[string]any{"type": "string",
				"description": "what kind of thing the step waits for (" + order.WaitTimer + ": a time; " + order.WaitEvent + ": an event, named in event; " + order.WaitCallback + ": its service's callback; " + order.WaitPoll + ": its service's status, checked on a schedule); absent when the stage no longer has the order's workflow version"},
			"event": map[string]any{"type": "string",
				"description": "for " + order.WaitEvent + ": the event's name, which POST /orders/{id}/events/{name} sends"},
			"since": map[string]any{"type": "string", "format": "date-time", "description": "when the step started to wait"},
			"until": map[string]any{"type": "string", "format": "date-time", "description": "when the wait ends"},
			"nextCheck": map[string]any{"type": "string", "format": "date-time",
				"description": "for " + order.WaitPoll + ": when its service's status is checked next (at the Supervisor's first run after it)"}}},
}

// orderSchema is an order view with the given steps, and the fields more
// of the view has (the operators'); the input's fields stand beside them.
func orderSchema(steps map[string]any, more map[string]any) map[string]any {
	return map[string]any{"type": "object", "required": []string{"orderId", "status", "workflow", "version", "createdAt", "updatedAt", "steps"},
		"properties": merge(map[string]any{
			"orderId": map[string]any{"type": "string"}, "customerId": map[string]any{"type": "string"}, "status": ref("Status"),
			"workflow":  map[string]any{"type": "string", "description": "the workflow the order runs"},
			"version":   map[string]any{"type": "string", "description": "the workflow version the order runs under: the latest when it was submitted"},
			"lastError": map[string]any{"type": "string", "description": "why the order is where it is: to its client in plain words (a refusal quotes the service's own, bounded; no attempt, deadline or service), to operators as the engine stored it"},
			"createdAt": map[string]any{"type": "string", "format": "date-time"}, "updatedAt": map[string]any{"type": "string", "format": "date-time"},
			"steps": steps,
		}, more)}
}

// merge is a and b in one map; b's win.
func merge(a, b map[string]any) map[string]any {
	out := map[string]any{}
	for k, v := range a {
		out[k] = v
	}
	for k, v := range b {
		out[k] = v
	}
	return out
}

func action(summary string, body map[string]any) map[string]any {
	op := map[string]any{"summary": summary,
		"parameters": []any{map[string]any{"name": "id", "in": "path", "required": true, "schema": map[string]any{"type": "string"}}},
		"responses": map[string]any{
			"202": response("accepted: the status the order runs in now", ref("Accepted")),
			"400": errorResponse("invalid_request"), "403": errorResponse("forbidden"), "404": errorResponse("not_found"),
			"405": errorResponse("method_not_allowed"), "409": errorResponse("invalid_state: not allowed in the order's status (the message says why)"),
			"415": errorResponse("unsupported_media_type"), "502": response("the function failed; retry", nil), "503": errorResponse("busy: retry"),
		}}
	if body != nil {
		op["requestBody"] = map[string]any{"required": false, "content": jsonBody(body)}
	}
	return map[string]any{"post": op}
}

// event is an events route: the body is the event's data, any JSON
// object as far as the document goes (each step's schema judges it).
func event(summary string) map[string]any {
	op := action(summary, map[string]any{"type": "object"})
	post := op["post"].(map[string]any)
	post["parameters"] = append(post["parameters"].([]any), map[string]any{"name": "name", "in": "path", "required": true,
		"description": "the event's name, as the workflow's step waits for it", "schema": map[string]any{"type": "string", "pattern": "^[a-z0-9-]{1,63}$"}})
	post["requestBody"].(map[string]any)["required"] = true
	responses := post["responses"].(map[string]any)
	responses["202"] = response("taken: the status the order runs in now (the same event with the same data again answers so too)", ref("Accepted"))
	responses["400"] = errorResponse("invalid_request: data the step's schema refuses, or an event the order's workflow has not (the fields say which)")
	responses["409"] = errorResponse("invalid_state: the order is not waiting for this event (not yet, ended, cancelled), or took it already with other data")
	responses["410"] = errorResponse("too_late: the wait for the event ended")
	responses["413"] = errorResponse("too_large: the data is over what the step keeps (its result.maxBytes)")
	return op
}

// callback is the route services that call back call: not IAM-authorized,
// allowed by the token their call carried in the Authorization header;
// or, iam, the same callback signed by a service inside AWS, the token in
// its own header.
func callback(iam bool) map[string]any {
	outcome := map[string]any{"type": "object", "additionalProperties": false, "required": []any{"outcome"}, "properties": map[string]any{
		"outcome": map[string]any{"enum": []any{order.CallbackOutcomeSucceeded, order.CallbackOutcomeFailed, order.CallbackOutcomeWorking}},
		"result":  map[string]any{"type": "object", "description": `with "succeeded": the answer a synchronous call returns, the reference in "id"`},
		"error":   map[string]any{"type": "string", "maxLength": order.MaxReasonBytes, "description": `with "failed": why, for people`},
	}}
	taken := map[string]any{"type": "object", "properties": map[string]any{
		"orderId": map[string]any{"type": "string"}, "step": map[string]any{"type": "string"}, "attempt": map[string]any{"type": "integer"},
		"status": ref("Status"), "completeBy": map[string]any{"type": "string", "format": "date-time", "description": `with "working": the wait's deadline now`},
	}}
	op := map[string]any{
		"summary": "a service that calls back reports how the work of one attempt of one step went (docs/remote-services.md#services-that-call-back)",
		"parameters": []any{map[string]any{"name": "Authorization", "in": "header", "required": true,
			"description": "Orderly-Callback <token>: the token the call carried, for that attempt alone", "schema": map[string]any{"type": "string"}}},
		"security":    []any{},
		"requestBody": map[string]any{"required": true, "content": jsonBody(outcome)},
		"responses": map[string]any{
			"200": response("taken (a duplicate of the callback taken answers so too)", taken),
			"400": errorResponse("invalid_request: the body, or a success's result (no reference, over the step's bound, against its schema)"),
			"401": errorResponse("invalid_token: no token of this stage (missing, altered, another stage's)"),
			"409": errorResponse("invalid_state: the attempt is over, or the step took another callback"),
			"410": errorResponse("too_late: the wait ended; the call is made again, with a new token"),
			"413": errorResponse("too_large"), "502": response("the function failed; retry", nil),
			"503": errorResponse("unavailable: the stage's callback key cannot be read now, or busy: retry"),
		}}
	if iam {
		op["summary"] = "the same callback, from a service inside AWS: IAM-authorized (SigV4, the CallbackPolicyArn policy), " +
			"the token in " + api.CallbackTokenHeader + " (docs/remote-services.md#calling-back-signed-from-inside-aws)"
		op["parameters"] = []any{map[string]any{"name": api.CallbackTokenHeader, "in": "header", "required": true,
			"description": "the token the call carried, for that attempt alone, without a scheme (Authorization is the SigV4 signature)",
			"schema":      map[string]any{"type": "string"}}}
		delete(op, "security") // the document's default: IAM
		op["responses"].(map[string]any)["403"] = errorResponse("forbidden: no caller identity (sign the request with SigV4)")
	}
	return map[string]any{"post": op}
}

func statuses() []string {
	var out []string
	for _, s := range order.Statuses {
		out = append(out, string(s))
	}
	return out
}

// JSON is the document, indented.
func JSON(wfs order.Versions) []byte {
	b, err := json.MarshalIndent(Document(wfs), "", "  ")
	if err != nil {
		panic(err) // maps of strings, numbers and slices always marshal
	}
	return append(b, '\n')
}
