package api

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"mime"
	"net/http"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/order"
)

// maxBodyBytes is the most a request body may be, decoded: the largest
// body a route takes is a submission's, the order's input.
const maxBodyBytes = order.MaxInputBytes

// bodyOf returns a request's body, decoded. A body must be JSON, at most
// maxBodyBytes; a route whose body is optional (required false) takes an
// empty one without a Content-Type.
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
	if len(body) > maxBodyBytes {
		return nil, fmt.Errorf("body is %d bytes, the limit is %d: %w", len(body), maxBodyBytes, order.ErrTooLarge)
	}
	return body, nil
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

// excerpt keeps at most 64 bytes of what a client sent, for messages.
func excerpt(s string) string {
	const limit = 64
	if len(s) <= limit {
		return s
	}
	return strings.ToValidUTF8(s[:limit], "") + "…"
}
