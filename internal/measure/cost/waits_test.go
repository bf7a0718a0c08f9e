package cost_test

import (
	"context"
	"strings"
	"testing"

	"orderly/internal/measure/cost"
	"orderly/internal/prices"
	"orderly/internal/testkit/testenv"
)

// TestAWaitingOrderCostsNothingButStorage runs the orders of every wait
// scenario through the metered engine and moves the clock through each
// wait (a day in a timer, a day waiting for an event, and the waits of
// the workflow with all three kinds) with the Supervisor running on its
// schedule: while the orders wait, no function may make a single request
// for them, nor the Supervisor's due-index queries return one of them;
// what they keep stored is their item, its index entries and their
// history, a few kilobytes.
func TestAWaitingOrderCostsNothingButStorage(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	// Most of its time is waiting for timers and Supervisor runs: it runs
	// beside the budget's scenarios, each on a stage of its own.
	t.Parallel()
	p, err := prices.Load(pricesPath)
	if err != nil {
		t.Fatal(err)
	}
	const orders = 4
	results, err := cost.Run(context.Background(), testenv.AWS(t), cost.Options{
		Stage: testenv.Stage(t), Orders: orders, Concurrency: orders, Scenarios: cost.WaitScenarios, WaitSteps: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != len(cost.WaitScenarios) {
		t.Fatalf("%d results, want %d", len(results), len(cost.WaitScenarios))
	}
	// make cost's report prices each path, polling by the check.
	var report strings.Builder
	if err := cost.Report(&report, results, p, 3, false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(report.String(), "per million checks") {
		t.Errorf("the report prices no check of a polled step:\n%s", report.String())
	}
	for i, r := range results {
		sc := cost.WaitScenarios[i]
		if len(r.Windows) != len(sc.Holds) {
			t.Fatalf("%s: %d windows, want one per wait (%d)", r.Scenario, len(r.Windows), len(sc.Holds))
		}
		if want := orders * (1 + ends(sc, cost.EndsByEvent) + ends(sc, cost.EndsByCallback)); r.APIRequests != want {
			t.Errorf("%s: %d API requests, want %d (submissions, events, callbacks)", r.Scenario, r.APIRequests, want)
		}
		for _, w := range r.Windows {
			if w.Hold.Ends == cost.EndsByPoll {
				checkPolling(t, p, r, w)
				continue
			}
			u := w.Usage
			t.Logf("%s, %s (%s, clock moved %s): %.1f Supervisor runs, %d index queries, %.0f bytes stored per order",
				r.Scenario, w.Hold.Step, w.Hold.Ends, w.Moved, w.SupervisorRuns, u.IndexQueries, w.StoredBytes)
			if len(u.Calls) > 0 || u.TableWrites != 0 || u.IndexWrites != 0 || u.Reads != 0 || u.RequestMessages+u.ReplyMessages != 0 ||
				u.StreamRecords != 0 || u.StreamInvocations != 0 {
				t.Errorf("%s, %s: while the orders waited the functions made requests %v, wrote %.1f + %.1f units, read %.1f, sent %d messages, streamed %d records; want nothing",
					r.Scenario, w.Hold.Step, u.Calls, u.TableWrites, u.IndexWrites, u.Reads, u.RequestMessages+u.ReplyMessages, u.StreamRecords)
			}
			if u.IndexQueryItems != 0 {
				t.Errorf("%s, %s: the Supervisor's due-index queries returned %d entries while the orders waited, want none before they are due",
					r.Scenario, w.Hold.Step, u.IndexQueryItems)
			}
			if w.SupervisorRuns < float64(w.Steps) {
				t.Errorf("%s, %s: %.1f Supervisor runs over %d clock steps, want one a step at least", r.Scenario, w.Hold.Step, w.SupervisorRuns, w.Steps)
			}
			if e := cost.Price(p, w.PerOrder(r.Orders), cost.LowLoad, cost.DeployedMemory, false); e.Total != 0 {
				t.Errorf("%s, %s: waiting costs $%.4f per million orders in requests, want 0: %+v", r.Scenario, w.Hold.Step, e.Total, e.Lines)
			}
			if w.StoredBytes < 500 || w.StoredBytes > 8<<10 {
				t.Errorf("%s, %s: %.0f bytes stored per order, want an item, its index entries and its history: about 1 to 8 KB",
					r.Scenario, w.Hold.Step, w.StoredBytes)
			}
		}
	}
}

// checkPolling holds a polled step's window to what each check should
// cost: every order checked at least once a clock step, and each check
// one agent invocation, one request and one reply, a few writes, and a
// price.
func checkPolling(t *testing.T, p prices.Prices, r cost.Result, w cost.Window) {
	t.Helper()
	c := w.PerCheck()
	t.Logf("%s, %s: %d checks over %s in %d clock steps; per check %.2f + %.2f write units, %.2f read units, %d messages; $%.2f per million checks",
		r.Scenario, w.Hold.Step, w.Checks, w.Moved, w.Steps, c.TableWrites, c.IndexWrites, c.Reads, w.Usage.RequestMessages+w.Usage.ReplyMessages,
		cost.PerMillionChecks(p, w))
	if w.Checks < r.Orders*w.Steps {
		t.Errorf("%s: %d checks over %d clock steps of %d orders, want one per order a step at least", r.Scenario, w.Checks, w.Steps, r.Orders)
	}
	if msgs := float64(w.Usage.RequestMessages+w.Usage.ReplyMessages) / float64(w.Checks); msgs < 1.9 || msgs > 2.1 {
		t.Errorf("%s: %.2f messages per check, want a request and a reply", r.Scenario, msgs)
	}
	if price := cost.PerMillionChecks(p, w); price <= 0 || price > 20 {
		t.Errorf("%s: $%.2f per million checks, want a few dollars", r.Scenario, price)
	}
}

func ends(sc cost.Scenario, how cost.WaitEnd) int {
	n := 0
	for _, h := range sc.Holds {
		if h.Ends == how {
			n++
		}
	}
	return n
}
