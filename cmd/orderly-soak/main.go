// Command orderly-soak is the chaos soak (make soak): it runs the local
// runtime (a built cmd/orderly-local) as a child process against the
// emulators with faults injected into its AWS calls, SIGKILLs and restarts
// it, runs the simulated remote services and the fulfilment example's
// parties itself (they outlive each kill, as real ones would), takes one
// remote service down for a while, submits orders, and
// accounts for every one of them (see internal/measure/soak). It prints a table,
// writes the report as JSON and exits non-zero when a promise was broken.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"orderly/internal/config"
	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/measure/soak"
)

func main() {
	log := config.Logger("soak")
	if err := run(log); err != nil {
		log.Error("soak failed", "error", err)
		os.Exit(1)
	}
}

func run(log *slog.Logger) error {
	var (
		orders    = flag.Int("orders", 10000, "orders to submit")
		clients   = flag.Int("clients", 20, "concurrent submitting clients")
		burst     = flag.Float64("burst", 0.1, "share of the orders submitted at once, first")
		burstMax  = flag.Int("burst-max", 1000, "the most orders submitted at once (0: no cap): 10,000 at once lag the orders table's stream by minutes on 2 cores")
		rate      = flag.Float64("rate", 20, "submissions per second after the burst (below what 2 cores process under every fault, so the burst is the overload and its backlog drains)")
		killEvery = flag.Duration("kill-every", 45*time.Second, "SIGKILL the runtime this often (0: never)")
		change    = flag.Duration("version-change", 3*time.Minute, "deploy a new workflow version this long into the run (0: never), roll it back, deploy it again")
		rollback  = flag.Duration("rollback-for", time.Minute, "how long the new version stays, then stays rolled back")
		spec      = flag.String("faults", "throttle=0.005,5xx=0.005,timeout=0.003,ambiguous=0.003,drop=0.002,duplicate=0.005,crash=0.0002", "faults injected into the runtime's AWS calls")
		outageOf  = flag.String("outage", "payment", "remote service taken down for -outage-for, starting -outage-after into the run (empty: none)")
		outageAt  = flag.Duration("outage-after", 30*time.Second, "when the outage starts")
		outageFor = flag.Duration("outage-for", 60*time.Second, "how long the outage lasts")
		pauseOf   = flag.String("pause", "", "service an operator pauses for a maintenance window, starting -pause-after into the run (empty: none; make test-soak pauses shipping)")
		pauseAt   = flag.Duration("pause-after", 2*time.Minute, "when the operator pauses the service")
		pauseFor  = flag.Duration("pause-for", 90*time.Second, "how long until the operator resumes it (it is down inside the window)")
		bound     = flag.Duration("bound", 10*time.Minute, "every order must be terminal this long after the last submission")
		cbWait    = flag.Duration("callback-wait", 20*time.Second, "how long a step whose service calls back waits for it (ORDERLY_CALLBACK_WAIT), in place of the fulfilment example's hours")
		cbDelay   = flag.Duration("callback-delay", time.Second, "how long the simulated services that call back take before each callback")
		// The fulfilment example's parties answer this long after an
		// order starts waiting for them.
		partyAfter = flag.Duration("party-after", time.Second, "how long the simulated fraud analyst and carrier let an order wait before they answer")
		binary     = flag.String("binary", ".local/bin/orderly-local", "the built local runtime")
		out        = flag.String("out", ".local/soak/results.json", "where the JSON report goes")
		logPath    = flag.String("runtime-log", ".local/soak/runtime.log", "where the runtime's own log lines go")
		seed       = flag.Uint64("seed", uint64(time.Now().UnixNano()), "the plan's seed")
	)
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	awsCfg, err := config.AWS(ctx)
	if err != nil {
		return err
	}
	if err := config.CheckEndpoints(ctx, awsCfg); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "orderly-soak-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	stage := "soak" + strconv.FormatInt(time.Now().Unix()%1_000_000, 10)
	apiAddr, simAddr := freeAddr(), freeAddr()
	ledger := filepath.Join(dir, "ledger.jsonl")
	env := []string{
		"ORDERLY_STAGE=" + stage, "ORDERLY_CONSOLE_ADDR=off", "ORDERLY_API_ADDR=" + apiAddr,
		"ORDERLY_STATE_DIR=" + filepath.Join(dir, "state"),
		"ORDERLY_FAULTS=" + *spec,
		// Two Schedulers and two Supervisors, clocks spread over ±1 s.
		"SCHEDULERS=2", "SUPERVISORS=2", "ORDERLY_CLOCK_SKEW=1s",
		"SUPERVISOR_EVERY=2s", "QUEUE_VISIBILITY=20s",
		"STEP_ALLOWANCE=5s", "CLAIM_WITHIN=10s", "CLOCK_SKEW_GRACE=2s",
	}
	var outages []simulator.Outage
	if *outageOf != "" {
		from := time.Now().Add(*outageAt).UTC()
		outages = append(outages, simulator.Outage{Service: *outageOf, From: from, Till: from.Add(*outageFor)})
	}
	if err := os.MkdirAll(filepath.Dir(*logPath), 0o755); err != nil {
		return err
	}
	runtimeLog, err := os.Create(*logPath)
	if err != nil {
		return err
	}
	defer runtimeLog.Close()
	log.Info("soak starting", "orders", *orders, "stage", stage, "faults", *spec, "kill_every", *killEvery, "outage", *outageOf, "seed", *seed)
	report, err := soak.Run(ctx, soak.Config{
		Binary: *binary, Env: env, APIAddr: apiAddr, Orders: *orders, Mix: soak.DefaultMix, Seed: *seed,
		Clients: *clients, BurstShare: *burst, BurstMax: *burstMax, Rate: *rate, KillEvery: *killEvery, VersionChange: *change, RollbackFor: *rollback, Bound: *bound, Log: log, RuntimeLog: runtimeLog,
		SimulatorAddr: simAddr, Outages: outages, CallbackDelay: *cbDelay, PartyAfter: *partyAfter, CallbackWait: *cbWait,
		Pause: soak.PauseWindow{Service: *pauseOf, After: *pauseAt, For: *pauseFor},
	}, soak.Env{Clients: provision.NewClients(awsCfg), Stage: stage, Ledger: ledger})
	if err != nil {
		return err
	}
	report.Print(os.Stdout)
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(report, "", "  ")
	if err := os.WriteFile(*out, append(data, '\n'), 0o644); err != nil {
		return err
	}
	if !report.OK() {
		return fmt.Errorf("the soak broke a promise: see %s", *out)
	}
	return nil
}

// freeAddr returns a loopback address with a port nobody listens on.
func freeAddr() string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "127.0.0.1:0"
	}
	defer ln.Close()
	return ln.Addr().String()
}
