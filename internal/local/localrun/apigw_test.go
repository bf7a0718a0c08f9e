package localrun

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambdacontext"
)

var testRoutes = []Route{
	{Method: "GET", Resource: "/"},
	{Method: "GET", Resource: "/orders"},
	{Method: "POST", Resource: "/orders"},
	{Method: "GET", Resource: "/orders/{id}"},
	{Method: "GET", Resource: "/orders/summary"},
	{Method: "GET", Resource: "/orders/{id}/steps/{step}"},
	{Method: "ANY", Resource: "/files/{path+}"},
}

// echoRequest answers with the proxy request it was given, so a test can see
// exactly what a Lambda behind API Gateway would have received.
func echoRequest(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
	body, err := json.Marshal(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	lc, _ := lambdacontext.FromContext(ctx)
	return events.APIGatewayProxyResponse{
		StatusCode: http.StatusOK,
		Headers:    map[string]string{"X-Lambda-Request-Id": lc.AwsRequestID},
		Body:       string(body),
	}, nil
}

func newTestGateway(t *testing.T, handler func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)) *httptest.Server {
	srv := httptest.NewServer(NewAPIGateway(handler, testRoutes, testLogger(t)))
	t.Cleanup(srv.Close)
	return srv
}

func do(t *testing.T, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", req.Method, req.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("read response: %v", err)
	}
	return resp, body
}

func newRequest(t *testing.T, method, url string, body io.Reader) *http.Request {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// The gateway's own answers use the API's error shape and codes, and never
// echo the path.
const (
	noRoute    = `{"error":"no_route","message":"no route matches this path"}`
	notAllowed = `{"error":"method_not_allowed","message":"this resource does not take that method; see the Allow header"}`
)

func TestAPIGatewayRouting(t *testing.T) {
	srv := newTestGateway(t, echoRequest)
	tests := []struct {
		method, path string
		wantStatus   int
		wantResource string
		wantParams   map[string]string
		wantBody     string // for errors
		wantAllow    string
	}{
		{method: "GET", path: "/", wantStatus: 200, wantResource: "/"},
		{method: "GET", path: "/orders", wantStatus: 200, wantResource: "/orders"},
		{method: "POST", path: "/orders", wantStatus: 200, wantResource: "/orders"},
		{method: "GET", path: "/orders/abc", wantStatus: 200, wantResource: "/orders/{id}", wantParams: map[string]string{"id": "abc"}},
		{method: "GET", path: "/orders/summary", wantStatus: 200, wantResource: "/orders/summary"},
		{method: "GET", path: "/orders/hello%20world", wantStatus: 200, wantResource: "/orders/{id}", wantParams: map[string]string{"id": "hello world"}},
		{method: "GET", path: "/orders/a%2Fb", wantStatus: 200, wantResource: "/orders/{id}", wantParams: map[string]string{"id": "a/b"}},
		{method: "GET", path: "/orders/o1/steps/pay", wantStatus: 200, wantResource: "/orders/{id}/steps/{step}", wantParams: map[string]string{"id": "o1", "step": "pay"}},
		{method: "DELETE", path: "/files/a/b/c.txt", wantStatus: 200, wantResource: "/files/{path+}", wantParams: map[string]string{"path": "a/b/c.txt"}},
		{method: "GET", path: "/files", wantStatus: 404, wantBody: noRoute},
		{method: "GET", path: "/nope", wantStatus: 404, wantBody: noRoute},
		{method: "GET", path: "/orders/abc/extra", wantStatus: 404, wantBody: noRoute},
		{method: "GET", path: "/orders/", wantStatus: 404, wantBody: noRoute},
		{method: "GET", path: "/nope/" + strings.Repeat("x", 5000), wantStatus: 404, wantBody: noRoute},
		{method: "DELETE", path: "/orders", wantStatus: 405, wantBody: notAllowed, wantAllow: "GET, POST"},
		{method: "PUT", path: "/orders/abc", wantStatus: 405, wantBody: notAllowed, wantAllow: "GET"},
	}
	for _, tt := range tests {
		t.Run(tt.method+" "+tt.path, func(t *testing.T) {
			resp, body := do(t, newRequest(t, tt.method, srv.URL+tt.path, nil))
			if resp.StatusCode != tt.wantStatus {
				t.Fatalf("status = %d, want %d (body %s)", resp.StatusCode, tt.wantStatus, body)
			}
			if tt.wantStatus != 200 {
				if got := strings.TrimSpace(string(body)); got != tt.wantBody {
					t.Errorf("body = %s, want %s", got, tt.wantBody)
				}
				if got := resp.Header.Get("Content-Type"); got != "application/json" {
					t.Errorf("Content-Type = %q, want application/json", got)
				}
				if got := resp.Header.Get("Allow"); got != tt.wantAllow {
					t.Errorf("Allow = %q, want %q", got, tt.wantAllow)
				}
				return
			}
			var got events.APIGatewayProxyRequest
			if err := json.Unmarshal(body, &got); err != nil {
				t.Fatalf("decode echoed request: %v", err)
			}
			if got.Resource != tt.wantResource || got.RequestContext.ResourcePath != tt.wantResource {
				t.Errorf("resource = %q, resourcePath = %q, want %q", got.Resource, got.RequestContext.ResourcePath, tt.wantResource)
			}
			if !equalMaps(got.PathParameters, tt.wantParams) {
				t.Errorf("pathParameters = %v, want %v", got.PathParameters, tt.wantParams)
			}
			if got.HTTPMethod != tt.method || got.RequestContext.HTTPMethod != tt.method {
				t.Errorf("httpMethod = %q, requestContext.httpMethod = %q, want %q", got.HTTPMethod, got.RequestContext.HTTPMethod, tt.method)
			}
		})
	}
}

func equalMaps(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

var uuidPattern = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

func TestAPIGatewayRequestEvent(t *testing.T) {
	srv := newTestGateway(t, echoRequest)
	req := newRequest(t, "POST", srv.URL+"/orders?x=1&x=2&y=z", strings.NewReader(`{"item":"tea"}`))
	req.Header.Add("X-Multi", "a")
	req.Header.Add("X-Multi", "b")
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "orderly-test")
	resp, body := do(t, req)
	if resp.StatusCode != 200 {
		t.Fatalf("status = %d, want 200 (body %s)", resp.StatusCode, body)
	}
	var got events.APIGatewayProxyRequest
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("decode echoed request: %v", err)
	}

	if got.Path != "/orders" {
		t.Errorf("path = %q, want /orders", got.Path)
	}
	if got.Body != `{"item":"tea"}` || got.IsBase64Encoded {
		t.Errorf("body = %q (base64 %t), want the JSON as sent", got.Body, got.IsBase64Encoded)
	}
	if got.Headers["X-Multi"] != "b" {
		t.Errorf("headers[X-Multi] = %q, want the last value b", got.Headers["X-Multi"])
	}
	if !slices.Equal(got.MultiValueHeaders["X-Multi"], []string{"a", "b"}) {
		t.Errorf("multiValueHeaders[X-Multi] = %v, want [a b]", got.MultiValueHeaders["X-Multi"])
	}
	if got.Headers["Content-Type"] != "application/json" {
		t.Errorf("headers[Content-Type] = %q, want application/json", got.Headers["Content-Type"])
	}
	if host := strings.TrimPrefix(srv.URL, "http://"); got.Headers["Host"] != host {
		t.Errorf("headers[Host] = %q, want %q", got.Headers["Host"], host)
	}
	if got.Headers["X-Forwarded-For"] != "127.0.0.1" || got.Headers["X-Forwarded-Proto"] != "http" {
		t.Errorf("X-Forwarded-For = %q, X-Forwarded-Proto = %q, want 127.0.0.1 and http", got.Headers["X-Forwarded-For"], got.Headers["X-Forwarded-Proto"])
	}
	if want := map[string]string{"x": "2", "y": "z"}; !equalMaps(got.QueryStringParameters, want) {
		t.Errorf("queryStringParameters = %v, want %v", got.QueryStringParameters, want)
	}
	if !slices.Equal(got.MultiValueQueryStringParameters["x"], []string{"1", "2"}) {
		t.Errorf("multiValueQueryStringParameters[x] = %v, want [1 2]", got.MultiValueQueryStringParameters["x"])
	}
	if got.PathParameters != nil {
		t.Errorf("pathParameters = %v, want null for a resource without variables", got.PathParameters)
	}

	rc := got.RequestContext
	if rc.Stage != "local" || rc.Path != "/local/orders" {
		t.Errorf("requestContext stage = %q, path = %q, want local and /local/orders", rc.Stage, rc.Path)
	}
	if !uuidPattern.MatchString(rc.RequestID) {
		t.Errorf("requestContext.requestId = %q, want a UUID", rc.RequestID)
	}
	if rc.Identity.SourceIP != "127.0.0.1" || rc.Identity.UserAgent != "orderly-test" {
		t.Errorf("identity = %+v, want sourceIp 127.0.0.1 and userAgent orderly-test", rc.Identity)
	}
	if rc.RequestTimeEpoch == 0 || rc.RequestTime == "" {
		t.Errorf("requestTime = %q, requestTimeEpoch = %d, want both set", rc.RequestTime, rc.RequestTimeEpoch)
	}
	lambdaID := resp.Header.Get("X-Lambda-Request-Id")
	if !uuidPattern.MatchString(lambdaID) {
		t.Errorf("handler's lambdacontext request id = %q, want a UUID", lambdaID)
	}
	if got := resp.Header.Get("x-amzn-RequestId"); got != lambdaID {
		t.Errorf("x-amzn-RequestId = %q, want the invocation's request id %q", got, lambdaID)
	}
}

func TestAPIGatewayNoQueryIsNull(t *testing.T) {
	srv := newTestGateway(t, echoRequest)
	_, body := do(t, newRequest(t, "GET", srv.URL+"/orders", nil))
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(body, &raw); err != nil {
		t.Fatal(err)
	}
	for _, field := range []string{"queryStringParameters", "multiValueQueryStringParameters", "pathParameters"} {
		if got := string(raw[field]); got != "null" {
			t.Errorf("%s = %s, want null as API Gateway sends", field, got)
		}
	}
}

func TestAPIGatewayBinaryBody(t *testing.T) {
	srv := newTestGateway(t, echoRequest)
	sent := []byte{0xff, 0xfe, 0x00, 'o', 'k'}
	_, body := do(t, newRequest(t, "POST", srv.URL+"/orders", bytes.NewReader(sent)))
	var got events.APIGatewayProxyRequest
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatal(err)
	}
	if !got.IsBase64Encoded {
		t.Fatalf("isBase64Encoded = false for a body that is not UTF-8")
	}
	decoded, err := base64.StdEncoding.DecodeString(got.Body)
	if err != nil || !bytes.Equal(decoded, sent) {
		t.Errorf("body decodes to %v (err %v), want %v", decoded, err, sent)
	}
}

func TestAPIGatewayBodyLimit(t *testing.T) {
	var calls atomic.Int32
	srv := newTestGateway(t, func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
		calls.Add(1)
		return events.APIGatewayProxyResponse{StatusCode: 200, Body: "ok"}, nil
	})
	tests := []struct {
		size       int
		wantStatus int
		wantCalls  int32
	}{
		{size: MaxRequestBody, wantStatus: 200, wantCalls: 1},
		{size: MaxRequestBody + 1, wantStatus: 413, wantCalls: 0},
	}
	for _, tt := range tests {
		calls.Store(0)
		resp, body := do(t, newRequest(t, "POST", srv.URL+"/orders", bytes.NewReader(bytes.Repeat([]byte("a"), tt.size))))
		if resp.StatusCode != tt.wantStatus || calls.Load() != tt.wantCalls {
			t.Errorf("body of %d bytes: status %d, handler calls %d (body %.100s), want %d and %d", tt.size, resp.StatusCode, calls.Load(), body, tt.wantStatus, tt.wantCalls)
		}
		if tt.wantStatus == 413 && !bytes.Contains(body, []byte(`"error":"too_large"`)) {
			t.Errorf("413 body %s, want the too_large code", body)
		}
	}
}

func TestAPIGatewayResponse(t *testing.T) {
	png := []byte{0x89, 'P', 'N', 'G', 0x00}
	tests := []struct {
		name        string
		resp        events.APIGatewayProxyResponse
		err         error
		panic       bool
		wantStatus  int
		wantBody    []byte
		wantHeaders map[string][]string
	}{
		{
			name: "status, body and both header maps",
			resp: events.APIGatewayProxyResponse{
				StatusCode:        201,
				Headers:           map[string]string{"Content-Type": "text/plain", "X-Dup": "1", "X-Single": "s"},
				MultiValueHeaders: map[string][]string{"Set-Cookie": {"a=1", "b=2"}, "X-Dup": {"1", "2"}},
				Body:              "created",
			},
			wantStatus: 201,
			wantBody:   []byte("created"),
			wantHeaders: map[string][]string{
				"Content-Type": {"text/plain"},
				"Set-Cookie":   {"a=1", "b=2"},
				"X-Dup":        {"1", "2"},
				"X-Single":     {"s"},
			},
		},
		{
			name:        "content type defaults to JSON",
			resp:        events.APIGatewayProxyResponse{StatusCode: 200, Body: `{"ok":true}`},
			wantStatus:  200,
			wantBody:    []byte(`{"ok":true}`),
			wantHeaders: map[string][]string{"Content-Type": {"application/json"}},
		},
		{
			name: "base64 body is decoded",
			resp: events.APIGatewayProxyResponse{
				StatusCode:      200,
				Headers:         map[string]string{"Content-Type": "image/png"},
				Body:            base64.StdEncoding.EncodeToString(png),
				IsBase64Encoded: true,
			},
			wantStatus:  200,
			wantBody:    png,
			wantHeaders: map[string][]string{"Content-Type": {"image/png"}},
		},
		{
			name:       "handler error",
			err:        errors.New("boom"),
			wantStatus: 502,
			wantBody:   []byte(`{"message":"Internal server error"}` + "\n"),
		},
		{
			name:       "handler panic",
			panic:      true,
			wantStatus: 502,
			wantBody:   []byte(`{"message":"Internal server error"}` + "\n"),
		},
		{
			name:       "missing status code",
			resp:       events.APIGatewayProxyResponse{Body: "no status"},
			wantStatus: 502,
			wantBody:   []byte(`{"message":"Internal server error"}` + "\n"),
		},
		{
			name:       "invalid base64",
			resp:       events.APIGatewayProxyResponse{StatusCode: 200, Body: "%%%", IsBase64Encoded: true},
			wantStatus: 502,
			wantBody:   []byte(`{"message":"Internal server error"}` + "\n"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := newTestGateway(t, func(ctx context.Context, req events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error) {
				if tt.panic {
					panic("handler bug")
				}
				return tt.resp, tt.err
			})
			resp, body := do(t, newRequest(t, "GET", srv.URL+"/orders", nil))
			if resp.StatusCode != tt.wantStatus {
				t.Errorf("status = %d, want %d", resp.StatusCode, tt.wantStatus)
			}
			if !bytes.Equal(body, tt.wantBody) {
				t.Errorf("body = %q, want %q", body, tt.wantBody)
			}
			for k, want := range tt.wantHeaders {
				if got := resp.Header.Values(k); !slices.Equal(got, want) {
					t.Errorf("header %s = %q, want %q", k, got, want)
				}
			}
		})
	}
}

func TestNewAPIGatewayRejectsBadResources(t *testing.T) {
	for _, resource := range []string{"orders", "/orders//x", "/orders/{proxy+}/x", "/orders/{}", "/orders/a{id}"} {
		t.Run(resource, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Errorf("NewAPIGateway accepted resource %q", resource)
				}
			}()
			NewAPIGateway(echoRequest, []Route{{Method: "GET", Resource: resource}}, testLogger(t))
		})
	}
}
