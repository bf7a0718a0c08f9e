package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/callbacktoken"
	"orderly/internal/order"
)

// callbackScheme is the Authorization header's scheme of a callback:
// "Orderly-Callback <token>". A header, not the path or the query, since
// API Gateway and proxies log paths.
const callbackScheme = "Orderly-Callback"

// callback takes a service's callback (POST /callbacks): the token in the
// Authorization header says for which attempt of which step; the body
// says how the work went (order.ParseCallback). The token is never
// logged, nor said back.
func (s *Service) callback(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	token, err := callbackToken(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
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
		return events.APIGatewayProxyResponse{}, fmt.Errorf("the Authorization header holds no callback token of this stage (wrong, altered or another stage's): %w", errBadToken)
	}
	body, err := bodyOf(req, false)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	cb, err := order.ParseCallback(body)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	taken, err := s.controls.Callback(ctx, claim, cb)
	log := s.log.With("order_id", claim.OrderID, "step", claim.Step, "attempt", claim.Attempt, "outcome", cb.Outcome)
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
