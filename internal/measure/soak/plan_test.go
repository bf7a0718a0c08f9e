package soak

import (
	"slices"
	"strings"
	"testing"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// The plan's fulfilment orders go to the example, with bodies its input
// schema takes, each with the test values that make it its kind: a
// flagged customer for a review, a callback mode on a service that calls
// back, a rejection, a silent carrier.
func TestPlanMakesEveryKindOfFulfilmentOrder(t *testing.T) {
	wf, ok := soakWorkflows().LatestOf(Fulfilment)
	if !ok {
		t.Fatalf("the soak does not run %s", Fulfilment)
	}
	schema, err := definition.CompileSchema(wf.Input)
	if err != nil {
		t.Fatal(err)
	}
	has := func(p Planned, sku string) bool {
		return slices.ContainsFunc(p.Order.Lines, func(l order.Line) bool { return l.SKU == sku })
	}
	seen := map[Kind]int{}
	for _, p := range Plan(3000, DefaultMix, 7) {
		if !p.Kind.Fulfilment() {
			if p.Workflow == Fulfilment {
				t.Errorf("%s: a %s order sent to %s", p.Key, p.Kind, Fulfilment)
			}
			continue
		}
		seen[p.Kind]++
		if p.Workflow != Fulfilment || p.Path() != "/workflows/fulfilment/orders" {
			t.Fatalf("%s: %s order at %s, want the fulfilment example", p.Key, p.Kind, p.Path())
		}
		if problems := schema.Check(p.Body()); len(problems) > 0 {
			t.Fatalf("%s: body %s breaks the example's input schema: %v", p.Key, p.Body(), problems)
		}
		isFlagged := strings.HasPrefix(p.Order.CustomerID, "TEST-FLAGGED")
		var want bool
		switch p.Kind {
		case Fulfil:
			want = isFlagged && len(p.Order.Lines) == 1
		case FulfilRejected:
			want = isFlagged && has(p, "TEST-REVIEW-REJECT")
		case FulfilCancel:
			want = has(p, "TEST-CARRIER-SILENT")
		default:
			want = (p.Service == "payment" || p.Service == "warehouse") && has(p, "TEST-"+strings.ToUpper(p.Service)+"-"+callbackModes[p.Kind])
		}
		if !want {
			t.Errorf("%s: a %s order with customer %s, service %q and lines %v", p.Key, p.Kind, p.Order.CustomerID, p.Service, p.Order.Lines)
		}
	}
	for _, k := range []Kind{Fulfil, FulfilTwice, FulfilLate, FulfilWorking, FulfilOutOfOrder, FulfilRejected, FulfilCancel} {
		if seen[k] == 0 {
			t.Errorf("no %s order in 3000", k)
		}
	}
}
