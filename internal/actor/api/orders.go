package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"regexp"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/order"
	"orderly/internal/tracing"
)

// get shows an order to the caller that submitted it, or, on the
// operator route, to anyone API Gateway let through. Someone else's order
// is not found, exactly like an order that does not exist.
func (s *Service) get(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	o, steps, err := s.shown(ctx, req, operator)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	// A version this build lacks shows no result, nor what a step waits for.
	wf, _ := s.workflows.Get(o.Workflow, o.Version)
	if !operator {
		return jsonResponse(http.StatusOK, NewClientView(o, steps, wf)), nil
	}
	return jsonResponse(http.StatusOK, NewOrderView(o, steps, wf)), nil
}

// shown reads the order a GET on it names, for the caller that submitted
// it or, on the operator route, for anyone API Gateway let through.
// Someone else's order is not found, exactly like an order that does not
// exist.
func (s *Service) shown(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (order.Order, []order.StepState, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return order.Order{}, nil, err
	}
	id := orderIDOf(req)
	notFound := fmt.Errorf("no order has that id: %w", order.ErrNotFound) // the id is not echoed: it can be anything
	if !order.ValidID(id) {
		return order.Order{}, nil, notFound
	}
	o, steps, err := s.store.GetOrder(ctx, id)
	if errors.Is(err, order.ErrNotFound) || (err == nil && !operator && !o.OwnedBy(caller)) {
		return order.Order{}, nil, notFound
	}
	return o, steps, err
}

// showHistory lists every transition of an order and its steps, in order:
// to the caller that submitted it (as ClientHistory shows it), or, on the
// operator route, to anyone API Gateway let through (all of it).
func (s *Service) showHistory(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	o, _, err := s.shown(ctx, req, operator)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	ts, err := s.history.List(ctx, o.ID, o.CreatedAt)
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
	return jsonResponse(http.StatusOK, HistoryView{OrderID: o.ID, Status: o.Status, History: ts}), nil
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

// sendEvent delivers an event to an order (POST /orders/{id}/events/{name},
// the client's own orders; POST /ops/orders/{id}/events/{name}, an
// operator's, any order): the body is the event's data, a JSON object,
// which the step that waits for it checks against its schema and takes as
// its result.
func (s *Service) sendEvent(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	caller, id, body, err := actionOn(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	data, err := order.ParseEventData(body)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	name := eventNameOf(req)
	if !eventName.MatchString(name) {
		return events.APIGatewayProxyResponse{}, &order.ValidationError{Fields: []order.FieldError{{Field: "event",
			Problem: fmt.Sprintf("%q: an event's name is lower-case letters, digits and \"-\", at most 63 characters", excerpt(name))}}}
	}
	ctx, span := tracing.Start(ctx, "api.event", tracing.Step{OrderID: id}, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithAttributes(attribute.String("orderly.event", name), attribute.Bool("orderly.operator", operator)))
	o, err := s.controls.SendEvent(ctx, caller, operator, id, name, data)
	tracing.End(span, err)
	if errors.Is(err, order.ErrNotFound) {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("no order has that id: %w", order.ErrNotFound)
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	s.log.InfoContext(ctx, "event taken", "order_id", o.ID, "event", name, "status", o.Status, "operator", operator)
	return accepted(o, false), nil
}

// eventName is what a workflow definition allows an event to be named.
var eventName = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

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
