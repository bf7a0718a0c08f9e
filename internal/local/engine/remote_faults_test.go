package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/local/engine"
	"orderly/internal/local/simulator"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A remote service that refuses the agents' configuration for a while
// (payment answers 403, as a WAF blocking the agents would) fails no
// order: the payment agent's circuit opens on the first 403 and holds the
// order's request in its queue, the Supervisor moves the held step's
// deadline on (for longer than the step's allowances and heartbeats
// would last), and once payment answers again the order goes on to
// Processed, nothing undone, with nobody acting. Operators hear of it
// once: the ConfigurationFaults metric names payment and 403 (its alarm is
// the alert), no per-order alert is sent, and the agent's circuit openings
// are not counted as a failing service (a second alarm).
func TestConfigurationFaultHoldsOrdersUntilTheServiceAnswers(t *testing.T) {
	t.Parallel()
	const (
		openFor = time.Second
		outage  = 8 * time.Second // 8 allowances, 4 times the step's maximum allowance
	)
	emfPath := filepath.Join(t.TempDir(), "emf.jsonl")
	emf, err := os.Create(emfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer emf.Close()
	e := start(t, func(c *engine.Config) {
		c.Breaker = agent.Breaker{Failures: 5, OpenFor: openFor}
		// A held request's late start renews its window, one heartbeat
		// each time it probes: 2 run out early in the outage, after which
		// only the Supervisor's deferrals of the held step keep it going.
		c.Timing.MaxHeartbeats = 2
		c.Metrics = emf
	})
	began := time.Now()
	e.Sim.AddOutage(simulator.Outage{Service: ordertest.AgentPayment, From: began, Till: began.Add(outage), Status: http.StatusForbidden})
	id := submit(t, e, lines("BOOK-1"))

	// During the outage the order waits at payment, failing nothing.
	for time.Since(began) < outage-time.Second {
		v := status(t, e, id)
		if v.Status.Terminal() || v.Status == order.StatusCompensating {
			t.Fatalf("during the outage: %s, want the order waiting: %s", v.Status, testenv.Describe(v))
		}
		time.Sleep(500 * time.Millisecond)
	}
	v := await(t, e, id, outage+30*time.Second)
	took := time.Since(began)
	pay := step(v, ordertest.StepChargePayment)
	// A Supervisor run that reads the queue in the instant an agent has
	// taken the held request, before it is held again, counts a timeout
	// (docs/remote-services.md: A long outage); on a busy machine that instant is longer.
	// The promise is that the outage fails nothing: no undo, and fewer
	// timeouts than the threshold.
	if v.Status != order.StatusProcessed || pay.FailureCount >= enginetest.Fast.FailureThreshold || len(v.Steps) != 3 {
		t.Fatalf("got %s, payment attempt %d with %d failures; want Processed, nothing undone, fewer than %d failures: %s",
			v.Status, pay.Attempt, pay.FailureCount, enginetest.Fast.FailureThreshold, testenv.Describe(v))
	}
	if pay.Attempt != 1 {
		t.Logf("payment ended on attempt %d: a Supervisor run caught the held request in flight", pay.Attempt)
	}
	stored, err := e.Store.GetStep(context.Background(), id, ordertest.StepChargePayment)
	if err != nil {
		t.Fatal(err)
	}
	// When a Supervisor run caught the held request in flight (above),
	// the new attempt's heartbeats may carry it past the outage alone.
	if stored.Deferrals == 0 && pay.Attempt == 1 {
		t.Errorf("payment step deferred %d times, %d heartbeats: want the Supervisor to have moved the held step's deadline on", stored.Deferrals, stored.Heartbeats)
	}
	if took < outage {
		t.Errorf("Processed %s after the outage began, want after it ended (%s)", took, outage)
	}
	if a, ok := e.alerts.Next(id, 2*time.Second); ok {
		t.Errorf("alert %+v about the order, want none: its order never needed an operator", a)
	}

	// One episode on the metric: every 403 counted, with its status, while
	// the outage lasted; at most one per probe of the open circuit.
	faults, opened := 0, 0
	end := began.Add(outage + 2*time.Second)
	for _, rec := range emfRecords(t, emfPath) {
		if rec["Service"] != ordertest.AgentPayment+"-agent" {
			continue
		}
		if rec[metrics.CircuitOpened] != nil {
			opened++
		}
		if rec[metrics.ConfigurationFaults] == nil {
			continue
		}
		faults++
		at := time.UnixMilli(int64(rec["_aws"].(map[string]any)["Timestamp"].(float64)))
		if rec[metrics.DimStatus] != "403" || rec["order_id"] != id || at.Before(began) || at.After(end) {
			t.Errorf("%s record %v at %s, want status 403 for the order, between %s and %s", metrics.ConfigurationFaults, rec, at, began, end)
		}
	}
	if most := int(outage/openFor) + 2; faults < 1 || faults > most {
		t.Errorf("%d %s records, want between 1 and %d (one per probe, not one per retry)", faults, metrics.ConfigurationFaults, most)
	}
	if opened != 0 {
		t.Errorf("%d %s records, want none: the configuration fault's alarm is the one alert", opened, metrics.CircuitOpened)
	}
	t.Logf("Processed %s after a %s outage began; %d configuration faults counted; payment's deadline moved on %d times by heartbeats, %d by the Supervisor",
		took.Round(time.Millisecond), outage, faults, stored.Heartbeats, stored.Deferrals)
}

// One order's data does not hold everyone: payment answers 404 for one
// order's unknown payment account (TEST-PAYMENT-UNKNOWN: common REST
// practice for an unknown entity) while it charges the other orders.
// The payment agent has seen other keys succeed, so that 404 is the
// order's own: its step fails with the service's words and its
// reservation is undone, the other orders go on to Processed, and the
// circuit never opens: nothing is held, no configuration fault counted.
func TestOneOrdersNotFoundFailsOnlyThatOrder(t *testing.T) {
	t.Parallel()
	emfPath := filepath.Join(t.TempDir(), "emf.jsonl")
	emf, err := os.Create(emfPath)
	if err != nil {
		t.Fatal(err)
	}
	defer emf.Close()
	e := start(t, func(c *engine.Config) { c.Metrics = emf })

	// A fresh agent has seen no other order succeed: one first, so that
	// the 404 has others to stand against.
	first := submit(t, e, lines("BOOK-1"))
	if v := await(t, e, first, 30*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("first order: %s, want Processed: %s", v.Status, testenv.Describe(v))
	}
	bad := submit(t, e, lines("BOOK-2", "TEST-PAYMENT-UNKNOWN"))
	var others []string
	for i := range 4 {
		others = append(others, submit(t, e, lines(fmt.Sprintf("BOOK-%d", i+3))))
	}

	v := await(t, e, bad, 40*time.Second)
	// The step's reason and attempt are the operator's to read.
	pay, err := e.Store.GetStep(context.Background(), bad, ordertest.StepChargePayment)
	if err != nil {
		t.Fatal(err)
	}
	if v.Status != order.StatusFailed || !slices.Equal(forward(v), []string{"Undone", "Failed", "NotStarted"}) {
		t.Fatalf("the order with the unknown account: %s %v, want Failed [Undone Failed NotStarted]: %s", v.Status, forward(v), testenv.Describe(v))
	}
	if want := "no such payment account"; !strings.Contains(pay.LastError, want) || !strings.Contains(v.LastError, want) {
		t.Errorf("reasons: step %q, order %q, want the service's words %q", pay.LastError, v.LastError, want)
	}
	if got := undone(t, e, bad); !slices.Equal(got, []string{ordertest.AgentInventory}) {
		t.Errorf("the simulator undid %v, want [inventory]", got)
	}
	for _, id := range others {
		if v := await(t, e, id, 30*time.Second); v.Status != order.StatusProcessed {
			t.Errorf("order %s: %s, want Processed: %s", id, v.Status, testenv.Describe(v))
		}
	}
	for _, rec := range emfRecords(t, emfPath) {
		if rec["Service"] != ordertest.AgentPayment+"-agent" {
			continue
		}
		for _, name := range []string{metrics.RequestsHeld, metrics.ConfigurationFaults, metrics.CircuitOpened} {
			if rec[name] != nil {
				t.Errorf("%s record %v: the one order's 404 opened the circuit or held a request", name, rec)
			}
		}
	}
}

// emfRecords reads the EMF lines the engine wrote.
func emfRecords(t *testing.T, path string) []map[string]any {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []map[string]any
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("EMF line %q: %v", sc.Text(), err)
		}
		out = append(out, rec)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}
