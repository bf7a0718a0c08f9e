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

	"orderly/internal/definition"
	"orderly/internal/local/provision"
	"orderly/internal/measure/soak"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// A short soak, part of make test: a few hundred orders through the local
// runtime under injected faults, with kill -9 and restarts, two Schedulers
// and two Supervisors on skewed clocks, and a payment outage. make soak
// runs the full size.
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
		"ORDERLY_STAGE=" + stage, "ORDERLY_CONSOLE_ADDR=off", "ORDERLY_API_ADDR=" + api, "ORDERLY_SIMULATOR_ADDR=" + sim,
		"ORDERLY_STATE_DIR=" + filepath.Join(dir, "state"), "ORDERLY_SIM_LEDGER=" + ledger,
		"ORDERLY_FAULTS=throttle=0.01,5xx=0.01,timeout=0.005,ambiguous=0.005,drop=0.005,duplicate=0.01,crash=0.001",
		"SCHEDULERS=2", "SUPERVISORS=2", "ORDERLY_CLOCK_SKEW=1s",
		"SUPERVISOR_EVERY=2s", "QUEUE_VISIBILITY=8s",
		"STEP_ALLOWANCE=5s", "CLAIM_WITHIN=10s", "CLOCK_SKEW_GRACE=2s", "PARK_FOR=2s",
		"ORDERLY_SIM_OUTAGE=payment," + from.Format(time.RFC3339) + "," + from.Add(15*time.Second).Format(time.RFC3339),
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
		// The bound covers the engine's documented worst case: a request
		// lost (a dropped message) while its agent's queue stays backlogged
		// is sent again at most 47 allowances late (235 s at 5 s), after
		// the payment outage's held deferrals and the attempts before it.
		// 5 minutes did not: a CI run lost such an order to it.
		Clients: 10, BurstShare: 0.5, Rate: 20, KillEvery: 8 * time.Second, Bound: 8 * time.Minute, Log: log, RuntimeLog: runtimeLog,
		// Across a version change, a rollback with its orders in flight,
		// and the version back.
		VersionChange: 3 * time.Second, RollbackFor: 10 * time.Second,
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
	if report.Run.Kills == 0 {
		t.Errorf("the runtime was never killed")
	}
	if report.Run.Deploys != 3 || report.ByVersion["order/1"] == 0 || report.ByVersion["order/1.rehearsal"] == 0 || report.ByVersion["checkout/1"] == 0 {
		t.Errorf("%d deploys, orders by version %v; want 3, and orders under both versions and of the checkout example", report.Run.Deploys, report.ByVersion)
	}
}

// removeStage deletes the stage the runtime provisioned: on a shared
// DynamoDB Local its tables' expiry scans would otherwise run for as long
// as the emulator does.
func removeStage(t *testing.T, cfg aws.Config, stage string) {
	clients := testenv.Clients(cfg)
	// Create is idempotent: on an existing stage it returns its resources.
	stack, err := provision.Create(context.Background(), clients, resources.New(stage, definition.MustDeployed(order.DefaultTiming, soak.Workflows, order.LegacyWorkflow).Agents()))
	if err != nil {
		t.Logf("look up stage %s to remove it: %v", stage, err)
		return
	}
	testenv.Cleanup(t, clients, stack)
}
