package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"orderly/internal/actor/api"
	"orderly/internal/adapter/services"
	"orderly/internal/definition"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/testenv"
)

// teamServices stands for a team's own services behind the checkout
// example: it answers each call by its path and keeps every request body,
// so a test sees what each call carried.
type teamServices struct {
	mu     sync.Mutex
	bodies map[string][]map[string]any // by path
}

func newTeamServices(t *testing.T) (*teamServices, string) {
	s := &teamServices{bodies: map[string][]map[string]any{}}
	ts := httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(ts.Close)
	return s, ts.URL
}

func (s *teamServices) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	var body map[string]any
	_ = json.Unmarshal(raw, &body)
	s.mu.Lock()
	s.bodies[r.URL.Path] = append(s.bodies[r.URL.Path], body)
	s.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	customer, _ := body["customerId"].(string)
	w.Header().Set("Content-Type", "application/json")
	switch {
	case r.URL.Path == "/fraud/checks" && customer == "c-huge":
		// Far over the step's 1 KiB result bound: a contract fault.
		fmt.Fprintf(w, `{"id":"fc-%s","score":0.1,"detail":%q}`, key[:8], strings.Repeat("x", 4096))
	case r.URL.Path == "/fraud/checks":
		fmt.Fprintf(w, `{"id":"fc-%s","score":0.12}`, key[:8])
	case r.URL.Path == "/inventory/reservations":
		fmt.Fprintf(w, `{"id":"res-%s","warehouse":"dub-1"}`, key[:8])
	case r.URL.Path == "/payment/charges":
		fmt.Fprintf(w, `{"id":"ch-%s","amount":4999}`, key[:8])
	case r.URL.Path == "/shipping/shipments" && customer == "c-undeliverable":
		w.WriteHeader(http.StatusUnprocessableEntity)
		fmt.Fprint(w, `{"error":"address undeliverable"}`)
	default: // the other calls, and every undo
		fmt.Fprintf(w, `{"id":"ok-%s"}`, key[:8])
	}
}

func (s *teamServices) sent(path string) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.bodies[path]
}

// checkoutInput is an order of the checkout example.
func checkoutInput(customer string) string {
	return fmt.Sprintf(`{"customerId":%q,"lines":[{"sku":"SKU-1","quantity":2}],"amount":{"currency":"EUR","minorUnits":4999},
		"shippingAddress":{"name":"Ada","line1":"12 Square","city":"London","postalCode":"SW1","country":"GB"},"paymentToken":"tok_visa_4242"}`, customer)
}

func startCheckout(t *testing.T) (running, *teamServices) {
	t.Helper()
	team, url := newTeamServices(t)
	wfs, err := definition.Deployed(enginetest.Fast, []string{"order", "checkout"}, "order", "")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, func(c *engine.Config) { c.Workflows, c.RemoteURL = wfs, url })
	return e, team
}

func postWorkflow(t *testing.T, e running, workflow, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(e.URL()+"/workflows/"+workflow+"/orders", "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out map[string]any
	_ = json.NewDecoder(resp.Body).Decode(&out)
	return resp.StatusCode, out
}

func resultOf(v api.OrderView, step string) map[string]any {
	var r map[string]any
	_ = json.Unmarshal(stepView(v, step).Result, &r)
	return r
}

func stepView(v api.OrderView, name string) api.StepView {
	for _, s := range v.Steps {
		if s.Step == name && !s.Undo {
			return s
		}
	}
	return api.StepView{}
}

// A team's own four-step workflow runs beside the shipped one: its order
// carries its own input, and each step's result goes where the definition
// says, to a later step and to the step's own undo.
func TestATeamsOwnWorkflowPassesResultsOn(t *testing.T) {
	t.Parallel()
	e, team := startCheckout(t)

	code, out := postWorkflow(t, e, "checkout", checkoutInput("c-1"))
	if code != http.StatusAccepted {
		t.Fatalf("POST /workflows/checkout/orders: %d %v", code, out)
	}
	v := await(t, e, out["orderId"].(string), 20*time.Second)
	if v.Status != order.StatusProcessed || v.Workflow != "checkout" || len(v.Steps) != 4 {
		t.Fatalf("got %s of %s with %d steps, want a Processed checkout order of 4: %s", v.Status, v.Workflow, len(v.Steps), testenv.Describe(v))
	}
	// fraud-check's answer went to charge-payment, reserve-inventory's to
	// arrange-shipping; the order's input went to every step.
	charge := team.sent("/payment/charges")[0]
	fraud := resultOf(v, "fraud-check")
	if got := charge["results"].(map[string]any)["fraud-check"]; fmt.Sprint(got) != fmt.Sprint(fraud) || fraud["score"] != 0.12 {
		t.Errorf("charge carried results %v, want fraud-check's result %v", charge["results"], fraud)
	}
	if charge["paymentToken"] != "tok_visa_4242" || charge["orderId"] != v.OrderID {
		t.Errorf("charge body %v, want the order's input and id", charge)
	}
	ship := team.sent("/shipping/shipments")[0]
	if got := ship["results"].(map[string]any)["reserve-inventory"].(map[string]any)["id"]; got != stepView(v, "reserve-inventory").Reference {
		t.Errorf("shipment carried reservation %v, want %s", got, stepView(v, "reserve-inventory").Reference)
	}
	if _, carried := team.sent("/inventory/reservations")[0]["results"]; carried {
		t.Error("the reservation carried results it does not name")
	}
	// Only results some call carries are kept: arrange-shipping's is not.
	if r := stepView(v, "arrange-shipping").Result; len(r) != 0 {
		t.Errorf("arrange-shipping kept %s; no call carries it", r)
	}
	// The operators' history shows each kept result on the success that
	// kept it (a client's shows none: the checkout example shows none).
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		resp, err := http.Get(e.URL() + "/ops/orders/" + v.OrderID + "/history")
		if err != nil {
			return false, err.Error()
		}
		defer resp.Body.Close()
		var h api.HistoryView
		_ = json.NewDecoder(resp.Body).Decode(&h)
		var kept []string
		for _, tr := range h.History {
			if len(tr.Result) > 0 && tr.To == string(order.Processed) {
				kept = append(kept, tr.Step)
			}
		}
		return strings.Join(kept, ",") == "fraud-check,reserve-inventory,charge-payment", fmt.Sprintf("results in the history: %v", kept)
	})
	// The shipped workflow still takes its own input at POST /orders.
	if id := submit(t, e, lines("BOOK-1")); await(t, e, id, 20*time.Second).Status != order.StatusProcessed {
		t.Error("the shipped workflow's order did not end Processed beside the checkout")
	}
}

// A failure undoes the done steps in reverse, and the refund names the
// charge it reverses: the step's own result, carried to its undo.
func TestATeamsUndoGetsItsStepsResult(t *testing.T) {
	t.Parallel()
	e, team := startCheckout(t)
	_, out := postWorkflow(t, e, "checkout", checkoutInput("c-undeliverable"))
	v := await(t, e, out["orderId"].(string), 20*time.Second)
	if v.Status != order.StatusFailed {
		t.Fatalf("got %s, want Failed: %s", v.Status, testenv.Describe(v))
	}
	refunds := team.sent("/payment/refunds")
	if len(refunds) != 1 {
		t.Fatalf("%d refunds, want 1", len(refunds))
	}
	charged := refunds[0]["results"].(map[string]any)["charge-payment"].(map[string]any)
	if charged["id"] != stepView(v, "charge-payment").Reference || charged["amount"] != 4999.0 {
		t.Errorf("refund carried %v, want the charge %s", charged, stepView(v, "charge-payment").Reference)
	}
	if n := len(team.sent("/inventory/releases")); n != 1 {
		t.Errorf("%d releases, want 1", n)
	}
}

// An answer over the step's result bound is a contract fault: the work
// was done, so the order waits in Error for an operator, who is alerted,
// and nothing later runs on an answer that cannot be kept.
func TestAnAnswerOverTheResultBoundIsAContractFault(t *testing.T) {
	t.Parallel()
	e, team := startCheckout(t)
	_, out := postWorkflow(t, e, "checkout", checkoutInput("c-huge"))
	id := out["orderId"].(string)
	v := await(t, e, id, 20*time.Second)
	if v.Status != order.StatusError || !strings.Contains(v.LastError, "1024") || strings.Contains(v.LastError, "xxxx") {
		t.Fatalf("got %s (%q), want Error naming the bound, not the answer: %s", v.Status, v.LastError, testenv.Describe(v))
	}
	if n := len(team.sent("/inventory/reservations")); n != 0 {
		t.Errorf("%d reservations after a contract fault, want none", n)
	}
	if a := e.alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepFailed || strings.Contains(fmt.Sprint(a), "xxxx") {
		t.Errorf("alert %+v, want StepFailed without the answer", a)
	}
}

// A submission is checked against its workflow's own input schema, and a
// workflow the stage does not run is named with those it does.
func TestSubmissionsAreCheckedAgainstTheirWorkflow(t *testing.T) {
	t.Parallel()
	e, _ := startCheckout(t)
	for _, tt := range []struct {
		workflow, body, mention string
		status                  int
	}{
		{"checkout", `{"customerId":"c","lines":[{"sku":"A","quantity":1}]}`, `"field":"shippingAddress","problem":"is required"`, 400},
		{"checkout", strings.Replace(checkoutInput("c"), `"GB"`, `"Britain"`, 1), "shippingAddress.country", 400},
		{"nope", checkoutInput("c"), "this stage runs order, checkout", 400},
		{"order", checkoutInput("c"), "additional properties", 400},
	} {
		code, out := postWorkflow(t, e, tt.workflow, tt.body)
		if raw, _ := json.Marshal(out); code != tt.status || !strings.Contains(string(raw), tt.mention) {
			t.Errorf("POST /workflows/%s/orders: %d %s, want %d mentioning %q", tt.workflow, code, raw, tt.status, tt.mention)
		}
	}
}

// The checkout example's fraud service takes an Authorization header from
// Secrets Manager, locally too: the engine makes the secret in the
// emulator and its simulator refuses a call without it.
func TestCheckoutRunsWithAnAuthHeaderLocally(t *testing.T) {
	t.Parallel()
	addr := testenv.FreeLoopback(t)
	secret := "orderly-test/" + testenv.Stage(t) + "/fraud-token"
	wfs, err := definition.Deployed(enginetest.Fast, []string{"order", "checkout"}, "order", "")
	if err != nil {
		t.Fatal(err)
	}
	e := start(t, func(c *engine.Config) {
		c.Workflows, c.SimulatorAddr, c.LocalSecrets = wfs, addr, true
		c.Services = services.Config{"fraud": {URL: "http://" + addr, Auth: services.Auth{Type: services.AuthHeader, Header: "Authorization", Secret: secret}}}
	})
	t.Cleanup(func() {
		sm := secretsmanager.NewFromConfig(testenv.AWS(t))
		_, _ = sm.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{SecretId: &secret, ForceDeleteWithoutRecovery: aws.Bool(true)})
	})
	code, out := postWorkflow(t, e, "checkout", checkoutInput("c-auth"))
	if code != http.StatusAccepted {
		t.Fatalf("POST: %d %v", code, out)
	}
	if v := await(t, e, out["orderId"].(string), 20*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed with the credential: %s", v.Status, testenv.Describe(v))
	}
	// Without the header the simulator's fraud service refuses the call.
	resp, err := http.Post("http://"+addr+"/fraud/checks", "application/json", strings.NewReader(`{"orderId":"X"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("a call without the header: %d, want 401", resp.StatusCode)
	}
}

// Locally, a team's own service whose secret the local Secrets Manager
// lacks stops the engine at start, saying how to make it, rather than
// failing every call.
func TestLocalRunRefusesAServiceWhoseSecretIsMissing(t *testing.T) {
	t.Parallel()
	cfg := enginetest.Config(t)
	cfg.LocalSecrets = true
	cfg.Services = services.Config{"payment": {URL: "http://127.0.0.1:1", Auth: services.Auth{Type: services.AuthHeader, Header: "X-Api-Key", Secret: "orderly-test/no-such-secret"}}}
	_, err := engine.New(context.Background(), testenv.AWS(t), cfg)
	if err == nil || !strings.Contains(err.Error(), "create-secret --name orderly-test/no-such-secret") {
		t.Errorf("engine.New = %v, want it refused, saying how to create the secret", err)
	}
}
