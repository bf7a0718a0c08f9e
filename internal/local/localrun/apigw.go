package localrun

import (
	"cmp"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"
)

// LocalCaller is the principal the local gateway gives every request, as
// requestContext.identity.caller: there is no IAM locally, so all of `make
// run` is one caller.
const LocalCaller = "LOCAL:make-run"

// MaxRequestBody is API Gateway's payload limit for REST APIs.
const MaxRequestBody = 10 << 20

// Route is one method of one API Gateway resource, written as API Gateway
// writes it: {Method: "GET", Resource: "/orders/{id}"}. A final segment
// {name+} is a greedy path variable, and Method "ANY" matches every method.
type Route struct {
	Method   string
	Resource string
}

// NewAPIGateway returns an http.Handler that turns each request into the
// events.APIGatewayProxyRequest a REST API (v1) Lambda proxy integration would
// send, calls handler, and writes its response back as API Gateway would.
//
// Header names reach the handler in Go's canonical form (Content-Type), since
// net/http does not keep the client's spelling; handlers should look headers
// up case-insensitively, as they must behind API Gateway anyway.
//
// It panics if a route's Resource is not a valid resource template, as
// http.ServeMux does for a bad pattern.
func NewAPIGateway(handler func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error), routes []Route, log *slog.Logger) http.Handler {
	gw := &apiGateway{handler: handler, log: log}
	byTemplate := map[string]*resource{}
	for _, rt := range routes {
		res, ok := byTemplate[rt.Resource]
		if !ok {
			segments, err := parseResource(rt.Resource)
			if err != nil {
				panic(fmt.Sprintf("localrun: route %s %s: %v", rt.Method, rt.Resource, err))
			}
			res = &resource{template: rt.Resource, segments: segments, methods: map[string]bool{}}
			byTemplate[rt.Resource] = res
			gw.resources = append(gw.resources, res)
		}
		res.methods[strings.ToUpper(rt.Method)] = true
	}
	// API Gateway prefers the most specific resource: a literal segment beats
	// a path variable, which beats a greedy one. Sorting once lets ServeHTTP
	// take the first match.
	slices.SortStableFunc(gw.resources, func(a, b *resource) int {
		for i := range min(len(a.segments), len(b.segments)) {
			if c := cmp.Compare(a.segments[i].kind, b.segments[i].kind); c != 0 {
				return c
			}
		}
		return cmp.Compare(len(b.segments), len(a.segments))
	})
	return gw
}

type apiGateway struct {
	handler   func(context.Context, events.APIGatewayProxyRequest) (events.APIGatewayProxyResponse, error)
	resources []*resource
	log       *slog.Logger
}

type resource struct {
	template string
	segments []segment
	methods  map[string]bool
}

type segmentKind int

const (
	literalSegment segmentKind = iota
	variableSegment
	greedySegment
)

type segment struct {
	kind segmentKind
	text string // the literal, or the variable's name
}

func parseResource(template string) ([]segment, error) {
	if !strings.HasPrefix(template, "/") {
		return nil, errors.New("resource must start with /")
	}
	if template == "/" {
		return nil, nil
	}
	parts := strings.Split(template[1:], "/")
	segments := make([]segment, len(parts))
	for i, p := range parts {
		switch {
		case p == "":
			return nil, errors.New("empty path segment")
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "+}"):
			if i != len(parts)-1 {
				return nil, fmt.Errorf("greedy variable %s must be the last segment", p)
			}
			segments[i] = segment{kind: greedySegment, text: p[1 : len(p)-2]}
		case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			segments[i] = segment{kind: variableSegment, text: p[1 : len(p)-1]}
		case strings.ContainsAny(p, "{}"):
			return nil, fmt.Errorf("malformed segment %q", p)
		default:
			segments[i] = segment{kind: literalSegment, text: p}
		}
		if segments[i].kind != literalSegment && segments[i].text == "" {
			return nil, fmt.Errorf("unnamed path variable %q", p)
		}
	}
	return segments, nil
}

// match reports whether the request path, already split into escaped
// segments, fits the resource, and returns its decoded path parameters.
func (res *resource) match(escaped []string) (map[string]string, bool) {
	var params map[string]string
	for i, seg := range res.segments {
		if i >= len(escaped) {
			return nil, false
		}
		if seg.kind == greedySegment {
			rest, err := url.PathUnescape(strings.Join(escaped[i:], "/"))
			if err != nil || rest == "" {
				return nil, false
			}
			if params == nil {
				params = map[string]string{}
			}
			params[seg.text] = rest
			return params, true
		}
		value, err := url.PathUnescape(escaped[i])
		if err != nil || value == "" {
			return nil, false
		}
		if seg.kind == literalSegment {
			if value != seg.text {
				return nil, false
			}
			continue
		}
		if params == nil {
			params = map[string]string{}
		}
		params[seg.text] = value
	}
	return params, len(escaped) == len(res.segments)
}

func (gw *apiGateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	started := time.Now()
	var escaped []string
	if p := strings.TrimPrefix(r.URL.EscapedPath(), "/"); p != "" {
		escaped = strings.Split(p, "/")
	}
	var res *resource
	var params map[string]string
	for _, candidate := range gw.resources {
		if p, ok := candidate.match(escaped); ok {
			res, params = candidate, p
			break
		}
	}
	if res == nil {
		writeJSON(w, http.StatusNotFound, apiError{"no_route", "no route matches this path"})
		return
	}
	if !res.methods[r.Method] && !res.methods["ANY"] {
		allowed := make([]string, 0, len(res.methods))
		for m := range res.methods {
			allowed = append(allowed, m)
		}
		slices.Sort(allowed)
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		writeJSON(w, http.StatusMethodNotAllowed, apiError{"method_not_allowed", "this resource does not take that method; see the Allow header"})
		return
	}

	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxRequestBody))
	if err != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](err); ok {
			writeJSON(w, http.StatusRequestEntityTooLarge, apiError{"too_large", "the request body exceeds 10 MiB"})
			return
		}
		writeJSON(w, http.StatusBadRequest, apiError{"invalid_request", "could not read the request body"})
		return
	}

	req := gw.proxyRequest(r, res.template, params, body, started)
	resp, requestID, err := invoke(r.Context(), gw.log, gw.handler, req)
	log := gw.log.With("request_id", requestID, "method", r.Method, "path", r.URL.Path, "resource", res.template)
	w.Header()["x-amzn-RequestId"] = []string{requestID}
	if err != nil {
		log.ErrorContext(r.Context(), "handler returned an error", "error", err)
		writeJSON(w, http.StatusBadGateway, map[string]string{"message": "Internal server error"})
		return
	}
	if err := writeProxyResponse(w, resp); err != nil {
		log.ErrorContext(r.Context(), "malformed Lambda proxy response", "error", err)
		writeJSON(w, http.StatusBadGateway, map[string]string{"message": "Internal server error"})
		return
	}
	log.InfoContext(r.Context(), "api request", "status", resp.StatusCode, "duration", time.Since(started))
}

func (gw *apiGateway) proxyRequest(r *http.Request, template string, params map[string]string, body []byte, received time.Time) events.APIGatewayProxyRequest {
	sourceIP, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		sourceIP = r.RemoteAddr
	}
	header := r.Header.Clone()
	// net/http moves Host out of the header map; API Gateway passes it on,
	// and adds the X-Forwarded-* headers its own load balancer would.
	header.Set("Host", r.Host)
	header.Add("X-Forwarded-For", sourceIP)
	proto := "http"
	if r.TLS != nil {
		proto = "https"
	}
	header.Set("X-Forwarded-Proto", proto)

	req := events.APIGatewayProxyRequest{
		Resource:          template,
		Path:              r.URL.Path,
		HTTPMethod:        r.Method,
		Headers:           lastValues(header),
		MultiValueHeaders: header,
		PathParameters:    params,
		RequestContext: events.APIGatewayProxyRequestContext{
			Stage:            "local",
			RequestID:        newRequestID(),
			HTTPMethod:       r.Method,
			ResourcePath:     template,
			Path:             "/local" + r.URL.Path,
			Protocol:         r.Proto,
			DomainName:       r.Host,
			APIID:            "local",
			RequestTime:      received.UTC().Format("02/Jan/2006:15:04:05 -0700"),
			RequestTimeEpoch: received.UnixMilli(),
			Identity: events.APIGatewayRequestIdentity{
				SourceIP:  sourceIP,
				UserAgent: r.UserAgent(),
				Caller:    LocalCaller,
				User:      LocalCaller,
			},
		},
	}
	// API Gateway sends null, not {}, when there is no query string.
	if query := r.URL.Query(); len(query) > 0 {
		req.QueryStringParameters = lastValues(query)
		req.MultiValueQueryStringParameters = query
	}
	if utf8.Valid(body) {
		req.Body = string(body)
	} else {
		req.Body = base64.StdEncoding.EncodeToString(body)
		req.IsBase64Encoded = true
	}
	return req
}

// lastValues flattens a multi-valued map the way API Gateway fills its
// single-valued fields: the last value wins.
func lastValues(m map[string][]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, vs := range m {
		if len(vs) > 0 {
			out[k] = vs[len(vs)-1]
		}
	}
	return out
}

func writeProxyResponse(w http.ResponseWriter, resp events.APIGatewayProxyResponse) error {
	if resp.StatusCode < 100 || resp.StatusCode > 599 {
		return fmt.Errorf("status code %d out of range", resp.StatusCode)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		decoded, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			return fmt.Errorf("decode base64 body: %w", err)
		}
		body = decoded
	}
	// API Gateway merges the two header maps; a pair given in both appears
	// once.
	h := w.Header()
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			h.Add(k, v)
		}
	}
	for k, v := range resp.Headers {
		if !slices.Contains(h.Values(k), v) {
			h.Add(k, v)
		}
	}
	// Without this net/http would sniff a type; API Gateway defaults to JSON.
	if h.Get("Content-Type") == "" {
		h.Set("Content-Type", "application/json")
	}
	w.WriteHeader(resp.StatusCode)
	_, _ = w.Write(body) // The client hung up; there is nobody left to tell.
	return nil
}

// apiError is the API's error shape ({"error": code, "message": text}),
// which the gateway's own answers use too. Messages never echo the
// request, whose path may be of any length.
type apiError struct {
	Code    string `json:"error"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // The client hung up; there is nobody left to tell.
}
