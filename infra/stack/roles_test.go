package stack_test

import (
	"bytes"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/smithy-go/middleware"

	"orderly/infra/iamcheck"
	"orderly/infra/stack"
	"orderly/internal/actor/agent"
	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/measure/callrecord"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// rareGrants are grants that the role check's scenarios do not exercise,
// each with the path that needs it. Keep it short: a grant belongs here
// only when its path cannot be driven on the emulators in seconds.
var rareGrants = []string{}

// The role check: the real functions run on the emulators through the
// workflow's paths (happy, transient faults, compensation, an undo refused
// into Error with its alert and an operator's redrive, a hang retried by
// the Supervisor, calls slow enough for heartbeats, a cancel, each agent's
// circuit breaker opening, a version change that parks an order, and
// steps that wait: an event sent by the client and one by an operator,
// and a service that calls back, whose agent seals the callback's token
// and whose callback the API opens, both with the callback key; a
// service that is polled, whose checks the Supervisor sends and whose
// agent GETs its status URL; a timer and a condition read on the order's
// data), each
// agent calling its service with the stage's authentication (a header
// from a secret, SigV4 for an API and for a function URL; see
// roleCheckServices), each function's SDK clients recording every AWS call
// and each agent's HTTP transport every signed one. Every call must be
// allowed by that function's role in the stack synthesized for the same
// workflows (roleCheckWorkflows), and every grant must be used by a call,
// by Lambda or a service on the function's behalf (event sources, logs,
// traces, the topic's key, the secret's key), or be listed in rareGrants.
func TestRolesAllowExactlyTheCallsEachFunctionMakes(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the whole engine")
	}
	calls := recordCalls(t)
	checker := newChecker(t, roleCheckTemplate(t))
	// A function that made no call would have its role go unchecked.
	for _, fn := range checker.Functions() {
		if !slices.ContainsFunc(calls, func(c callrecord.Call) bool { return c.Function == fn }) {
			t.Errorf("no call of function %s was recorded: its role is unproven", fn)
		}
	}
	rep := checker.Check(calls, rareGrants)
	for _, m := range rep.Missing {
		t.Errorf("%s", m)
	}
	for _, g := range rep.Unused {
		t.Errorf("no call uses the grant %s: remove it, or list it in rareGrants with the path that needs it", g)
	}
	for _, r := range rareGrants {
		for g, n := range rep.Used {
			if g.String() == r && n > 0 {
				t.Errorf("rareGrants lists %s, but the scenarios use it: take it off the list", r)
			}
		}
	}
	if t.Failed() {
		t.Logf("recorded calls:\n%s", strings.Join(mapStrings(calls), "\n"))
	}
}

// reviewedWorkflow is the role check's workflow whose steps wait: the
// shipped one with a review event before the payment, whose service
// calls back.
const reviewedWorkflow = "reviewed"

// polledWorkflow is the role check's workflow whose payment service is
// polled, with a timer after it and a condition on the shipping after
// that, which starts on the order's data.
const polledWorkflow = "polled"

// roleCheckWorkflows are the workflows the role check runs: the shipped
// one, from its file, in two versions (the second is rolled back, parking
// its order), reviewedWorkflow and polledWorkflow.
func roleCheckWorkflows(timing order.Timing) (v1, v2, reviewed, polled order.Workflow) {
	v1 = ordertest.Built(timing).Latest()
	v2 = v1
	v2.Version = "2"
	reviewed = ordertest.Reviewed(v1, 1, time.Minute)
	reviewed.Name = reviewedWorkflow
	i, _ := reviewed.Index(ordertest.StepChargePayment)
	reviewed.Steps[i].Callback = &order.CallbackWait{Timeout: 30 * time.Second}
	polled = v1
	polled.Name = polledWorkflow
	polled.Steps = slices.Clone(v1.Steps)
	i, _ = polled.Index(ordertest.StepChargePayment)
	polled.Steps[i].Poll = &order.PollWait{Timeout: 30 * time.Second, Every: 200 * time.Millisecond}
	polled.Steps = slices.Insert(polled.Steps, i+1, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: 300 * time.Millisecond}})
	polled.Steps[i+2].When = always(true)
	return v1, v2, reviewed, polled
}

// roleCheckTemplate is the stack synthesized as TestMain's, for the role
// check's workflows: one whose steps wait for an event and call back has
// the grants of the callback key, which the shipped workflow lacks.
func roleCheckTemplate(t *testing.T) assertions.Template {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &synthesisContext})
	p, err := stack.FromContext(app)
	if err != nil {
		t.Fatal(err)
	}
	v1, v2, reviewed, polled := roleCheckWorkflows(p.Timing)
	p.Workflows, p.WorkflowsDigest = order.MustVersions(v1, v2, reviewed, polled), ""
	s, err := stack.New(app, "Orderly-roles", p)
	if err != nil {
		t.Fatal(err)
	}
	return assertions.Template_FromStack(s.Stack, nil)
}

// newChecker reads a synthesized template's roles and policies.
func newChecker(t *testing.T, from assertions.Template) *iamcheck.Checker {
	t.Helper()
	raw, err := json.Marshal(from.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := iamcheck.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	checker, err := iamcheck.New(tpl, synthesizedStage)
	if err != nil {
		t.Fatal(err)
	}
	return checker
}

// asSynthesized renames the resources calls name from a test's stage to
// the synthesized stage's names.
func asSynthesized(calls []callrecord.Call, stage string) []callrecord.Call {
	out := make([]callrecord.Call, len(calls))
	for i, c := range calls {
		c.Resource.Name = strings.Replace(c.Resource.Name, "orderly-"+stage+"-", "orderly-"+synthesizedStage+"-", 1)
		out[i] = c
	}
	return out
}

// recordCalls runs the scenarios and returns every call the functions
// made, with resource names as the synthesized stage names them.
func recordCalls(t *testing.T) []callrecord.Call {
	t.Helper()
	rec := callrecord.New()
	cfg := enginetest.Config(t)
	cfg.FunctionAPIOptions = func(fn string) []func(*middleware.Stack) error {
		return []func(*middleware.Stack) error{rec.For(fn)}
	}
	// The services as the synthesized stage has them, at a simulator that
	// takes only calls with their credentials: inventory's header, whose
	// value is a real secret's, and payment's and shipping's signatures.
	// The agents read the secret and sign with their own clients, which
	// record those calls too.
	apiKey := rand.Text()
	testenv.Secret(t, testenv.AWS(t), "orderly-"+cfg.Stage+"-inventory-api-key", apiKey)
	// The payment's service calls back soon after it accepts a call.
	front := credentialedSimulator(t, apiKey, simulator.WithCallbackDelay(200*time.Millisecond))
	cfg.Services = roleCheckServices(cfg.Stage, front.URL)
	cfg.RemoteURL = front.URL // no simulator of the engine's own
	cfg.FunctionHTTP = rec.HTTP
	// Heartbeats move a slow call's deadline on (enginetest's timing has none).
	cfg.Timing.MaxHeartbeats = 6
	v1, v2, reviewed, polled := roleCheckWorkflows(cfg.Timing)
	cfg.Workflows = order.MustVersions(v1, v2, reviewed, polled)
	cfg.ParkFor = 300 * time.Millisecond
	cfg.QueueVisibility = 3 * time.Second
	// One failed call opens an agent's circuit, so the agent's next try
	// holds its request back on its own queue.
	cfg.Breaker = agent.Breaker{Failures: 1, OpenFor: 500 * time.Millisecond}

	e, stop := enginetest.Run(t, cfg)
	t.Cleanup(func() { testenv.Cleanup(t, e.Clients(), e.Stack) })
	alerts := testenv.SubscribeAlerts(t, e.Clients(), e.Stack.AlertTopicARN)

	ended := map[string]order.Status{
		submitOrder(t, e, "BOOK-1"): order.StatusProcessed,
		submitOrder(t, e, "TEST-INVENTORY-TRANSIENT-2", "TEST-PAYMENT-TRANSIENT-2", "TEST-SHIPPING-TRANSIENT-2"): order.StatusProcessed,
		submitOrder(t, e, "TEST-PAYMENT-PERMANENT"):                                                              order.StatusFailed,
		submitOrder(t, e, "TEST-INVENTORY-HANG-1", "TEST-PAYMENT-HANG-1", "TEST-SHIPPING-HANG-1"):                order.StatusProcessed,
		submitOrder(t, e, "TEST-INVENTORY-SLOW-1500", "TEST-PAYMENT-SLOW-1500", "TEST-SHIPPING-SLOW-1500"):       order.StatusProcessed,
	}
	refused := submitOrder(t, e, "TEST-PAYMENT-PERMANENT", "TEST-INVENTORY-UNDO-PERMANENT-1")
	cancelled := submitOrder(t, e, "TEST-SHIPPING-HANG")
	awaitOrder(t, e, cancelled, func(v api.OrderView) bool {
		return v.Status == order.StatusProcessing && onStep(v, ordertest.StepArrangeShipping)
	})
	call(t, e, http.MethodPost, "/orders/"+cancelled+"/cancel", nil, http.StatusAccepted)
	ended[cancelled] = order.StatusCancelled

	// Steps that wait: each order waits for its review, sent by its
	// client or by an operator; then the payment's service accepts the
	// call (202) and calls back, and the order goes on.
	for _, events := range []string{"/orders/%s/events/", "/ops/orders/%s/events/"} {
		id := submitOrderOf(t, e, reviewedWorkflow, "BOOK-1")
		awaitOrder(t, e, id, func(v api.OrderView) bool { return v.Status == order.StatusWaiting })
		call(t, e, http.MethodPost, fmt.Sprintf(events, id)+ordertest.EventReview, map[string]string{"decision": "approve"}, http.StatusAccepted)
		ended[id] = order.StatusProcessed
	}
	// A polled payment whose first check is answered "working" at a new
	// status URL, then a timer, then a step whose condition is read on
	// the order's data.
	ended[submitOrderOf(t, e, polledWorkflow, "BOOK-1", "TEST-PAYMENT-POLL-MOVED")] = order.StatusProcessed

	// The undo refused: Error, alerted, then redriven to Failed.
	awaitOrder(t, e, refused, func(v api.OrderView) bool { return v.Status == order.StatusError })
	alerts.Await(t, refused, 30*time.Second)
	call(t, e, http.MethodPost, "/orders/"+refused+"/redrive", map[string]string{"action": order.RedriveCompensate}, http.StatusAccepted)
	ended[refused] = order.StatusFailed

	for id, want := range ended {
		v := awaitOrder(t, e, id, func(v api.OrderView) bool { return v.Status.Terminal() })
		if v.Status != want {
			t.Fatalf("order %s ended %s, want %s: %s", id, v.Status, want, v.LastError)
		}
		call(t, e, http.MethodGet, "/orders/"+id+"/history", nil, http.StatusOK)
		call(t, e, http.MethodGet, "/ops/orders/"+id, nil, http.StatusOK)
		call(t, e, http.MethodGet, "/ops/orders/"+id+"/history", nil, http.StatusOK)
	}

	// A version 2 order in flight when version 2 is rolled back: the next
	// deploy parks it and alerts.
	parked := submitOrder(t, e, "TEST-SHIPPING-HANG")
	awaitOrder(t, e, parked, func(v api.OrderView) bool { return onStep(v, ordertest.StepArrangeShipping) })
	// Searches: a client's on the created index (the running order's
	// status read from its item), an operator's on the ended one.
	call(t, e, http.MethodGet, "/orders?customer=c-roles&limit=100", nil, http.StatusOK)
	call(t, e, http.MethodGet, "/ops/orders?limit=100&ended_from="+time.Now().Add(-time.Hour).UTC().Format(time.RFC3339), nil, http.StatusOK)
	stop()
	cfg.Workflows = order.MustVersions(v1, reviewed, polled)
	enginetest.Run(t, cfg)
	if a := alerts.Await(t, parked, 30*time.Second); a.Kind != order.AlertVersionUnknown {
		t.Fatalf("alert %+v about the parked order, want %s", a, order.AlertVersionUnknown)
	}

	return asSynthesized(rec.Calls(), cfg.Stage)
}

// credentialedSimulator serves the simulated services to calls that carry
// their service's credential, and refuses (401) any other, failing the
// test.
func credentialedSimulator(t *testing.T, apiKey string, opts ...simulator.Option) *httptest.Server {
	t.Helper()
	sim, err := simulator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization")
		var ok bool
		service, rest, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		if service == "status" {
			// A polled service's status URL: /status/<service>/<id>.
			service, _, _ = strings.Cut(rest, "/")
		}
		switch service {
		case ordertest.AgentInventory:
			ok = r.Header.Get("X-Api-Key") == apiKey
		case ordertest.AgentPayment:
			ok = strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") && strings.Contains(auth, "/us-east-1/execute-api/aws4_request")
		case ordertest.AgentShipping:
			ok = strings.HasPrefix(auth, "AWS4-HMAC-SHA256 ") && strings.Contains(auth, "/us-east-1/lambda/aws4_request")
		}
		if !ok {
			t.Errorf("%s %s came without its service's credential", r.Method, r.URL.Path)
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		sim.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)
	t.Cleanup(sim.Close) // first: it releases the calls it holds
	return front
}

func submitOrder(t *testing.T, e *engine.Engine, skus ...string) string {
	t.Helper()
	return submitOrderOf(t, e, "", skus...)
}

// submitOrderOf submits an order of workflow ("": the stage's default).
func submitOrderOf(t *testing.T, e *engine.Engine, workflow string, skus ...string) string {
	t.Helper()
	sub := ordertest.Submission{CustomerID: "c-roles"}
	for _, s := range skus {
		sub.Lines = append(sub.Lines, order.Line{SKU: s, Quantity: 1})
	}
	path := "/orders"
	if workflow != "" {
		path = "/workflows/" + workflow + "/orders"
	}
	var out struct{ OrderID string }
	call(t, e, http.MethodPost, path, sub, http.StatusAccepted, &out)
	return out.OrderID
}

// call makes one API request, wants its status and decodes its answer
// into out, when given.
func call(t *testing.T, e *engine.Engine, method, path string, body any, want int, out ...any) {
	t.Helper()
	var reader *bytes.Reader
	if body != nil {
		raw, _ := json.Marshal(body)
		reader = bytes.NewReader(raw)
	} else {
		reader = bytes.NewReader(nil)
	}
	req, _ := http.NewRequest(method, e.URL()+path, reader)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	var raw bytes.Buffer
	raw.ReadFrom(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, resp.StatusCode, want, raw.String())
	}
	for _, o := range out {
		if err := json.Unmarshal(raw.Bytes(), o); err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
	}
}

func awaitOrder(t *testing.T, e *engine.Engine, id string, done func(api.OrderView) bool) api.OrderView {
	t.Helper()
	var v api.OrderView
	testenv.Eventually(t, 60*time.Second, func() (bool, string) {
		call(t, e, http.MethodGet, "/orders/"+id, nil, http.StatusOK, &v)
		return done(v), testenv.Describe(v)
	})
	return v
}

// onStep reports whether the order's step runs an attempt.
func onStep(v api.OrderView, step string) bool {
	return slices.ContainsFunc(v.Steps, func(s api.StepView) bool {
		return s.Step == step && !s.Undo && s.State == string(order.Processing)
	})
}

func mapStrings[T fmt.Stringer](xs []T) []string {
	out := make([]string, len(xs))
	for i, x := range xs {
		out[i] = x.String()
	}
	return out
}
