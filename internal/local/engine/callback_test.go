package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"orderly/internal/callbacktoken"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// bodies records the bodies of the calls an agent makes.
type bodies struct {
	next http.RoundTripper
	mu   sync.Mutex
	got  [][]byte
}

func (b *bodies) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Body != nil {
		raw, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(raw))
		b.mu.Lock()
		b.got = append(b.got, raw)
		b.mu.Unlock()
	}
	return b.next.RoundTrip(r)
}

// Under make run the agent of a step that calls back is given the local
// API's callback URL and the stage's callback key: its call carries them,
// and the simulator's service answers 202 and calls the local API back,
// which ends the step.
func TestAStepThatCallsBackIsToldTheLocalAPI(t *testing.T) {
	t.Parallel()
	payment := &bodies{}
	e := start(t, func(cfg *engine.Config) {
		// Room for a loaded machine: a timed-out call is made again, on
		// attempt 2, and this test is about the first.
		cfg.Timing.Allowance, cfg.Timing.MaxAllowance = 4*cfg.Timing.Allowance, 4*cfg.Timing.MaxAllowance
		paymentCallsBack(cfg, payment)
	})
	id := submit(t, e, lines("BOOK-1"))
	if v := await(t, e, id, 20*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed: %s", v.Status, testenv.Describe(v))
	}
	payment.mu.Lock()
	defer payment.mu.Unlock()
	if len(payment.got) != 1 {
		t.Fatalf("%d payment calls, want 1", len(payment.got))
	}
	var body struct{ Callback struct{ URL, Token string } }
	if err := json.Unmarshal(payment.got[0], &body); err != nil {
		t.Fatal(err)
	}
	if body.Callback.URL != e.URL()+"/callbacks" {
		t.Errorf("callback URL %q, want the local API's %s/callbacks", body.Callback.URL, e.URL())
	}
	key, err := e.Clients().SecretsManager.GetSecretValue(context.Background(),
		&secretsmanager.GetSecretValueInput{SecretId: aws.String(e.Stack.Catalog.CallbackSecret)})
	if err != nil {
		t.Fatal(err)
	}
	sealer, err := callbacktoken.New([]byte(aws.ToString(key.SecretString)))
	if err != nil {
		t.Fatal(err)
	}
	if c, err := sealer.Open(body.Callback.Token, time.Now()); err != nil || c.OrderID != id || c.Step != ordertest.StepChargePayment || c.Attempt != 1 {
		t.Errorf("the token opens to %+v, %v; want the order's charge-payment, attempt 1", c, err)
	}
}

// paymentCallsBack makes cfg's workflow the shipped one with its payment
// calling back within an hour, and records the payment agent's calls in
// payment.
func paymentCallsBack(cfg *engine.Config, payment *bodies) {
	wf := ordertest.OrderWorkflow(cfg.Timing)
	wf.Steps = slices.Clone(wf.Steps)
	i, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[i].Callback = &order.CallbackWait{Timeout: time.Hour}
	cfg.Workflows = order.MustVersions(wf)
	cfg.FunctionHTTP = func(function string) func(http.RoundTripper) http.RoundTripper {
		if function != resources.AgentFunction(ordertest.AgentPayment) {
			return nil
		}
		return func(next http.RoundTripper) http.RoundTripper { payment.next = next; return payment }
	}
}
