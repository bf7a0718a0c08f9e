// Package enginetest starts a whole local engine (package engine) on the
// emulators for a test, with timing fast enough that every recovery path
// ends within seconds, and stops and removes it when the test ends.
package enginetest

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// Fast is the engine's timing in tests: every recovery path completes
// within seconds.
var Fast = order.Timing{Allowance: time.Second, MaxAllowance: 2 * time.Second, FailureThreshold: 2, ClaimWithin: 2 * time.Second}

// Config is the engine's configuration in tests: a stage of the test's
// own, every listener on a free port, Fast timing, DynamoDB's expiry off
// on the tables (items still carry ExpiresAt; see
// resources.Catalog.WithoutTableTTL). With -v the engine logs into the
// test's log.
func Config(t testing.TB) engine.Config {
	cfg := engine.Config{
		Stage: testenv.Stage(t), APIAddr: "127.0.0.1:0", SimulatorAddr: "127.0.0.1:0", WithoutTableTTL: true,
		Timing: Fast, SupervisorEvery: 200 * time.Millisecond, Schedulers: 2,
		QueueVisibility: 30 * time.Second,
		AgentBackoff:    agent.Backoff{Base: 20 * time.Millisecond, Cap: 200 * time.Millisecond},
		Log:             slog.New(slog.NewJSONHandler(io.Discard, nil)),
	}
	if testing.Verbose() {
		cfg.Log = slog.New(slog.NewJSONHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelInfo}))
	}
	return cfg
}

// Start provisions a stage of its own for the test, starts the engine on
// it (API, simulator and, with ConsoleAddr, the console on free ports)
// and stops it and removes the stage at the test's end. tweak, when set,
// changes the configuration first.
func Start(t testing.TB, tweak func(*engine.Config)) *engine.Engine {
	t.Helper()
	cfg := Config(t)
	if tweak != nil {
		tweak(&cfg)
	}
	e, stop := Run(t, cfg)
	t.Cleanup(func() {
		stop()
		testenv.Cleanup(t, e.Clients(), e.Stack)
	})
	return e
}

// Run starts an engine with cfg (provisioning its stage if need be) and
// returns it with a stop function that stops it and leaves the stage as
// it is, for the next engine on it: a restart, or a deploy. Removing the
// stage is the caller's (testenv.Cleanup).
func Run(t testing.TB, cfg engine.Config) (*engine.Engine, func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	e, err := engine.New(ctx, testenv.AWS(t), cfg)
	if err != nil {
		cancel()
		t.Fatalf("engine: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- e.Run(ctx) }()
	var once sync.Once
	stop := func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("engine stopped with %v", err)
			}
		})
	}
	t.Cleanup(stop) // a test that fails half-way still stops it
	return e, stop
}

// RemoteKey returns the Idempotency-Key the remote services get for a
// step of an order (and its undo), read from the order's item: keys are
// derived from a secret only the item holds (order.Order.RemoteKey).
func RemoteKey(t testing.TB, e *engine.Engine, orderID, step string) string {
	t.Helper()
	o, err := dynamo.NewStore(e.Clients().DynamoDB, e.Stack.Catalog.Orders.Name).Order(context.Background(), orderID)
	if err != nil {
		t.Fatalf("read order %s for its remote keys: %v", orderID, err)
	}
	return o.RemoteKey(step)
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(string(bytes.TrimSpace(p)))
	return len(p), nil
}
