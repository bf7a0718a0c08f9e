package engine_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// The local API serves POST /callbacks/iam as API Gateway does in AWS,
// where it is IAM-authorized: locally, as on every IAM route, the one
// local caller makes the request. A service inside AWS calls back there
// with the token its call carried in the Orderly-Callback-Token header;
// the token in the Authorization header, as POST /callbacks takes it,
// is not read there.
func TestTheLocalAPITakesSignedCallbacks(t *testing.T) {
	t.Parallel()
	payment := &bodies{}
	e := start(t, func(cfg *engine.Config) {
		cfg.Timing.Allowance, cfg.Timing.MaxAllowance = 4*cfg.Timing.Allowance, 4*cfg.Timing.MaxAllowance
		// The simulator's own callback comes after the test.
		cfg.CallbackDelay = time.Minute
		paymentCallsBack(cfg, payment)
	})
	id := submit(t, e, lines("BOOK-1"))
	var token string
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		payment.mu.Lock()
		defer payment.mu.Unlock()
		if len(payment.got) == 0 {
			return false, "no payment call yet"
		}
		var body struct{ Callback struct{ Token string } }
		if err := json.Unmarshal(payment.got[0], &body); err != nil {
			t.Fatal(err)
		}
		token = body.Callback.Token
		return true, ""
	})
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		v := status(t, e, id)
		return step(v, ordertest.StepChargePayment).State == string(order.Waiting), testenv.Describe(v)
	})

	post := func(headers map[string]string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, e.URL()+api.ResourceCallbacksIAM, strings.NewReader(`{"outcome":"succeeded","result":{"id":"ch-signed"}}`))
		req.Header.Set("Content-Type", "application/json")
		for k, v := range headers {
			req.Header.Set(k, v)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("POST %s: %v", api.ResourceCallbacksIAM, err)
		}
		defer resp.Body.Close()
		var out struct{ Error, Status string }
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out.Error + out.Status
	}
	if got, what := post(map[string]string{"Authorization": "Orderly-Callback " + token}); got != http.StatusUnauthorized || what != "invalid_token" {
		t.Errorf("the token in Authorization: %d %s, want 401 invalid_token", got, what)
	}
	if got, what := post(map[string]string{api.CallbackTokenHeader: token}); got != http.StatusOK || what != string(order.StatusProcessing) {
		t.Fatalf("the token in %s: %d %s, want 200 Processing", api.CallbackTokenHeader, got, what)
	}
	v := await(t, e, id, 20*time.Second)
	if v.Status != order.StatusProcessed || step(v, ordertest.StepChargePayment).Reference != "ch-signed" {
		t.Errorf("got %s, want Processed with the signed callback's reference: %s", v.Status, testenv.Describe(v))
	}
}
