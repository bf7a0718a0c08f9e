package cost_test

import (
	"math"
	"testing"
	"time"

	"orderly/internal/measure/cost"
	"orderly/internal/order"
	"orderly/internal/prices"
	"orderly/internal/testkit/ordertest"
)

// The same workflow counted on Step Functions Standard and on Lambda
// durable functions: a transition per state entered (a task waiting for
// its token and a Wait state each one) and the execution's two more; a
// durable operation per step (two for a call that is called back) and
// one for the execution, and an invocation to start and one after each
// wait; an event or callback arriving through API Gateway and a function
// on both.
func TestElsewhereCountsEachKindOfStep(t *testing.T) {
	p, err := prices.Load(pricesPath)
	if err != nil {
		t.Fatal(err)
	}
	shipped := ordertest.Built(order.DefaultTiming).Latest()
	byName := map[string]order.Workflow{}
	for _, wf := range append(cost.WaitWorkflows(shipped), shipped) {
		byName[wf.Name] = wf
	}
	tests := []struct {
		workflow string
		// Standard: transitions, Lambda invocations, API requests.
		transitions, standardInvocations, api float64
		// Durable functions: operations, the function's invocations (a
		// receiver's for each event and callback come on top).
		operations, durableInvocations float64
	}{
		{shipped.Name, 5, 3, 1, 4, 1},
		{cost.TimerWorkflow, 6, 3, 1, 5, 2},
		{cost.EventWorkflow, 6, 4, 2, 5, 2},
		// 2 calls, a callback, an event, a timer.
		{cost.WaitsWorkflow, 7, 5, 3, 1 + 2 + 2 + 1 + 1, 1 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.workflow, func(t *testing.T) {
			e := cost.ElsewhereEstimate(p, byName[tt.workflow], 24*time.Hour, cost.DeployedMemory)
			got := func(lines []cost.Line, item string) float64 {
				for _, l := range lines {
					if l.Item == item {
						return l.Quantity
					}
				}
				t.Fatalf("no line %q in %+v", item, lines)
				return 0
			}
			for _, c := range []struct {
				what      string
				got, want float64
			}{
				{"Standard transitions", got(e.StandardLines, "state transitions"), tt.transitions},
				{"Standard invocations", got(e.StandardLines, "Lambda invocations"), tt.standardInvocations},
				{"Standard API requests", got(e.StandardLines, "API Gateway (REST API)"), tt.api},
				{"durable operations", got(e.DurableLines, "durable operations"), tt.operations},
				{"durable invocations", got(e.DurableLines, "Lambda invocations"), tt.durableInvocations + tt.api - 1},
				{"durable API requests", got(e.DurableLines, "API Gateway (REST API)"), tt.api},
			} {
				if c.got != c.want {
					t.Errorf("%s: got %v, want %v", c.what, c.got, c.want)
				}
			}
			sum := 0.0
			for _, l := range e.DurableLines {
				sum += l.Dollars
			}
			if math.Abs(sum-e.Durable) > 1e-9 || e.Standard <= 0 || e.Durable <= 0 {
				t.Errorf("totals: Standard $%.2f, durable $%.2f (lines $%.2f)", e.Standard, e.Durable, sum)
			}
			if tt.workflow == shipped.Name {
				// The shipped workflow's transitions are what the older
				// estimate assumes.
				if tt.transitions != p.Assumptions.StandardTransitionsPerOrder {
					t.Errorf("%v transitions, the price table assumes %v for the shipped workflow", tt.transitions, p.Assumptions.StandardTransitionsPerOrder)
				}
			}
		})
	}
}

// A day's storage of a few kilobytes per order costs cents per million
// orders, pro-rated from the price per GB-month.
func TestStorageIsProRatedByTheHour(t *testing.T) {
	var p prices.Prices
	p.DollarsPerGBMonth.DynamoDBStorage = 0.25
	tests := []struct {
		bytes float64
		d     time.Duration
		want  float64
	}{
		{1 << 30, prices.HoursPerMonth * time.Hour, 0.25e6},
		{1 << 30, 24 * time.Hour, 0.25e6 * 24 / prices.HoursPerMonth},
		{2048, 24 * time.Hour, 2048.0 / (1 << 30) * 0.25 * 24 / prices.HoursPerMonth * 1e6},
		{2048, 0, 0},
	}
	for _, tt := range tests {
		if got := cost.StorageDollars(p, tt.bytes, tt.d); math.Abs(got-tt.want) > 1e-9 {
			t.Errorf("StorageDollars(%v bytes, %s) = %v, want %v", tt.bytes, tt.d, got, tt.want)
		}
	}
}
