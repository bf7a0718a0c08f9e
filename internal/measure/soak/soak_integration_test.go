package soak_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/measure/soak"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A short soak, make test-soak: a few hundred orders through the local
// runtime under injected faults, with kill -9 and restarts, two Schedulers
// and two Supervisors on skewed clocks, a payment outage, and an
// operator's pause of shipping for its maintenance window. make soak runs
// the full size.
func TestShortSoakLosesNothing(t *testing.T) {
	cfg := testenv.AWS(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "orderly-local")
	build := exec.Command("go", "build", "-o", bin, "orderly/cmd/orderly-local")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build the local runtime: %v\n%s", err, out)
	}
	stage := testenv.Stage(t)
	t.Cleanup(func() { removeStage(t, cfg, stage) })
	api, sim := testenv.FreeLoopback(t), testenv.FreeLoopback(t)
	ledger := filepath.Join(dir, "ledger.jsonl")
	from := time.Now().Add(10 * time.Second).UTC()
	env := []string{
		"ORDERLY_STAGE=" + stage, "ORDERLY_CONSOLE_ADDR=off", "ORDERLY_API_ADDR=" + api,
		"ORDERLY_STATE_DIR=" + filepath.Join(dir, "state"),
		"ORDERLY_FAULTS=throttle=0.01,5xx=0.01,timeout=0.005,ambiguous=0.005,drop=0.005,duplicate=0.01,crash=0.001",
		"SCHEDULERS=2", "SUPERVISORS=2", "ORDERLY_CLOCK_SKEW=1s",
		"SUPERVISOR_EVERY=2s", "QUEUE_VISIBILITY=8s",
		"STEP_ALLOWANCE=" + stepAllowance.String(), "CLAIM_WITHIN=10s", "CLOCK_SKEW_GRACE=2s", "PARK_FOR=2s",
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	var runtimeLog io.Writer
	if testing.Verbose() {
		log = slog.New(slog.NewTextHandler(os.Stderr, nil))
		f, err := os.Create(filepath.Join(os.TempDir(), "orderly-soak-runtime.log"))
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		runtimeLog = f
	}
	report, err := soak.Run(context.Background(), soak.Config{
		Binary: bin, Env: env, APIAddr: api, Orders: 200, Mix: soak.DefaultMix, Seed: uint64(time.Now().UnixNano()),
		SimulatorAddr: sim, Outages: []simulator.Outage{{Service: "payment", From: from, Till: from.Add(15 * time.Second)}},
		// The fulfilment example's callbacks come half a second after its
		// calls and its parties answer half a second after it starts
		// waiting; its callback waits are 10 s, not hours, so a late
		// callback meets a wait that ended and the call is made again.
		CallbackDelay: 500 * time.Millisecond, PartyAfter: 500 * time.Millisecond, CallbackWait: callbackWait,
		Clients: 10, BurstShare: 0.5, Rate: 20, KillEvery: 8 * time.Second, Bound: soakBound(), Log: log, RuntimeLog: runtimeLog,
		// Across a version change, a rollback with its orders in flight,
		// and the version back.
		VersionChange: 3 * time.Second, RollbackFor: 10 * time.Second,
		// Shipping's maintenance window: paused by an operator once the
		// payment outage is over, down for a minute inside the pause, and
		// resumed, while the runtime keeps being killed.
		Pause: soak.PauseWindow{Service: ordertest.AgentShipping, After: 25 * time.Second, For: 75 * time.Second},
	}, soak.Env{Clients: testenv.Clients(cfg), Stage: stage, Ledger: ledger})
	if err != nil {
		t.Fatal(err)
	}
	var table strings.Builder
	report.Print(&table)
	t.Log("\n" + table.String())
	if !report.OK() {
		t.Errorf("the soak broke a promise: %+v", report)
	}
	// The pause held shipping's requests across kills, called shipping
	// not once while it held, and failed or alerted nothing (report.OK
	// says so too; this names it).
	if p := report.Pause; p == nil || !p.OK() {
		t.Errorf("shipping's pause broke a promise: %+v", p)
	}
	if report.Run.Kills == 0 {
		t.Errorf("the runtime was never killed")
	}
	// Kills must land while orders wait and callbacks come: some callback
	// met a runtime that was down and was sent again.
	if report.ByVersion["fulfilment/1"] == 0 || report.Waits.KillsWhileWaiting == 0 || report.Waits.Tally.Retried == 0 {
		t.Errorf("%d fulfilment orders, %d kills with orders waiting, %d callbacks retried; want each above 0",
			report.ByVersion["fulfilment/1"], report.Waits.KillsWhileWaiting, report.Waits.Tally.Retried)
	}
	if report.Run.Deploys != 3 || report.ByVersion["order/1"] == 0 || report.ByVersion["order/1.rehearsal"] == 0 || report.ByVersion["checkout/1"] == 0 {
		t.Errorf("%d deploys, orders by version %v; want 3, and orders under both versions and of the checkout example", report.Run.Deploys, report.ByVersion)
	}
}

// stepAllowance is the runtime's STEP_ALLOWANCE; the rehearsal version
// (order.WithRehearsal) runs every step at twice it.
const stepAllowance = 5 * time.Second

// callbackWait is the runtime's ORDERLY_CALLBACK_WAIT: long beside the
// simulator's callback delay and a restart after a kill -9 (a callback
// that meets a runtime that is down is tried again until it expires).
const callbackWait = 10 * time.Second

// soakBound is how long after the last submission every order must have
// ended: the engine's documented worst case for an order, twice. A request
// lost while its agent's queue stays backlogged (a dropped message, or a
// reply withheld after a late start the agent could not record) looks
// like back-pressure, and is sent again only after the Supervisor's
// deferrals run out (lostRequestAllowances). One order can lose two in a
// row (seen on 2026-11-28, in runs of this commit and of the one before:
// 8 minutes, the bound then, reckoned at 5 s and once, failed both), and
// the rehearsal version's allowance is twice the stage's. Two minutes
// more cover the payment outage's held deferrals.
func soakBound() time.Duration {
	return 2*time.Duration(lostRequestAllowances())*2*stepAllowance + 2*time.Minute
}

// lostRequestAllowances is how many allowances a lost request's attempt
// takes at most: its own, then order.MaxDeferrals deferrals, each twice
// the last up to order.MaxDeferralBackoff doublings (48).
func lostRequestAllowances() int {
	n := 1
	for k := range order.MaxDeferrals {
		n += 1 << min(k, order.MaxDeferralBackoff)
	}
	return n
}

// removeStage deletes the stage the runtime provisioned: on a shared
// DynamoDB Local its tables' expiry scans would otherwise run for as long
// as the emulator does.
func removeStage(t *testing.T, cfg aws.Config, stage string) {
	clients := testenv.Clients(cfg)
	// Create is idempotent: on an existing stage it returns its resources.
	stack, err := provision.Create(context.Background(), clients, resources.New(stage, ordertest.Built(order.DefaultTiming, soak.Workflows...).Agents()))
	if err != nil {
		t.Logf("look up stage %s to remove it: %v", stage, err)
		return
	}
	testenv.Cleanup(t, clients, stack)
}
