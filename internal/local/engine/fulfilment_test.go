package engine_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/definition"
	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/testenv"
)

// callbackWaitInTests is the fulfilment example's callback timeouts in
// these tests, in place of its hours: long beside the simulator's
// callback delay, short enough that a late callback meets a wait that
// ended. Every other wait (the review, the delivery) is ended by the
// simulated parties, not by its timeout.
const callbackWaitInTests = 3 * time.Second

// startFulfilment runs the fulfilment example with the simulator playing
// every party: its services call back after 300 ms, and its fraud
// analyst and carrier, looking every second, answer 300 ms after an order
// starts waiting. The allowances are enginetest.Fast's tripled, so that a
// busy machine does not time a call out (the late callback's wait is the
// one timeout these orders meet). Its logs (every component's and the
// simulator's) and the bodies of the calls that carry callback tokens are
// returned for a test to look through.
func startFulfilment(t *testing.T) (running, *testenv.JSONLines, map[string]*bodies) {
	t.Helper()
	timing := enginetest.Fast
	timing.Allowance, timing.MaxAllowance, timing.FailureThreshold = 3*time.Second, 6*time.Second, 3
	wfs, err := definition.Deployed(timing, []string{simulator.FulfilmentWorkflow}, simulator.FulfilmentWorkflow, "")
	if err != nil {
		t.Fatal(err)
	}
	wf, _ := wfs.LatestOf(simulator.FulfilmentWorkflow)
	wf.Steps = slices.Clone(wf.Steps)
	for i, st := range wf.Steps {
		if st.Callback != nil {
			wf.Steps[i].Callback = &order.CallbackWait{Timeout: callbackWaitInTests, MaxTimeout: callbackWaitInTests}
		}
	}
	logs := &testenv.JSONLines{}
	calls := map[string]*bodies{resources.AgentFunction("payment"): {}, resources.AgentFunction("warehouse"): {}}
	e := start(t, func(c *engine.Config) {
		c.Log = slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.FunctionHTTP = func(function string) func(http.RoundTripper) http.RoundTripper {
			b, ok := calls[function]
			if !ok {
				return nil
			}
			return func(next http.RoundTripper) http.RoundTripper { b.next = next; return b }
		}
		c.Timing, c.Workflows = timing, order.MustVersions(wf)
		c.CallbackDelay = 300 * time.Millisecond
		c.Parties = &simulator.PartyConfig{Every: time.Second, After: 300 * time.Millisecond}
	})
	return e, logs, calls
}

// fulfilmentInput is an order of the fulfilment example.
func fulfilmentInput(customer string, skus ...string) string {
	var lines []string
	for _, s := range append([]string{"SKU-1"}, skus...) {
		lines = append(lines, fmt.Sprintf(`{"sku":%q,"quantity":1}`, s))
	}
	return fmt.Sprintf(`{"customerId":%q,"lines":[%s],"amount":{"currency":"EUR","minorUnits":4999}}`, customer, strings.Join(lines, ","))
}

// The fulfilment example end to end on the emulators, every party played
// by the simulator: its fraud screen, its services that call back
// (late, twice, out of order, failed, by test values), its fraud analyst
// and its carrier. Each order ends as its parties decide, with one
// success per step in its history, and no work left undone or done twice.
func TestTheFulfilmentExampleRunsWithEveryPartySimulated(t *testing.T) {
	t.Parallel()
	e, logs, calls := startFulfilment(t)
	type sent = simulator.CallbackSent
	ok := func(n int, outcomes ...string) []sent {
		var out []sent
		for _, o := range outcomes {
			out = append(out, sent{Accepted: n, Outcome: o, Status: http.StatusOK})
		}
		return out
	}
	const succeeded, working, failed = order.CallbackOutcomeSucceeded, order.CallbackOutcomeWorking, order.CallbackOutcomeFailed
	// The tokens are looked for in the logs once every order ended.
	t.Cleanup(func() { noTokenLogged(t, logs, calls) })
	for _, tt := range []struct {
		name, customer string
		skus           []string
		want           order.Status
		// states are each step's, in order; skipped steps' too.
		states []order.ProcessState
		// payment and warehouse are the callbacks their services sent,
		// with orderly's answers (nil: the service was not called).
		payment, warehouse []sent
		// charged says whether a charge was left done.
		charged bool
	}{
		{
			name: "a normal order skips the review", customer: "c-normal",
			want:    order.StatusProcessed,
			states:  []order.ProcessState{order.Processed, order.Skipped, order.Processed, order.Processed, order.Processed},
			payment: ok(1, succeeded), warehouse: ok(1, succeeded), charged: true,
		},
		{
			name: "a flagged order approved", customer: "TEST-FLAGGED-approve",
			want:    order.StatusProcessed,
			states:  []order.ProcessState{order.Processed, order.Processed, order.Processed, order.Processed, order.Processed},
			payment: ok(1, succeeded), warehouse: ok(1, succeeded), charged: true,
		},
		{
			name: "a flagged order rejected", customer: "TEST-FLAGGED-reject", skus: []string{"TEST-REVIEW-REJECT"},
			want:   order.StatusFailed,
			states: []order.ProcessState{order.Processed, order.Failed, order.NotStarted, order.NotStarted, order.NotStarted},
		},
		{
			name: "a payment that calls back failed", customer: "c-declined", skus: []string{"TEST-PAYMENT-CALLBACK-FAILED"},
			want:    order.StatusFailed,
			states:  []order.ProcessState{order.Processed, order.Skipped, order.Failed, order.NotStarted, order.NotStarted},
			payment: ok(1, failed),
		},
		{
			name: "a payment working first and after", customer: "c-working", skus: []string{"TEST-PAYMENT-CALLBACK-WORKING", "TEST-PAYMENT-CALLBACK-OUT-OF-ORDER"},
			want:    order.StatusProcessed,
			states:  []order.ProcessState{order.Processed, order.Skipped, order.Processed, order.Processed, order.Processed},
			payment: ok(1, working, succeeded, working), warehouse: ok(1, succeeded), charged: true,
		},
		{
			// The first call's two callbacks come after its token
			// expired (410); the wait ended meanwhile, and the call made
			// again with the same key is called back twice in time.
			name: "a warehouse that calls back twice and late", customer: "c-late", skus: []string{"TEST-WAREHOUSE-CALLBACK-LATE", "TEST-WAREHOUSE-CALLBACK-TWICE"},
			want:    order.StatusProcessed,
			states:  []order.ProcessState{order.Processed, order.Skipped, order.Processed, order.Processed, order.Processed},
			payment: ok(1, succeeded), charged: true,
			warehouse: append([]sent{{Accepted: 1, Outcome: succeeded, Status: http.StatusGone}, {Accepted: 1, Outcome: succeeded, Status: http.StatusGone}},
				ok(2, succeeded, succeeded)...),
		},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, out := postWorkflow(t, e, simulator.FulfilmentWorkflow, fulfilmentInput(tt.customer, tt.skus...))
			if code != http.StatusAccepted {
				t.Fatalf("POST /workflows/fulfilment/orders: %d %v", code, out)
			}
			id := out["orderId"].(string)
			v := await(t, e, id, 30*time.Second)
			if v.Status != tt.want {
				t.Fatalf("got %s, want %s: %s", v.Status, tt.want, testenv.Describe(v))
			}
			var states []order.ProcessState
			for _, s := range v.Steps {
				if !s.Undo {
					states = append(states, order.ProcessState(s.State))
				}
			}
			if !slices.Equal(states, tt.states) {
				t.Errorf("steps %v, want %v: %s", states, tt.states, testenv.Describe(v))
			}
			if undos := slices.ContainsFunc(v.Steps, func(s api.StepView) bool { return s.Undo }); undos {
				t.Errorf("undo records %s; no step before the failure has work to undo", testenv.Describe(v))
			}
			// The services that call back: each callback and its answer
			// (the late ones come after the order ended).
			for _, svc := range []struct {
				name, step string
				want       []sent
			}{{"payment", "charge-payment", tt.payment}, {"warehouse", "pick-and-ship", tt.warehouse}} {
				key := enginetest.RemoteKey(t, e.Engine, id, svc.step)
				testenv.Eventually(t, 15*time.Second, func() (bool, string) {
					// In order for each accepted call; the late ones of one
					// call may come among the next one's.
					got := e.Sim.Callbacks(svc.name, key)
					slices.SortStableFunc(got, func(a, b sent) int { return a.Accepted - b.Accepted })
					return slices.Equal(got, svc.want), fmt.Sprintf("%s's callbacks: %+v, want %+v", svc.name, got, svc.want)
				})
				if svc.want == nil && e.Sim.Calls(svc.name, key) != 0 {
					t.Errorf("%s called %d times, want never", svc.name, e.Sim.Calls(svc.name, key))
				}
				if e.Sim.Undone(svc.name, key) {
					t.Errorf("%s's work undone; nothing after it failed", svc.name)
				}
			}
			if charge := e.Sim.Reference("payment", enginetest.RemoteKey(t, e.Engine, id, "charge-payment")); (charge != "") != tt.charged {
				t.Errorf("charge %q, want one made: %t", charge, tt.charged)
			}
			// One success per step: a duplicate or late callback writes
			// nothing.
			var h api.HistoryView
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				h = history(t, e, id)
				return slices.ContainsFunc(h.History, func(tr order.HistoryEntry) bool {
					return tr.Event == "status" && tr.To == string(tt.want)
				}), "the history has not recorded the order's end yet"
			})
			successes := map[string]int{}
			for _, tr := range h.History {
				if tr.Event == "state" && !tr.Undo && tr.To == string(order.Processed) {
					successes[tr.Step]++
				}
			}
			for i, st := range tt.states {
				if want := map[bool]int{true: 1}[st == order.Processed]; successes[v.Steps[i].Step] != want {
					t.Errorf("history: step %s Processed %d times, want %d", v.Steps[i].Step, successes[v.Steps[i].Step], want)
				}
			}
			if tt.want != order.StatusProcessed {
				return
			}
			// The carrier confirmed the warehouse's shipment; the
			// analyst's decision, when asked, is the review's result.
			if got, want := resultOf(v, "delivery")["trackingId"], stepView(v, "pick-and-ship").Reference; got != want || want == "" {
				t.Errorf("delivery tracking %v, want the shipment %q", got, want)
			}
			if s := stepView(v, "manual-review"); s.State == string(order.Processed) && resultOf(v, "manual-review")["decision"] != "approve" {
				t.Errorf("review result %s, want an approval", s.Result)
			}
		})
	}
}

// noTokenLogged fails t when a callback token that a call carried is in
// any log record: the agents', the API's or the simulator's, which sent
// the callbacks.
func noTokenLogged(t *testing.T, logs *testenv.JSONLines, calls map[string]*bodies) {
	t.Helper()
	all := logs.String()
	seen := 0
	for function, b := range calls {
		b.mu.Lock()
		for _, raw := range b.got {
			var body struct{ Callback struct{ Token string } }
			if json.Unmarshal(raw, &body) != nil || body.Callback.Token == "" {
				continue
			}
			seen++
			if strings.Contains(all, body.Callback.Token) {
				t.Errorf("a callback token %s's call carried is in the logs", function)
			}
		}
		b.mu.Unlock()
	}
	if seen == 0 || !strings.Contains(all, `"msg":"callback sent"`) {
		t.Errorf("no call carried a callback token (%d), or the simulator logged no callback: the check proves nothing", seen)
	}
}
