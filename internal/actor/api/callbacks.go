package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"orderly/internal/callbacktoken"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// callbackScheme is the Authorization header's scheme of a callback:
// "Orderly-Callback <token>". A header, not the path or the query, since
// API Gateway and proxies log paths.
const callbackScheme = "Orderly-Callback"

// CallbackTokenHeader carries the token of a callback on POST
// /callbacks/iam, whose Authorization header is the caller's SigV4
// signature: the token alone, with no scheme.
const CallbackTokenHeader = "Orderly-Callback-Token"

// callback takes a service's callback (POST /callbacks): the token in the
// Authorization header says for which attempt of which step; the body
// says how the work went (order.ParseCallback). The token is never
// logged, nor said back.
func (s *Service) callback(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	token, err := callbackToken(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	return s.takeCallback(ctx, req, token, "the Authorization header", "")
}

// callbackIAM takes the same callback from a service inside AWS (POST
// /callbacks/iam): API Gateway's IAM authorization checked its SigV4
// signature, so the token comes in CallbackTokenHeader instead. The token
// still decides which attempt of which step it is for: a signature alone
// allows no callback. The caller is logged, as who called back.
func (s *Service) callbackIAM(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	values := headerValues(req, CallbackTokenHeader)
	if len(values) != 1 || strings.TrimSpace(values[0]) == "" {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("a callback on %s needs one %s header, the token its call carried: %w",
			ResourceCallbacksIAM, CallbackTokenHeader, errBadToken)
	}
	return s.takeCallback(ctx, req, strings.TrimSpace(values[0]), "the "+CallbackTokenHeader+" header", caller.ID)
}

// takeCallback takes a callback whose token came in where (for the
// answer's words), from caller (its IAM principal; "" for none).
func (s *Service) takeCallback(ctx context.Context, req events.APIGatewayProxyRequest, token, where, caller string) (events.APIGatewayProxyResponse, error) {
	if s.callbacks == nil {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("callbacks: this stage has no callback key: %w", errUnavailable)
	}
	sealer, err := s.callbacks(ctx)
	if err != nil {
		s.log.ErrorContext(ctx, "callback key unreadable", "error", err)
		return events.APIGatewayProxyResponse{}, fmt.Errorf("callbacks: the stage's callback key cannot be read now: %w", errUnavailable)
	}
	claim, err := sealer.Open(token, s.now())
	switch {
	case errors.Is(err, callbacktoken.ErrExpired):
		return events.APIGatewayProxyResponse{}, fmt.Errorf("the callback's token expired with the wait it was made for: %w", order.ErrTooLate)
	case err != nil:
		return events.APIGatewayProxyResponse{}, fmt.Errorf("%s holds no callback token of this stage (wrong, altered or another stage's): %w", where, errBadToken)
	}
	body, err := bodyOf(req, false)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	cb, err := order.ParseCallback(body)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	ctx, span := tracing.Start(ctx, "api.callback", tracing.Step{OrderID: claim.OrderID, Step: claim.Step, Attempt: claim.Attempt},
		trace.WithSpanKind(trace.SpanKindServer), trace.WithAttributes(attribute.String("orderly.callback_outcome", string(cb.Outcome))))
	taken, err := s.controls.Callback(ctx, claim, cb)
	tracing.End(span, err)
	log := s.log.With("order_id", claim.OrderID, "step", claim.Step, "attempt", claim.Attempt, "outcome", cb.Outcome)
	if caller != "" {
		log = log.With("caller", caller)
	}
	if err != nil {
		log.InfoContext(ctx, "callback refused", "error", err)
		return events.APIGatewayProxyResponse{}, err
	}
	log.InfoContext(ctx, "callback taken", "status", taken.Order.Status)
	answer := map[string]any{"orderId": claim.OrderID, "step": claim.Step, "attempt": claim.Attempt, "status": taken.Order.Status}
	if cb.Outcome == order.CallbackOutcomeWorking && !taken.CompleteBy.IsZero() {
		answer["completeBy"] = taken.CompleteBy.UTC().Format(time.RFC3339Nano)
	}
	return jsonResponse(http.StatusOK, answer), nil
}

// callbackToken is the token of the request's Authorization header.
func callbackToken(req events.APIGatewayProxyRequest) (string, error) {
	values := headerValues(req, "Authorization")
	if len(values) != 1 {
		return "", fmt.Errorf("a callback needs one Authorization header, %q and the token its call carried: %w", callbackScheme+" <token>", errBadToken)
	}
	scheme, token, _ := strings.Cut(strings.TrimSpace(values[0]), " ")
	if !strings.EqualFold(scheme, callbackScheme) || strings.TrimSpace(token) == "" {
		return "", fmt.Errorf("the Authorization header's scheme must be %s: %w", callbackScheme, errBadToken)
	}
	return strings.TrimSpace(token), nil
}
