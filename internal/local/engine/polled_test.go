package engine_test

import (
	"net/http"
	"slices"
	"testing"
	"time"

	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// pollWorkInTests is how long the simulator's polled payment works
// before its status says done: long enough that an order is seen
// waiting, and cancelled while it does.
const pollWorkInTests = 2 * time.Second

// startPolled runs the shipped workflow with charge-payment's service
// polled ("call": {"poll": {"timeout": "20s", "every": "1s"}}), its
// checks sent by the Supervisor. The allowances are tripled, so that a
// busy machine does not time a call or a check out.
func startPolled(t *testing.T) running {
	t.Helper()
	return start(t, func(c *engine.Config) {
		c.Timing.Allowance, c.Timing.MaxAllowance, c.Timing.FailureThreshold = 3*time.Second, 6*time.Second, 3
		wf := ordertest.OrderWorkflow(c.Timing)
		wf.Steps = slices.Clone(wf.Steps)
		i, _ := wf.Index(ordertest.StepChargePayment)
		wf.Steps[i].Poll = &order.PollWait{Timeout: 20 * time.Second, Every: time.Second}
		c.Workflows = order.MustVersions(wf)
		c.CallbackDelay = pollWorkInTests
	})
}

// An order whose payment is polled on the emulators: its call is
// accepted (202), the order waits while the Supervisor has its status
// URL checked, and it ends as the status says, as each test value has
// it; the charge is made once, on the call's one attempt, and undone
// when the order fails after it.
func TestAPolledPaymentEndsAsItsStatusSays(t *testing.T) {
	t.Parallel()
	e := startPolled(t)
	tests := []struct {
		name    string
		skus    []string
		status  order.Status
		forward []string
		// charged says whether a charge is left made; undone lists the
		// services whose work was undone.
		charged bool
		undone  []string
		// minChecks is the least checks of the status URL (the one it
		// moved from left out): a moved or flaky one needs one more.
		minChecks int
	}{
		{name: "done", status: order.StatusProcessed, forward: []string{"Processed", "Processed", "Processed"}, charged: true, minChecks: 1},
		{name: "failed undoes the reservation", skus: []string{"TEST-PAYMENT-POLL-FAILED"},
			status: order.StatusFailed, forward: []string{"Undone", "Failed", "NotStarted"}, undone: []string{"inventory"}, minChecks: 1},
		// The first check moves the status URL; the checks after it go
		// to the new one, the old one only ever pointing there.
		{name: "a moved status URL", skus: []string{"TEST-PAYMENT-POLL-MOVED"},
			status: order.StatusProcessed, forward: []string{"Processed", "Processed", "Processed"}, charged: true, minChecks: 2},
		{name: "a flaky status URL and a 303 to the answer", skus: []string{"TEST-PAYMENT-POLL-FLAKY", "TEST-PAYMENT-POLL-SEE-OTHER"},
			status: order.StatusProcessed, forward: []string{"Processed", "Processed", "Processed"}, charged: true, minChecks: 2},
		{name: "a failure after the charge undoes it", skus: []string{"TEST-SHIPPING-PERMANENT"},
			status: order.StatusFailed, forward: []string{"Undone", "Undone", "Failed"}, undone: []string{"inventory", "payment"}, minChecks: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := submit(t, e, lines(append([]string{"BOOK-1"}, tt.skus...)...))
			testenv.Eventually(t, 20*time.Second, func() (bool, string) {
				v := status(t, e, id)
				return v.Status == order.StatusWaiting || v.Status.Terminal(), "want the order waiting for its payment: " + testenv.Describe(v)
			})
			v := await(t, e, id, 40*time.Second)
			if v.Status != tt.status || !slices.Equal(forward(v), tt.forward) {
				t.Fatalf("got %s %v, want %s %v: %s", v.Status, forward(v), tt.status, tt.forward, testenv.Describe(v))
			}
			key := enginetest.RemoteKey(t, e.Engine, id, ordertest.StepChargePayment)
			if pay := step(v, ordertest.StepChargePayment); pay.Attempt != 1 {
				t.Errorf("charge-payment on attempt %d, want 1: the wait never timed out", pay.Attempt)
			}
			if n := e.Sim.Calls(ordertest.AgentPayment, key); n != 1 {
				t.Errorf("payment called %d times, want 1: each check is a GET, no call", n)
			}
			if n := e.Sim.Checks(ordertest.AgentPayment, key); n < tt.minChecks {
				t.Errorf("%d checks of the status URL, want at least %d", n, tt.minChecks)
			}
			charge := e.Sim.Reference(ordertest.AgentPayment, key)
			if left := charge != "" && !e.Sim.Undone(ordertest.AgentPayment, key); left != tt.charged {
				t.Errorf("charge %q undone %t: want a charge left made: %t", charge, e.Sim.Undone(ordertest.AgentPayment, key), tt.charged)
			}
			if tt.charged && step(v, ordertest.StepChargePayment).Reference != charge {
				t.Errorf("charge-payment's reference %q, want the charge %q", step(v, ordertest.StepChargePayment).Reference, charge)
			}
			if got := undone(t, e, id); !slices.Equal(got, tt.undone) {
				t.Errorf("the simulator undid %v, want %v", got, tt.undone)
			}
		})
	}
}

// A cancel while the payment's status is being checked ends the wait at
// once: the order ends Cancelled, the charge's undo made with the call's
// Idempotency-Key, which also fences the key, so the job still working
// makes no charge after it.
func TestCancelWhileAPolledPaymentWaits(t *testing.T) {
	t.Parallel()
	e := startPolled(t)
	id := submit(t, e, lines("BOOK-1"))
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		v := status(t, e, id)
		return v.Status == order.StatusWaiting, "want the order waiting for its payment: " + testenv.Describe(v)
	})
	if code, body := post(t, e, "/orders/"+id+"/cancel", ``); code != http.StatusAccepted {
		t.Fatalf("cancel: %d %v, want 202", code, body)
	}
	v := await(t, e, id, 30*time.Second)
	if want := []string{"Undone", "Undone", "NotStarted"}; v.Status != order.StatusCancelled || !slices.Equal(forward(v), want) {
		t.Fatalf("got %s %v, want Cancelled %v: %s", v.Status, forward(v), want, testenv.Describe(v))
	}
	key := enginetest.RemoteKey(t, e.Engine, id, ordertest.StepChargePayment)
	if !e.Sim.Undone(ordertest.AgentPayment, key) {
		t.Errorf("the payment's work under the call's key was not undone")
	}
	if got := undone(t, e, id); !slices.Equal(got, []string{"inventory", "payment"}) {
		t.Errorf("the simulator undid %v, want inventory and payment", got)
	}
}
