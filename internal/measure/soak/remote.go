package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"time"

	"orderly/internal/local/simulator"
)

// remote is the simulated remote services and the fulfilment example's
// parties (its fraud analyst and carrier), run by the soak itself, outside
// the runtime, as real services and people are: a kill -9 of the runtime
// leaves them running, so callbacks and events come while it is down, and
// they try them again (simulator.CallbackTally, Parties.SendsFailed).
type remote struct {
	sim *simulator.Server
	// calls records when each service was called.
	calls   callLog
	srv     *http.Server
	served  chan struct{}
	parties *simulator.Parties
	stopped sync.WaitGroup
	stopAll context.CancelFunc
}

// startRemote starts the simulator on addr, keeping its work in the
// ledger file, and the parties of the API at apiAddr.
func startRemote(cfg Config, ledger string) (*remote, error) {
	logs := slog.New(slog.DiscardHandler)
	if cfg.RuntimeLog != nil {
		logs = slog.New(slog.NewJSONHandler(cfg.RuntimeLog, nil))
	}
	opts := []simulator.Option{simulator.WithLedger(ledger), simulator.WithLogger(logs.With("service", "simulator")),
		simulator.WithCallbackDelay(cfg.CallbackDelay)}
	for _, o := range cfg.Outages {
		opts = append(opts, simulator.WithOutage(o))
	}
	sim, err := simulator.New(opts...)
	if err != nil {
		return nil, fmt.Errorf("the soak's simulator: %w", err)
	}
	ln, err := net.Listen("tcp", cfg.SimulatorAddr)
	if err != nil {
		sim.Close()
		return nil, fmt.Errorf("listen for the simulator on %s: %w", cfg.SimulatorAddr, err)
	}
	r := &remote{sim: sim, served: make(chan struct{})}
	r.srv = &http.Server{Handler: r.calls.wrap(sim), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		defer close(r.served)
		if err := r.srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			cfg.Log.Error("the soak's simulator stopped serving", "error", err)
		}
	}()
	// The parties look every second and answer half a second after an
	// order starts waiting for them (make run's 5 s would only slow the
	// run).
	r.parties = simulator.NewParties("http://"+cfg.APIAddr, simulator.PartyConfig{Every: time.Second, After: cfg.PartyAfter, Log: logs.With("service", "parties")})
	ctx, stop := context.WithCancel(context.Background())
	r.stopAll = stop
	r.stopped.Go(func() { _ = r.parties.Run(ctx) })
	return r, nil
}

// stop ends the parties, then the simulator: its held calls are answered
// 503 and the callbacks not sent yet are dropped.
func (r *remote) stop() {
	r.stopAll()
	r.stopped.Wait()
	r.sim.Close()
	_ = r.srv.Close()
	<-r.served
}

// lockedWriter serialises the writes of the runtime's log lines and the
// simulator's, which share cfg.RuntimeLog.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
