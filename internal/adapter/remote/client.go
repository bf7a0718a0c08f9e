// Package remote is the HTTP client agents use to ask the remote services
// to do a step's work (or undo it) with the call the step's definition
// names, and it classifies
// every failure as transient, permanent or a configuration fault for the
// agent's retry loop.
package remote

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/callbacktoken"
	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/tracing"
)

const (
	// maxResponseBytes bounds what is read of a response, so a misbehaving
	// service cannot exhaust an agent's memory.
	maxResponseBytes = 64 << 10
	// maxMessageBytes bounds every message taken from a service's answer
	// (its "error" field, or its text) before it reaches an error, and so a
	// log, a reason or an item: a long answer cannot flood them. It is
	// scrubbed of the credential first (see Scrubber), then cut
	// (order.Cut).
	maxMessageBytes = 512
	// maxRetryAfterSeconds keeps a huge Retry-After from overflowing.
	maxRetryAfterSeconds = math.MaxInt64 / int64(time.Second)
)

// Client calls the remote services, each at its own base URL with its own
// authentication. It never retries:
// the agent owns retries and backoff, and the step's idempotency key makes
// them safe. A Client is safe for concurrent use.
type Client struct {
	// services are the endpoints of the services NewClientFor was given;
	// anyService, of every service under NewClient's one base URL.
	services   map[string]*endpoint
	anyService *endpoint
	// workflows name each step's call and undo call.
	workflows order.Versions
	// schemas are the steps' compiled result schemas.
	schemas map[stepRef]definition.Schema
	// callbacks, when set, is what the calls of steps that call back
	// carry.
	callbacks *Callbacks
}

// Callbacks is what the call of a step whose service calls back
// (order.StepDef.Callback) carries besides its body: where to call back
// and a token for the attempt (see CallingBack).
type Callbacks struct {
	// URL is the stage API's POST /callbacks.
	URL string
	// Tokens seals the tokens with the stage's callback key.
	Tokens callbacktoken.Source
	// Now is the clock a token's expiry is counted from.
	Now func() time.Time
}

// CallingBack returns a copy of c whose calls of steps that call back
// carry cb: the request's body gets a "callback" object with cb's URL, a
// token sealed for the attempt and when it expires, and a 202 answer is
// the call accepted. A client without it refuses such a call as a
// configuration fault.
func (c *Client) CallingBack(cb Callbacks) *Client {
	if cb.Now == nil {
		cb.Now = time.Now
	}
	out := *c
	out.callbacks = &cb
	return &out
}

// PreferAsync is the Prefer header (RFC 7240) of the call of a step
// whose service is polled: it may answer 202 with a status URL.
const PreferAsync = "respond-async"

// BodyCallback is the request body's field (order.BodyCallback) that tells a service that
// calls back where and with what (see callbackField).
const BodyCallback = order.BodyCallback

// stepRef names one step of one workflow version.
type stepRef struct{ workflow, version, step string }

// NewClient returns a client that calls every service under baseURL
// (e.g. "http://localhost:8081") without a credential: the simulator, and
// tests. Agents call their services with NewClientFor.
func NewClient(baseURL string, httpClient *http.Client, workflows order.Versions) *Client {
	return &Client{anyService: newEndpoint(Service{URL: baseURL}, httpClient), workflows: workflows, schemas: resultSchemas(workflows)}
}

// NewClientFor returns a client for services (by name, as steps name
// them; see ServicesFrom), calling through a copy of httpClient that never
// follows a redirect: following one would send the step's Idempotency-Key
// (and credential) to another host, as a GET after a 302 or 303, and take
// that host's 2xx for the work done. A redirect is a configuration fault
// instead (see order.ErrConfiguration). A nil httpClient means one like
// http.DefaultClient; calls are then bounded only by their context. A
// step's call and undo call (method and path) are those its version of
// workflows defines. A call to a service not in services is a
// configuration fault.
func NewClientFor(services map[string]Service, httpClient *http.Client, workflows order.Versions) *Client {
	c := &Client{services: make(map[string]*endpoint, len(services)), workflows: workflows}
	for name, svc := range services {
		c.services[name] = newEndpoint(svc, httpClient)
	}
	c.schemas = resultSchemas(workflows)
	return c
}

// resultSchemas compiles every step's result schema. The definitions were
// checked when loaded, so a schema that does not compile is left out
// (and its answers unchecked) rather than stopping the agent.
func resultSchemas(v order.Versions) map[stepRef]definition.Schema {
	out := map[stepRef]definition.Schema{}
	for _, w := range v.Workflows() {
		for _, d := range w.Steps {
			if len(d.ResultSchema) == 0 {
				continue
			}
			if s, err := definition.CompileSchema(d.ResultSchema); err == nil {
				out[stepRef{w.Name, w.Version, d.Name}] = s
			}
		}
	}
	return out
}

// Call asks service (the step's agent: "payment") to do the work of req,
// or undo it, with the call req's step defines, and returns the service's
// reference for it (a reservation, charge or shipment id). The call of a
// step whose service calls back carries a callback (see CallingBack); its
// service may accept it (202), and the answer then has no reference: the
// step waits for the callback. It may also answer 200 or 201 with the
// work done, as any call. The undo call
// takes the step's own Idempotency-Key, reverses the work done under that
// key, and answers success when there was nothing to undo. A call repeated with the same req.IdempotencyKey after a
// success returns the same reference without new work being done.
//
// Errors wrap exactly one of order.ErrTransient, order.ErrPermanent, order.ErrConfiguration
// and order.ErrNotInBuild; a call ended by ctx also wraps ctx.Err(). See
// order.RetryAfter for the service's hint on when to try again, and
// order.ConfigurationStatus for the status of a configuration fault.
func (c *Client) Call(ctx context.Context, service string, req order.StepRequest) (order.Answer, error) {
	// The call's span is the parent the service's own spans join, through
	// the traceparent header.
	ctx, span := tracing.Start(ctx, "remote.call", tracing.OfRequest(req), trace.WithSpanKind(trace.SpanKindClient),
		trace.WithAttributes(attribute.String("orderly.service", service), attribute.Bool("orderly.poll", req.Poll != "")))
	answer, err := c.call(tracing.Carrying(ctx, req.OrderID), service, req)
	tracing.End(span, err)
	return answer, err
}

func (c *Client) call(ctx context.Context, service string, req order.StepRequest) (order.Answer, error) {
	wf, known := c.workflows.Get(req.Workflow, req.Version)
	if !known {
		return order.Answer{}, fmt.Errorf("remote service %q: workflow version %s: %w", service, order.Ref(req.Workflow, req.Version), order.ErrNotInBuild)
	}
	def, call, err := callOf(wf, service, req)
	if err != nil {
		return order.Answer{}, fmt.Errorf("remote service %q: %w: %w", service, err, order.ErrPermanent)
	}
	op := service + ": " + call.Method + " " + call.Path
	ep, err := c.endpointOf(service)
	if err != nil {
		return order.Answer{}, fmt.Errorf("%s: %w", op, err)
	}
	if req.IdempotencyKey == "" {
		// Without a key a retry could repeat the work, so refuse to call.
		return order.Answer{}, fmt.Errorf("%s: order %s: no idempotency key: %w", op, req.OrderID, order.ErrPermanent)
	}
	if req.Poll != "" {
		if def.Poll == nil || req.Undo {
			return order.Answer{}, fmt.Errorf("%s: step %s is not polled, and the request asks for a check of its status: %w", op, def.Name, order.ErrPermanent)
		}
		return c.check(ctx, service, ep, wf, def, req)
	}
	body, err := req.Body(def)
	if err != nil {
		return order.Answer{}, fmt.Errorf("%s: %w: %w", op, err, order.ErrPermanent)
	}
	callsBack := def.Callback != nil && !req.Undo
	// echoed scrubs the callback's token out of what the service
	// answers: echoed into an error or a result, it would reach logs,
	// the order's history and its client.
	var echoed *Scrubber
	if callsBack {
		if body, echoed, err = c.withCallback(ctx, wf, def, req, body); err != nil {
			return order.Answer{}, fmt.Errorf("%s: %w", op, err)
		}
	}
	httpReq, err := http.NewRequestWithContext(ctx, call.Method, ep.base+call.Path, bytes.NewReader(body))
	if err != nil {
		return order.Answer{}, fmt.Errorf("%s: %w: %w", op, err, order.ErrPermanent)
	}
	httpReq.Header.Set("Content-Type", "application/json")
	httpReq.Header.Set("Accept", "application/json")
	httpReq.Header.Set("Idempotency-Key", req.IdempotencyKey)
	tracing.Inject(ctx, httpReq.Header)
	if def.Poll != nil && !req.Undo {
		// RFC 7240: the call may be answered 202 with a status URL.
		httpReq.Header.Set("Prefer", PreferAsync)
	}

	// The endpoint's transport adds the service's credential.
	resp, err := ep.http.Do(httpReq)
	if err != nil {
		return order.Answer{}, transportError(ctx, op, quoted(err, echoed.Scrub(err.Error())))
	}
	defer resp.Body.Close()
	tracing.StatusCode(ctx, resp.StatusCode)
	// One byte more than the bound tells an answer over it from one at it.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, maxResponseBytes+1))
	if err != nil {
		return order.Answer{}, transportError(ctx, op, fmt.Errorf("read response: %w", quoted(err, echoed.Scrub(err.Error()))))
	}
	over := len(raw) > maxResponseBytes
	raw = echoed.scrubJSON(echoed.scrubBytes(raw[:min(len(raw), maxResponseBytes)]))

	if callsBack && resp.StatusCode == http.StatusAccepted {
		// Accepted: the service calls back. Its body says nothing the
		// engine needs.
		return order.Answer{Accepted: true}, nil
	}
	if def.Poll != nil && !req.Undo && resp.StatusCode == http.StatusAccepted {
		// Accepted: the step waits, and its status URL is checked.
		return accepted(op, ep, def, resp)
	}
	return c.respond(op, service, wf, def, req, resp, raw, over)
}

// respond reads a service's answer to a call or a check that is not
// "accepted": a success's body (see answer), or a fault, classified.
func (c *Client) respond(op, service string, wf order.Workflow, def order.StepDef, req order.StepRequest, resp *http.Response, raw []byte, over bool) (order.Answer, error) {
	if resp.StatusCode >= 200 && resp.StatusCode < 300 {
		if over {
			// The work was done, and no retry makes the answer shorter.
			return order.Answer{}, fmt.Errorf("%s: status %d: %w: %w", op, resp.StatusCode, &order.ContractError{Service: def.Agent, Step: def.Name,
				Problem: fmt.Sprintf("is over %d KiB, the most an agent reads", maxResponseBytes>>10)}, order.ErrContract)
		}
		return c.answer(op, wf, def, req, resp.StatusCode, raw)
	}

	// Only a 404 may be one order's own (an entity the service does not
	// know): a 403 is how an expired or not yet rotated credential, or a
	// bad signature, is answered, which every order meets; a 410 is no
	// configuration fault at all, but permanent.
	fault := &order.StatusFault{Status: statusName(resp.StatusCode), Unknown: resp.StatusCode == http.StatusNotFound}
	fault.After, fault.HasAfter = parseRetryAfter(resp.Header)
	if resp.StatusCode >= 300 && resp.StatusCode < 400 {
		fault.Err = fmt.Errorf("%s: %s (status %d): remote services must answer at the configured URL; fix the service's base URL: %w",
			op, redirectTarget(resp), resp.StatusCode, order.ErrConfiguration)
		return order.Answer{}, fault
	}
	// The service's answer is an order.ServiceError, from which the agent
	// tells clients why the step failed (order.ReasonFor).
	fault.Err = fmt.Errorf("%s: %w: %w", op, &order.ServiceError{Service: service, Status: resp.StatusCode, Message: errorMessage(resp.StatusCode, raw)}, classify(resp.StatusCode))
	return order.Answer{}, fault
}

// withCallback is body, the request of def's call for req, with the
// callback object: c's URL, a token sealed for req's attempt, and the
// token's expiry; and the scrubber of the token. The token outlives the
// attempt's window (in which the call is accepted) and the longest wait
// after it. Its text is in the returned body only: never in an error, a
// log or a reply.
func (c *Client) withCallback(ctx context.Context, wf order.Workflow, def order.StepDef, req order.StepRequest, body []byte) ([]byte, *Scrubber, error) {
	if c.callbacks == nil || c.callbacks.URL == "" || c.callbacks.Tokens == nil {
		return nil, nil, fmt.Errorf("step %s calls back, and this agent has no callback URL or key (%s, %s): %w",
			def.Name, resources.EnvCallbackURL, resources.EnvCallbackSecret, order.ErrConfiguration)
	}
	sealer, err := c.callbacks.Tokens(ctx)
	if err != nil {
		// Read again at the next call: Secrets Manager may be back.
		return nil, nil, fmt.Errorf("seal a callback token: %w: %w", err, order.ErrTransient)
	}
	record, _ := req.StepIndex(wf)
	wait := max(def.Callback.Timeout, def.Callback.MaxTimeout)
	expires := c.callbacks.Now().Add(wait + max(req.Allowance(), def.Allowance)).UTC().Truncate(time.Second)
	token, err := sealer.Seal(callbacktoken.Claim{OrderID: req.OrderID, Record: record, Step: req.Step, Attempt: req.Attempt, ExpiresAt: expires})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", err, order.ErrPermanent)
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return nil, nil, fmt.Errorf("order %s: request body: %w: %w", req.OrderID, err, order.ErrPermanent)
	}
	// The engine's field, whatever the order's input says.
	fields[BodyCallback], _ = json.Marshal(callbackField{URL: c.callbacks.URL, Token: token.Reveal(), ExpiresAt: expires.Format(time.RFC3339)})
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, nil, fmt.Errorf("order %s: encode request body: %w: %w", req.OrderID, err, order.ErrPermanent)
	}
	return out, NewScrubber(token.Reveal()), nil
}

// callbackField is the request body's "callback": where and with what
// token the service calls back, and until when it may.
type callbackField struct {
	URL       string `json:"url"`
	Token     string `json:"token"`
	ExpiresAt string `json:"expiresAt"`
}

// answer reads a success's body: a JSON object with the reference in
// "id", within the step's bound when its workflow keeps it, and matching
// its result schema when it has one. An undo's answer needs only the
// reference.
func (c *Client) answer(op string, wf order.Workflow, def order.StepDef, req order.StepRequest, status int, raw []byte) (order.Answer, error) {
	var created struct {
		// Raw, so that invalid UTF-8 is seen, not replaced.
		ID json.RawMessage `json:"id"`
	}
	var id string
	if err := json.Unmarshal(raw, &created); err != nil || json.Unmarshal(created.ID, &id) != nil || id == "" {
		// The work may have been done; a retry with the same key
		// replays it and gets the reference.
		return order.Answer{}, fmt.Errorf("%s: status %d without a reference in the body: %w", op, status, order.ErrTransient)
	}
	contract := func(problem string) error {
		return fmt.Errorf("%s: status %d: %w: %w", op, status, &order.ContractError{Service: def.Agent, Step: def.Name, Problem: problem}, order.ErrContract)
	}
	if problem := order.ReferenceProblem(created.ID, id); problem != "" {
		// The same key replays the same id: no retry helps.
		return order.Answer{}, contract(problem)
	}
	if req.Undo {
		return order.Answer{Reference: id}, nil
	}
	if limit := def.ResultMaxBytes; wf.Keeps(def.Name) && limit > 0 && len(raw) > limit {
		return order.Answer{}, contract(fmt.Sprintf("is %d bytes; the step keeps at most %d (its result.maxBytes)", len(raw), limit))
	}
	if i := bytes.IndexFunc(raw, func(r rune) bool { return r == 0xFFFE || r == 0xFFFF }); i >= 0 && wf.Keeps(def.Name) {
		// A queue message cannot carry it; escaped, it would take twice
		// the bytes result.maxBytes counted.
		r, _ := utf8.DecodeRune(raw[i:])
		return order.Answer{}, contract(fmt.Sprintf("holds the noncharacter %U, which orderly's queues cannot carry: a kept result writes it escaped (\\u%04x)", r, r))
	}
	if schema, ok := c.schemas[stepRef{wf.Name, wf.Version, def.Name}]; ok {
		if problems := schema.Check(raw); len(problems) > 0 {
			// Field paths only: the validator's words may quote the
			// answer's values, which the reason must not carry.
			var fields []string
			for _, p := range problems {
				if f := cmp.Or(p.Field, "(the answer itself)"); !slices.Contains(fields, f) {
					fields = append(fields, f)
				}
			}
			return order.Answer{}, contract("does not match its result schema at " + strings.Join(fields, ", "))
		}
	}
	var compact bytes.Buffer
	if err := json.Compact(&compact, raw); err != nil {
		return order.Answer{}, fmt.Errorf("%s: status %d with an answer that is not JSON: %w", op, status, order.ErrTransient)
	}
	return order.Answer{Reference: id, Body: compact.Bytes()}, nil
}

// callOf returns req's step and the call it defines (its undo call for an
// undo) in wf, when service is the step's. A step this build's workflows
// do not have cannot be called, whatever a retry does.
func callOf(wf order.Workflow, service string, req order.StepRequest) (order.StepDef, order.Endpoint, error) {
	ref := order.Ref(wf.Name, wf.Version)
	def, ok := wf.Step(req.Step)
	switch {
	case !ok:
		return def, order.Endpoint{}, fmt.Errorf("step %q: not in workflow version %s", req.Step, ref)
	case def.Agent != service:
		// A request on the wrong agent's queue: its call is another
		// service's to make.
		return def, order.Endpoint{}, fmt.Errorf("unknown for step %s of workflow version %s, which calls %q", req.Step, ref, def.Agent)
	case req.Undo && def.UndoCall.Path == "":
		return def, order.Endpoint{}, fmt.Errorf("step %s of workflow version %s: no undo call defined", req.Step, ref)
	case req.Undo:
		return def, def.UndoCall, nil
	}
	return def, def.Call, nil
}

// redirectTarget names where a redirect pointed: the Location's host
// only, as its path and query may carry a token. The host is the
// service's too: scrubbed with the Location (see authTransport) and cut.
func redirectTarget(resp *http.Response) string {
	loc, err := resp.Location()
	switch {
	case errors.Is(err, http.ErrNoLocation):
		return "redirected without a Location"
	case err != nil || loc.Host == "":
		return "redirected to an unreadable Location"
	}
	return "redirected to " + order.Cut(loc.Host, maxMessageBytes)
}

// transportError classifies a failure to get a response: it is always
// transient, and names the context's error when the context ended the call.
// Its text is cut, as Go's transport quotes what the service sent
// ("malformed HTTP response \"…\"").
func transportError(ctx context.Context, op string, err error) error {
	if ctxErr := ctx.Err(); ctxErr != nil {
		return fmt.Errorf("%s: %w: %w", op, ctxErr, order.ErrTransient)
	}
	return fmt.Errorf("%s: %w: %w", op, quoted(err, order.Cut(err.Error(), maxMessageBytes)), order.ErrTransient)
}

// quotedError is an error that quoted a service's bytes (as Go's
// transport does), told in text safe to log: scrubbed, cut. It does not
// unwrap, so those bytes cannot be printed through it, but it answers
// errors.Is and Timeout (which the agent's circuit asks) as err does.
type quotedError struct {
	text string
	err  error
}

// quoted returns err told in text, or err itself when text is its own.
func quoted(err error, text string) error {
	if text == err.Error() {
		return err
	}
	return &quotedError{text: text, err: err}
}

func (e *quotedError) Error() string { return e.text }

func (e *quotedError) Is(target error) bool { return errors.Is(e.err, target) }

// Timeout reports whether err timed out.
func (e *quotedError) Timeout() bool {
	var t interface{ Timeout() bool }
	return errors.As(e.err, &t) && t.Timeout()
}

// classify returns the fault class of a failed status (not a redirect).
// 409 is how services following the IETF Idempotency-Key draft say that a
// request with the same key is still in flight (after an attempt this
// agent gave up on, say): it ends when that request does. 501 Not
// Implemented is a 5xx that no retry fixes. The configuration statuses
// say nothing about the order, only about how the service is reached;
// every other 4xx is the service refusing the work.
func classify(code int) error {
	switch code {
	case http.StatusRequestTimeout, http.StatusConflict, http.StatusTooManyRequests:
		return order.ErrTransient
	case http.StatusNotImplemented:
		return order.ErrPermanent
	case http.StatusUnauthorized, http.StatusProxyAuthRequired, http.StatusForbidden,
		http.StatusNotFound, http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType:
		return order.ErrConfiguration
	}
	if code >= 500 {
		return order.ErrTransient
	}
	return order.ErrPermanent
}

// ConfigurationStatuses name the statuses classify takes as
// configuration faults, as a fault carries them (statusName: every
// redirect is "3xx"): the agent's metric labels each, and the stack
// alarms on each.
var ConfigurationStatuses = []string{"3xx", "401", "403", "404", "405", "407", "415"}

// statusName is how a fault names a status (order.StatusFault.Status):
// its number, and "3xx" for any redirect, which the client never follows
// and so tells apart only by where it points.
func statusName(code int) string {
	if code >= 300 && code < 400 {
		return "3xx"
	}
	return strconv.Itoa(code)
}

// errorMessage extracts the service's explanation from an error body:
// the "error" field of a JSON body, else the body's text, else the status.
func errorMessage(code int, raw []byte) string {
	var body struct {
		Error string `json:"error"`
	}
	if json.Unmarshal(raw, &body) == nil && strings.TrimSpace(body.Error) != "" {
		return order.Cut(body.Error, maxMessageBytes)
	}
	if text := order.Cut(string(raw), maxMessageBytes); text != "" {
		return text
	}
	return http.StatusText(code)
}

// parseRetryAfter reads Retry-After as delay-seconds or an HTTP date. A
// date is taken relative to the response's Date header when present, so
// the result does not depend on the two machines' clocks agreeing.
func parseRetryAfter(h http.Header) (time.Duration, bool) {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		return time.Duration(min(secs, maxRetryAfterSeconds)) * time.Second, true
	}
	at, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	now := time.Now()
	if date, err := http.ParseTime(h.Get("Date")); err == nil {
		now = date
	}
	return max(at.Sub(now), 0), true
}
