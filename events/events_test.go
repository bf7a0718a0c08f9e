// Package events_test loads every fixture in this directory into the exact
// aws-lambda-go type its function's handler receives, proves that the type
// keeps every field the fixture carries, and runs the domain code on it, so
// the fixtures can drift neither from the types nor from the handlers.
package events_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/api"
	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/definition"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
	"orderly/internal/testkit/ordertest"
)

// The fixtures are captured from production, which runs the default timing.
var workflow = ordertest.Built(order.DefaultTiming).Latest()

var discard = slog.New(slog.DiscardHandler)

type fixture struct {
	file string
	// load decodes the fixture and checks what the handler makes of it.
	load func(t *testing.T, raw []byte)
}

func TestFixtures(t *testing.T) {
	fixtures := []fixture{
		{"apigw-submit-order.json", as(checkSubmitAccepted)},
		{"apigw-submit-invalid.json", as(checkSubmitRejected)},
		// One caller of each kind IAM authorization tells apart: each reads
		// its own order, and not one of a neighbour behind the same role
		// (another session of it, another identity of the same pool).
		{"apigw-get-order.json", as(checkGetOwnOrder("AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a", "AROAQXJ4CHECKOUTWEB01:checkout-web-91bc"))},
		{"apigw-get-order-iam-user.json", as(checkGetOwnOrder("AIDAQXJ4BATCHIMPORT1", "AIDAQXJ4OTHERUSER001"))},
		{"apigw-get-order-sso.json", as(checkGetOwnOrder("AROAQXJ4SSOCLIENTS001:alice@example.com", "AROAQXJ4SSOCLIENTS001:bob@example.com"))},
		{"apigw-get-order-cognito.json", as(checkGetOwnOrder("cognito:eu-west-1:4f1e2d3c-b5a6-4c7d-8e9f-0a1b2c3d4e5f", "cognito:eu-west-1:0e9d8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b"))},
		{"apigw-get-order-federated-user.json", as(checkGetOwnOrder("federated:partner-bob", "federated:partner-carol"))},
		{"apigw-search-orders.json", as(checkSearchOwnOrders("AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a"))},
		{"dynamodb-stream-step-unclaimed.json", as(checkStepUnclaimed)},
		{"sqs-agent-request.json", as(checkAgentRequest)},
		{"sqs-scheduler-reply.json", as(checkSchedulerReplies)},
		{"eventbridge-supervisor-schedule.json", as(checkSupervisorSchedule)},
	}

	// A fixture nobody loads is one that can drift unnoticed.
	onDisk, err := filepath.Glob("*.json")
	if err != nil {
		t.Fatal(err)
	}
	var tested []string
	for _, f := range fixtures {
		tested = append(tested, f.file)
	}
	slices.Sort(tested)
	if !slices.Equal(onDisk, tested) {
		t.Errorf("fixtures on disk %q, fixtures tested %q; want every fixture tested", onDisk, tested)
	}

	for _, f := range fixtures {
		t.Run(strings.TrimSuffix(f.file, ".json"), func(t *testing.T) {
			raw, err := os.ReadFile(f.file)
			if err != nil {
				t.Fatal(err)
			}
			f.load(t, raw)
		})
	}
}

// as decodes a fixture into E, the handler's event type, fails if E loses
// any of the fixture's fields, and hands the event to check.
//
// A json.Decoder with DisallowUnknownFields is not enough here: it would
// reject requestContext.deploymentId, which API Gateway sends and
// aws-lambda-go has no field for, yet accept "EventName" for "eventName",
// because encoding/json matches keys case-insensitively. So the event is
// marshalled again and every fixture value must come back at its path.
func as[E any](check func(t *testing.T, raw []byte, ev E)) func(*testing.T, []byte) {
	return func(t *testing.T, raw []byte) {
		t.Helper()
		var ev E
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatalf("json.Unmarshal into %T: %v", ev, err)
		}
		if lost := lostFields(t, raw, ev); len(lost) > 0 {
			t.Errorf("%T loses fixture fields %q; fix the fixture's spelling, or if AWS really sends them, list them in knownDropped", ev, lost)
		}
		check(t, raw, ev)
	}
}

// knownDropped are fields AWS sends that aws-lambda-go's types have no
// place for. No handler needs them.
var knownDropped = map[string]bool{
	"requestContext.deploymentId": true,
}

// lostFields returns the paths of the fixture's values that do not survive
// a round trip through ev's type. A null, false, 0, "" or empty value may
// come back absent: it carries nothing a handler could read.
func lostFields(t *testing.T, raw []byte, ev any) []string {
	t.Helper()
	out, err := json.Marshal(ev)
	if err != nil {
		t.Fatalf("json.Marshal(%T): %v", ev, err)
	}
	var lost []string
	compareJSON("", generic(t, raw), generic(t, out), &lost)
	slices.Sort(lost)
	return lost
}

func generic(t *testing.T, data []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber() // compare numbers by their digits, not as float64
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %s: %v", data, err)
	}
	return v
}

func compareJSON(path string, want, got any, lost *[]string) {
	if knownDropped[path] {
		return
	}
	switch w := want.(type) {
	case map[string]any:
		g, _ := got.(map[string]any)
		for k, wv := range w {
			p := k
			if path != "" {
				p = path + "." + k
			}
			gv, ok := g[k]
			if !ok {
				if !isZero(wv) && !knownDropped[p] {
					*lost = append(*lost, p)
				}
				continue
			}
			compareJSON(p, wv, gv, lost)
		}
	case []any:
		g, _ := got.([]any)
		if len(g) != len(w) {
			*lost = append(*lost, fmt.Sprintf("%s (%d elements became %d)", path, len(w), len(g)))
			return
		}
		for i := range w {
			compareJSON(fmt.Sprintf("%s[%d]", path, i), w[i], g[i], lost)
		}
	default:
		if !reflect.DeepEqual(want, got) && !(isZero(want) && isZero(got)) {
			*lost = append(*lost, fmt.Sprintf("%s (%v became %v)", path, want, got))
		}
	}
}

func isZero(v any) bool {
	switch v := v.(type) {
	case nil:
		return true
	case string:
		return v == ""
	case bool:
		return !v
	case json.Number:
		f, err := v.Float64()
		return err == nil && f == 0
	case map[string]any:
		return len(v) == 0
	case []any:
		return len(v) == 0
	}
	return false
}

// TestLostFieldsAreDetected proves the round-trip check can fail.
func TestLostFieldsAreDetected(t *testing.T) {
	raw, err := os.ReadFile("apigw-submit-order.json")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		old, new string
		want     []string
	}{
		{"field the type lacks", `"resource": "/orders",`, `"resource": "/orders", "version": "1.0",`, []string{"version"}},
		{"key in the wrong case", `"httpMethod": "POST",`, `"HttpMethod": "POST",`, []string{"HttpMethod"}},
		{"nested field the type lacks", `"stage": "prod",`, `"stage": "prod", "stageName": "prod",`, []string{"requestContext.stageName"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !bytes.Contains(raw, []byte(tt.old)) {
				t.Fatalf("fixture no longer contains %s; update the test", tt.old)
			}
			mutated := bytes.Replace(raw, []byte(tt.old), []byte(tt.new), 1)
			var req events.APIGatewayProxyRequest
			if err := json.Unmarshal(mutated, &req); err != nil {
				t.Fatalf("json.Unmarshal: %v", err)
			}
			if got := lostFields(t, mutated, req); !slices.Equal(got, tt.want) {
				t.Errorf("lostFields() = %q, want %q", got, tt.want)
			}
		})
	}
}

// ---- API Gateway: the submission function ----

// apiStore is a hand-written api.Store.
type apiStore struct {
	orders   map[string]order.Order
	steps    map[string][]order.StepState
	creates  int
	gets     []string
	searches []order.Query
	// positions are where each search started; page is what it answers.
	positions []string
	page      order.SearchPage
}

var _ api.Store = (*apiStore)(nil)

func newAPIStore() *apiStore {
	return &apiStore{orders: map[string]order.Order{}, steps: map[string][]order.StepState{}}
}

func (s *apiStore) CreateOrder(_ context.Context, o order.Order, steps []order.StepState) (order.Order, error) {
	s.creates++
	if existing, ok := s.orders[o.ID]; ok {
		return existing, order.ErrExists
	}
	s.orders[o.ID], s.steps[o.ID] = o, steps
	return o, nil
}

func (s *apiStore) Search(_ context.Context, q order.Query, position []byte) (order.SearchPage, error) {
	s.searches = append(s.searches, q)
	s.positions = append(s.positions, string(position))
	return s.page, nil
}

// sentRequests is a hand-written api.Dispatcher that records what it sends.
type sentRequests []order.StepRequest

func (r *sentRequests) Send(_ context.Context, o order.Order, st order.StepState) {
	*r = append(*r, order.NewRequest(o, st))
}

var pageTokens, _ = pagetoken.New([]byte("a key of events_test, 32 bytes or more"))

func newAPI(store api.Store, sent *sentRequests, now time.Time) *api.Service {
	svc, err := api.NewService(api.Config{InstanceID: "submit-test", Store: store, Dispatcher: sent,
		Workflows: order.MustVersions(workflow), Now: fixedClock(now), Log: discard, Metrics: metrics.Discard(), PageTokens: pagetoken.Fixed(pageTokens)})
	if err != nil {
		panic(err)
	}
	return svc
}

func (s *apiStore) GetOrder(_ context.Context, id string) (order.Order, []order.StepState, error) {
	s.gets = append(s.gets, id)
	o, ok := s.orders[id]
	if !ok {
		return order.Order{}, nil, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
	}
	return o, s.steps[id], nil
}

func requestTime(req events.APIGatewayProxyRequest) time.Time {
	return time.UnixMilli(req.RequestContext.RequestTimeEpoch).UTC()
}

func fixedClock(t time.Time) func() time.Time { return func() time.Time { return t } }

func checkSubmitAccepted(t *testing.T, _ []byte, req events.APIGatewayProxyRequest) {
	store := newAPIStore()
	var sent sentRequests
	svc := newAPI(store, &sent, requestTime(req))
	resp, err := svc.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("Handle() = %d %s, %v; want 202", resp.StatusCode, resp.Body, err)
	}
	// The signed caller: the role's unique id and the session's name.
	const caller = "AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a"
	if req.RequestContext.Identity.Caller != caller {
		t.Fatalf("identity.caller = %q, want the fixture's role session %q", req.RequestContext.Identity.Caller, caller)
	}
	var sub ordertest.Submission
	if err := json.Unmarshal([]byte(req.Body), &sub); err != nil {
		t.Fatal(err)
	}
	wantID := order.IDForKey(caller, "", sub.CustomerID, req.Headers["Idempotency-Key"])
	var body struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil || body.OrderID != wantID {
		t.Errorf("response body %s (%v), want orderId %s derived from the caller, customer and Idempotency-Key", resp.Body, err, wantID)
	}
	if got := resp.Headers["Location"]; got != "/orders/"+wantID {
		t.Errorf("Location = %q, want /orders/%s", got, wantID)
	}
	o, ok := store.orders[wantID]
	if !ok || store.creates != 1 {
		t.Fatalf("store got %d CreateOrder calls and orders %v, want order %s written once", store.creates, store.orders, wantID)
	}
	var input ordertest.Submission
	_ = json.Unmarshal(o.Input, &input)
	if o.Status != order.StatusPending || len(input.Lines) != 2 || !o.CreatedAt.Equal(requestTime(req)) || o.Caller != caller {
		t.Errorf("stored order %+v, want a Pending order of 2 lines created at %s by %s", o, requestTime(req), caller)
	}
	steps := store.steps[wantID]
	if len(steps) != len(workflow.Steps) || steps[0].ProcessState != order.Processing || steps[0].LockedBy != "submit-test" ||
		steps[1].ProcessState != order.NotStarted {
		t.Errorf("stored steps %+v, want %d steps, the first claimed by the submission and the rest NotStarted", steps, len(workflow.Steps))
	}
	if len(sent) != 1 || sent[0].Step != workflow.Steps[0].Name || sent[0].Attempt != 1 || sent[0].OrderID != wantID {
		t.Errorf("sent %+v, want the first step's request on attempt 1", sent)
	}
}

func checkSubmitRejected(t *testing.T, _ []byte, req events.APIGatewayProxyRequest) {
	store := newAPIStore()
	var sent sentRequests
	svc := newAPI(store, &sent, requestTime(req))
	resp, err := svc.Handle(context.Background(), req)
	if err != nil || resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("Handle() = %d %s, %v; want 400", resp.StatusCode, resp.Body, err)
	}
	var body struct {
		Error  string             `json:"error"`
		Fields []order.FieldError `json:"fields"`
	}
	if err := json.Unmarshal([]byte(resp.Body), &body); err != nil {
		t.Fatalf("response body %s: %v", resp.Body, err)
	}
	var fields []string
	for _, f := range body.Fields {
		fields = append(fields, f.Field)
	}
	if body.Error != "invalid_request" || !slices.Equal(fields, []string{"lines[0].quantity"}) {
		t.Errorf("response body %s, want invalid_request naming only lines[0].quantity", resp.Body)
	}
	if store.creates != 0 || len(sent) != 0 {
		t.Errorf("store got %d CreateOrder calls and %d requests went out, want none for a rejected order", store.creates, len(sent))
	}
}

// checkGetOwnOrder returns the check of a GET /orders/{id} fixture whose
// signer is owner: it reads the order when owner submitted it, and gets
// 404 for the same order submitted by neighbour, as for no order at all.
// checkSearchOwnOrders: GET /orders with its filters searches the
// caller's own orders only; its cursor continues that search and no
// other; a parameter sent twice is refused, naming it.
func checkSearchOwnOrders(owner string) func(*testing.T, []byte, events.APIGatewayProxyRequest) {
	return func(t *testing.T, _ []byte, req events.APIGatewayProxyRequest) {
		t.Helper()
		store := newAPIStore()
		ended := requestTime(req).Add(-time.Hour)
		store.page = order.SearchPage{Orders: []order.Summary{{ID: "QMVF4LBCLJ4PRZERCUY25DASBK", Caller: owner, CustomerID: "cust-8431",
			Workflow: "order", Version: "1", Status: order.StatusProcessed, CreatedAt: ended.Add(-time.Minute), EndedAt: ended}},
			Next: []byte(`[{"k":1,"i":"QMVF4LBCLJ4PRZERCUY25DASBK"}]`)}
		svc := newAPI(store, new(sentRequests), requestTime(req))
		resp, err := svc.Handle(context.Background(), req)
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("Handle() = %d %s, %v; want 200", resp.StatusCode, resp.Body, err)
		}
		want := order.Query{Caller: owner, Status: order.StatusProcessed, CustomerID: "cust-8431", Limit: 2,
			CreatedFrom: time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC), CreatedTo: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
		if len(store.searches) != 1 || store.searches[0] != want {
			t.Fatalf("searched %+v, want %+v", store.searches, want)
		}
		var view api.SearchView
		if err := json.Unmarshal([]byte(resp.Body), &view); err != nil {
			t.Fatalf("response body %s: %v", resp.Body, err)
		}
		if len(view.Orders) != 1 || view.Orders[0].Caller != "" || view.Orders[0].EndedAt == nil || view.NextCursor == "" ||
			!strings.HasPrefix(view.Links["next"], "/orders?") {
			t.Fatalf("response %s, want one order without its caller, and a cursor", resp.Body)
		}
		if raw, _ := base64.RawURLEncoding.DecodeString(view.NextCursor); bytes.Contains(raw, store.page.Next[:10]) {
			t.Errorf("the cursor %s shows the position it holds", view.NextCursor)
		}
		with := func(name string, values ...string) events.APIGatewayProxyRequest {
			r := req
			r.QueryStringParameters = maps.Clone(req.QueryStringParameters)
			r.MultiValueQueryStringParameters = maps.Clone(req.MultiValueQueryStringParameters)
			r.QueryStringParameters[name] = values[len(values)-1]
			r.MultiValueQueryStringParameters[name] = values
			return r
		}
		// The next page is the same search from the page's position.
		if resp, err := svc.Handle(context.Background(), with("cursor", view.NextCursor)); err != nil || resp.StatusCode != http.StatusOK ||
			store.positions[1] != string(store.page.Next) || store.searches[1] != want {
			t.Fatalf("next page: %d %s, %v; searched %+v from %q", resp.StatusCode, resp.Body, err, store.searches[1:], store.positions[1:])
		}
		otherQuery := with("cursor", view.NextCursor)
		otherQuery.QueryStringParameters["customer"], otherQuery.MultiValueQueryStringParameters["customer"] = "cust-0001", []string{"cust-0001"}
		for _, tt := range []struct {
			name  string
			req   events.APIGatewayProxyRequest
			names string
		}{
			{"a parameter sent twice", with("status", "Processed", "Failed"), "query parameter status: sent 2 times"},
			{"the cursor on another query", otherQuery, "query parameter cursor"},
			{"an altered cursor", with("cursor", view.NextCursor[:len(view.NextCursor)-2]+"AA"), "query parameter cursor"},
			{"a made-up cursor", with("cursor", "eyJrIjoxfQ"), "query parameter cursor"},
			{"an unknown status", with("status", "Lost"), "query parameter status"},
			{"a limit above the maximum", with("limit", "101"), "query parameter limit"},
		} {
			before := len(store.searches)
			resp, err := svc.Handle(context.Background(), tt.req)
			if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, tt.names) {
				t.Errorf("%s: Handle() = %d %s, %v; want 400 naming %q", tt.name, resp.StatusCode, resp.Body, err, tt.names)
			}
			if len(store.searches) != before {
				t.Errorf("%s: searched anyway", tt.name)
			}
		}
	}
}

func checkGetOwnOrder(owner, neighbour string) func(*testing.T, []byte, events.APIGatewayProxyRequest) {
	return func(t *testing.T, _ []byte, req events.APIGatewayProxyRequest) {
		t.Helper()
		id := req.PathParameters["id"]
		if !order.ValidID(id) {
			t.Fatalf("pathParameters.id = %q, want a valid order id", id)
		}
		if p, err := api.PrincipalOf(req.RequestContext.Identity); err != nil || p.ID != owner {
			t.Fatalf("the fixture's signer is %+v (%v), want %s", p, err, owner)
		}
		created := requestTime(req).Add(-2 * time.Second)
		for _, tt := range []struct {
			caller string
			want   int
		}{{owner, http.StatusOK}, {neighbour, http.StatusNotFound}} {
			store := newAPIStore()
			store.orders[id] = order.Order{ID: id, Status: order.StatusProcessing, Caller: tt.caller,
				CreatedAt: created, UpdatedAt: created}.WithInput(order.LegacyInput("cust-8431", []order.Line{{SKU: "BOOK-0451", Quantity: 2}}, ""))
			store.steps[id] = workflow.NewStates(id, "submit-test", created)
			resp, err := newAPI(store, new(sentRequests), requestTime(req)).Handle(context.Background(), req)
			if err != nil || resp.StatusCode != tt.want {
				t.Fatalf("order of %s: Handle() = %d %s, %v; want %d", tt.caller, resp.StatusCode, resp.Body, err, tt.want)
			}
			if !slices.Equal(store.gets, []string{id}) {
				t.Errorf("store was asked for %q, want [%s]", store.gets, id)
			}
			if tt.want != http.StatusOK {
				if strings.Contains(resp.Body, id) {
					t.Errorf("the 404 for %s's order names it: %s", tt.caller, resp.Body)
				}
				continue
			}
			var view api.OrderView
			if err := json.Unmarshal([]byte(resp.Body), &view); err != nil {
				t.Fatalf("response body %s: %v", resp.Body, err)
			}
			if view.OrderID != id || view.Status != order.StatusProcessing || len(view.Steps) != len(workflow.Steps) {
				t.Errorf("response %s, want order %s Processing with %d steps", resp.Body, id, len(workflow.Steps))
			}
		}
	}
}

// ---- DynamoDB stream and response queue: the Scheduler ----

// schedulerStore is a hand-written scheduler.Store that records writes.
type schedulerStore struct {
	order       order.Order
	claims      []claim
	completions []order.Transition
	failures    []string
}

type claim struct {
	orderID, step, owner string
	completeBy           time.Time
}

var _ scheduler.Store = (*schedulerStore)(nil)

func (s *schedulerStore) UnclaimedStep(image map[string]events.DynamoDBAttributeValue) (order.StepState, bool, error) {
	return dynamo.UnclaimedStep(image)
}

// GetOrder is never needed: the shipped workflow's steps do not start on
// the order's data.
func (s *schedulerStore) GetOrder(context.Context, string) (order.Order, []order.StepState, error) {
	return order.Order{}, nil, errors.New("schedulerStore reads no orders")
}

func (s *schedulerStore) Apply(_ context.Context, t order.Transition) (order.Order, order.StepState, error) {
	switch {
	case t.Change.Claim != "":
		s.claims = append(s.claims, claim{t.Record.OrderID, t.Record.Step, t.Change.Claim, t.Change.CompleteBy})
	case t.Change.State == order.Processed:
		s.completions = append(s.completions, t)
		n := t.Change.Next
		return s.order, order.StepState{OrderID: t.Record.OrderID, Step: workflow.Steps[n.Index].Name, Index: n.Index, Agent: workflow.Steps[n.Index].Agent,
			ProcessState: order.Processing, LockedBy: n.Owner, CompleteBy: n.CompleteBy, Attempt: 1, UpdatedAt: t.At}, nil
	default:
		s.failures = append(s.failures, t.Record.OrderID+"/"+t.Record.Step)
	}
	return s.order, t.Applied(t.Record), nil
}

// requestQueues is a hand-written scheduler.Dispatcher.
type requestQueues struct{ sent []order.StepRequest }

func (q *requestQueues) Send(_ context.Context, o order.Order, st order.StepState) {
	q.sent = append(q.sent, order.NewRequest(o, st))
}

// operators is a hand-written scheduler.Notifier.
type operators struct{ alerts []order.AlertKind }

func (o *operators) Notify(_ context.Context, st order.StepState) error {
	o.alerts = append(o.alerts, st.AlertKind)
	return nil
}

const schedulerID = "scheduler-fixture"

func newScheduler(store *schedulerStore, now time.Time) (*scheduler.Service, *requestQueues, *operators) {
	requests, ops := &requestQueues{}, &operators{}
	return scheduler.New(scheduler.Config{
		InstanceID: schedulerID, Store: store, Dispatcher: requests, Notifier: ops,
		Workflows: order.MustVersions(workflow), Now: fixedClock(now), Log: discard, Metrics: metrics.Discard(),
	}), requests, ops
}

func checkStepUnclaimed(t *testing.T, raw []byte, ev events.DynamoDBEvent) {
	if len(ev.Records) != 1 {
		t.Fatalf("got %d records, want 1", len(ev.Records))
	}
	rec := ev.Records[0]
	if rec.EventName != string(events.DynamoDBOperationTypeModify) || rec.Change.StreamViewType != string(events.DynamoDBStreamViewTypeNewAndOldImages) {
		t.Errorf("got %s with %s, want MODIFY with NEW_AND_OLD_IMAGES", rec.EventName, rec.Change.StreamViewType)
	}
	// The old image is the submission's claim: nothing to claim there.
	if _, ok, err := dynamo.UnclaimedStep(rec.Change.OldImage); err != nil || ok {
		t.Errorf("UnclaimedStep(OldImage) = %v, %v; want a claimed step, nothing to claim", ok, err)
	}
	after, ok, err := dynamo.UnclaimedStep(rec.Change.NewImage)
	if err != nil || !ok {
		t.Fatalf("UnclaimedStep(NewImage) = %v, %v; want the step the Supervisor reset", ok, err)
	}
	// The Supervisor reset reserve-inventory after its first attempt timed
	// out, to be claimed within ClaimWithin.
	resetAt := time.Date(2025, 3, 14, 9, 26, 54, 369e6, time.UTC)
	want := order.StepState{
		// A record of before versions and workflows: the order
		// workflow's version 1.
		OrderID: "QMVF4LBCLJ4PRZERCUY25DASBK", Workflow: order.LegacyWorkflow, Version: order.LegacyVersion, Step: ordertest.StepReserveInventory, Index: 0, Agent: ordertest.AgentInventory,
		ProcessState: order.Pending, CompleteBy: resetAt.Add(workflow.ClaimWithin), Attempt: 1, FailureCount: 1,
		LastError: "attempt 1 timed out: no reply by 2025-03-14T09:26:53.118Z", DueAt: resetAt.Add(workflow.ClaimWithin), UpdatedAt: resetAt,
	}
	if !reflect.DeepEqual(after, want) {
		t.Errorf("NewImage = %+v\nwant       %+v", after, want)
	}
	if rec.Change.Keys["OrderID"].String() != after.OrderID {
		t.Errorf("Keys %v do not name the order of NewImage", rec.Change.Keys)
	}

	// The Scheduler claims the step, with the doubled allowance of a
	// retry, and asks the inventory agent.
	now := rec.Change.ApproximateCreationDateTime.Add(250 * time.Millisecond)
	store := &schedulerStore{order: order.Order{ID: after.OrderID}.WithInput(order.LegacyInput("cust-8431", []order.Line{{SKU: "BOOK-0451", Quantity: 2}}, ""))}
	sched, requests, _ := newScheduler(store, now)
	out, err := sched.Handle(context.Background(), raw)
	if err != nil {
		t.Fatalf("scheduler Handle() error = %v", err)
	}
	if resp, ok := out.(events.DynamoDBEventResponse); !ok || len(resp.BatchItemFailures) > 0 {
		t.Errorf("scheduler Handle() = %#v, want a DynamoDBEventResponse without failures", out)
	}
	wantClaim := claim{after.OrderID, ordertest.StepReserveInventory, schedulerID, now.Add(2 * order.DefaultTiming.Allowance)}
	if !slices.Equal(store.claims, []claim{wantClaim}) {
		t.Errorf("claims %+v, want [%+v]", store.claims, wantClaim)
	}
	if len(requests.sent) != 1 || requests.sent[0].Step != ordertest.StepReserveInventory || requests.sent[0].Attempt != 2 {
		t.Errorf("requests sent %+v, want attempt 2 of reserve-inventory", requests.sent)
	}
}

func checkSchedulerReplies(t *testing.T, raw []byte, ev events.SQSEvent) {
	checkDigests(t, ev)
	var malformed []string
	for _, msg := range ev.Records {
		if !json.Valid([]byte(msg.Body)) {
			malformed = append(malformed, msg.MessageId)
		}
	}
	if len(ev.Records) != 2 || len(malformed) != 1 {
		t.Fatalf("got %d records with %d malformed bodies, want 2 records, 1 malformed", len(ev.Records), len(malformed))
	}

	now := time.Date(2025, 3, 14, 9, 26, 54, 369e6, time.UTC)
	store := &schedulerStore{}
	sched, requests, ops := newScheduler(store, now)
	out, err := sched.Handle(context.Background(), raw)
	if err != nil {
		t.Fatalf("scheduler Handle() error = %v", err)
	}
	resp, ok := out.(events.SQSEventResponse)
	if !ok {
		t.Fatalf("scheduler Handle() = %#v, want an SQSEventResponse", out)
	}
	want := []events.SQSBatchItemFailure{{ItemIdentifier: malformed[0]}}
	if !slices.Equal(resp.BatchItemFailures, want) {
		t.Errorf("BatchItemFailures = %+v, want only the malformed message %+v", resp.BatchItemFailures, want)
	}
	next, _ := workflow.Step(ordertest.StepChargePayment)
	wantDone := order.Completion{
		Step:      order.StepState{OrderID: "QMVF4LBCLJ4PRZERCUY25DASBK", Step: ordertest.StepReserveInventory, Index: 0, Attempt: 1},
		Reference: "res_k7q2m9x4t3vbn8c5wz6hjp2rfd", Next: &next, NextIndex: 1, NextState: order.Processing, Owner: schedulerID, NextCompleteBy: now.Add(next.Allowance)}.Transition(now)
	if len(store.completions) != 1 || !reflect.DeepEqual(store.completions[0], wantDone) {
		t.Errorf("completions %+v, want [%+v]", store.completions, wantDone)
	}
	// The next step is claimed in the same write and requested at once.
	if len(requests.sent) != 1 || requests.sent[0].Step != ordertest.StepChargePayment || requests.sent[0].Attempt != 1 {
		t.Errorf("requests sent %+v, want attempt 1 of charge-payment", requests.sent)
	}
	if len(store.failures)+len(ops.alerts) > 0 {
		t.Errorf("got failures %v, alerts %v; want none from a success reply", store.failures, ops.alerts)
	}
}

// ---- Request queue: an agent ----

// remoteService is a hand-written agent.Caller.
type remoteService struct {
	mu    sync.Mutex
	calls []order.StepRequest
}

func (r *remoteService) Call(_ context.Context, _ string, req order.StepRequest) (order.Answer, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, req)
	return order.Answer{Reference: "ch_3fx8q2m7vk4npc9tz6wrj5hdya"}, nil
}

// responseQueue is a hand-written agent.Replier.
type responseQueue struct {
	mu      sync.Mutex
	replies []order.StepReply
}

func (q *responseQueue) SendReply(_ context.Context, rep order.StepReply) error {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.replies = append(q.replies, rep)
	return nil
}

func checkAgentRequest(t *testing.T, _ []byte, ev events.SQSEvent) {
	checkDigests(t, ev)
	if len(ev.Records) != 1 {
		t.Fatalf("got %d records, want 1", len(ev.Records))
	}
	msg := ev.Records[0]
	dec := json.NewDecoder(strings.NewReader(msg.Body))
	dec.DisallowUnknownFields()
	var req order.StepRequest
	if err := dec.Decode(&req); err != nil {
		t.Fatalf("body is not an order.StepRequest: %v", err)
	}
	def, ok := workflow.Step(req.Step)
	switch {
	case !order.ValidID(req.OrderID):
		t.Errorf("orderId %q is not a valid order id", req.OrderID)
	case !ok:
		t.Errorf("step %q is not in the workflow", req.Step)
	case !strings.HasSuffix(msg.EventSourceARN, "-"+def.Agent+"-requests"):
		t.Errorf("request for step %s arrived on %s, want the %s agent's queue", req.Step, msg.EventSourceARN, def.Agent)
	case req.Attempt < 1:
		t.Errorf("attempt %d, want at least 1", req.Attempt)
	case order.ValidateIdempotencyKey(req.IdempotencyKey) != nil:
		t.Errorf("idempotencyKey %q is not a valid Idempotency-Key: %v", req.IdempotencyKey, order.ValidateIdempotencyKey(req.IdempotencyKey))
	case strings.Contains(req.IdempotencyKey, req.OrderID):
		// Keys of orders stored with a key nonce cannot be worked out
		// from the order id (see order.Order.RemoteKey).
		t.Errorf("idempotencyKey %q contains the order id", req.IdempotencyKey)
	}
	schema, err := definition.CompileSchema(workflow.Input)
	if err != nil {
		t.Fatal(err)
	}
	input := req.Input
	if len(input) == 0 {
		// A request of a build from before inputs: the agent reads its
		// customerId and lines as the input.
		input = order.LegacyInput(req.LegacyCustomerID, req.LegacyLines, "")
	}
	if problems := schema.Check(input); len(problems) > 0 {
		t.Errorf("input %s is not a valid order: %v", req.Input, problems)
	}
	attrs := map[string]string{}
	for k, v := range msg.MessageAttributes {
		if v.StringValue != nil {
			attrs[k] = *v.StringValue
		}
	}
	wantAttrs := map[string]string{"orderId": req.OrderID, "step": req.Step, "attempt": strconv.Itoa(req.Attempt)}
	if !reflect.DeepEqual(attrs, wantAttrs) {
		t.Errorf("message attributes %v, want %v to match the body", attrs, wantAttrs)
	}
	sent := epochMillis(t, msg.Attributes["SentTimestamp"])
	if want := sent.Add(order.DefaultTiming.Allowance); req.CompleteBy.Sub(want).Abs() > time.Second {
		t.Errorf("completeBy %s, want about one allowance (%s) after it was sent at %s", req.CompleteBy, order.DefaultTiming.Allowance, sent)
	}

	// The agent calls the remote service and replies on the attempt.
	remote, replies := &remoteService{}, &responseQueue{}
	ag := agent.New(agent.Config{Name: def.Agent, Remote: remote, Replies: replies,
		Now: fixedClock(epochMillis(t, msg.Attributes["ApproximateFirstReceiveTimestamp"])), Log: discard, Metrics: metrics.Discard()})
	resp, err := ag.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("agent Handle() = %+v, %v; want no failures", resp, err)
	}
	if len(remote.calls) != 1 || remote.calls[0].IdempotencyKey != req.IdempotencyKey {
		t.Errorf("remote calls %+v, want one with idempotency key %s", remote.calls, req.IdempotencyKey)
	}
	want := order.StepReply{OrderID: req.OrderID, Step: req.Step, Attempt: req.Attempt, Outcome: order.OutcomeSucceeded, Reference: "ch_3fx8q2m7vk4npc9tz6wrj5hdya"}
	if !reflect.DeepEqual(replies.replies, []order.StepReply{want}) {
		t.Errorf("replies %+v, want [%+v]", replies.replies, want)
	}
}

// checkDigests checks md5OfBody, so an edited body cannot pass for what SQS
// delivered.
func checkDigests(t *testing.T, ev events.SQSEvent) {
	t.Helper()
	for _, msg := range ev.Records {
		sum := md5.Sum([]byte(msg.Body))
		if got := hex.EncodeToString(sum[:]); got != msg.Md5OfBody {
			t.Errorf("message %s: MD5 of body is %s, md5OfBody says %s", msg.MessageId, got, msg.Md5OfBody)
		}
	}
}

func epochMillis(t *testing.T, s string) time.Time {
	t.Helper()
	ms, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		t.Fatalf("timestamp %q: %v", s, err)
	}
	return time.UnixMilli(ms).UTC()
}

// ---- EventBridge schedule: the Supervisor ----

func checkSupervisorSchedule(t *testing.T, _ []byte, ev events.EventBridgeEvent) {
	// The Supervisor ignores the event's content; what matters is that the
	// rule delivers a scheduled event, not some other detail type.
	if ev.Source != "aws.events" || ev.DetailType != "Scheduled Event" || ev.Time.IsZero() {
		t.Errorf("got source %q, detail-type %q, time %s; want a scheduled event from aws.events", ev.Source, ev.DetailType, ev.Time)
	}
	if len(ev.Resources) != 1 || !strings.Contains(ev.Resources[0], ":rule/") {
		t.Errorf("resources %q, want the ARN of the schedule rule", ev.Resources)
	}
	if string(ev.Detail) != "{}" {
		t.Errorf("detail %s, want {}", ev.Detail)
	}
}
