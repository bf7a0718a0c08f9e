package engine_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// versionTiming leaves a 1.5 s call room in one attempt.
var versionTiming = order.Timing{Allowance: 3 * time.Second, MaxAllowance: 6 * time.Second, FailureThreshold: 2,
	ClaimWithin: 2 * time.Second, SkewGrace: 200 * time.Millisecond}

// versionTwo is the shipped workflow changed the three ways a new version
// changes one: its first step renamed, a step added, and payment's
// allowance raised.
func versionTwo(v1 order.Workflow) order.Workflow {
	v2 := v1
	v2.Version = "2"
	v2.Steps = slices.Clone(v1.Steps)
	v2.Steps[0].Name = "reserve-stock"
	v2.Steps[1].Allowance, v2.Steps[1].MaxAllowance = 5*time.Second, 10*time.Second
	verify := v1.Steps[2]
	verify.Name, verify.Undo = "verify-address", ""
	v2.Steps = slices.Insert(v2.Steps, 2, verify)
	return v2
}

func names(v api.OrderView) []string {
	var out []string
	for _, s := range v.Steps {
		if !s.Undo {
			out = append(out, s.Step)
		}
	}
	return out
}

// A deploy changes the workflow while orders are in flight: each order is
// carried to its end by the version it was submitted under. Then a
// rollback to a build without version 2 leaves a version-2 order waiting,
// alerted once, and it resumes when version 2 is back. Four engines, one
// after another on one stage, as four deploys would be.
func TestWorkflowVersionsAcrossDeploys(t *testing.T) {
	t.Parallel()
	v1 := ordertest.OrderWorkflow(versionTiming)
	v2 := versionTwo(v1)
	cfg := enginetest.Config(t)
	cfg.Timing, cfg.ParkFor = versionTiming, 300*time.Millisecond
	// A request the stopped engine's agent had taken comes back to the
	// next engine after the visibility timeout: keep it short.
	cfg.QueueVisibility = 5 * time.Second
	dir := t.TempDir()
	cfg.StateDir, cfg.SimulatorLedger = dir, filepath.Join(dir, "ledger.jsonl")
	deploy := func(versions ...order.Workflow) (running, func()) {
		t.Helper()
		c := cfg
		c.Workflows = order.MustVersions(versions...)
		e, stop := enginetest.Run(t, c)
		return running{Engine: e}, stop
	}

	// Version 1 only: an order ends, another is in flight at the deploy.
	e, stop := deploy(v1)
	t.Cleanup(func() { testenv.Cleanup(t, e.Clients(), e.Stack) })
	alerts := testenv.SubscribeAlerts(t, e.Clients(), e.Stack.AlertTopicARN)
	done := submit(t, e, lines("BOOK-1"))
	inFlight := submit(t, e, lines("TEST-PAYMENT-SLOW-1500"))
	if v := await(t, e, done, 20*time.Second); v.Status != order.StatusProcessed || v.Version != "1" {
		t.Fatalf("version 1 order: %s under version %q", v.Status, v.Version)
	}
	onPayment(t, e, inFlight)
	stop()

	// Versions 1 and 2: the old order ends on version 1, a new one runs
	// version 2, in the same run.
	e, stop = deploy(v1, v2)
	fresh := submit(t, e, lines("TEST-PAYMENT-SLOW-1500"))
	st := onPayment(t, e, fresh)
	if got := st.CompleteBy.Sub(st.UpdatedAt); got != 5*time.Second {
		t.Errorf("a version 2 payment attempt has %s, want version 2's 5s", got)
	}
	for _, tt := range []struct {
		id      string
		version string
		steps   []string
	}{
		{inFlight, "1", []string{ordertest.StepReserveInventory, ordertest.StepChargePayment, ordertest.StepArrangeShipping}},
		{fresh, "2", []string{"reserve-stock", ordertest.StepChargePayment, "verify-address", ordertest.StepArrangeShipping}},
	} {
		v := await(t, e, tt.id, 30*time.Second)
		if v.Status != order.StatusProcessed || v.Version != tt.version || !slices.Equal(names(v), tt.steps) {
			t.Errorf("order %s: %s under version %q with steps %v; want Processed under %s with %v", tt.id, v.Status, v.Version, names(v), tt.version, tt.steps)
		}
	}
	// A version 2 order is in flight when version 2 is rolled back.
	parked := submit(t, e, lines("TEST-PAYMENT-SLOW-1500"))
	onPayment(t, e, parked)
	stop()

	// Version 1 only again: the version 2 order waits, alerted once; a new
	// order runs version 1.
	e, stop = deploy(v1)
	a := alerts.Await(t, parked, 30*time.Second)
	if a.Kind != order.AlertVersionUnknown {
		t.Errorf("alert %+v, want %s", a, order.AlertVersionUnknown)
	}
	after := submit(t, e, lines("BOOK-1"))
	if v := await(t, e, after, 20*time.Second); v.Status != order.StatusProcessed || v.Version != "1" {
		t.Errorf("after the rollback a new order is %s under version %q", v.Status, v.Version)
	}
	if again, ok := alerts.Next(parked, 3*time.Second); ok {
		t.Errorf("a second alert about the parked order: %+v", again)
	}
	if v := status(t, e, parked); v.Status != order.StatusProcessing {
		t.Errorf("the parked order is %s, want it waiting in Processing", v.Status)
	}
	stop()

	// Version 2 is back: the order resumes and ends on version 2.
	e, _ = deploy(v1, v2)
	v := await(t, e, parked, 40*time.Second)
	if v.Status != order.StatusProcessed || v.Version != "2" || len(names(v)) != 4 {
		t.Errorf("the parked order ended %s under version %q with steps %v; want Processed under 2", v.Status, v.Version, names(v))
	}
}

// onPayment waits until the order's payment step runs and returns its
// state.
func onPayment(t *testing.T, e running, id string) order.StepState {
	t.Helper()
	var st order.StepState
	testenv.Eventually(t, 15*time.Second, func() (bool, string) {
		_, steps, err := e.Store.GetOrder(context.Background(), id)
		for _, s := range steps {
			if s.Step == ordertest.StepChargePayment && !s.Undo {
				st = s
			}
		}
		return err == nil && st.ProcessState == order.Processing, testenv.Describe(steps)
	})
	return st
}
