package api

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/control"
	"orderly/internal/order"
)

var (
	errNoCaller         = errors.New("no authenticated caller")
	errUnsupportedMedia = errors.New("unsupported media type")
	errNoRoute          = errors.New("no such route")
	errMethod           = errors.New("method not allowed")
	errUnavailable      = errors.New("temporarily unavailable")
	errBadToken         = errors.New("not a callback token of this stage")
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
	{errBadToken, http.StatusUnauthorized, "invalid_token"},
	{errUnsupportedMedia, http.StatusUnsupportedMediaType, "unsupported_media_type"},
	{order.ErrNotFound, http.StatusNotFound, "not_found"},
	{errNoRoute, http.StatusNotFound, "no_route"},
	{errMethod, http.StatusMethodNotAllowed, "method_not_allowed"},
	{order.ErrConflict, http.StatusConflict, "idempotency_conflict"},
	{order.ErrNotAllowed, http.StatusConflict, "invalid_state"},
	{order.ErrTooLate, http.StatusGone, "too_late"},
	{control.ErrBusy, http.StatusServiceUnavailable, "busy"},
	{errUnavailable, http.StatusServiceUnavailable, "unavailable"},
	{order.ErrPaused, http.StatusServiceUnavailable, "paused"},
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

func (s *Service) errorResponse(ctx context.Context, req events.APIGatewayProxyRequest, resource string, err error) (events.APIGatewayProxyResponse, error) {
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
		switch m.status {
		case http.StatusMethodNotAllowed:
			resp.Headers["Allow"] = strings.Join(allowed(resource), ", ")
		case http.StatusUnauthorized:
			resp.Headers["WWW-Authenticate"] = callbackScheme
		}
		var paused *order.PausedError
		if errors.As(err, &paused) {
			resp.Headers["Retry-After"] = strconv.Itoa(paused.RetryAfterSeconds())
		}
		return resp, nil
	}
	// Anything else is our fault or the platform's: log it with context and
	// let API Gateway answer 502, so clients retry with the same key.
	s.log.ErrorContext(ctx, "request failed", "method", req.HTTPMethod, "path", req.Path, "error", err)
	return events.APIGatewayProxyResponse{}, err
}
