package api

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// submit stores a new order with its first step claimed and sends that
// step's request (POST /orders, POST /workflows/{workflow}/orders).
func (s *Service) submit(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	body, err := bodyOf(req, true)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	key, err := idempotencyKeyOf(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	wf, err := s.workflowFor(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
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
		ID: order.NewID(), Workflow: wf.Name, Version: wf.Version,
		RequestHash: hash, IdempotencyKey: key, KeyNonce: order.NewKeyNonce(), Caller: caller.ID, CreatedAt: now, UpdatedAt: now,
	}.WithInput(input)
	if key != "" {
		o.ID = order.IDForKey(caller.ID, o.Workflow, o.CustomerID, key)
	}
	pause, err := s.workflowPause(ctx, wf.Name)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	owner := s.id
	if pause.On() {
		owner = "" // held: its first step is not claimed
	}
	steps, err := wf.NewStatesOn(o.ID, order.ExprVars{Input: o.Input}, owner, now)
	switch {
	case errors.Is(err, order.ErrInvalid):
		return events.APIGatewayProxyResponse{}, &order.ValidationError{Fields: []order.FieldError{{Field: "body", Problem: err.Error()}}}
	case err != nil:
		// A condition or a timer's time the input cannot decide: the step
		// runs, the timer waits its max.
		s.log.WarnContext(ctx, "the first step's start cannot be decided on the order's input", "order_id", o.ID, "error", err)
	}
	if pause.On() {
		steps = hold(steps, now)
	}
	o.Status = wf.StartStatus(steps)
	// The order's trace starts here; its first request is a child of
	// this span.
	ctx, span := tracing.Start(ctx, "api.submit", tracing.OfOrder(o), trace.WithSpanKind(trace.SpanKindServer))
	defer span.End()
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
	// request goes out now, the order is safe and the answer is 202. A
	// first step that waits has no request: the Supervisor ends its wait.
	for _, st := range steps {
		if st.ProcessState == order.Processing {
			s.dispatcher.Send(ctx, o, st)
		}
	}
	return accepted(o, false), nil
}

// workflowPause is the pause of the workflow, as this instance read it
// lately; a pause that refuses submissions is ErrPaused, with when to try
// again (a replay of an accepted order is refused too: the client tries
// again later, and gets its order back then).
func (s *Service) workflowPause(ctx context.Context, workflow string) (order.Pause, error) {
	if s.pauses == nil {
		return order.Pause{}, nil
	}
	p, err := s.pauses.Pause(ctx, order.PauseWorkflow, workflow)
	if err != nil {
		s.log.WarnContext(ctx, "workflow pause not read; going by the last read", "workflow", workflow, "error", err, "paused", p.On())
	}
	if p.On() && p.Submissions == order.RefuseSubmissions {
		return p, &order.PausedError{Pause: p, Now: s.now()}
	}
	return p, nil
}

// hold marks the first step of an order accepted while its workflow is
// paused as held: Pending, not announced, looked at by the Supervisor
// every order.HeldRecheck until the resume releases it. A first step that
// waits (a timer, an event) calls no service and starts as usual.
func hold(steps []order.StepState, now time.Time) []order.StepState {
	for i, st := range steps {
		if st.ProcessState == order.Pending {
			steps[i].Held, steps[i].CompleteBy = true, now.Add(order.HeldRecheck)
			return steps
		}
		if st.ProcessState != order.NotStarted && st.ProcessState != order.Skipped {
			return steps
		}
	}
	return steps
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

// idempotencyKeyOf is the request's Idempotency-Key, "" if none; a key
// sent twice or malformed is invalid.
func idempotencyKeyOf(req events.APIGatewayProxyRequest) (string, error) {
	keys := headerValues(req, "Idempotency-Key")
	if len(keys) > 1 {
		return "", &order.ValidationError{Fields: []order.FieldError{{
			Field: "Idempotency-Key", Problem: fmt.Sprintf("was sent %d times; send it once", len(keys))}}}
	}
	if len(keys) == 0 {
		return "", nil
	}
	if err := order.ValidateIdempotencyKey(keys[0]); err != nil {
		return "", err
	}
	return keys[0], nil
}

// workflowFor is the latest version of the workflow a submission names,
// or of the stage's default one; a workflow this stage does not run is
// invalid.
func (s *Service) workflowFor(req events.APIGatewayProxyRequest) (order.Workflow, error) {
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
		return order.Workflow{}, &order.ValidationError{Fields: []order.FieldError{{Field: "workflow",
			Problem: fmt.Sprintf("%q: no such workflow; this stage runs %s", excerpt(name), strings.Join(s.workflows.Names(), ", "))}}}
	}
	return wf, nil
}
