package cost_test

import (
	"orderly/internal/prices"

	"context"
	"encoding/json"
	"flag"
	"os"
	"strings"
	"testing"

	"orderly/internal/measure/cost"
	"orderly/internal/testkit/testenv"
)

var updateBudget = flag.Bool("update-budget", false, "rewrite cost/budget.json from this run's measurements")

const (
	budgetPath = "../../../cost/budget.json"
	pricesPath = "../../../cost/prices.json"
)

// TestCostStaysWithinBudget runs every scenario through the metered engine
// and fails when an order costs more than cost/budget.json allows, in any
// request, capacity unit, message or dollar.
func TestCostStaysWithinBudget(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	t.Parallel() // beside the waits' measurement, on a stage of its own
	prices, err := prices.Load(pricesPath)
	if err != nil {
		t.Fatal(err)
	}
	results, err := cost.Run(context.Background(), testenv.AWS(t), cost.Options{
		Stage: testenv.Stage(t), Orders: 6, Concurrency: 3,
	})
	if err != nil {
		t.Fatal(err)
	}
	if *updateBudget {
		writeBudget(t, results, prices)
		return
	}
	budget, err := cost.LoadBudget(budgetPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range results {
		measured := cost.Measured(r.PerOrder, prices)
		t.Logf("scenario %q, %d orders: %d request and %d reply messages; per order:\n%s", r.Scenario, r.PerOrder.Orders,
			int(r.PerOrder.RequestMessages*float64(r.PerOrder.Orders)+0.5), int(r.PerOrder.ReplyMessages*float64(r.PerOrder.Orders)+0.5), measured)
		limit, ok := budget.Scenarios[r.Scenario]
		if !ok {
			t.Errorf("scenario %q has no budget in %s", r.Scenario, budgetPath)
			continue
		}
		if over := limit.Over(measured); len(over) > 0 {
			t.Errorf("scenario %q costs more than its budget:\n  %s\nmeasured per order:\n%s\nIf the rise is intended, raise the budget in %s (go test ./internal/measure/cost -update-budget writes this run's numbers).",
				r.Scenario, strings.Join(over, "\n  "), measured, budgetPath)
		}
	}
}

func writeBudget(t *testing.T, results []cost.Result, prices prices.Prices) {
	b := cost.Budget{
		Note:      "The most an order may cost per scenario, checked by make test (internal/measure/cost). Raise a number only on purpose, with the reason in the commit.",
		Scenarios: map[string]cost.ScenarioBudget{},
	}
	for _, r := range results {
		b.Scenarios[r.Scenario] = cost.Measured(r.PerOrder, prices)
	}
	data, err := json.MarshalIndent(b, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(budgetPath, append(data, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("wrote %s", budgetPath)
}
