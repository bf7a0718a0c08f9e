package remote

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"orderly/internal/order"
)

// Class is how the engine takes a service's answer: the contract's word
// for each status (the "x-orderly-class" of every response in Contract).
type Class string

// Classes. ClassContract and ClassNotInBuild are the client's own, not a
// status's.
const (
	ClassSuccess       Class = "success"
	ClassTransient     Class = "transient"
	ClassPermanent     Class = "permanent"
	ClassConfiguration Class = "configuration"
	ClassContract      Class = "contract"
	ClassNotInBuild    Class = "not-in-build"
	// ClassAccepted is a 202 to the call of a step whose service calls
	// back or is polled, or to a check of a polled step's status URL:
	// the step waits for its callback, or its next check.
	ClassAccepted Class = "accepted"
)

// StatusClass is the class of an answer with status, as Call takes it (a
// 2xx is a success only with the JSON object the contract asks for).
func StatusClass(status int) Class {
	switch {
	case status >= 200 && status < 300:
		return ClassSuccess
	case status >= 300 && status < 400:
		return ClassConfiguration
	}
	return ClassOf(classify(status))
}

// ClassOf is the class of an error Call returned (nil is a success).
func ClassOf(err error) Class {
	switch {
	case err == nil:
		return ClassSuccess
	case errors.Is(err, order.ErrContract):
		return ClassContract
	case errors.Is(err, order.ErrNotInBuild):
		return ClassNotInBuild
	case errors.Is(err, order.ErrConfiguration):
		return ClassConfiguration
	case errors.Is(err, order.ErrPermanent):
		return ClassPermanent
	}
	return ClassTransient
}

// ParseRetryAfter reads a Retry-After header as Call does: delay-seconds
// or an HTTP date (relative to the answer's Date). False when there is
// none, or it is neither.
func ParseRetryAfter(h http.Header) (time.Duration, bool) { return parseRetryAfter(h) }

// MaxResponseBytes is the most of an answer Call reads.
const MaxResponseBytes = maxResponseBytes

const contractDescription = `What every remote service a workflow calls must do: the wire between an orderly agent and
the service, for a step's call and its undo call. A workflow's definition (workflows/NAME/vVERSION.json) names each
step's method and path (steps[].call, steps[].undo) under the service's base URL, which the stage sets;
components.pathItems.StepCall and StepUndo are those two calls for any step, and
'orderly conformance --workflow FILE --openapi' prints a workflow's own document, with its paths, its input and its
steps' results. 'orderly conformance' checks a running service against the rules below.

Every attempt of a step sends the same Idempotency-Key, and so does the step's undo. The service does the work once
per key: a repeated call (a retry after a timeout, a call still in flight) answers the same id and does nothing new;
two calls with one key at the same time do the work once (the second may answer 409 and is retried).

The undo call takes the work's own key, reverses the work done under it, and answers 2xx; when no work was done
under the key it answers 2xx too (nothing to undo), and either way the key is then blocked: a later call to do the
work with it (a retry still on its way) is refused with a 4xx that is not a configuration status, and does nothing.
A repeated undo answers 2xx. An undo may come without its own step's result (results.<step>), even where the
definition has it carry it: when the step's call timed out after the service did the work, the engine has no answer
to send. The service must then find the work by its key alone.

Answers, by class (x-orderly-class on each response): success: 2xx with a JSON object holding a non-empty string
"id", the service's reference for the work; the whole object is the step's result (a 2xx without an id is taken as
transient: a retry replays it). When a later call carries the step's result the object is kept with the order and
must be at most the step's result.maxBytes (default 4096) and match its result.schema, or the order goes to Error
for an operator (the work was done; its answer is unusable). transient: 408, 409, 429 and every 5xx but 501, or no
answer in time: retried with backoff within the step's window, waiting at least Retry-After when sent
(delay-seconds or an HTTP date). permanent: 501 and every 4xx not listed as configuration: the service refuses the
work (a declined card); the step fails and the steps before it are undone. configuration: every 3xx (never
followed), 401, 403, 404, 405, 407, 415: how the service is reached is wrong (URL, credential, network rule): the
same for every order, so orders wait (the agent holds its requests and alarms) instead of failing; but a 404
that only one order's key gets while the same call succeeds for other orders fails that order's step (an unknown
SKU): answer an unknown entity with 422, which says so plainly. Errors carry {"error": "why"}.

Requests carry Content-Type: application/json, Accept: application/json, the Idempotency-Key and the stage's
authentication for the service (a header kept in AWS Secrets Manager, or SigV4), and a JSON object: "orderId";
when the step's request carries "order", every top-level field of the order's input; when it carries earlier steps,
"results" with each one's answer, by step name.

A step whose service calls back (steps[].call.callback; components.pathItems.StepCallCallingBack) sends "callback"
too: {"url", "token", "expiresAt"}. The service answers 202 Accepted (x-orderly-class accepted; the body is ignored)
and later calls POST url with the header Authorization: Orderly-Callback <token> and {"outcome": "succeeded",
"result": {"id": ..., ...}} (the answer a synchronous call returns), {"outcome": "failed", "error": "why"} or
{"outcome": "working"}; or it answers 200 or 201 with the work done at once, as any call. The token is a bearer secret
for this one attempt, valid until expiresAt: never log it. A call made again after the wait ended has the same
Idempotency-Key and a new token.

A step whose service is polled (steps[].call.poll; components.pathItems.StepCallPolled and StepStatus, the
Asynchronous Request-Reply pattern) sends the header Prefer: respond-async (RFC 7240). The service answers 202
Accepted (x-orderly-class accepted; the body is ignored) with Location, the status URL, and optionally Retry-After;
or 200 or 201 with the work done at once, as any call. The status URL, resolved against the call's URL, must be
under the service's base URL (the same scheme and host, a path under the base's), with no user or fragment, at most
2048 bytes: the checks carry the service's credential, so they go nowhere else. The engine checks it on the
Supervisor's schedule, after Retry-After when given (else the step's poll.every), with GET, the service's
credential, Accept: application/json and the step's Idempotency-Key: 202 means the work goes on (with Location, a
new status URL), 200 or 201 with the answer means it is done, 302 or 303 means it is done and the answer is at
Location (under the base URL too, read with one more GET), a 4xx means it failed (classified as a call's: 422 is
permanent), 408, 429 and 5xx are transient (checked again later). A wait that passes the step's poll.timeout is a
timeout: the call is made again with the same Idempotency-Key, and must answer the same job (202 with its status
URL) or its answer, never do the work again.`

// Contract returns the remote-service contract as an OpenAPI 3.1
// document, for any workflow: its calls are components.pathItems
// (StepCall, StepUndo), placed at a workflow's own paths by ContractFor.
// contract.json in this directory is this document.
func Contract() map[string]any {
	return map[string]any{
		"openapi": "3.1.0",
		"info": map[string]any{
			"title":       "orderly remote-service contract",
			"version":     "1",
			"description": contractDescription,
		},
		"components": map[string]any{
			"schemas": map[string]any{
				"Request": map[string]any{
					"type":        "object",
					"description": "orderId; the order's input fields when the step carries \"order\"; results of the earlier steps it carries",
					"required":    []any{order.BodyOrderID},
					"properties": map[string]any{
						order.BodyOrderID: orderIDSchema(),
						order.BodyResults: map[string]any{"type": "object", "description": "earlier steps' answers, by step name",
							"additionalProperties": ref("Answer")},
						BodyCallback: ref("Callback"),
					},
				},
				"Answer":   answerSchema(),
				"Error":    errorSchema(),
				"Callback": callbackSchema(),
			},
			"pathItems": map[string]any{
				"StepCall": map[string]any{"post": operation("do a step's work",
					"At the method and path of the step's call (steps[].call). Does the work once per Idempotency-Key.",
					ref("Request"), response("the work is done (or was, under this key): its reference and the step's result", ref("Answer")))},
				"StepCallPolled": map[string]any{"post": polled(operation("do a step's work, polled",
					"At the method and path of the call of a step whose service is polled (steps[].call.poll). Does the work once per "+
						"Idempotency-Key; answers 202 with Location, the status URL, or answers 2xx with the work done.",
					ref("Request"), response("the work is done (or was, under this key): its reference and the step's result", ref("Answer"))))},
				"StepStatus": map[string]any{"get": statusCheck(ref("Answer"))},
				"StepCallCallingBack": map[string]any{"post": callingBack(operation("do a step's work, calling back",
					"At the method and path of the call of a step whose service calls back (steps[].call.callback). Does the work once per "+
						"Idempotency-Key; answers 202 and calls back at callback.url with callback.token, or answers 2xx with the work done.",
					map[string]any{"allOf": []any{ref("Request"), map[string]any{"required": []any{BodyCallback}}}},
					response("the work is done (or was, under this key): its reference and the step's result", ref("Answer"))))},
				"StepUndo": map[string]any{"post": operation("undo a step's work",
					"At the method and path of the step's undo (steps[].undo), with the work's Idempotency-Key. Reverses the work done under the key, "+
						"or does nothing when there was none; then blocks the key. It may come without the step's own result (results.<step>): "+
						"after a call that timed out once the work was done, the engine has none, so the work must be found by its key alone.",
					ref("Request"), response("undone, or nothing to undo: the key is blocked", ref("Answer")))},
			},
		},
	}
}

// ContractFor returns the contract of workflow w's calls: each step's
// call and undo call at its own method and path, its request body from
// what it carries (the input schema's properties, the carried steps'
// result schemas) and its success from its result schema. Two calls at
// one method and path cannot be told apart: that is an error.
func ContractFor(w order.Workflow) (map[string]any, error) {
	doc := Contract()
	doc["info"].(map[string]any)["title"] = fmt.Sprintf("orderly remote-service contract: workflow %s version %s", w.Name, w.Version)
	components := doc["components"].(map[string]any)
	schemas := components["schemas"].(map[string]any)
	delete(components, "pathItems")
	// A status URL's path is the service's own: a polled step's checks
	// are a path item of their own, at no path.
	statuses := map[string]any{}
	input := schemaOf(w.Input)
	if input != nil {
		schemas["Input"] = rebase(input, "#/components/schemas/Input")
	}
	for _, d := range w.Steps {
		if r := schemaOf(d.ResultSchema); r != nil {
			schemas[resultName(d.Name)] = rebase(r, "#/components/schemas/"+resultName(d.Name))
		}
	}
	paths := map[string]any{}
	seen := map[string]string{}
	add := func(call order.Endpoint, what string, op map[string]any) error {
		method := strings.ToLower(call.Method)
		at := call.Method + " " + call.Path
		if other, dup := seen[at]; dup {
			return fmt.Errorf("workflow %s version %s: %s and %s both call %s: the contract cannot tell them apart", w.Name, w.Version, other, what, at)
		}
		seen[at] = what
		item, _ := paths[call.Path].(map[string]any)
		if item == nil {
			item = map[string]any{}
			paths[call.Path] = item
		}
		item[method] = op
		return nil
	}
	for _, d := range w.Steps {
		if d.Waits() {
			continue // no service is called: nothing of it is in the contract
		}
		success := ref("Answer")
		if _, ok := schemas[resultName(d.Name)]; ok {
			success = map[string]any{"allOf": []any{ref("Answer"), ref(resultName(d.Name))}}
		}
		kept := "not kept (no call carries it)"
		if w.Keeps(d.Name) {
			kept = fmt.Sprintf("kept with the order: at most %d bytes (result.maxBytes)", d.ResultMaxBytes)
		}
		op := operation("step "+d.Name+" (service "+d.Agent+")", "Does the work of step "+d.Name+" once per Idempotency-Key.",
			requestSchema(w, d, input, false), response("the work is done (or was, under this key): its reference and the step's result, "+kept, success))
		if d.Poll != nil {
			op = polled(op)
			op["description"] = "Does the work of step " + d.Name + " once per Idempotency-Key; answers 202 with Location, the status URL, " +
				"or answers 2xx with the work done."
			status := statusCheck(success)
			status["operationId"] = "status-" + d.Name
			status["description"] = "The status URL of step " + d.Name + "'s call: " + status["description"].(string)
			statuses[d.Name+".Status"] = map[string]any{"get": status}
		}
		if d.Callback != nil {
			op = callingBack(op)
			op["description"] = "Does the work of step " + d.Name + " once per Idempotency-Key; answers 202 and calls back at callback.url " +
				"with callback.token, or answers 2xx with the work done."
		}
		op["operationId"] = d.Name
		if err := add(d.Call, "step "+d.Name, op); err != nil {
			return nil, err
		}
		if d.UndoCall.Path == "" {
			continue
		}
		undo := operation("undo step "+d.Name+": "+d.Undo, "Reverses the work done under the Idempotency-Key, or does nothing when there was none; then blocks the key. "+
			"It may come without the step's own result: after a call that timed out once the work was done, the engine has none, so the work must be found by its key alone.",
			requestSchema(w, d, input, true), response("undone, or nothing to undo: the key is blocked", ref("Answer")))
		undo["operationId"] = "undo-" + d.Name
		if err := add(d.UndoCall, "the undo of step "+d.Name, undo); err != nil {
			return nil, err
		}
	}
	doc["paths"] = paths
	if len(statuses) > 0 {
		components["pathItems"] = statuses
	}
	return doc, nil
}

// ContractJSON is Contract, indented, as contract.json holds it.
func ContractJSON() []byte { return indent(Contract()) }

// ContractJSONFor is ContractFor, indented.
func ContractJSONFor(w order.Workflow) ([]byte, error) {
	doc, err := ContractFor(w)
	if err != nil {
		return nil, err
	}
	return indent(doc), nil
}

func indent(doc map[string]any) []byte {
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		panic(err) // maps of strings, numbers, slices and decoded JSON always marshal
	}
	return append(b, '\n')
}

func resultName(step string) string { return step + ".Result" }

func ref(name string) map[string]any { return map[string]any{"$ref": "#/components/schemas/" + name} }

func orderIDSchema() map[string]any {
	return map[string]any{"type": "string", "minLength": 1, "description": "the order's id, the same for all its calls"}
}

func answerSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "a success's answer: the service's reference for the work in \"id\"; other fields are the step's result too",
		"required":    []any{"id"},
		"properties": map[string]any{"id": map[string]any{"type": "string", "minLength": 1, "maxLength": order.MaxReferenceChars,
			"description": fmt.Sprintf("the step's reference: at most %d printable characters (no control, format or separator character but the space); any other id is a contract fault", order.MaxReferenceChars)}},
	}
}

// callbackSchema is the request's "callback": where and with what the
// service calls back.
func callbackSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "where and how the service calls back (a step whose service calls back): POST url with Authorization: Orderly-Callback <token>",
		"required":    []any{"url", "token", "expiresAt"},
		"properties": map[string]any{
			"url": map[string]any{"type": "string", "format": "uri", "description": "the stage's POST /callbacks"},
			"token": map[string]any{"type": "string", "minLength": 1,
				"description": "a bearer secret for this one attempt of this step: keep it as a password, never log it"},
			"expiresAt": map[string]any{"type": "string", "format": "date-time",
				"description": "when the token expires: after the longest the step waits for its callback"},
		},
	}
}

// callingBack is op, the call of a step whose service calls back, with
// its 202: the call accepted.
func callingBack(op map[string]any) map[string]any {
	op["responses"].(map[string]any)["202"] = map[string]any{
		"description":     "accepted: the service calls back at callback.url with callback.token (succeeded, failed or working); the body is ignored",
		"x-orderly-class": string(ClassAccepted),
	}
	return op
}

// polled is op, the call of a step whose service is polled, with its
// Prefer header and its 202: the call accepted, its status URL in
// Location.
func polled(op map[string]any) map[string]any {
	op["parameters"] = append(op["parameters"].([]any), map[string]any{
		// Optional, as every preference is (RFC 7240): a call without it
		// is answered as any call, not refused.
		"name": "Prefer", "in": "header", "required": false,
		"description": "RFC 7240, sent with every call of a polled step: the call may be answered 202 with a status URL (Location), checked later",
		"schema":      map[string]any{"type": "string", "enum": []any{PreferAsync}},
	})
	op["responses"].(map[string]any)["202"] = map[string]any{
		"description":     "accepted: the work goes on; Location is its status URL, checked after Retry-After; the body is ignored",
		"x-orderly-class": string(ClassAccepted),
		"headers": map[string]any{
			"Location":    statusLocation(true, "the status URL: resolved against the call's URL, under the service's base URL"),
			"Retry-After": retryAfterCheck(),
		},
	}
	return op
}

// statusLocation is a Location header naming a URL under the service's
// base URL.
func statusLocation(required bool, description string) map[string]any {
	return map[string]any{"required": required, "description": description + "; no user or fragment",
		"schema": map[string]any{"type": "string", "format": "uri-reference", "minLength": 1, "maxLength": order.MaxStatusURLBytes}}
}

// retryAfterCheck is the Retry-After of a 202 of a polled step: when to
// check next.
func retryAfterCheck() map[string]any {
	h := retryAfter()
	h["description"] = "when to check the status URL next: delay-seconds or an HTTP date; without it, after the step's poll.every " +
		"(at least a second, and never after the wait's end)"
	return h
}

// statusCheck is the GET of a polled step's status URL, whose done
// answer is success.
func statusCheck(success map[string]any) map[string]any {
	op := operation("check a polled step's work",
		"At the status URL a 202 gave (Location): the engine GETs it on the Supervisor's schedule with the service's credential, "+
			"Accept: application/json and the step's Idempotency-Key, until it says the work is done or failed, or the step's "+
			"poll.timeout passes (then the call is made again with the same key).", nil,
		response("done: the step's answer, as a call's 2xx", success))
	delete(op, "requestBody")
	responses := op["responses"].(map[string]any)
	responses["202"] = map[string]any{
		"description":     "the work goes on: checked again after Retry-After; a Location names a new status URL for the next checks",
		"x-orderly-class": string(ClassAccepted),
		"headers": map[string]any{
			"Location":    statusLocation(false, "a new status URL: resolved against this one's, under the service's base URL"),
			"Retry-After": retryAfterCheck(),
		},
	}
	for _, code := range []string{"302", "303"} {
		responses[code] = map[string]any{
			"description":     "done: the answer is at Location (under the service's base URL), read with one more GET, which answers as a 200 here",
			"x-orderly-class": string(ClassSuccess),
			"headers":         map[string]any{"Location": statusLocation(true, "where the answer is")},
		}
	}
	responses["4XX"] = failure(ClassPermanent, "the work failed (a declined card): permanent; the step fails and the steps before it are undone", true)
	return op
}

func errorSchema() map[string]any {
	return map[string]any{
		"type":        "object",
		"description": "why the call failed, for operators (a refusal's reason reaches the order's client)",
		"required":    []any{"error"},
		"properties":  map[string]any{"error": map[string]any{"type": "string"}},
	}
}

// requestSchema is the body of step d's call (or undo): what the engine
// sends (order.StepRequest.Body). A forward call carries every result
// it names (those steps are done); an undo only those the order has.
func requestSchema(w order.Workflow, d order.StepDef, input map[string]any, undo bool) map[string]any {
	props := map[string]any{order.BodyOrderID: orderIDSchema()}
	required := []any{order.BodyOrderID}
	additional := false
	var steps []string
	for _, item := range d.Carried(undo) {
		if item != order.CarriesOrder {
			steps = append(steps, item)
			continue
		}
		inProps, _ := input["properties"].(map[string]any)
		for name := range inProps {
			props[name] = map[string]any{"$ref": "#/components/schemas/Input/properties/" + escapePointer(name)}
		}
		if req, ok := input["required"].([]any); ok {
			required = append(required, req...)
		}
		// Fields the input schema does not list may be in the input, and
		// so in the body, unless it forbids them.
		if ap, ok := input["additionalProperties"].(bool); inProps == nil || !ok || ap {
			additional = true
		}
	}
	if len(steps) > 0 {
		rprops := map[string]any{}
		for _, s := range steps {
			rprops[s] = ref("Answer")
			if d, ok := w.Step(s); ok && len(d.ResultSchema) > 0 {
				rprops[s] = map[string]any{"allOf": []any{ref("Answer"), ref(resultName(s))}}
			}
		}
		results := map[string]any{"type": "object", "properties": rprops, "additionalProperties": false,
			"description": "the carried steps' answers, by step name"}
		if !undo {
			results["required"] = toAny(steps)
			required = append(required, order.BodyResults)
		} else {
			results["description"] = "the carried steps' answers that the order has (a step not done has none, nor one whose call timed out after its work was done: " +
				"its undo must find the work by its key)"
		}
		props[order.BodyResults] = results
	}
	if d.Callback != nil && !undo {
		props[BodyCallback] = ref("Callback")
		required = append(required, BodyCallback)
	}
	return map[string]any{"type": "object", "required": dedupe(required), "properties": props, "additionalProperties": additional}
}

func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

func dedupe(vs []any) []any {
	var out []any
	for _, v := range vs {
		if !slices.Contains(out, v) {
			out = append(out, v)
		}
	}
	return out
}

func escapePointer(s string) string { return strings.NewReplacer("~", "~0", "/", "~1").Replace(s) }

// schemaOf decodes a definition's schema; nil when there is none.
func schemaOf(raw json.RawMessage) map[string]any {
	var s map[string]any
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return nil
	}
	delete(s, "$schema") // OpenAPI 3.1 reads draft 2020-12 itself
	return s
}

// rebase moves a schema's own references ("#/$defs/line") under base, the
// place the schema takes in the document.
func rebase(v any, base string) map[string]any {
	var walk func(v any) any
	walk = func(v any) any {
		switch v := v.(type) {
		case map[string]any:
			out := make(map[string]any, len(v))
			for k, e := range v {
				if s, ok := e.(string); ok && k == "$ref" && strings.HasPrefix(s, "#") {
					out[k] = base + strings.TrimPrefix(s, "#")
					continue
				}
				out[k] = walk(e)
			}
			return out
		case []any:
			out := make([]any, len(v))
			for i, e := range v {
				out[i] = walk(e)
			}
			return out
		}
		return v
	}
	return walk(v).(map[string]any)
}

// idempotencyKey is the header every call carries.
func idempotencyKey() map[string]any {
	return map[string]any{
		"name": "Idempotency-Key", "in": "header", "required": true,
		"description": "the same for every attempt of a step and for its undo: the service does the work once per key " +
			"(the engine's keys are 32 base32 characters)",
		"schema": map[string]any{"type": "string", "minLength": 1, "maxLength": order.MaxIdempotencyKeyLen, "pattern": "^[!-~]+$"},
	}
}

func response(description string, schema map[string]any) map[string]any {
	r := map[string]any{"description": description, "x-orderly-class": string(ClassSuccess)}
	if schema != nil {
		r["content"] = map[string]any{"application/json": map[string]any{"schema": schema}}
	}
	return r
}

// retryAfter is the header a transient answer may carry: delay-seconds
// or an HTTP date (IMF-fixdate).
func retryAfter() map[string]any {
	return map[string]any{
		"description": "when to try again: delay-seconds or an HTTP date; the agent waits at least this long, within the step's window",
		"schema": map[string]any{"type": "string",
			"pattern": `^([0-9]+|(Mon|Tue|Wed|Thu|Fri|Sat|Sun), [0-9]{2} (Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec) [0-9]{4} [0-9]{2}:[0-9]{2}:[0-9]{2} GMT)$`},
	}
}

// failure is a failed answer of class c.
func failure(c Class, description string, body bool) map[string]any {
	r := map[string]any{"description": description, "x-orderly-class": string(c)}
	if body {
		r["content"] = map[string]any{"application/json": map[string]any{"schema": ref("Error")}}
	}
	if c == ClassTransient {
		r["headers"] = map[string]any{"Retry-After": retryAfter()}
	}
	return r
}

// operation is a call with its body and its answers, by class: every
// status the client classifies (classify) is here, which a test holds.
func operation(summary, description string, body, success map[string]any) map[string]any {
	config := func(why string) map[string]any {
		return failure(ClassConfiguration, why+": a configuration fault; orders wait (held, alarmed), never failed for it", true)
	}
	// A 404 may be one order's own (the agent's circuit breaker tells:
	// order.UnknownEntity); a 403 never is (an expired credential).
	ownOrConfig := func(why string) map[string]any {
		return failure(ClassConfiguration, why+": a configuration fault; orders wait (held, alarmed), but when only one order's key gets it "+
			"while the same call succeeds for other orders, that order's step fails with the service's words (answer 422 for an unknown entity)", true)
	}
	transient := func(why string) map[string]any {
		return failure(ClassTransient, why+": transient; retried with backoff within the step's window", true)
	}
	return map[string]any{
		"summary":     summary,
		"description": description,
		"parameters":  []any{idempotencyKey()},
		"requestBody": map[string]any{"required": true, "content": map[string]any{"application/json": map[string]any{"schema": body}}},
		"responses": map[string]any{
			"2XX": success,
			"3XX": failure(ClassConfiguration, "a redirect: never followed (it would send the key elsewhere); a configuration fault", false),
			"401": config("the credential is missing or wrong"),
			"403": config("forbidden (a WAF or network rule, a permission, an expired or not yet rotated credential)"),
			"404": ownOrConfig("no such path (a wrong base URL or path), or no such entity"),
			"405": config("the method is not allowed: a wrong call in the definition"),
			"407": config("the proxy wants a credential"),
			"415": config("the service does not take JSON"),
			"408": transient("the request timed out"),
			"409": transient("a call with this key is still in flight"),
			"429": transient("too many requests"),
			"5XX": transient("the service failed or is unavailable"),
			"501": failure(ClassPermanent, "not implemented: permanent; no retry fixes it", true),
			"4XX": failure(ClassPermanent, "the service refuses the work (a declined card; a call for a blocked key; a malformed body): "+
				"permanent; the step fails and the steps before it are undone", true),
		},
	}
}
