// Package api is the submission function: POST /orders writes an order and
// its workflow state in one conditional write and sends the first step's
// request; GET /orders/{id} shows the caller its order and every step's
// state (an operator's GET /ops/orders/{id} shows any order with the
// engine's internals and every step's result); GET /orders finds the
// caller's orders (and an operator's GET /ops/orders anyone's); POST
// /orders/{id}/cancel cancels it and an operator's POST
// /orders/{id}/redrive resumes it from Error. It speaks API Gateway REST
// (v1) proxy events.
package api

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/control"
	"orderly/internal/definition"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
)

// Store is what the API needs of the state store.
type Store interface {
	CreateOrder(ctx context.Context, o order.Order, steps []order.StepState) (order.Order, error)
	GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error)
	// Search returns a page of the orders q matches, newest first, from
	// position (nil: the first page).
	Search(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error)
}

// Controls cancels and redrives orders.
type Controls interface {
	Cancel(ctx context.Context, owner order.Principal, id string) (order.Order, error)
	Redrive(ctx context.Context, id, action string) (order.Order, error)
}

// History reads an order's history.
type History interface {
	List(ctx context.Context, orderID string, since time.Time) ([]order.HistoryEntry, error)
}

// Dispatcher sends the first step's request, which submission claims.
type Dispatcher interface {
	Send(ctx context.Context, o order.Order, st order.StepState)
}

// Routes served, as API Gateway resource templates.
const (
	ResourceOrders = "/orders"
	// ResourceWorkflowOrders submits an order of a named workflow;
	// ResourceOrders, of the stage's default one.
	ResourceWorkflowOrders = "/workflows/{workflow}/orders"
	ResourceOrder          = "/orders/{id}"
	// ResourceOperatorOrder shows any caller's order. In AWS a separate
	// IAM permission guards it, so only operators can reach it.
	ResourceOperatorOrder = "/ops/orders/{id}"
	// ResourceOperatorOrders searches every caller's orders; a client
	// searches its own on GET ResourceOrders. IAM guards it as it guards
	// ResourceOperatorOrder.
	ResourceOperatorOrders = "/ops/orders"
	// ResourceCancel is a client's cancel of its own order.
	ResourceCancel = "/orders/{id}/cancel"
	// ResourceRedrive is an operator's redrive of any order in Error; in
	// AWS a separate IAM permission guards it.
	ResourceRedrive = "/orders/{id}/redrive"
	// ResourceHistory is the caller's order's history; operators read
	// any order's on ResourceOperatorHistory.
	ResourceHistory         = "/orders/{id}/history"
	ResourceOperatorHistory = "/ops/orders/{id}/history"
)

// Service handles API Gateway proxy requests.
type Service struct {
	id         string // LockedBy of the first steps this instance claims
	store      Store
	controls   Controls
	history    History
	dispatcher Dispatcher
	workflows  order.Versions
	// inputs check each workflow's submissions, by name.
	inputs    map[string]order.InputCheck
	now       func() time.Time
	log       *slog.Logger
	metrics   *metrics.Recorder
	anonymous string
	pages     pagetoken.Source
}

// Config wires the submission service.
type Config struct {
	InstanceID string
	Store      Store
	Controls   Controls
	History    History
	Dispatcher Dispatcher
	// Workflows are the workflow versions this build runs; a new order
	// is submitted under the latest.
	Workflows order.Versions
	Now       func() time.Time
	Log       *slog.Logger
	Metrics   *metrics.Recorder
	// AnonymousCaller, when set, is the caller of a request that names
	// none. Only for LocalStack, whose API Gateway enforces no IAM and
	// passes no caller identity; in AWS the IAM authorizer names the
	// caller of every request, and this stays empty.
	AnonymousCaller string
	// PageTokens gives what seals the cursors of search pages with the
	// stage's key; a key it cannot give fails searches alone (503), not
	// submissions.
	PageTokens pagetoken.Source
}

// NewService returns the submission service.
// Its error names a workflow whose input schema does not compile.
func NewService(c Config) (*Service, error) {
	if c.PageTokens == nil {
		return nil, errors.New("the submission service needs the stage's page token key to search")
	}
	inputs := map[string]order.InputCheck{}
	for _, name := range c.Workflows.Names() {
		wf, _ := c.Workflows.LatestOf(name)
		check, err := inputCheck(wf)
		if err != nil {
			return nil, err
		}
		inputs[name] = check
	}
	return &Service{id: c.InstanceID, store: c.Store, controls: c.Controls, history: c.History, dispatcher: c.Dispatcher, workflows: c.Workflows,
		inputs: inputs, now: c.Now, log: c.Log, metrics: c.Metrics, anonymous: c.AnonymousCaller, pages: c.PageTokens}, nil
}

// inputCheck checks submissions against wf's input schema. A workflow
// made in Go without one (in tests) takes any JSON object.
func inputCheck(wf order.Workflow) (order.InputCheck, error) {
	if len(wf.Input) == 0 {
		return nil, nil
	}
	schema, err := definition.CompileSchema(wf.Input)
	if err != nil {
		return nil, fmt.Errorf("workflow %s version %s: input schema: %w", wf.Name, wf.Version, err)
	}
	return func(doc []byte) []order.FieldError {
		var out []order.FieldError
		for _, p := range schema.Check(doc) {
			out = append(out, order.FieldError{Field: cmp.Or(p.Field, "body"), Problem: p.Problem})
		}
		return out
	}, nil
}

var (
	errNoCaller         = errors.New("no authenticated caller")
	errUnsupportedMedia = errors.New("unsupported media type")
	errNoRoute          = errors.New("no such route")
	errMethod           = errors.New("method not allowed")
	errUnavailable      = errors.New("temporarily unavailable")
)

// statusOf is the one table that maps errors to HTTP statuses and the
// machine-readable code in the error body.
var statusOf = []struct {
	err    error
	status int
	code   string
}{
	{order.ErrInvalid, http.StatusBadRequest, "invalid_request"},
	{order.ErrTooLarge, http.StatusRequestEntityTooLarge, "too_large"},
	{errNoCaller, http.StatusForbidden, "forbidden"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "unsupported_media_type"},
	{order.ErrNotFound, http.StatusNotFound, "not_found"},
	{errNoRoute, http.StatusNotFound, "no_route"},
	{errMethod, http.StatusMethodNotAllowed, "method_not_allowed"},
	{order.ErrConflict, http.StatusConflict, "idempotency_conflict"},
	{order.ErrNotAllowed, http.StatusConflict, "invalid_state"},
	{control.ErrBusy, http.StatusServiceUnavailable, "busy"},
	{errUnavailable, http.StatusServiceUnavailable, "unavailable"},
}

// ErrorCodes are the codes an error body's "error" takes, in statusOf's
// order.
func ErrorCodes() []string {
	var codes []string
	for _, m := range statusOf {
		if !slices.Contains(codes, m.code) {
			codes = append(codes, m.code)
		}
	}
	return codes
}

// Handle routes one request. It returns an error only for failures API
// Gateway should report as 5xx; every client error is a 4xx response.
func (s *Service) Handle(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	resource := req.Resource
	if resource == "" { // direct invocations may omit it
		resource = resourceOf(req.Path)
	}
	if workflowOf(resource) != "" {
		// The stack gives each workflow a resource of its own
		// (/workflows/order/orders), with its own request model.
		resource = ResourceWorkflowOrders
	}
	if req.RequestContext.Identity.Caller == "" && s.anonymous != "" {
		req.RequestContext.Identity.Caller = s.anonymous
	}
	var resp events.APIGatewayProxyResponse
	var err error
	switch {
	case (resource == ResourceOrders || resource == ResourceWorkflowOrders) && req.HTTPMethod == http.MethodPost:
		resp, err = s.submit(ctx, req)
	case resource == ResourceOrders && req.HTTPMethod == http.MethodGet:
		resp, err = s.search(ctx, req, false)
	case resource == ResourceOperatorOrders && req.HTTPMethod == http.MethodGet:
		resp, err = s.search(ctx, req, true)
	case resource == ResourceOrder && req.HTTPMethod == http.MethodGet:
		resp, err = s.get(ctx, req, false)
	case resource == ResourceOperatorOrder && req.HTTPMethod == http.MethodGet:
		resp, err = s.get(ctx, req, true)
	case resource == ResourceCancel && req.HTTPMethod == http.MethodPost:
		resp, err = s.cancel(ctx, req)
	case resource == ResourceRedrive && req.HTTPMethod == http.MethodPost:
		resp, err = s.redrive(ctx, req)
	case resource == ResourceHistory && req.HTTPMethod == http.MethodGet:
		resp, err = s.showHistory(ctx, req, false)
	case resource == ResourceOperatorHistory && req.HTTPMethod == http.MethodGet:
		resp, err = s.showHistory(ctx, req, true)
	case resource == ResourceOrders || resource == ResourceWorkflowOrders || resource == ResourceOrder || resource == ResourceOperatorOrder || resource == ResourceOperatorOrders ||
		resource == ResourceCancel || resource == ResourceRedrive || resource == ResourceHistory || resource == ResourceOperatorHistory:
		err = fmt.Errorf("%s %s: %w", req.HTTPMethod, resource, errMethod)
	default:
		err = fmt.Errorf("no route for %s %s: %w", req.HTTPMethod, excerpt(req.Path), errNoRoute)
	}
	if err != nil {
		return s.errorResponse(ctx, req, err)
	}
	return resp, nil
}

func (s *Service) submit(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	body, err := bodyOf(req, true)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	keys := headerValues(req, "Idempotency-Key")
	if len(keys) > 1 {
		return events.APIGatewayProxyResponse{}, &order.ValidationError{Fields: []order.FieldError{{
			Field: "Idempotency-Key", Problem: fmt.Sprintf("was sent %d times; send it once", len(keys))}}}
	}
	var key string
	if len(keys) == 1 {
		key = keys[0]
		if err := order.ValidateIdempotencyKey(key); err != nil {
			return events.APIGatewayProxyResponse{}, err
		}
	}
	name := s.workflows.Default()
	switch {
	case req.Resource != ResourceWorkflowOrders && workflowOf(req.Resource) != "":
		// The workflow's own resource: its name is in the template, and
		// the path may carry a custom domain's base path before it.
		name = workflowOf(req.Resource)
	case req.PathParameters["workflow"] != "":
		name = req.PathParameters["workflow"]
	case req.Resource == "" && workflowOf(req.Path) != "":
		name = workflowOf(req.Path) // a direct invocation
	}
	wf, known := s.workflows.LatestOf(name)
	if !known {
		return events.APIGatewayProxyResponse{}, &order.ValidationError{Fields: []order.FieldError{{Field: "workflow",
			Problem: fmt.Sprintf("%q: no such workflow; this stage runs %s", excerpt(name), strings.Join(s.workflows.Names(), ", "))}}}
	}
	input, hash, err := order.ParseInput(body, s.inputs[wf.Name])
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if legacy, ok := order.LegacyHash(input); ok && wf.Name == order.LegacyWorkflow {
		// As orders of it were fingerprinted before inputs: a retry from
		// then is a replay.
		hash = legacy
	}

	// Times are stored to the millisecond; the request must carry the
	// deadline exactly as stored.
	now := s.now().UTC().Truncate(time.Millisecond)
	o := order.Order{
		ID: order.NewID(), Workflow: wf.Name, Version: wf.Version, Status: order.StatusPending,
		RequestHash: hash, IdempotencyKey: key, KeyNonce: order.NewKeyNonce(), Caller: caller.ID, CreatedAt: now, UpdatedAt: now,
	}.WithInput(input)
	if key != "" {
		o.ID = order.IDForKey(caller.ID, o.Workflow, o.CustomerID, key)
	}
	steps := wf.NewStates(o.ID, s.id, now)
	existing, err := s.store.CreateOrder(ctx, o, steps)
	if errors.Is(err, order.ErrExists) {
		return s.replay(ctx, o, existing)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("submit order: %w", err)
	}
	s.log.InfoContext(ctx, "order accepted", "order_id", o.ID, "workflow", o.Workflow, "version", o.Version, "idempotency_key", key)
	s.metrics.Count(metrics.OrdersSubmitted, 1, "order_id", o.ID)
	// The order is stored with its first step claimed; whether or not the
	// request goes out now, the order is safe and the answer is 202.
	s.dispatcher.Send(ctx, o, steps[0])
	return accepted(o, false), nil
}

// bodyOf returns a request's body, decoded. A body must be JSON; a route
// whose body is optional (required false) takes an empty one without a
// Content-Type.
func bodyOf(req events.APIGatewayProxyRequest, required bool) ([]byte, error) {
	if required || req.Body != "" || header(req, "Content-Type") != "" {
		if err := checkContentType(header(req, "Content-Type")); err != nil {
			return nil, err
		}
	}
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return nil, fmt.Errorf("body is not valid base64: %w", order.ErrInvalid)
		}
		body = decoded
	}
	return body, nil
}

// actionOn reads what a POST on an order's action route carries: the
// caller, the order id (an id that cannot be one is not found) and the
// optional body.
func actionOn(req events.APIGatewayProxyRequest) (caller order.Principal, id string, body []byte, err error) {
	if caller, err = PrincipalOf(req.RequestContext.Identity); err != nil {
		return caller, "", nil, err
	}
	if id = orderIDOf(req); !order.ValidID(id) {
		return caller, "", nil, fmt.Errorf("no order has that id: %w", order.ErrNotFound)
	}
	body, err = bodyOf(req, false)
	return caller, id, body, err
}

// cancel cancels the caller's order (POST /orders/{id}/cancel, no body).
func (s *Service) cancel(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	caller, id, body, err := actionOn(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if err := order.ParseEmpty(body); err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	o, err := s.controls.Cancel(ctx, caller, id)
	if errors.Is(err, order.ErrNotFound) {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("no order has that id: %w", order.ErrNotFound)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	s.log.InfoContext(ctx, "order cancel requested", "order_id", o.ID, "status", o.Status)
	return accepted(o, false), nil
}

// redrive resumes an order in Error (POST /orders/{id}/redrive, an
// operator's route; optional body {"action":"retry"|"compensate"}).
func (s *Service) redrive(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	operator, id, body, err := actionOn(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	r, err := order.ParseRedrive(body)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	o, err := s.controls.Redrive(ctx, id, r.Action)
	if errors.Is(err, order.ErrNotFound) {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("no order has that id: %w", order.ErrNotFound)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	s.log.InfoContext(ctx, "order redriven by an operator", "order_id", o.ID, "status", o.Status, "operator", operator.ID, "action", r.Action)
	return accepted(o, false), nil
}

// HistoryView is the body of GET /orders/{id}/history.
type HistoryView struct {
	OrderID string               `json:"orderId"`
	Status  order.Status         `json:"status"`
	History []order.HistoryEntry `json:"history"`
}

// showHistory lists every transition of an order and its steps, in order:
// to the caller that submitted it (as ClientHistory shows it), or, on the
// operator route, to anyone API Gateway let through (all of it).
func (s *Service) showHistory(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	id := orderIDOf(req)
	notFound := fmt.Errorf("no order has that id: %w", order.ErrNotFound)
	if !order.ValidID(id) {
		return events.APIGatewayProxyResponse{}, notFound
	}
	o, _, err := s.store.GetOrder(ctx, id)
	if errors.Is(err, order.ErrNotFound) || (err == nil && !operator && !o.OwnedBy(caller)) {
		return events.APIGatewayProxyResponse{}, notFound
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	ts, err := s.history.List(ctx, id, o.CreatedAt)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if !operator {
		wf, _ := s.workflows.Get(o.Workflow, o.Version) // a version this build lacks shows no result
		ts = ClientHistory(wf, ts)
	}
	if ts == nil {
		ts = []order.HistoryEntry{}
	}
	return jsonResponse(http.StatusOK, HistoryView{OrderID: id, Status: o.Status, History: ts}), nil
}

// clientEvents are the history's events a client reads: its order's
// status, its cancel, and each record's state. Heartbeats, deferrals,
// re-announcements and alerts are how the engine and its operators work.
var clientEvents = []string{"status", "cancel requested", "state", "removed"}

// ClientHistory is what an order's client reads of its history: when and
// how the order and each record changed, and why the order did; who
// changed it only when a person did (a client's cancel, an operator's
// redrive or cancel); a step's result only where wf shows it to clients
// (StepDef.ResultShownToClient), with its reference. The order's reasons
// are said as order.ClientReason says them. Attempts (the fences), the
// instances and agents that wrote, and records' other reasons (timeouts,
// deadlines, a reference not shown) are the operators'. Each entry is built anew from
// the fields allowed, so a field added to order.HistoryEntry stays the
// operators' until it is allowed here.
func ClientHistory(wf order.Workflow, ts []order.HistoryEntry) []order.HistoryEntry {
	out := make([]order.HistoryEntry, 0, len(ts))
	for _, e := range ts {
		if !slices.Contains(clientEvents, e.Event) {
			continue
		}
		c := order.HistoryEntry{At: e.At, Record: e.Record, Step: e.Step, Undo: e.Undo, Event: e.Event, From: e.From, To: e.To}
		if strings.HasPrefix(e.By, "client ") || strings.HasPrefix(e.By, "operator ") {
			c.By = e.By
		}
		switch {
		case e.Event == "status" && e.Reason != order.ReasonSubmitted:
			c.Reason = order.ClientReason(order.Status(e.To), e.Reason) // the order's reason, as clients read it
		case e.Record < 0:
			c.Reason = e.Reason // a submission's, a cancel's: the engine's plain words
		case !e.Undo && wf.ShowsResult(e.Step) && strings.HasPrefix(e.Reason, order.ReferencePrefix):
			c.Reason = e.Reason // the reference, shown like the step's result
		}
		if !e.Undo && wf.ShowsResult(e.Step) {
			c.Result = e.Result
		}
		out = append(out, c)
	}
	return out
}

// replay answers a submission whose Idempotency-Key was seen before: the
// same body gets the original order back, a different body is a conflict.
func (s *Service) replay(ctx context.Context, o, existing order.Order) (events.APIGatewayProxyResponse, error) {
	if existing.RequestHash != o.RequestHash || existing.Caller != o.Caller {
		// The message names no order: the key is the caller's own, and the
		// order it made is theirs to look up.
		return events.APIGatewayProxyResponse{}, fmt.Errorf(
			"Idempotency-Key %q was already used for this customer with a different body: %w",
			excerpt(o.IdempotencyKey), order.ErrConflict)
	}
	s.log.InfoContext(ctx, "idempotent replay", "order_id", o.ID, "idempotency_key", o.IdempotencyKey)
	return accepted(existing, true), nil
}

func accepted(o order.Order, replayed bool) events.APIGatewayProxyResponse {
	resp := jsonResponse(http.StatusAccepted, map[string]any{
		"orderId": o.ID,
		"status":  o.Status,
		"links":   map[string]string{"self": "/orders/" + o.ID},
	})
	resp.Headers["Location"] = "/orders/" + o.ID
	if replayed {
		resp.Headers["Idempotent-Replayed"] = "true"
	}
	return resp
}

// StepView is one record's state as an operator's GET /ops/orders/{id},
// the CLI and the console show it: everything the engine keeps of it.
type StepView struct {
	Step string `json:"step"`
	// Undo marks an undo record: the undo of Step's work.
	Undo         bool       `json:"undo,omitempty"`
	Agent        string     `json:"agent"`
	State        string     `json:"state"`
	Attempt      int        `json:"attempt"`
	FailureCount int        `json:"failureCount"`
	CompleteBy   *time.Time `json:"completeBy,omitempty"`
	LockedBy     string     `json:"lockedBy,omitempty"`
	LastError    string     `json:"lastError,omitempty"`
	// Reference is the remote service's id for the work a step did;
	// Result, its whole answer when the workflow keeps it.
	Reference string          `json:"reference,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ClientStepView is one record's state as the order's client reads it
// (GET /orders/{id}): the step and its state, and the service's reference
// and answer only where the workflow shows them to clients
// (StepDef.ResultShownToClient). Its attempt (the fence), deadline,
// owner, service, failure count and reason are the operators' (see
// StepView); the order's own lastError says why it failed.
type ClientStepView struct {
	Step      string          `json:"step"`
	Undo      bool            `json:"undo,omitempty"`
	State     string          `json:"state"`
	Reference string          `json:"reference,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ClientOrderView is the body of a client's GET /orders/{id}: its order as
// it submitted it, where it stands and why it failed (as order.ClientReason
// says it), and each record as ClientStepView shows it. Like OrderView, it
// shows the input's fields beside its own.
type ClientOrderView struct {
	OrderID    string           `json:"orderId"`
	Status     order.Status     `json:"status"`
	Workflow   string           `json:"workflow"`
	Version    string           `json:"version"`
	LastError  string           `json:"lastError,omitempty"`
	CreatedAt  time.Time        `json:"createdAt"`
	UpdatedAt  time.Time        `json:"updatedAt"`
	Steps      []ClientStepView `json:"steps"`
	Input      json.RawMessage  `json:"-"`
	CustomerID string           `json:"-"`
}

// MarshalJSON writes the view's fields and then the input's.
func (v ClientOrderView) MarshalJSON() ([]byte, error) {
	type own ClientOrderView // without this method
	raw, err := json.Marshal(own(v))
	if err != nil {
		return nil, err
	}
	return withInput(raw, v.Input)
}

// NewClientView is what the order's client reads of it: see
// ClientOrderView. wf is the order's workflow version; a version this
// build lacks (the zero Workflow) shows no step's result.
func NewClientView(o order.Order, steps []order.StepState, wf order.Workflow) ClientOrderView {
	view := ClientOrderView{
		OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Status: o.Status, Input: o.Input, CustomerID: o.CustomerID,
		LastError: order.ClientReason(o.Status, o.LastError),
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Steps: make([]ClientStepView, len(steps)),
	}
	for i, st := range steps {
		v := ClientStepView{Step: st.Step, Undo: st.Undo, State: string(st.ProcessState), UpdatedAt: st.UpdatedAt}
		if !st.Undo && wf.ShowsResult(st.Step) {
			v.Reference, v.Result = st.Reference, st.Result
		}
		view.Steps[i] = v
	}
	return view
}

// OrderView is the body of an operator's GET /ops/orders/{id}, and what
// the CLI and the console show: the order and every record as the engine
// keeps them (a client reads ClientOrderView).
//
// The order's input fields are shown beside the view's own, as the client
// submitted them (the shipped workflow's customerId, lines and
// notificationTarget); a definition's input may not use the view's names.
type OrderView struct {
	OrderID string       `json:"orderId"`
	Status  order.Status `json:"status"`
	// Workflow and Version are the workflow version the order runs under.
	Workflow  string     `json:"workflow"`
	Version   string     `json:"version"`
	LastError string     `json:"lastError,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	Steps     []StepView `json:"steps"`
	// Redrive, for an order in Error on the operators' route, says what
	// each redrive action does, or why it is refused (order.PlanRedrive).
	Redrive []RedriveView `json:"redrive,omitempty"`
	// Input is the order's input; CustomerID is its customerId, if any.
	Input      json.RawMessage `json:"-"`
	CustomerID string          `json:"-"`
}

// UnmarshalJSON reads a view MarshalJSON wrote: the fields that are not
// the view's own are the input.
func (v *OrderView) UnmarshalJSON(data []byte) error {
	type own OrderView
	var o own
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, name := range viewFields {
		delete(fields, name)
	}
	input, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	*v = OrderView(o)
	v.Input = input
	if raw, ok := fields[order.InputCustomerID]; ok {
		_ = json.Unmarshal(raw, &v.CustomerID) // not a string: no customer
	}
	return nil
}

// viewFields are OrderView's own JSON names.
var viewFields = []string{"orderId", "status", "workflow", "version", "lastError", "createdAt", "updatedAt", "steps", "redrive"}

// MarshalJSON writes the view's fields and then the input's.
func (v OrderView) MarshalJSON() ([]byte, error) {
	type own OrderView // without this method
	raw, err := json.Marshal(own(v))
	if err != nil {
		return nil, err
	}
	return withInput(raw, v.Input)
}

// withInput adds the input's fields to a view's JSON object raw, beside
// (never over) the view's own.
func withInput(raw []byte, in json.RawMessage) ([]byte, error) {
	var input map[string]json.RawMessage
	if json.Unmarshal(in, &input) != nil || len(input) == 0 {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k, val := range input {
		if _, taken := fields[k]; !taken {
			fields[k] = val
		}
	}
	return json.Marshal(fields)
}

// RedriveView is what one redrive action does to an order in Error, or
// why it is refused and what to do instead.
type RedriveView struct {
	Action string `json:"action"`
	// Default marks the action a redrive without one takes.
	Default bool   `json:"default,omitempty"`
	What    string `json:"what,omitempty"`
	Refused string `json:"refused,omitempty"`
}

// redriveViews asks the domain what each redrive action would do to the
// order as read.
func redriveViews(o order.Order, steps []order.StepState) []RedriveView {
	if o.Status != order.StatusError {
		return nil
	}
	def, err := order.PlanRedrive(o.Status, steps, "")
	if err != nil {
		return nil
	}
	var views []RedriveView
	for _, action := range []string{order.RedriveRetry, order.RedriveCompensate} {
		v := RedriveView{Action: action, Default: action == def.Action}
		if p, err := order.PlanRedrive(o.Status, steps, action); err != nil {
			v.Refused = strings.TrimSuffix(err.Error(), ": "+order.ErrNotAllowed.Error())
		} else {
			v.What = p.What
		}
		views = append(views, v)
	}
	return views
}

// get shows an order to the caller that submitted it, or, on the
// operator route, to anyone API Gateway let through. Someone else's order
// is not found, exactly like an order that does not exist.
func (s *Service) get(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	id := orderIDOf(req)
	notFound := fmt.Errorf("no order has that id: %w", order.ErrNotFound) // the id is not echoed: it can be anything
	if !order.ValidID(id) {
		return events.APIGatewayProxyResponse{}, notFound
	}
	o, steps, err := s.store.GetOrder(ctx, id)
	if errors.Is(err, order.ErrNotFound) || (err == nil && !operator && !o.OwnedBy(caller)) {
		return events.APIGatewayProxyResponse{}, notFound
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if !operator {
		wf, _ := s.workflows.Get(o.Workflow, o.Version) // a version this build lacks shows no result
		return jsonResponse(http.StatusOK, NewClientView(o, steps, wf)), nil
	}
	return jsonResponse(http.StatusOK, NewOrderView(o, steps)), nil
}

// NewOrderView is how the operators' route, the CLI and the console show
// an order and its records, with, for an order in Error, what each
// redrive does.
func NewOrderView(o order.Order, steps []order.StepState) OrderView {
	view := OrderView{
		OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Status: o.Status, Input: o.Input, CustomerID: o.CustomerID, LastError: o.LastError,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Steps: make([]StepView, len(steps)),
	}
	for i, st := range steps {
		v := StepView{
			Step: st.Step, Undo: st.Undo, Agent: st.Agent, State: string(st.ProcessState), Attempt: st.Attempt,
			FailureCount: st.FailureCount, LockedBy: st.LockedBy, LastError: st.LastError,
			Reference: st.Reference, Result: st.Result, UpdatedAt: st.UpdatedAt,
		}
		if !st.CompleteBy.IsZero() {
			v.CompleteBy = &st.CompleteBy
		}
		view.Steps[i] = v
	}
	view.Redrive = redriveViews(o, steps)
	return view
}

func (s *Service) errorResponse(ctx context.Context, req events.APIGatewayProxyRequest, err error) (events.APIGatewayProxyResponse, error) {
	for _, m := range statusOf {
		if !errors.Is(err, m.err) {
			continue
		}
		// The code says the class; the message, what is wrong.
		body := map[string]any{"error": m.code, "message": strings.TrimSuffix(err.Error(), ": "+m.err.Error())}
		var verr *order.ValidationError
		if errors.As(err, &verr) {
			body["message"] = "the request has invalid fields"
			body["fields"] = verr.Fields
		}
		s.log.InfoContext(ctx, "request rejected", "method", req.HTTPMethod, "path", req.Path, "status", m.status, "error", err)
		resp := jsonResponse(m.status, body)
		if m.status == http.StatusMethodNotAllowed {
			resp.Headers["Allow"] = allowed(req.Path)
		}
		return resp, nil
	}
	// Anything else is our fault or the platform's: log it with context and
	// let API Gateway answer 502, so clients retry with the same key.
	s.log.ErrorContext(ctx, "request failed", "method", req.HTTPMethod, "path", req.Path, "error", err)
	return events.APIGatewayProxyResponse{}, err
}

// excerpt keeps at most 64 bytes of what a client sent, for messages.
func excerpt(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}

func jsonResponse(status int, body any) events.APIGatewayProxyResponse {
	data, err := json.Marshal(body)
	if err != nil { // the views are plain structs; this cannot happen
		data = []byte(`{"error":"internal"}`)
		status = http.StatusInternalServerError
	}
	return events.APIGatewayProxyResponse{
		StatusCode: status,
		Headers:    map[string]string{"Content-Type": "application/json"},
		Body:       string(data),
	}
}

func allowed(path string) string {
	switch resourceOf(path) {
	case ResourceOrders:
		return http.MethodGet + ", " + http.MethodPost
	case ResourceWorkflowOrders, ResourceCancel, ResourceRedrive:
		return http.MethodPost
	}
	return http.MethodGet
}

const opsPrefix = "/ops"

// resourceOf maps a path to its resource template when the event lacks one.
func resourceOf(path string) string {
	path = strings.TrimSuffix(path, "/")
	if workflowOf(path) != "" {
		return ResourceWorkflowOrders
	}
	prefix, tmpl := "", ResourceOrder
	if strings.HasPrefix(path, opsPrefix+ResourceOrders+"/") {
		prefix, tmpl = opsPrefix, ResourceOperatorOrder
	}
	rest, isOrder := strings.CutPrefix(path, prefix+ResourceOrders+"/")
	id, action, _ := strings.Cut(rest, "/")
	switch {
	case path == ResourceOrders:
		return ResourceOrders
	case path == ResourceOperatorOrders:
		return ResourceOperatorOrders
	case !isOrder || id == "" || strings.Contains(action, "/"):
		return ""
	case action == "":
		return tmpl
	case action == "history" && prefix != "":
		return ResourceOperatorHistory
	case action == "history":
		return ResourceHistory
	case prefix != "":
		return ""
	case action == "cancel":
		return ResourceCancel
	case action == "redrive":
		return ResourceRedrive
	}
	return ""
}

// workflowOf is the workflow a /workflows/{workflow}/orders path names,
// or "".
func workflowOf(path string) string {
	rest, ok := strings.CutPrefix(strings.TrimSuffix(path, "/"), "/workflows/")
	name, tail, _ := strings.Cut(rest, "/")
	if !ok || name == "" || tail != "orders" {
		return ""
	}
	return name
}

func orderIDOf(req events.APIGatewayProxyRequest) string {
	if id, ok := req.PathParameters["id"]; ok {
		return id
	}
	path := strings.TrimPrefix(strings.TrimSuffix(req.Path, "/"), opsPrefix)
	id, _, _ := strings.Cut(strings.TrimPrefix(path, ResourceOrders+"/"), "/")
	return id
}

// PrincipalOf names the client that signed a request, from what API
// Gateway's IAM authorization puts in requestContext.identity. Its orders
// are its own: no other principal reads, cancels or replays into them.
// It is the full principal, so people and services behind one shared role
// are told apart, and it never holds the account id (the API takes only
// its own account's principals):
//
//   - an IAM user: its unique id (caller "AIDA…");
//   - a role's session (AssumeRole, IAM Identity Center, web identity,
//     SAML): the role's unique id and the session name (caller
//     "AROA…:session"), so two sessions of one role are two callers;
//   - a Cognito identity pool's identity: "cognito:" and the identity id,
//     since every identity of a pool signs as the same role and session
//     name (CognitoIdentityCredentials);
//   - a federated user (GetFederationToken, caller "<account>:name"):
//     "federated:" and its name;
//   - the account's root user (caller "<account>"): "root";
//   - anything else (the local gateway's one caller): as it is.
//
// Legacy is the caller as orders submitted before sessions counted stored
// it: the caller up to its first colon.
func PrincipalOf(id events.APIGatewayRequestIdentity) (order.Principal, error) {
	caller := id.Caller
	if caller == "" {
		return order.Principal{}, fmt.Errorf("the request has no caller identity; sign it with SigV4: %w", errNoCaller)
	}
	var p order.Principal
	first, rest, named := strings.Cut(caller, ":")
	switch {
	case id.CognitoIdentityID != "":
		p.ID = "cognito:" + id.CognitoIdentityID
	case isAccountID(first) && !named:
		p.ID = "root"
	case isAccountID(first) && rest != "":
		p.ID = "federated:" + rest
	default:
		p.ID = caller
	}
	if first != p.ID {
		p.Legacy = first
	}
	return p, nil
}

// isAccountID reports whether s is an AWS account id: 12 digits.
func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// checkContentType accepts JSON in UTF-8, the only body the API reads; a
// missing type is refused too, rather than guessed.
func checkContentType(ct string) error {
	if ct == "" {
		return fmt.Errorf("no Content-Type; send application/json: %w", errUnsupportedMedia)
	}
	mt, params, err := mime.ParseMediaType(ct)
	if err != nil || mt != "application/json" {
		return fmt.Errorf("content type %q, want application/json: %w", ct, errUnsupportedMedia)
	}
	if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") {
		return fmt.Errorf("charset %q: send the body in UTF-8: %w", cs, errUnsupportedMedia)
	}
	return nil
}

// headerValues returns every value a header was sent with, in any case of
// its name. API Gateway keeps all of them in MultiValueHeaders and only
// the last in Headers.
func headerValues(req events.APIGatewayProxyRequest, name string) []string {
	var values []string
	for k, vs := range req.MultiValueHeaders {
		if strings.EqualFold(k, name) {
			values = append(values, vs...)
		}
	}
	if len(values) > 0 {
		return values
	}
	for k, v := range req.Headers {
		if strings.EqualFold(k, name) {
			values = append(values, v)
		}
	}
	return values
}

func header(req events.APIGatewayProxyRequest, name string) string {
	values := headerValues(req, name)
	if len(values) == 0 {
		return ""
	}
	return values[len(values)-1]
}
