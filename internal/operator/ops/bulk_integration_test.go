package ops_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orderly/internal/actor/scheduler"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// stuckAtPaymentUndo submits an order whose shipping fails and whose
// payment's refund is then refused for good: Error at the payment's undo.
func stuckAtPaymentUndo(t *testing.T, w *testenv.World, s *scheduler.Service) string {
	t.Helper()
	id := w.Submit(t, someOrder)
	ok := func(step string) order.StepReply {
		return order.StepReply{OrderID: id, Step: step, Attempt: 1, Outcome: order.OutcomeSucceeded}
	}
	reply(t, s, ok(ordertest.StepReserveInventory))
	reply(t, s, ok(ordertest.StepChargePayment))
	reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "no such address"})
	reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Undo: true, Record: 3, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "refund refused"})
	return id
}

// After an outage, 26 orders are in Error at one step. A plan lists them
// (and not an order in flight) and changes nothing; a plan over the limit
// is refused saying how many match. A run interrupted after 10 orders
// leaves them in its journal, one refused (an operator redrove it by hand
// after the plan) with its reason; the run again with the same plan and
// journal acts only on the other 16.
func TestBulkRedriveResumesAfterAnInterrupt(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	s := w.Scheduler("s1")
	stuck := map[string]bool{}
	for range 26 {
		stuck[stuckAtPaymentUndo(t, w, s)] = true
	}
	flying := w.Submit(t, someOrder)
	f := ops.BulkFilter{Query: order.Query{Status: order.StatusError}, Step: ordertest.StepChargePayment}

	if _, err := stage.PlanBulk(ctx, f, 20); !errors.Is(err, ops.ErrPlanTooLarge) || !strings.Contains(err.Error(), "26 orders match") {
		t.Fatalf("a plan over a limit of 20: %v, want it refused saying 26 orders match", err)
	}
	plan, err := stage.PlanBulk(ctx, f, ops.DefaultBulkMax)
	if err != nil || len(plan) != 26 {
		t.Fatalf("plan: %d orders, %v; want 26", len(plan), err)
	}
	for _, p := range plan {
		if !stuck[p.OrderID] || p.Status != order.StatusError || p.Step != ordertest.StepChargePayment || !p.Undo {
			t.Errorf("planned %+v, want only the orders stuck at the payment's undo (not %s)", p, flying)
		}
	}
	if ls, err := stage.InError(ctx, 100); err != nil || len(ls) != 26 {
		t.Fatalf("after the plan, %d orders in Error (%v): a plan changed something", len(ls), err)
	}
	// Someone redrives the fourth by hand before the run.
	if _, err := stage.Redrive(ctx, plan[3].OrderID, ""); err != nil {
		t.Fatal(err)
	}

	path := filepath.Join(t.TempDir(), "redrive.jsonl")
	action := ops.BulkAction{Kind: ops.BulkRedrive}
	run := func(ctx context.Context, progress func(ops.BulkReport)) (ops.BulkReport, error) {
		t.Helper()
		j, err := ops.OpenJournal(path, stage.Name, action, f.Key())
		if err != nil {
			t.Fatal(err)
		}
		defer j.Close()
		return stage.RunBulk(ctx, plan, action, j, ops.BulkOptions{Rate: 1000, Progress: progress})
	}
	interrupted, stop := context.WithCancel(ctx)
	defer stop()
	rep, err := run(interrupted, func(r ops.BulkReport) {
		if r.Done+r.Refused+r.Failed == 10 {
			stop() // Ctrl-C
		}
	})
	if !errors.Is(err, context.Canceled) || !rep.Interrupted || rep.Done != 9 || rep.Refused != 1 || rep.Left() != 16 {
		t.Fatalf("interrupted run: %+v, %v; want 9 done, 1 refused, 16 left", rep, err)
	}
	if p := rep.Problems; len(p) != 1 || p[0].OrderID != plan[3].OrderID || !strings.Contains(p[0].Reason, "Compensating") {
		t.Errorf("problems %+v: want %s refused, saying it is Compensating now", p, plan[3].OrderID)
	}
	if n := journalEntries(t, path); n != 10 {
		t.Errorf("the journal holds %d entries after the interrupt, want 10", n)
	}

	rep, err = run(ctx, nil)
	if err != nil || rep.Skipped != 10 || rep.Done != 16 || rep.Refused != 0 || rep.Failed != 0 {
		t.Fatalf("resumed run: %+v, %v; want 10 skipped, 16 done, none refused (none acted on twice)", rep, err)
	}
	if ls, err := stage.InError(ctx, 100); err != nil || len(ls) != 0 {
		t.Errorf("after the runs, %d orders in Error (%v), want none", len(ls), err)
	}
	if o, _ := w.Records(t, flying); o.Status != order.StatusPending {
		t.Errorf("the order in flight is %s, want it untouched (Pending)", o.Status)
	}
	if n := journalEntries(t, path); n != 26 {
		t.Errorf("the journal holds %d entries, want 26", n)
	}
	// Nothing is left: the filter now matches no order.
	if _, err := stage.PlanBulk(ctx, f, ops.DefaultBulkMax); !errors.Is(err, ops.ErrPlanEmpty) {
		t.Errorf("a plan after the runs: %v, want ErrPlanEmpty", err)
	}
}

// journalEntries counts a journal's entries (its header aside).
func journalEntries(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := -1
	for sc := bufio.NewScanner(f); sc.Scan(); {
		n++
	}
	return n
}
