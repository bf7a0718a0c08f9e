package engine_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/metrics"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// An operator pauses payment for its maintenance window, during which
// payment answers every call with 503. Orders submitted meanwhile reach
// payment and wait there, far longer than their allowance and failure
// threshold would allow a timed-out call: the agent never calls payment
// while it is paused (it holds each request in its queue), the
// Supervisor moves the held steps' deadlines on without counting a
// failure, and nothing alarms: no circuit opens, no alert is sent, no
// order fails or is undone, and the pause is not overrun. Payment comes
// back, the operator resumes it, and every order goes on to Processed
// with nobody else acting.
func TestPausedServiceHoldsOrdersWithoutAnAlarm(t *testing.T) {
	t.Parallel()
	const (
		// The window is 10 allowances and 5 maximum allowances of the
		// engine's timing: without the pause, each order would fail.
		window = 10 * time.Second
		orders = 4
		by     = "ops@example.com"
	)
	emfPath := filepath.Join(t.TempDir(), "emf.jsonl")
	emf, err := os.Create(emfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer emf.Close()
	calls := &callTimes{}
	// A held request that comes back after the resume, past the deadline
	// it was sent with, starts a fresh window (a heartbeat): with
	// heartbeats off (the engine's Fast timing) it would be dropped and
	// its attempt would count a timeout (docs/remote-services.md, A long
	// outage: the same limit).
	timing := enginetest.Fast
	timing.MaxHeartbeats = 2
	e := start(t, func(c *engine.Config) {
		c.Timing = timing
		c.Metrics = emf
		// A held request comes back every 0.5-1 s, so it is held again
		// and again during the window, and the resume is felt at once.
		c.PausedHold = time.Second
		c.FunctionHTTP = func(function string) func(http.RoundTripper) http.RoundTripper {
			if function != resources.AgentFunction(ordertest.AgentPayment) {
				return nil
			}
			return calls.wrap
		}
	})
	ctx := context.Background()
	stage := ops.Open(e.Stack.Catalog.Stage, e.Clients().DynamoDB, e.Clients().SQS, ordertest.Built(timing))

	// The operator expects the window to end well before it says, so the
	// pause is never overrun.
	p, err := stage.Pause(ctx, order.PauseRequest{Kind: order.PauseService, Name: ordertest.AgentPayment, For: window + time.Minute,
		Reason: "payment's maintenance window", By: by})
	if err != nil {
		t.Fatalf("pause payment: %v", err)
	}
	pausedAt := time.Now()
	e.Sim.AddOutage(simulator.Outage{Service: ordertest.AgentPayment, From: pausedAt, Till: pausedAt.Add(window)})
	var ids []string
	for i := range orders {
		ids = append(ids, submit(t, e, lines(fmt.Sprintf("BOOK-%d", i+1))))
	}

	// Every order reaches payment and waits there, failing nothing,
	// through the whole window.
	reached := map[string]bool{}
	for time.Since(pausedAt) < window {
		for _, id := range ids {
			v := status(t, e, id)
			pay := step(v, ordertest.StepChargePayment)
			if v.Status.Terminal() || v.Status == order.StatusCompensating || pay.FailureCount != 0 || pay.Attempt > 1 {
				t.Fatalf("order %s while payment is paused: %s, payment attempt %d with %d failures; want it waiting at payment, no failure counted: %s",
					id, v.Status, pay.Attempt, pay.FailureCount, testenv.Describe(v))
			}
			if pay.State == string(order.Processing) {
				reached[id] = true
			}
		}
		time.Sleep(500 * time.Millisecond)
	}
	if len(reached) != orders {
		t.Fatalf("%d of %d orders reached payment during its %s pause, want all", len(reached), orders, window)
	}
	resumedAt := time.Now()
	if _, err := stage.Resume(ctx, order.PauseService, ordertest.AgentPayment, by, "maintenance over"); err != nil {
		t.Fatalf("resume payment: %v", err)
	}

	for _, id := range ids {
		v := await(t, e, id, 30*time.Second)
		pay := step(v, ordertest.StepChargePayment)
		// A Supervisor run may catch a request the agent took after the
		// resume, before its call ends, and count a timeout (as after an
		// outage: docs/remote-services.md); the promise is that the pause
		// fails nothing.
		if v.Status != order.StatusProcessed || len(v.Steps) != 3 || pay.FailureCount >= enginetest.Fast.FailureThreshold {
			t.Fatalf("order %s: %s, payment attempt %d with %d failures; want Processed, nothing undone: %s",
				id, v.Status, pay.Attempt, pay.FailureCount, testenv.Describe(v))
		}
		for _, s := range v.Steps {
			if s.State != string(order.Processed) {
				t.Errorf("order %s, step %s: %s, want Processed", id, s.Step, s.State)
			}
		}
		if pay.Attempt != 1 {
			t.Logf("order %s: payment ended on attempt %d (a Supervisor run after the resume caught its request in flight)", id, pay.Attempt)
		}
		if n := e.Sim.Calls(ordertest.AgentPayment, enginetest.RemoteKey(t, e.Engine, id, ordertest.StepChargePayment)); n < 1 {
			t.Errorf("order %s: payment charged %d times, want at least once, after the resume", id, n)
		}
		if e.Sim.Undone(ordertest.AgentInventory, enginetest.RemoteKey(t, e.Engine, id, ordertest.StepReserveInventory)) {
			t.Errorf("order %s: its reservation was undone, want nothing undone", id)
		}
	}
	took := time.Since(pausedAt)

	// The agent never called payment while it was paused.
	during, after := calls.split(pausedAt, resumedAt)
	if len(during) > 0 {
		t.Errorf("the payment agent called payment %d times while it was paused (at %v), want never", len(during), during)
	}
	if len(after) < orders {
		t.Errorf("the payment agent called payment %d times after the resume, want at least %d (one per order)", len(after), orders)
	}

	// Nothing for anyone to act on: no alert on the topic, about any
	// order or anything else.
	alerts, err := e.alerts.Others(2 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(alerts) > 0 {
		t.Errorf("alerts %+v, want none: the pause held its orders without a failure", alerts)
	}

	// The metrics the stage's alarms watch say the same.
	var paused, pausesOn, overrun, deferred int
	// deferredOf counts each order's deferrals; deferredPaused those
	// made while the pause lasted.
	deferredOf, deferredPaused := map[string]int{}, map[string]int{}
	for _, rec := range emfRecords(t, emfPath) {
		for _, name := range []string{metrics.CircuitOpened, metrics.RequestsHeld, metrics.ConfigurationFaults, metrics.OrdersFailed,
			metrics.OrdersInError, metrics.CompensationsStarted, metrics.AlertsSent} {
			if n, ok := rec[name].(float64); ok && n > 0 {
				t.Errorf("%s record %v, want none: a pause is no failure", name, rec)
			}
		}
		// A timeout counted after the resume is a request caught in
		// flight (above); none is counted while the pause lasts.
		at := time.UnixMilli(int64(rec["_aws"].(map[string]any)["Timestamp"].(float64)))
		if rec[metrics.StepsRetried] != nil && at.Before(resumedAt) {
			t.Errorf("%s record %v at %s, during the pause: want no timeout counted", metrics.StepsRetried, rec, at)
		}
		switch {
		case rec["Service"] == ordertest.AgentPayment+"-agent" && rec[metrics.RequestsPaused] != nil:
			paused++
		case rec["Service"] == resources.FunctionSupervisor:
			if n, ok := rec[metrics.PausesOn].(float64); ok && n > 0 {
				pausesOn++
			}
			if n, ok := rec[metrics.PausesOverrun].(float64); ok && n > 0 {
				overrun++
			}
			if n, ok := rec[metrics.StepsDeferred].(float64); ok {
				deferred += int(n)
				if id, ok := rec["order_id"].(string); ok {
					deferredOf[id] += int(n)
					if at.Before(resumedAt) {
						deferredPaused[id] += int(n)
					}
				}
			}
		}
	}
	if paused <= orders {
		t.Errorf("%d %s records, want more than %d: each order's request held, and held again while the pause lasted", paused, metrics.RequestsPaused, orders)
	}
	if pausesOn == 0 || overrun != 0 {
		t.Errorf("Supervisor runs counted %d with a pause on, %d with one overrun; want some on, none overrun (the alarm)", pausesOn, overrun)
	}
	for _, id := range ids {
		if deferredPaused[id] == 0 {
			t.Errorf("order %s: never deferred while paused, want the Supervisor to have moved the held step's deadline on", id)
		}
		// The pause's deferrals are not counted against back-pressure's
		// (MaxDeferrals); those after the resume (its requests still
		// held in the queue a moment) are.
		stored, err := e.Store.GetStep(ctx, id, ordertest.StepChargePayment)
		if err != nil {
			t.Fatal(err)
		}
		if stored.Deferrals > deferredOf[id]-deferredPaused[id] {
			t.Errorf("order %s: payment step's deferrals %d of %d made, %d of them while paused: want the pause's not counted",
				id, stored.Deferrals, deferredOf[id], deferredPaused[id])
		}
	}
	t.Logf("%d orders held %s by %s's pause (since %s), Processed %s after it began; %d requests held, %d deferrals",
		orders, resumedAt.Sub(pausedAt).Round(time.Millisecond), p.By, p.Since.Format(time.RFC3339), took.Round(time.Millisecond), paused, deferred)
}

// callTimes records when an agent's calls left it, through the HTTP
// transport it calls its service through.
type callTimes struct {
	mu sync.Mutex
	at []time.Time
}

func (c *callTimes) wrap(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		c.mu.Lock()
		c.at = append(c.at, time.Now())
		c.mu.Unlock()
		return next.RoundTrip(r)
	})
}

// split returns the calls made from from until till, and those after.
func (c *callTimes) split(from, till time.Time) (during, after []time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, at := range c.at {
		switch {
		case at.Before(from):
		case at.Before(till):
			during = append(during, at)
		default:
			after = append(after, at)
		}
	}
	return during, after
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
