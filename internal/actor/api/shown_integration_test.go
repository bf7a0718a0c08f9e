package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/sqs"
	"orderly/internal/definition"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// checkoutWith is the checkout example, read from its file, with the
// named steps' results shown to clients (result.shownToClient).
func checkoutWith(t *testing.T, shown ...string) order.Versions {
	t.Helper()
	const file = "../../../examples/workflows/checkout/v1.json"
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(data, &doc); err != nil {
		t.Fatal(err)
	}
	for _, s := range doc["steps"].([]any) {
		step := s.(map[string]any)
		for _, name := range shown {
			if step["name"] == name {
				result, _ := step["result"].(map[string]any)
				if result == nil {
					result = map[string]any{}
				}
				result["shownToClient"] = true
				step["result"] = result
			}
		}
	}
	data, _ = json.Marshal(doc)
	def, err := definition.Parse(file, data)
	if err != nil {
		t.Fatalf("parse the checkout example with %v shown: %v", shown, err)
	}
	checkout, err := def.Workflow(timing)
	if err != nil {
		t.Fatal(err)
	}
	shipped := ordertest.Built(timing).Latest()
	return order.MustVersions(shipped, checkout)
}

// checkoutRun runs checkout orders in a World whose stack has no fraud
// agent: the fraud service's requests go to the inventory queue, which is
// all the test needs of them.
type checkoutRun struct {
	w   *testenv.World
	api *api.Service
	s   *scheduler.Service
	rec *testenv.Recording
	id  string
}

func newCheckoutRun(t *testing.T, w *testenv.World, versions order.Versions) *checkoutRun {
	t.Helper()
	urls := w.Stack.RequestQueueURLs()
	urls["fraud"] = urls[ordertest.AgentInventory]
	d := dispatch.New(sqs.NewRequests(w.Clients.SQS, urls), w.Store, timing.ClaimWithin, w.Clock.Now, w.Log, metrics.Discard())
	return &checkoutRun{w: w, api: w.NewAPI(t, func(c *api.Config) { c.Workflows, c.Dispatcher = versions, d }),
		s: w.Scheduler("s1", func(c *scheduler.Config) { c.Workflows, c.Dispatcher = versions, d })}
}

// submit posts a checkout order and records its submission.
func (r *checkoutRun) submit(t *testing.T) {
	t.Helper()
	body := `{"customerId":"c-42","lines":[{"sku":"SKU-1","quantity":2}],"amount":{"currency":"EUR","minorUnits":4999},` +
		`"shippingAddress":{"name":"Ada","line1":"12 St James's Square","city":"London","postalCode":"SW1Y 4JH","country":"GB"},"paymentToken":"tok_visa_4242"}`
	resp, err := r.api.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: "/workflows/checkout/orders", Path: "/workflows/checkout/orders", Body: body,
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(testenv.Caller),
	})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d %s, %v", resp.StatusCode, resp.Body, err)
	}
	r.id = orderID(t, resp)
	r.rec = r.w.Follow(r.id)
	r.record(t)
}

// reply applies an agent's success for step on attempt 1, with the
// service's answer, and records the change.
func (r *checkoutRun) reply(t *testing.T, step, answer string) {
	t.Helper()
	var ref struct{ ID string }
	_ = json.Unmarshal([]byte(answer), &ref)
	rep := order.StepReply{OrderID: r.id, Workflow: "checkout", Version: "1", Step: step, Attempt: 1, Outcome: order.OutcomeSucceeded,
		Reference: ref.ID, Result: json.RawMessage(answer)}
	resp, err := r.s.HandleReplies(context.Background(), testenv.ReplyEvent(rep))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("reply of %s: %+v, %v", step, resp, err)
	}
	r.record(t)
}

// record hands the order's latest change to the recorder, as its stream
// record would.
func (r *checkoutRun) record(t *testing.T) { t.Helper(); r.rec.Record(t) }

// read is what resource shows of the order (the world's caller asks; an
// operator's route lets anyone API Gateway let through).
func (r *checkoutRun) read(t *testing.T, resource string) string {
	t.Helper()
	resp, err := r.api.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodGet, Resource: resource, Path: strings.Replace(resource, "{id}", r.id, 1),
		PathParameters: map[string]string{"id": r.id}, RequestContext: testenv.As(testenv.Caller),
	})
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d %s, %v", resource, resp.StatusCode, resp.Body, err)
	}
	return resp.Body
}

// statusEvents are the status events published so far, as the bus's
// rule delivers them.
func statusEvents(t *testing.T, w *testenv.World) string {
	t.Helper()
	return strings.Join(w.StatusEvents(t), "\n")
}

// Answers of the checkout example's services. The fraud score is what a
// fraudster would tune orders against; the shipment's tracking number is
// what a definition may choose to show its clients.
const (
	fraudAnswer    = `{"id":"fc_7Q2","score":0.873}`
	reserveAnswer  = `{"id":"res_9XK","warehouse":"W-NORTH"}`
	chargeAnswer   = `{"id":"ch_4MB"}`
	shippingAnswer = `{"id":"shp_2ZT","tracking":"TRK-55501"}`
)

// A client reads its order, not the services' internals: no step result
// or reference unless the definition shows it (result.shownToClient), no
// owner, attempt, deadline, service or step reason, in its view or its
// history. An operator's routes show all of it.
func TestClientsSeeTheirOrderNotTheServicesInternals(t *testing.T) {
	internals := []string{`"lockedBy"`, `"attempt"`, `"completeBy"`, `"failureCount"`, `"agent"`, "scheduler s1", "submit-test", `"by":"submit"`}
	tests := []struct {
		name  string
		shown []string
		// clientSees are what the client reads once the order is
		// Processed; clientNever, what it never reads.
		clientSees, clientNever []string
	}{
		{"the checkout example as shipped", nil, nil,
			[]string{"score", "0.873", "fc_7Q2", "res_9XK", "W-NORTH", "ch_4MB", "shp_2ZT", "TRK-55501", `"result"`, `"reference"`}},
		{"the shipment shown to clients", []string{"arrange-shipping"}, []string{"TRK-55501", "shp_2ZT"},
			[]string{"score", "0.873", "fc_7Q2", "res_9XK", "W-NORTH", "ch_4MB"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testenv.NewWorld(t, timing)
			r := newCheckoutRun(t, w, checkoutWith(t, tt.shown...))
			r.submit(t)
			r.reply(t, "fraud-check", fraudAnswer)

			// Mid-way: the reservation is claimed by a Scheduler, the
			// fraud check answered with its score.
			mid := map[string]string{"view": r.read(t, api.ResourceOrder), "history": r.read(t, api.ResourceHistory)}
			for where, body := range mid {
				for _, never := range append(append([]string{}, tt.clientNever...), internals...) {
					if strings.Contains(body, never) {
						t.Errorf("the client's %s mid-way shows %s: %s", where, never, body)
					}
				}
			}
			ops := r.read(t, api.ResourceOperatorOrder)
			for _, want := range []string{"0.873", `"reference":"fc_7Q2"`, `"lockedBy":"s1"`, `"attempt":1`, `"agent":"fraud"`, `"completeBy"`} {
				if !strings.Contains(ops, want) {
					t.Errorf("the operator's view mid-way lacks %s: %s", want, ops)
				}
			}

			r.reply(t, "reserve-inventory", reserveAnswer)
			r.reply(t, "charge-payment", chargeAnswer)
			r.reply(t, "arrange-shipping", shippingAnswer)
			view, history := r.read(t, api.ResourceOrder), r.read(t, api.ResourceHistory)
			var v api.OrderView
			if err := json.Unmarshal([]byte(view), &v); err != nil || v.Status != order.StatusProcessed || len(v.Steps) != 4 {
				t.Fatalf("the client's view: %s (%v), want a Processed order of 4 steps", view, err)
			}
			client := map[string]string{"view": view, "history": history, "status events": statusEvents(t, w)}
			for where, body := range client {
				for _, never := range append(append([]string{}, tt.clientNever...), internals...) {
					if strings.Contains(body, never) {
						t.Errorf("the client's %s shows %s: %s", where, never, body)
					}
				}
			}
			for _, where := range []string{"view", "history"} {
				for _, want := range tt.clientSees {
					if !strings.Contains(client[where], want) {
						t.Errorf("the client's %s lacks %s: %s", where, want, client[where])
					}
				}
				if !strings.Contains(client[where], `"state"`) && !strings.Contains(client[where], `"to":"Processed"`) {
					t.Errorf("the client's %s shows no step's state: %s", where, client[where])
				}
			}
			opsView, opsHistory := r.read(t, api.ResourceOperatorOrder), r.read(t, api.ResourceOperatorHistory)
			// Operators see every kept result (the shipment's only where it is
			// shown: no call carries it) and everything else.
			for _, want := range append([]string{"0.873", "W-NORTH", `"reference":"ch_4MB"`, `"agent":"payment"`}, tt.clientSees...) {
				if !strings.Contains(opsView, want) {
					t.Errorf("the operator's view lacks %s: %s", want, opsView)
				}
			}
			for _, want := range append([]string{"0.873", "W-NORTH", "scheduler s1", `"attempt":1`}, tt.clientSees...) {
				if !strings.Contains(opsHistory, want) {
					t.Errorf("the operator's history lacks %s: %s", want, opsHistory)
				}
			}
		})
	}
}

// A client reads why its order failed in its own words: a refusal in the
// service's words without the service's name, timeouts without their
// attempts and deadlines, in its view, its history and its status events
// alike. Operators read the engine's reason.
func TestClientsReadWhyTheirOrderFailedNotTheEnginesWorkings(t *testing.T) {
	tests := []struct {
		name string
		// fail makes charge-payment, claimed on attempt 1, fail.
		fail func(t *testing.T, r *checkoutRun, versions order.Versions)
		// want is the order's reason as the client reads it; ops, a part
		// of it as operators do; never, what the client never reads.
		want, ops string
		never     []string
	}{
		{"refused", func(t *testing.T, r *checkoutRun, _ order.Versions) {
			rep := order.StepReply{OrderID: r.id, Workflow: "checkout", Version: "1", Step: "charge-payment", Attempt: 1,
				Outcome: order.OutcomeFailed, Reason: order.Refused("payment", "card declined")}
			if resp, err := r.s.HandleReplies(context.Background(), testenv.ReplyEvent(rep)); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("refusal of charge-payment: %+v, %v", resp, err)
			}
			r.record(t)
		}, "step charge-payment was refused: card declined", "remote service payment refused the request: card declined",
			[]string{"remote service", "service payment"}},
		{"timed out", func(t *testing.T, r *checkoutRun, versions order.Versions) {
			ctx := context.Background()
			for attempt := 1; attempt <= timing.FailureThreshold; attempt++ {
				r.w.Requests(t, ordertest.AgentPayment) // the agent took the charge and went silent
				st := r.w.Step(t, r.id, "charge-payment")
				if st.ProcessState != order.Processing || st.Attempt != attempt {
					t.Fatalf("charge-payment: %+v, want Processing on attempt %d", st, attempt)
				}
				r.w.Clock.Advance(st.CompleteBy.Sub(r.w.Clock.Now()) + time.Minute)
				if _, err := r.w.Supervisor(func(c *supervisor.Config) { c.Workflows = versions }).Run(ctx); err != nil {
					t.Fatalf("supervisor: %v", err)
				}
				r.record(t)
				if attempt < timing.FailureThreshold {
					if resp, err := r.s.HandleStream(ctx, r.w.StreamEvent(t, r.id)); err != nil || len(resp.BatchItemFailures) > 0 {
						t.Fatalf("claim: %+v, %v", resp, err)
					}
					r.record(t)
				}
			}
		}, "step charge-payment did not complete in time", "timed out: no reply by",
			[]string{"attempt 2", "no reply by", "timed out", "allowed timeouts"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := testenv.NewWorld(t, timing)
			versions := checkoutWith(t)
			r := newCheckoutRun(t, w, versions)
			r.submit(t)
			r.reply(t, "fraud-check", fraudAnswer)
			r.reply(t, "reserve-inventory", reserveAnswer)
			tt.fail(t, r, versions)

			o, _ := w.Records(t, r.id)
			if o.Status != order.StatusCompensating || !strings.Contains(o.LastError, tt.ops) {
				t.Fatalf("got %s, %q; want Compensating with the engine's reason (%s)", o.Status, o.LastError, tt.ops)
			}
			view := r.read(t, api.ResourceOrder)
			var v api.ClientOrderView
			if err := json.Unmarshal([]byte(view), &v); err != nil || v.LastError != tt.want {
				t.Errorf("the client's view says %q (%v), want %q: %s", v.LastError, err, tt.want, view)
			}
			client := map[string]string{"view": view, "history": r.read(t, api.ResourceHistory), "status events": statusEvents(t, w)}
			for where, body := range client {
				if !strings.Contains(body, tt.want) {
					t.Errorf("the client's %s lacks %q: %s", where, tt.want, body)
				}
				for _, never := range tt.never {
					if strings.Contains(body, never) {
						t.Errorf("the client's %s shows %q: %s", where, never, body)
					}
				}
			}
			for _, resource := range []string{api.ResourceOperatorOrder, api.ResourceOperatorHistory} {
				if body := r.read(t, resource); !strings.Contains(body, tt.ops) {
					t.Errorf("%s lacks the engine's reason %q: %s", resource, tt.ops, body)
				}
			}
		})
	}
}
