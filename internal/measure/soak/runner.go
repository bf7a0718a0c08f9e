package soak

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"orderly/internal/local/faults"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
)

// Config is one soak run.
type Config struct {
	// Binary is the local runtime (cmd/orderly-local), built beforehand.
	Binary string
	// Env is added to the child's environment (the emulators' endpoints
	// and the run's settings).
	Env     []string
	APIAddr string
	// SimulatorAddr is where the soak's own simulator listens: it runs
	// in the soak's process, not the runtime's, so a kill -9 of the
	// runtime leaves it running (see remote). Outages take its services
	// down for a while; CallbackDelay is how long its services that call
	// back take; PartyAfter is how long the fulfilment example's parties
	// let an order wait before they answer.
	SimulatorAddr string
	Outages       []simulator.Outage
	CallbackDelay time.Duration
	PartyAfter    time.Duration
	// CallbackWait is how long the runtime's steps whose services call
	// back wait for the callback (ORDERLY_CALLBACK_WAIT), in place of the
	// fulfilment example's hours; zero keeps them.
	CallbackWait time.Duration
	Orders       int
	Mix          Mix
	Seed         uint64
	// Clients submit at once; BurstShare of the orders, at most BurstMax
	// (0: no cap), go first, as fast as they can, the rest at Rate per
	// second.
	Clients    int
	BurstShare float64
	BurstMax   int
	Rate       float64
	// KillEvery kills the runtime with SIGKILL that often (0 never);
	// faults may crash it in between.
	KillEvery time.Duration
	// VersionChange, when set, is when the run deploys a new workflow
	// version (the runtime's rehearsal version, see
	// ORDERLY_REHEARSE_VERSION) with orders in flight; RollbackFor later
	// it rolls back to a runtime without it, and RollbackFor after that
	// deploys it again. Each is a kill -9 and a start with the new build.
	VersionChange, RollbackFor time.Duration
	// Pause, when its Service is set, is an operator's maintenance window
	// of that service during the run (see PauseWindow).
	Pause PauseWindow
	// Bound is how long after the last submission every order must be
	// terminal.
	Bound time.Duration
	Log   *slog.Logger
	// RuntimeLog, when set, receives the runtime's own log lines.
	RuntimeLog io.Writer
}

// child is the running local runtime, restarted after every crash.
//
// Exactly one runtime runs at a time: starts happen under lifecycle, and a
// crashed runtime is restarted only if it is still the current one. (A
// crash racing a kill -9 used to start two; the second could not bind the
// API's port, died, was restarted, died again, three times a second, while
// the first served on and no kill reached it.)
type child struct {
	cfg Config

	lifecycle sync.Mutex // held to start, kill or stop the runtime

	mu       sync.Mutex
	cmd      *exec.Cmd
	starts   int
	kills    int
	crashes  int // exits the soak did not cause: fault-injected crashes
	injected map[faults.Kind]int
	// crashedAt counts injected crashes by the point they fell at.
	crashedAt map[string]int
	// killsWhileWaiting counts the kills -9 with orders waiting (for a
	// callback, an event), waitingAtKills those orders, summed.
	killsWhileWaiting, waitingAtKills int
	stopping                          bool // set by stop: the runtime is not restarted
	exited                            chan struct{}
	// build is added to the environment of every start: the deployed
	// version set.
	build []string
	// deploys counts version changes and rollbacks.
	deploys int
	// killedAt is when each kill -9 landed; holds are the agents' holds
	// of a paused service's requests, as their log lines came.
	killedAt []time.Time
	holds    []heldRequest
	// unread are the agents' reads of their service's pause that failed
	// and went by no pause (none read before, or the last read said so).
	unread []heldRequest
}

// terminalStatuses are the statuses whose events the soak checks, as
// ORDERLY_STATUS_EVENTS lists them.
func terminalStatuses() string {
	var out []string
	for _, s := range order.Statuses {
		if s.Terminal() {
			out = append(out, string(s))
		}
	}
	return strings.Join(out, ",")
}

// start starts a runtime; the caller holds lifecycle.
func (c *child) start() error {
	cmd := exec.Command(c.cfg.Binary)
	c.mu.Lock()
	// The runtime runs the examples beside the shipped workflow.
	// Its status queue gets only the terminal statuses' events, the ones
	// the soak checks: on moto a deep queue is slow to read.
	// Its remote services and the fulfilment example's parties are the
	// soak's (see remote): none of its own.
	own := []string{"ORDERLY_WORKFLOWS=" + strings.Join(Workflows, ","), "ORDERLY_STATUS_EVENTS=" + terminalStatuses(),
		"REMOTE_URL=http://" + c.cfg.SimulatorAddr, "ORDERLY_PARTIES=0"}
	if c.cfg.CallbackWait > 0 {
		own = append(own, "ORDERLY_CALLBACK_WAIT="+c.cfg.CallbackWait.String())
	}
	cmd.Env = append(append(append(os.Environ(), own...), c.cfg.Env...), c.build...)
	c.mu.Unlock()
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("start %s: %w", c.cfg.Binary, err)
	}
	exited := make(chan struct{})
	c.mu.Lock()
	c.cmd, c.exited = cmd, exited
	c.starts++
	c.mu.Unlock()
	go c.read(out)
	go func() {
		err := cmd.Wait()
		close(exited) // before lifecycle: a kill9 holding it waits for this
		c.lifecycle.Lock()
		defer c.lifecycle.Unlock()
		c.mu.Lock()
		restart := c.cmd == cmd && !c.stopping
		c.mu.Unlock()
		if !restart {
			return // killed by the soak, which starts the next one itself
		}
		c.cfg.Log.Warn("runtime died; starting it again", "error", err)
		c.mu.Lock()
		c.crashes++
		c.mu.Unlock()
		if err := c.start(); err != nil {
			c.cfg.Log.Error("restart failed", "error", err)
		}
	}()
	return nil
}

// begin starts the first runtime.
func (c *child) begin() error {
	c.lifecycle.Lock()
	defer c.lifecycle.Unlock()
	return c.start()
}

// read counts the faults the runtime logs as injected.
func (c *child) read(r io.Reader) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if c.cfg.RuntimeLog != nil {
			c.mu.Lock()
			_, _ = c.cfg.RuntimeLog.Write(append(line, '\n'))
			c.mu.Unlock()
		}
		held, unread := bytes.Contains(line, []byte(`"service paused: request held in its queue"`)),
			bytes.Contains(line, []byte(`"pause not read; going by the last read"`))
		if held || unread {
			var rec struct {
				Agent   string `json:"agent"`
				OrderID string `json:"order_id"`
				Paused  bool   `json:"paused"`
			}
			if json.Unmarshal(line, &rec) == nil {
				h := heldRequest{At: time.Now(), Agent: rec.Agent, OrderID: rec.OrderID}
				c.mu.Lock()
				switch {
				case held:
					c.holds = append(c.holds, h)
				case !rec.Paused:
					c.unread = append(c.unread, h)
				}
				c.mu.Unlock()
			}
			continue
		}
		if !bytes.Contains(line, []byte(`"fault injected"`)) {
			continue
		}
		var rec struct {
			Kind  faults.Kind `json:"kind"`
			Point string      `json:"point"`
		}
		if json.Unmarshal(line, &rec) == nil {
			c.mu.Lock()
			c.injected[rec.Kind]++
			if rec.Kind == faults.Crash {
				c.crashedAt[rec.Point]++
			}
			c.mu.Unlock()
		}
	}
}

// kill9 kills the runtime with SIGKILL and starts it again.
func (c *child) kill9() error {
	c.lifecycle.Lock()
	defer c.lifecycle.Unlock()
	// The killed runtime's watcher waits for lifecycle, and by then the
	// next runtime is the current one: it does not restart the old one.
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	c.mu.Lock()
	c.kills++
	c.killedAt = append(c.killedAt, time.Now())
	c.mu.Unlock()
	return c.start()
}

// deploy restarts the runtime (kill -9) as a build whose environment
// adds build.
func (c *child) deploy(build []string) error {
	c.mu.Lock()
	c.build = build
	c.deploys++
	c.mu.Unlock()
	return c.kill9()
}

// stop ends the runtime for good.
func (c *child) stop() {
	c.lifecycle.Lock()
	defer c.lifecycle.Unlock()
	c.mu.Lock()
	cmd, exited := c.cmd, c.exited
	c.stopping = true
	c.mu.Unlock()
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Signal(syscall.SIGKILL)
		<-exited
	}
}

// waitReady waits until the API answers.
func waitReady(ctx context.Context, addr string) error {
	for {
		resp, err := http.Get("http://" + addr + "/orders/not-an-order")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("runtime API on %s never answered: %w", addr, errors.Join(ctx.Err(), err))
		case <-time.After(200 * time.Millisecond):
		}
	}
}
