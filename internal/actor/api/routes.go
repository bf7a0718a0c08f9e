package api

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/aws/aws-lambda-go/events"
)

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
	// ResourceEvent sends an event to the caller's own order (a step
	// that waits for it takes its data); operators send events to any
	// order on ResourceOperatorEvent.
	ResourceEvent         = "/orders/{id}/events/{name}"
	ResourceOperatorEvent = "/ops/orders/{id}/events/{name}"
	// ResourceCallbacks takes the callbacks of services that call back.
	// It is not IAM-authorized: the sealed token in the request's
	// Authorization header is what allows a callback, for one attempt of
	// one step.
	ResourceCallbacks = "/callbacks"
	// ResourceCallbacksIAM takes the same callbacks from services inside
	// AWS: IAM-authorized (SigV4), as every route but ResourceCallbacks
	// is, with the token in the CallbackTokenHeader header, since the
	// Authorization header is the signature's.
	ResourceCallbacksIAM = "/callbacks/iam"
)

// handler serves one route.
type handler func(s *Service, ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)

// routes is the one routing table: Handle dispatches by it, a 405's Allow
// header lists its methods for the resource, and Routes gives it to the
// gateways in front.
var routes = []struct {
	method, resource string
	serve            handler
}{
	{http.MethodPost, ResourceOrders, (*Service).submit},
	{http.MethodPost, ResourceWorkflowOrders, (*Service).submit},
	{http.MethodGet, ResourceOrders, asClient((*Service).search)},
	{http.MethodGet, ResourceOperatorOrders, asOperator((*Service).search)},
	{http.MethodGet, ResourceOrder, asClient((*Service).get)},
	{http.MethodGet, ResourceOperatorOrder, asOperator((*Service).get)},
	{http.MethodPost, ResourceCancel, (*Service).cancel},
	{http.MethodPost, ResourceRedrive, (*Service).redrive},
	{http.MethodGet, ResourceHistory, asClient((*Service).showHistory)},
	{http.MethodGet, ResourceOperatorHistory, asOperator((*Service).showHistory)},
	{http.MethodPost, ResourceEvent, asClient((*Service).sendEvent)},
	{http.MethodPost, ResourceOperatorEvent, asOperator((*Service).sendEvent)},
	{http.MethodPost, ResourceCallbacks, (*Service).callback},
	{http.MethodPost, ResourceCallbacksIAM, (*Service).callbackIAM},
}

// sided is a handler that serves a client its own orders, or an operator
// anyone's.
type sided func(s *Service, ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error)

// asClient serves h on a client's route; asOperator, on an operator's.
func asClient(h sided) handler   { return sidedAs(h, false) }
func asOperator(h sided) handler { return sidedAs(h, true) }

func sidedAs(h sided, operator bool) handler {
	return func(s *Service, ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		return h(s, ctx, req, operator)
	}
}

// Route is one method on one resource the API serves.
type Route struct {
	Method   string
	Resource string
}

// Routes lists every route the API serves, from its routing table.
func Routes() []Route {
	out := make([]Route, len(routes))
	for i, r := range routes {
		out[i] = Route{Method: r.method, Resource: r.resource}
	}
	return out
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
	serve, err := route(req, resource)
	var resp events.APIGatewayProxyResponse
	if err == nil {
		resp, err = serve(s, ctx, req)
	}
	if err != nil {
		return s.errorResponse(ctx, req, resource, err)
	}
	return resp, nil
}

// route finds the handler of req's method on resource: a resource the
// table has is served or answers 405; any other, 404.
func route(req events.APIGatewayProxyRequest, resource string) (handler, error) {
	if len(allowed(resource)) == 0 {
		return nil, fmt.Errorf("no route for %s %s: %w", req.HTTPMethod, excerpt(req.Path), errNoRoute)
	}
	for _, r := range routes {
		if r.resource == resource && r.method == req.HTTPMethod {
			return r.serve, nil
		}
	}
	return nil, fmt.Errorf("%s %s: %w", req.HTTPMethod, resource, errMethod)
}

// allowed lists the methods the table serves on resource, sorted, as a
// 405's Allow header names them.
func allowed(resource string) []string {
	var methods []string
	for _, r := range routes {
		if r.resource == resource {
			methods = append(methods, r.method)
		}
	}
	slices.Sort(methods)
	return methods
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
	if name, ok := strings.CutPrefix(action, "events/"); ok && isOrder && id != "" && name != "" && !strings.Contains(name, "/") {
		if prefix != "" {
			return ResourceOperatorEvent
		}
		return ResourceEvent
	}
	switch {
	case path == ResourceOrders:
		return ResourceOrders
	case path == ResourceOperatorOrders:
		return ResourceOperatorOrders
	case path == ResourceCallbacks:
		return ResourceCallbacks
	case path == ResourceCallbacksIAM:
		return ResourceCallbacksIAM
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

// eventNameOf is the event an events path names.
func eventNameOf(req events.APIGatewayProxyRequest) string {
	if name, ok := req.PathParameters["name"]; ok {
		return name
	}
	_, name, _ := strings.Cut(req.Path, "/events/")
	return strings.TrimSuffix(name, "/")
}

func orderIDOf(req events.APIGatewayProxyRequest) string {
	if id, ok := req.PathParameters["id"]; ok {
		return id
	}
	path := strings.TrimPrefix(strings.TrimSuffix(req.Path, "/"), opsPrefix)
	id, _, _ := strings.Cut(strings.TrimPrefix(path, ResourceOrders+"/"), "/")
	return id
}
