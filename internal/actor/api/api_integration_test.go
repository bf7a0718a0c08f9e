package api_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"orderly/internal/actor/api"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second}

// post sends a POST /orders as API Gateway would, with
// Content-Type: application/json unless headers name a Content-Type ("" to
// send none). A header given as "a\x00b" is sent twice, once with each value.
func post(t *testing.T, w *testenv.World, body string, headers map[string]string) events.APIGatewayProxyResponse {
	t.Helper()
	return postAs(t, w, testenv.Caller, body, headers)
}

func postAs(t *testing.T, w *testenv.World, caller, body string, headers map[string]string) events.APIGatewayProxyResponse {
	t.Helper()
	single, multi := map[string]string{"Content-Type": "application/json"}, map[string][]string{}
	for k, v := range headers {
		if strings.EqualFold(k, "Content-Type") {
			delete(single, "Content-Type")
			if v == "" {
				continue
			}
		}
		values := strings.Split(v, "\x00")
		single[k], multi[k] = values[len(values)-1], values
	}
	for k, v := range single {
		if multi[k] == nil {
			multi[k] = []string{v}
		}
	}
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: body,
		Headers: single, MultiValueHeaders: multi, RequestContext: testenv.As(caller),
	})
	if err != nil {
		t.Fatalf("POST /orders: %v", err)
	}
	return resp
}

func get(t *testing.T, w *testenv.World, id string) events.APIGatewayProxyResponse {
	t.Helper()
	return getAs(t, w, testenv.Caller, api.ResourceOrder, id)
}

func getAs(t *testing.T, w *testenv.World, caller, resource, id string) events.APIGatewayProxyResponse {
	t.Helper()
	path := strings.Replace(resource, "{id}", id, 1)
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodGet, Resource: resource, Path: path, PathParameters: map[string]string{"id": id},
		RequestContext: testenv.As(caller),
	})
	if err != nil {
		t.Fatalf("GET /orders/%s: %v", id, err)
	}
	return resp
}

func orderID(t *testing.T, resp events.APIGatewayProxyResponse) string {
	t.Helper()
	var out struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil || out.OrderID == "" {
		t.Fatalf("response %d %s has no orderId", resp.StatusCode, resp.Body)
	}
	return out.OrderID
}

// items counts the items of the orders table; only a test may Scan.
func items(t *testing.T, w *testenv.World) int {
	t.Helper()
	table := w.Stack.Catalog.Orders.Name
	out, err := w.Clients.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatalf("scan %s: %v", table, err)
	}
	return int(out.Count)
}

const validBody = `{"customerId":"c-42","lines":[{"sku":"BOOK-1","quantity":2},{"sku":"PEN-9","quantity":1}]}`

func TestSubmitWritesOrderAndEveryStepAtomically(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	resp := post(t, w, validBody, map[string]string{"Content-Type": "application/json"})
	if resp.StatusCode != http.StatusAccepted {
		t.Fatalf("got %d %s, want 202", resp.StatusCode, resp.Body)
	}
	id := orderID(t, resp)
	if got := items(t, w); got != 1 {
		t.Errorf("got %d items, want one: the order with its %d step states", got, len(w.Workflow.Steps))
	}
	// The operators' view shows the claim; the client's is checked in
	// TestClientsSeeTheirOrderNotTheServicesInternals.
	g := getAs(t, w, testenv.Caller, api.ResourceOperatorOrder, id)
	var view api.OrderView
	if err := json.Unmarshal([]byte(g.Body), &view); err != nil || g.StatusCode != http.StatusOK {
		t.Fatalf("GET: %d %s (%v)", g.StatusCode, g.Body, err)
	}
	var input ordertest.Submission
	if err := json.Unmarshal(view.Input, &input); err != nil {
		t.Fatalf("input %s: %v", view.Input, err)
	}
	if view.Status != order.StatusPending || view.CustomerID != "c-42" || len(input.Lines) != 2 || len(view.Steps) != 3 || view.Workflow != "order" {
		t.Fatalf("got %s, want a Pending order of c-42 with 2 lines and 3 steps", g.Body)
	}
	// The submission claimed the first step and sent its request.
	wantStates, wantAttempts := []string{"Processing", "NotStarted", "NotStarted"}, []int{1, 0, 0}
	for i, st := range view.Steps {
		if st.Step != w.Workflow.Steps[i].Name || st.State != wantStates[i] || st.Attempt != wantAttempts[i] || st.FailureCount != 0 {
			t.Errorf("step %d: got %+v, want %s %s attempt %d", i, st, w.Workflow.Steps[i].Name, wantStates[i], wantAttempts[i])
		}
	}
	if view.Steps[0].CompleteBy == nil || view.Steps[0].LockedBy != "submit-test" || view.Steps[1].CompleteBy != nil {
		t.Errorf("got first step locked by %q until %v, second until %v; want the first claimed by the submission only",
			view.Steps[0].LockedBy, view.Steps[0].CompleteBy, view.Steps[1].CompleteBy)
	}
	reqs := w.Requests(t, w.Workflow.Steps[0].Agent)
	if len(reqs) != 1 || reqs[0].OrderID != id || reqs[0].Attempt != 1 || !reqs[0].CompleteBy.Equal(*view.Steps[0].CompleteBy) {
		t.Errorf("got requests %s, want the first step's on attempt 1 until %v", testenv.Describe(reqs), view.Steps[0].CompleteBy)
	}
}

// An order is safe once it is stored: when its first request cannot be
// sent, the answer is still 202 and the claim is released for the stream.
func TestSubmitReleasesTheClaimWhenTheRequestIsNotSent(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	broken := w.NewAPI(t, func(c *api.Config) { c.Store, c.Dispatcher = w.Store, w.BrokenDispatcher() })
	resp, err := broken.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: validBody,
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(testenv.Caller)})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("got %d %s (%v), want 202", resp.StatusCode, resp.Body, err)
	}
	st := w.Step(t, orderID(t, resp), w.Workflow.Steps[0].Name)
	if st.ProcessState != order.Pending || st.LockedBy != "" || st.FailureCount != 0 || !strings.Contains(st.LastError, "request not sent") {
		t.Errorf("got %s locked by %q with %d failures and last error %q, want Pending, unlocked, no failure, the reason",
			st.ProcessState, st.LockedBy, st.FailureCount, st.LastError)
	}
}

func TestIdempotencyKey(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	key := map[string]string{"Idempotency-Key": "checkout-7f3a"}
	first := post(t, w, validBody, key)
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("first: got %d %s, want 202", first.StatusCode, first.Body)
	}
	// Same key, same content (formatted differently, header in other case).
	again := post(t, w, "{\n  \"lines\": [{\"sku\":\"BOOK-1\",\"quantity\":2},{\"quantity\":1,\"sku\":\"PEN-9\"}],\n  \"customerId\": \"c-42\"\n}",
		map[string]string{"idempotency-key": "checkout-7f3a"})
	if again.StatusCode != http.StatusAccepted || orderID(t, again) != orderID(t, first) || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("replay: got %d %s %v, want 202 with the same order, marked replayed", again.StatusCode, again.Body, again.Headers)
	}
	// Same key, different order.
	conflict := post(t, w, `{"customerId":"c-42","lines":[{"sku":"BOOK-1","quantity":3}]}`, key)
	if conflict.StatusCode != http.StatusConflict || !strings.Contains(conflict.Body, "idempotency_conflict") {
		t.Errorf("conflict: got %d %s, want 409 idempotency_conflict", conflict.StatusCode, conflict.Body)
	}
	if got := items(t, w); got != 1 {
		t.Errorf("got %d items after replay and conflict, want exactly one order", got)
	}
	if reqs := w.Requests(t, w.Workflow.Steps[0].Agent); len(reqs) != 1 {
		t.Errorf("got %d first-step requests after replay and conflict, want 1: %s", len(reqs), testenv.Describe(reqs))
	}
	// A different key is a different order.
	other := post(t, w, validBody, map[string]string{"Idempotency-Key": "checkout-8b1c"})
	if other.StatusCode != http.StatusAccepted || orderID(t, other) == orderID(t, first) {
		t.Errorf("other key: got %d %s, want a new order", other.StatusCode, other.Body)
	}
}

// Finding 2 of the reliability review: keys were global, so another
// caller could never place an order with the same key, and the 409 named
// the first caller's order, which anyone could then read.
func TestIdempotencyKeysAndOrdersBelongToTheirCaller(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	const alice, bob = "AROAALICE000000000001:checkout", "AROABOB00000000000001:checkout"
	key := map[string]string{"Idempotency-Key": "checkout-1"}

	first := postAs(t, w, alice, validBody, key)
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("alice: got %d %s, want 202", first.StatusCode, first.Body)
	}
	aliceOrder := orderID(t, first)
	again := postAs(t, w, alice, validBody, key)
	if orderID(t, again) != aliceOrder || again.Headers["Idempotent-Replayed"] != "true" {
		t.Errorf("alice again: got %d %s, want a replay of %s", again.StatusCode, again.Body, aliceOrder)
	}
	other := postAs(t, w, bob, validBody, key)
	if other.StatusCode != http.StatusAccepted || orderID(t, other) == aliceOrder {
		t.Errorf("bob with alice's key: got %d %s, want an order of his own", other.StatusCode, other.Body)
	}
	conflict := postAs(t, w, alice, `{"customerId":"c-42","lines":[{"sku":"BOOK-1","quantity":9}]}`, key)
	if conflict.StatusCode != http.StatusConflict || strings.Contains(conflict.Body, aliceOrder) {
		t.Errorf("alice's conflict: got %d %s, want 409 naming no order", conflict.StatusCode, conflict.Body)
	}

	tests := []struct {
		name, caller, resource string
		want                   int
	}{
		{"the caller reads its order", alice, api.ResourceOrder, http.StatusOK},
		{"another caller cannot, as if it did not exist", bob, api.ResourceOrder, http.StatusNotFound},
		{"an operator reads any order on the operator route", bob, api.ResourceOperatorOrder, http.StatusOK},
		{"no caller identity", "", api.ResourceOrder, http.StatusForbidden},
	}
	for _, tt := range tests {
		if resp := getAs(t, w, tt.caller, tt.resource, aliceOrder); resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, resp.Body, tt.want)
		}
	}
	if resp := postAs(t, w, "", validBody, nil); resp.StatusCode != http.StatusForbidden || !strings.Contains(resp.Body, "forbidden") {
		t.Errorf("unsigned POST: got %d %s, want 403 forbidden", resp.StatusCode, resp.Body)
	}
	if got := items(t, w); got != 2 {
		t.Errorf("got %d orders stored, want alice's and bob's", got)
	}
}

func TestBadInputIsRejectedAndWritesNothing(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	lines := func(n int) string {
		parts := make([]string, n)
		for i := range parts {
			parts[i] = `{"sku":"S-` + strings.Repeat("x", 1) + string(rune('a'+i%26)) + string(rune('a'+i/26)) + `","quantity":1}`
		}
		return `{"customerId":"c","lines":[` + strings.Join(parts, ",") + `]}`
	}
	tests := []struct {
		name    string
		body    string
		headers map[string]string
		status  int
		mention string
	}{
		{"malformed JSON", `{"customerId":`, nil, 400, "malformed JSON"},
		{"not an object", `[1,2]`, nil, 400, "body"},
		{"empty body", ``, nil, 400, "empty body"},
		{"missing customer", `{"lines":[{"sku":"A","quantity":1}]}`, nil, 400, `"field":"customerId","problem":"is required"`},
		{"no lines", `{"customerId":"c","lines":[]}`, nil, 400, "lines"},
		{"zero quantity", `{"customerId":"c","lines":[{"sku":"A","quantity":0}]}`, nil, 400, "lines[0].quantity"},
		{"negative quantity", `{"customerId":"c","lines":[{"sku":"A","quantity":-3}]}`, nil, 400, "lines[0].quantity"},
		{"fractional quantity", `{"customerId":"c","lines":[{"sku":"A","quantity":1.5}]}`, nil, 400, "quantity"},
		{"missing sku", `{"customerId":"c","lines":[{"quantity":1}]}`, nil, 400, `"field":"lines[0].sku","problem":"is required"`},
		{"unknown field", `{"customerId":"c","lines":[{"sku":"A","quantity":1}],"price":3}`, nil, 400, "price"},
		{"101 lines", lines(101), nil, 400, "got 101, want 100"},
		{"a token that misses its pattern is not echoed", `{"customerId":"c","lines":[{"sku":"secret token!","quantity":1}]}`, nil, 400, "does not have the form"},
		{"over 64 KiB", `{"customerId":"` + strings.Repeat("x", 70<<10) + `"}`, nil, 413, "too_large"},
		{"not JSON content type", `customerId=c`, map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, 415, "application/json"},
		{"bad idempotency key", `{"customerId":"c","lines":[{"sku":"A","quantity":1}]}`, map[string]string{"Idempotency-Key": "has space"}, 400, "Idempotency-Key"},
		{"two idempotency keys", `{"customerId":"c","lines":[{"sku":"A","quantity":1}]}`, map[string]string{"Idempotency-Key": "k-1\x00k-2"}, 400, "once"},
		{"no content type", `{"customerId":"c","lines":[{"sku":"A","quantity":1}]}`, map[string]string{"Content-Type": ""}, 415, "unsupported_media_type"},
		{"latin-1 charset", `{"customerId":"c","lines":[{"sku":"A","quantity":1}]}`, map[string]string{"Content-Type": "application/json; charset=latin-1"}, 415, "UTF-8"},
		{"duplicate key", `{"customerId":"c","customerId":"d","lines":[{"sku":"A","quantity":1}]}`, nil, 400, "more than once"},
		{"field name in another case", `{"customerId":"c","CUSTOMERID":"d","lines":[{"sku":"A","quantity":1}]}`, nil, 400, "CUSTOMERID"},
		{"invalid UTF-8", "{\"customerId\":\"c\xff\",\"lines\":[{\"sku\":\"A\",\"quantity\":1}]}", nil, 400, "UTF-8"},
		{"lone surrogate", `{"customerId":"c\ud800","lines":[{"sku":"A","quantity":1}]}`, nil, 400, "U+FFFD"},
		{"right-to-left override", `{"customerId":"c\u202e","lines":[{"sku":"A","quantity":1}]}`, nil, 400, "U+202E"},
		{"NUL in notificationTarget", `{"customerId":"c","lines":[{"sku":"A","quantity":1}],"notificationTarget":"a\u0000"}`, nil, 400, "U+0000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, w, tt.body, tt.headers)
			if resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.mention) {
				t.Errorf("got %d %s, want %d mentioning %q", resp.StatusCode, resp.Body, tt.status, tt.mention)
			}
			if resp.Headers["Content-Type"] != "application/json" || !json.Valid([]byte(resp.Body)) {
				t.Errorf("got content type %q, body %s; want a JSON error", resp.Headers["Content-Type"], resp.Body)
			}
		})
	}
	if got, reqs := items(t, w), w.Requests(t, w.Workflow.Steps[0].Agent); got != 0 || len(reqs) != 0 {
		t.Errorf("got %d items written and %d requests sent by rejected requests, want none", got, len(reqs))
	}
	if ok := post(t, w, lines(100), nil); ok.StatusCode != http.StatusAccepted {
		t.Errorf("100 lines: got %d %s, want 202 (the limit is inclusive)", ok.StatusCode, ok.Body)
	}
}

func TestGetUnknownOrder(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	long := strings.Repeat("A", 10_000)
	for _, id := range []string{order.NewID(), "not-an-id", "../etc", long} {
		resp := get(t, w, id)
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(resp.Body, "not_found") {
			t.Errorf("GET %.40q: got %d %.200s, want 404 not_found", id, resp.StatusCode, resp.Body)
		}
		if len(resp.Body) > 200 {
			t.Errorf("GET %.40q: a %d-byte answer, want a short one that does not echo the id", id, len(resp.Body))
		}
	}
}

func TestWrongMethodAndRoute(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	for _, tt := range []struct {
		method, path string
		status       int
		allow        string
	}{
		{http.MethodDelete, "/orders", http.StatusMethodNotAllowed, "GET, POST"},
		{http.MethodGet, "/workflows/order/orders", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/ops/orders", http.StatusMethodNotAllowed, "GET"},
		{http.MethodGet, "/orders/" + order.NewID() + "/cancel", http.StatusMethodNotAllowed, "POST"},
		{http.MethodPost, "/orders/" + order.NewID() + "/history", http.StatusMethodNotAllowed, "GET"},
		{http.MethodGet, "/nope", http.StatusNotFound, ""},
		{http.MethodGet, "/ops/nope", http.StatusNotFound, ""},
	} {
		// As a direct invocation, which names no resource.
		resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{HTTPMethod: tt.method, Path: tt.path, RequestContext: testenv.As(testenv.Caller)})
		if err != nil || resp.StatusCode != tt.status || resp.Headers["Allow"] != tt.allow {
			t.Errorf("%s %s: got %d %v (%v), want %d with Allow %q", tt.method, tt.path, resp.StatusCode, resp.Headers, err, tt.status, tt.allow)
		}
	}
}

// Bad input on the cancel and redrive routes gets a 4xx with docs/api.md's error
// code, and writes nothing.
func TestLifecycleRoutesRejectBadInputAndWriteNothing(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	before, _ := w.Records(t, id)
	tests := []struct {
		name, method, path, body, contentType, caller string
		status                                        int
		code                                          string
	}{
		{"cancel with a body", "POST", "/orders/" + id + "/cancel", `{"reason":"x"}`, "application/json", testenv.Caller, 400, "invalid_request"},
		{"cancel with malformed JSON", "POST", "/orders/" + id + "/cancel", `{`, "application/json", testenv.Caller, 400, "invalid_request"},
		{"cancel with a body that is not JSON", "POST", "/orders/" + id + "/cancel", `please`, "text/plain", testenv.Caller, 415, "unsupported_media_type"},
		{"cancel of an order that does not exist", "POST", "/orders/" + order.NewID() + "/cancel", ``, "", testenv.Caller, 404, "not_found"},
		{"cancel of a malformed id", "POST", "/orders/not-an-id/cancel", ``, "", testenv.Caller, 404, "not_found"},
		{"cancel of another caller's order", "POST", "/orders/" + id + "/cancel", ``, "", "AIDAOTHERCALLER0000001", 404, "not_found"},
		{"cancel without a caller", "POST", "/orders/" + id + "/cancel", ``, "", "", 403, "forbidden"},
		{"GET on cancel", "GET", "/orders/" + id + "/cancel", ``, "", testenv.Caller, 405, "method_not_allowed"},
		{"redrive with an unknown action", "POST", "/orders/" + id + "/redrive", `{"action":"rewind"}`, "application/json", testenv.Caller, 400, "invalid_request"},
		{"redrive with a repeated key", "POST", "/orders/" + id + "/redrive", `{"action":"retry","action":"compensate"}`, "application/json", testenv.Caller, 400, "invalid_request"},
		{"redrive with a field in another case", "POST", "/orders/" + id + "/redrive", `{"Action":"retry"}`, "application/json", testenv.Caller, 400, "invalid_request"},
		{"redrive of an order not in Error", "POST", "/orders/" + id + "/redrive", ``, "", testenv.Caller, 409, "invalid_state"},
		{"cancel with a body over 64 KiB", "POST", "/orders/" + id + "/cancel", `{"reason":"` + strings.Repeat("x", 70<<10) + `"}`, "application/json", testenv.Caller, 413, "too_large"},
		{"redrive with a body over 64 KiB", "POST", "/orders/" + id + "/redrive", `{"action":"` + strings.Repeat("x", 70<<10) + `"}`, "application/json", testenv.Caller, 413, "too_large"},
		{"an unknown action route", "POST", "/orders/" + id + "/rewind", ``, "", testenv.Caller, 404, "no_route"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			headers := map[string]string{}
			if tt.contentType != "" {
				headers["Content-Type"] = tt.contentType
			}
			resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
				HTTPMethod: tt.method, Path: tt.path, Body: tt.body, Headers: headers, RequestContext: testenv.As(tt.caller),
			})
			if err != nil {
				t.Fatalf("%s %s: %v", tt.method, tt.path, err)
			}
			var body struct{ Error, Message string }
			_ = json.Unmarshal([]byte(resp.Body), &body)
			if resp.StatusCode != tt.status || body.Error != tt.code || body.Message == "" {
				t.Errorf("got %d %s, want %d %s with a message", resp.StatusCode, resp.Body, tt.status, tt.code)
			}
			if after, _ := w.Records(t, id); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
				t.Errorf("the order changed: %s at %s, was %s at %s", after.Status, after.UpdatedAt, before.Status, before.UpdatedAt)
			}
		})
	}
}

// On LocalStack, whose API Gateway passes no caller identity, the stack
// names one caller for requests that name none; a request that names its
// caller keeps it.
func TestAnonymousCallerForLocalStack(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	w.API = w.NewAPI(t, func(c *api.Config) { c.AnonymousCaller = "LOCALSTACK" })
	anon := postAs(t, w, "", validBody, nil)
	if anon.StatusCode != http.StatusAccepted {
		t.Fatalf("POST without a caller: got %d %s, want 202", anon.StatusCode, anon.Body)
	}
	named := postAs(t, w, testenv.Caller, validBody, nil)
	tests := []struct {
		id, caller string
	}{
		{orderID(t, anon), "LOCALSTACK"},
		{orderID(t, named), testenv.Caller},
	}
	for _, tt := range tests {
		if o, _ := w.Records(t, tt.id); o.Caller != tt.caller {
			t.Errorf("order %s: caller %q, want %q", tt.id, o.Caller, tt.caller)
		}
	}
	if resp := getAs(t, w, "", api.ResourceOrder, orderID(t, anon)); resp.StatusCode != http.StatusOK {
		t.Errorf("GET without a caller: got %d %s, want the anonymous caller's order", resp.StatusCode, resp.Body)
	}
}

// lifecycle posts to an order's cancel or redrive route as the World's
// caller (who may do both locally) and returns the status and the body.
func lifecycle(t *testing.T, w *testenv.World, resource, id, body string) (int, map[string]any) {
	t.Helper()
	headers := map[string]string{}
	if body != "" {
		headers["Content-Type"] = "application/json"
	}
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: resource, Path: strings.Replace(resource, "{id}", id, 1),
		PathParameters: map[string]string{"id": id}, Body: body, Headers: headers, RequestContext: testenv.As(testenv.Caller),
	})
	if err != nil {
		t.Fatalf("POST %s: %v", resource, err)
	}
	var out map[string]any
	_ = json.Unmarshal([]byte(resp.Body), &out)
	return resp.StatusCode, out
}

// undoTimedOut brings an order to Error because its first undo (the
// refund of step 2, after step 3 was refused) timed out on every attempt:
// each attempt's request went out and nothing came back, so the refund may
// have been made.
func undoTimedOut(t *testing.T, w *testenv.World) string {
	t.Helper()
	ctx := context.Background()
	s := w.Scheduler("s1")
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	for _, r := range []order.StepReply{
		{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded},
		{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1, Outcome: order.OutcomeSucceeded},
		{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "address undeliverable"},
	} {
		if resp, err := s.HandleReplies(ctx, testenv.ReplyEvent(r)); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Fatalf("reply %+v: %+v, %v", r, resp, err)
		}
	}
	for attempt := 1; attempt <= timing.FailureThreshold; attempt++ {
		w.Requests(t, ordertest.AgentPayment) // the agent took the refund and went silent
		_, steps := w.Records(t, id)
		undo := steps[3]
		if !undo.Undo || undo.ProcessState != order.Processing || undo.Attempt != attempt {
			t.Fatalf("record 3: %+v, want the undo of step 2 on attempt %d", undo, attempt)
		}
		w.Clock.Advance(undo.CompleteBy.Sub(w.Clock.Now()) + time.Second)
		if _, err := w.Supervisor().Run(ctx); err != nil {
			t.Fatalf("supervisor: %v", err)
		}
		if attempt < timing.FailureThreshold {
			if resp, err := s.HandleStream(ctx, w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("claim: %+v, %v", resp, err)
			}
		}
	}
	o, steps := w.Records(t, id)
	if o.Status != order.StatusError || steps[3].ProcessState != order.Error {
		t.Fatalf("got %s %v, want Error at the undo", o.Status, testenv.States(steps))
	}
	return id
}

// A retry redrive would run the order forward over an undo that may have
// been done (the refund timed out): it is refused with 409 and what to do
// instead, and nothing is written. The compensate redrive resumes undoing.
func TestRedriveRetryOverAnUndoThatMayHaveRunIsRefused(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	id := undoTimedOut(t, w)
	before, steps := w.Records(t, id)

	// Operators see the choice before they make it; clients do not.
	var view api.OrderView
	if err := json.Unmarshal([]byte(getAs(t, w, testenv.Caller, api.ResourceOperatorOrder, id).Body), &view); err != nil {
		t.Fatal(err)
	}
	want := []api.RedriveView{{Action: order.RedriveRetry}, {Action: order.RedriveCompensate, Default: true}}
	if len(view.Redrive) != 2 || view.Redrive[0].Action != want[0].Action || view.Redrive[0].Refused == "" || view.Redrive[0].Default ||
		view.Redrive[1].Action != want[1].Action || view.Redrive[1].Refused != "" || view.Redrive[1].What == "" || !view.Redrive[1].Default {
		t.Errorf("operator's view offers %s, want retry refused and compensate (the default) described", testenv.Describe(view.Redrive))
	}
	if body := get(t, w, id).Body; strings.Contains(body, `"redrive"`) {
		t.Errorf("the client's view offers a redrive: %s", body)
	}

	code, body := lifecycle(t, w, api.ResourceRedrive, id, `{"action":"retry"}`)
	msg, _ := body["message"].(string)
	if code != http.StatusConflict || body["error"] != "invalid_state" || !strings.Contains(msg, `"compensate"`) || !strings.Contains(msg, "may have been done") {
		t.Errorf("retry redrive: %d %v, want 409 invalid_state saying the undo may have been done and to redrive with \"compensate\"", code, body)
	}
	after, stepsAfter := w.Records(t, id)
	if after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) || !slices.Equal(testenv.States(stepsAfter), testenv.States(steps)) {
		t.Errorf("the refused redrive changed the order: %s %v at %s, was %s %v at %s",
			after.Status, testenv.States(stepsAfter), after.UpdatedAt, before.Status, testenv.States(steps), before.UpdatedAt)
	}

	if code, body := lifecycle(t, w, api.ResourceRedrive, id, `{"action":"compensate"}`); code != http.StatusAccepted || body["status"] != string(order.StatusCompensating) {
		t.Fatalf("compensate redrive: %d %v, want 202 Compensating", code, body)
	}
	// The resumed undo is refused on its next attempt: its fresh failure
	// count is 0, but the timeouts before the redrive are remembered, so
	// running forward is refused still.
	s := w.Scheduler("s1")
	if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("claim: %+v, %v", resp, err)
	}
	refused := order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Undo: true, Record: 3, Attempt: timing.FailureThreshold + 1,
		Outcome: order.OutcomeFailed, Reason: "refund refused"}
	if resp, err := s.HandleReplies(context.Background(), testenv.ReplyEvent(refused)); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply: %+v, %v", resp, err)
	}
	o, steps := w.Records(t, id)
	if undo := steps[3]; o.Status != order.StatusError || undo.FailureCount != 0 || undo.PastFailures != timing.FailureThreshold {
		t.Fatalf("after the refusal: %s, undo failures %d past %d; want Error, 0, %d", o.Status, undo.FailureCount, undo.PastFailures, timing.FailureThreshold)
	}
	if code, body := lifecycle(t, w, api.ResourceRedrive, id, `{"action":"retry"}`); code != http.StatusConflict || !strings.Contains(fmt.Sprint(body["message"]), "timed out") {
		t.Errorf("retry redrive after the refusal: %d %v, want 409 naming the timeouts", code, body)
	}
}

// cancelAs posts POST /orders/{id}/cancel signed by caller.
func cancelAs(t *testing.T, w *testenv.World, caller, id string) events.APIGatewayProxyResponse {
	t.Helper()
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceCancel, Path: "/orders/" + id + "/cancel",
		PathParameters: map[string]string{"id": id}, RequestContext: testenv.As(caller),
	})
	if err != nil {
		t.Fatalf("POST /orders/%s/cancel: %v", id, err)
	}
	return resp
}

// Everyone behind one shared role (an IAM Identity Center permission set,
// a role services assume with their own session names) is a caller of
// their own: the role's other sessions cannot read, cancel or replay into
// each other's orders, exactly as for another role. Operators still read
// every order on their route.
func TestSessionsOfOneRoleAreCallersApart(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	const alice, bob = "AROASHAREDCLIENTS0001:alice@example.com", "AROASHAREDCLIENTS0001:bob@example.com"
	key := map[string]string{"Idempotency-Key": "checkout-1"}
	first := postAs(t, w, alice, validBody, key)
	if first.StatusCode != http.StatusAccepted {
		t.Fatalf("alice: got %d %s, want 202", first.StatusCode, first.Body)
	}
	aliceOrder := orderID(t, first)
	if o, _ := w.Records(t, aliceOrder); o.Caller != alice {
		t.Errorf("alice's order is stored as %q's, want %q", o.Caller, alice)
	}
	// Bob's same key is his own order, not a replay of alice's.
	if other := postAs(t, w, bob, validBody, key); other.StatusCode != http.StatusAccepted || other.Headers["Idempotent-Replayed"] != "" || orderID(t, other) == aliceOrder {
		t.Errorf("bob with alice's key: got %d %s %v, want an order of his own", other.StatusCode, other.Body, other.Headers)
	}
	for _, tt := range []struct {
		name, caller, resource string
		want                   int
	}{
		{"alice reads her order", alice, api.ResourceOrder, http.StatusOK},
		{"alice reads its history", alice, api.ResourceHistory, http.StatusOK},
		{"bob, same role, cannot", bob, api.ResourceOrder, http.StatusNotFound},
		{"nor its history", bob, api.ResourceHistory, http.StatusNotFound},
		{"the role without a session is nobody's", "AROASHAREDCLIENTS0001", api.ResourceOrder, http.StatusNotFound},
		{"an operator reads it on the operator route", bob, api.ResourceOperatorOrder, http.StatusOK},
		{"and its history", bob, api.ResourceOperatorHistory, http.StatusOK},
	} {
		if resp := getAs(t, w, tt.caller, tt.resource, aliceOrder); resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, resp.Body, tt.want)
		}
	}
	before, _ := w.Records(t, aliceOrder)
	if resp := cancelAs(t, w, bob, aliceOrder); resp.StatusCode != http.StatusNotFound {
		t.Errorf("bob cancels alice's order: got %d %s, want 404", resp.StatusCode, resp.Body)
	}
	if after, _ := w.Records(t, aliceOrder); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("bob's refused cancel changed alice's order: %s at %s, was %s at %s", after.Status, after.UpdatedAt, before.Status, before.UpdatedAt)
	}
	if resp := cancelAs(t, w, alice, aliceOrder); resp.StatusCode != http.StatusAccepted {
		t.Errorf("alice cancels her order: got %d %s, want 202", resp.StatusCode, resp.Body)
	}
}

// An order submitted before callers were told apart by session names its
// role alone: it stays readable and cancellable by every session of that
// role (as it was when submitted), and by nobody else.
func TestOrdersFromBeforeSessionsCountedStayTheirRoles(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	now := w.Clock.Now().UTC().Truncate(time.Millisecond)
	legacy := order.Order{ID: order.NewID(),
		Status: order.StatusPending, Version: w.Workflow.Version, RequestHash: "h", KeyNonce: order.NewKeyNonce(), Caller: "AROASHAREDCLIENTS0001", CreatedAt: now, UpdatedAt: now}.WithInput(order.LegacyInput("c-42", []order.Line{{SKU: "BOOK-1", Quantity: 1}}, ""))
	if _, err := w.Store.CreateOrder(context.Background(), legacy, w.Workflow.NewStates(legacy.ID, "submit-test", now)); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name, caller string
		want         int
	}{
		{"a session of its role", "AROASHAREDCLIENTS0001:alice@example.com", http.StatusOK},
		{"another session of its role", "AROASHAREDCLIENTS0001:bob@example.com", http.StatusOK},
		{"another role", "AROAOTHERCLIENTS00001:alice@example.com", http.StatusNotFound},
		{"an IAM user", "AIDAOTHERCALLER0000001", http.StatusNotFound},
	} {
		if resp := getAs(t, w, tt.caller, api.ResourceOrder, legacy.ID); resp.StatusCode != tt.want {
			t.Errorf("%s: got %d %s, want %d", tt.name, resp.StatusCode, resp.Body, tt.want)
		}
	}
	if resp := cancelAs(t, w, "AROAOTHERCLIENTS00001:alice@example.com", legacy.ID); resp.StatusCode != http.StatusNotFound {
		t.Errorf("another role cancels it: got %d %s, want 404", resp.StatusCode, resp.Body)
	}
	if resp := cancelAs(t, w, "AROASHAREDCLIENTS0001:bob@example.com", legacy.ID); resp.StatusCode != http.StatusAccepted {
		t.Errorf("a session of its role cancels it: got %d %s, want 202", resp.StatusCode, resp.Body)
	}
}

// A named workflow's orders arrive on the resource the stack gives that
// workflow (with its own request model), or on the {workflow} resource
// for a name the stage does not run; direct invocations may name none.
func TestSubmitToANamedWorkflow(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	for _, tt := range []struct {
		name, resource, path string
		params               map[string]string
		status               int
		mention              string
	}{
		{"its own resource", "/workflows/order/orders", "/workflows/order/orders", nil, http.StatusAccepted, "Pending"},
		{"the {workflow} resource", api.ResourceWorkflowOrders, "/workflows/order/orders", map[string]string{"workflow": "order"}, http.StatusAccepted, "Pending"},
		{"no resource", "", "/workflows/order/orders", nil, http.StatusAccepted, "Pending"},
		{"a name the stage does not run", api.ResourceWorkflowOrders, "/workflows/nope/orders", map[string]string{"workflow": "nope"}, http.StatusBadRequest, "this stage runs order"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
				HTTPMethod: http.MethodPost, Resource: tt.resource, Path: tt.path, PathParameters: tt.params, Body: validBody,
				Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(testenv.Caller),
			})
			if err != nil || resp.StatusCode != tt.status || !strings.Contains(resp.Body, tt.mention) {
				t.Errorf("got %d %s, %v; want %d mentioning %q", resp.StatusCode, resp.Body, err, tt.status, tt.mention)
			}
		})
	}
}

// Behind a custom domain the path carries the mapping's base path: the
// workflow's own resource names it all the same.
func TestSubmitToAWorkflowsResourceUnderABasePath(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	svc := w.NewAPI(t, func(c *api.Config) { c.Workflows = ordertest.Built(timing, "order", "checkout") })
	body := `{"customerId":"c","lines":[{"sku":"A","quantity":1}],"amount":{"currency":"EUR","minorUnits":100},` +
		`"shippingAddress":{"name":"A","line1":"B","city":"C","postalCode":"D","country":"IE"},"paymentToken":"tok_12345678"}`
	resp, err := svc.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: "/workflows/checkout/orders", Path: "/v1/workflows/checkout/orders", Body: body,
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(testenv.Caller),
	})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("got %d %s, %v; want 202", resp.StatusCode, resp.Body, err)
	}
	if o, _ := w.Records(t, orderID(t, resp)); o.Workflow != "checkout" {
		t.Errorf("order of workflow %q, want checkout", o.Workflow)
	}
}
