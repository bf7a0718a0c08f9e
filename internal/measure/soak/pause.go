package soak

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"orderly/internal/batch"
	"orderly/internal/local/simulator"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/pausecache"
)

// PauseWindow is an operator's maintenance window during a run: After
// the first submission, the operator pauses Service with the same code
// the CLI's `orderly pause` runs (ops.Stage.Pause), the service goes
// down for its maintenance once every agent has seen the pause
// (pauseLead later), comes back upBeforeResume before the operator's
// resume, and the operator resumes it For after the pause. The runtime
// goes on being killed meanwhile. A zero Service is no pause.
type PauseWindow struct {
	Service string
	After   time.Duration
	For     time.Duration
}

const (
	// pauseLead is how long after the pause's write the paused service
	// may still be called: an agent trusts the pause it read for
	// pausecache.Fresh. From then until the resume, no call may reach it.
	pauseLead = pausecache.Fresh + time.Second
	// upBeforeResume is how long before the resume the service is back:
	// an operator resumes once the partner says its maintenance is over.
	upBeforeResume = 10 * time.Second
	// pauseBy names the soak's operator in the pause's history.
	pauseBy = "soak operator"
	// heldFor is the shortest time an agent holds a paused service's
	// request in its queue (half the agents' default of a minute): a
	// request held less than that before a kill -9 was still held when
	// the kill landed.
	heldFor = 30 * time.Second
)

// pauseRun is what the soak's operator did: when the pause was written,
// when the service was down, when the resume was written.
type pauseRun struct {
	Window              PauseWindow
	PausedAt, ResumedAt time.Time
	DownFrom, DownTill  time.Time
	Err                 error
}

// pauseStage is the part of ops.Stage the soak's operator uses.
type pauseStage interface {
	Pause(ctx context.Context, r order.PauseRequest) (order.Pause, error)
	Resume(ctx context.Context, kind order.PauseKind, name, by, reason string) (order.Pause, error)
}

var _ pauseStage = (*ops.Stage)(nil)

// operate pauses the window's service After from now, takes it down at
// the simulator, and resumes it For after the pause. If ctx ends first it
// resumes at once: a pause is never left on. The pause says it lasts a
// minute longer than it does, so it is never overrun (which alarms).
func (w PauseWindow) operate(ctx context.Context, stage pauseStage, sim *simulator.Server, log *slog.Logger) pauseRun {
	run := pauseRun{Window: w}
	select {
	case <-ctx.Done():
		run.Err = fmt.Errorf("the run ended before the pause of %s: %w", w.Service, ctx.Err())
		return run
	case <-time.After(w.After):
	}
	// The soak's own clients have no injected faults, but an emulator may
	// hiccup: the operator's writes are tried again, as the actors' are.
	if err := batch.Retry(ctx, func() error {
		_, err := stage.Pause(ctx, order.PauseRequest{Kind: order.PauseService, Name: w.Service, For: w.For + time.Minute,
			Reason: w.Service + "'s maintenance window (the chaos soak)", By: pauseBy})
		return err
	}); err != nil {
		run.Err = fmt.Errorf("pause %s: %w", w.Service, err)
		return run
	}
	run.PausedAt = time.Now()
	run.DownFrom, run.DownTill = run.PausedAt.Add(pauseLead), run.PausedAt.Add(w.For-upBeforeResume)
	sim.AddOutage(simulator.Outage{Service: w.Service, From: run.DownFrom, Till: run.DownTill})
	log.Info("operator paused a service", "service", w.Service, "down_from", run.DownFrom, "down_till", run.DownTill)
	select {
	case <-ctx.Done():
	case <-time.After(time.Until(run.PausedAt.Add(w.For))):
	}
	resuming := context.WithoutCancel(ctx)
	if err := batch.Retry(resuming, func() error {
		_, err := stage.Resume(resuming, order.PauseService, w.Service, pauseBy, "maintenance over")
		return err
	}); err != nil {
		run.Err = fmt.Errorf("resume %s: %w", w.Service, err)
	}
	run.ResumedAt = time.Now()
	log.Info("operator resumed a service", "service", w.Service, "paused_for", run.ResumedAt.Sub(run.PausedAt).Round(time.Millisecond), "error", run.Err)
	return run
}

// callLog records when each simulated service was called, by the first
// segment of the call's path (/shipping/shipments is shipping's), as
// the calls reach the simulator: the ledger keeps only work done, and a
// service that is down does none.
type callLog struct {
	mu sync.Mutex
	at map[string][]time.Time
}

func (l *callLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		service, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
		l.mu.Lock()
		if l.at == nil {
			l.at = map[string][]time.Time{}
		}
		l.at[service] = append(l.at[service], time.Now())
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// of returns the times service was called.
func (l *callLog) of(service string) []time.Time {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.at[service])
}

// heldRequest is an agent's log line saying it held a request of its
// paused service in its queue.
type heldRequest struct {
	At      time.Time
	Agent   string
	OrderID string
}

// PauseFacts says what an operator's pause of a service did to the run.
type PauseFacts struct {
	Service   string    `json:"service"`
	PausedAt  time.Time `json:"pausedAt"`
	ResumedAt time.Time `json:"resumedAt"`
	// DownFrom and DownTill are when the service was down, inside the
	// pause.
	DownFrom time.Time `json:"downFrom"`
	DownTill time.Time `json:"downTill"`
	// Error says why the operator's pause or resume failed.
	Error string `json:"error,omitempty"`
	// CallsWhilePaused counts the calls the service received from
	// pauseLead after the pause to the resume: must be 0. CallsBefore and
	// CallsAfter count those before the pause and after the resume.
	CallsWhilePaused int `json:"callsWhilePaused"`
	CallsBefore      int `json:"callsBefore"`
	CallsAfter       int `json:"callsAfter"`
	// RequestsHeld counts the agents' holds of the service's requests;
	// OrdersHeld the orders they were for; OrdersDeferred those whose
	// history has a Supervisor's deferral naming the pause.
	RequestsHeld   int `json:"requestsHeld"`
	OrdersHeld     int `json:"ordersHeld"`
	OrdersDeferred int `json:"ordersDeferred"`
	// HeldOutcomes counts the held orders by final status; HeldWrong
	// lists those whose status is not the one their kind calls for
	// (given up after timeouts included).
	HeldOutcomes map[string]int `json:"heldOutcomes"`
	HeldWrong    []string       `json:"heldWrong,omitempty"`
	// KillsWhilePaused counts the kills -9 between the pause and the
	// resume; KillsWhileHeld those with requests held less than heldFor
	// before them (still in the queue when the kill landed), and
	// HeldAtKills those requests, summed.
	KillsWhilePaused int `json:"killsWhilePaused"`
	KillsWhileHeld   int `json:"killsWhileHeld"`
	HeldAtKills      int `json:"heldAtKills"`
	// TimeoutsWhilePaused counts the timeouts the history records at the
	// paused service's steps during the pause: a Supervisor run that could
	// not read the pause nor see the held requests in the queue. Reported,
	// not a broken promise: a timeout retries, it fails nothing.
	TimeoutsWhilePaused int `json:"timeoutsWhilePaused"`
	// UnreadWhilePaused counts the paused service's agents' reads of the
	// pause that failed during it and went by no pause (a runtime
	// started since, that had read none): each may let a call through.
	UnreadWhilePaused int `json:"unreadWhilePaused"`
	// AlertsCaused lists the alerts sent since the pause about a step of
	// the paused service, or about a held order unless its kind calls for
	// that alert (an undo refused): must be none. VersionUnknown alerts
	// are the rollback's, whatever the step.
	AlertsCaused []string `json:"alertsCaused,omitempty"`
	heldWrongIDs []string
}

// OK reports whether the pause kept its promises: made and ended, no
// call while it held, requests held across kills, every held order as
// its kind calls for, no alert it caused.
func (f PauseFacts) OK() bool {
	return f.Error == "" && f.CallsWhilePaused == 0 && f.RequestsHeld > 0 && f.KillsWhileHeld > 0 &&
		len(f.HeldWrong) == 0 && len(f.AlertsCaused) == 0
}

// pauseEvidence is what the checker reads about a pause.
type pauseEvidence struct {
	run   pauseRun
	calls []time.Time   // when the paused service was called
	holds []heldRequest // the agents' holds
	kills []time.Time   // every kill -9 of the runtime
	// unread are the agents' failed reads of their service's pause that
	// went by no pause.
	unread []heldRequest
	// histories are the held orders' histories.
	histories map[string][]order.HistoryEntry
	// agentOf names the service a step of a version calls: the paused
	// service's steps are looked for by it.
	agentOf func(o order.Order, step string) string
}

// pauseFacts judges a pause by the evidence: the calls the service
// received, the agents' holds, the kills, the held orders' histories,
// outcomes and alerts.
func pauseFacts(ev pauseEvidence, orders []acked, final map[string]order.Order, alerts []order.Alert) PauseFacts {
	run := ev.run
	f := PauseFacts{Service: run.Window.Service, PausedAt: run.PausedAt, ResumedAt: run.ResumedAt, DownFrom: run.DownFrom, DownTill: run.DownTill,
		HeldOutcomes: map[string]int{}}
	if run.Err != nil {
		f.Error = run.Err.Error()
	}
	if run.PausedAt.IsZero() {
		return f
	}
	for _, at := range ev.calls {
		switch {
		case at.Before(run.PausedAt):
			f.CallsBefore++
		case !at.Before(run.PausedAt.Add(pauseLead)) && (run.ResumedAt.IsZero() || at.Before(run.ResumedAt)):
			f.CallsWhilePaused++
		case !run.ResumedAt.IsZero() && !at.Before(run.ResumedAt):
			f.CallsAfter++
		}
	}
	for _, u := range ev.unread {
		if u.Agent == run.Window.Service && !u.At.Before(run.PausedAt) && (run.ResumedAt.IsZero() || u.At.Before(run.ResumedAt)) {
			f.UnreadWhilePaused++
		}
	}
	held := map[string]bool{}
	var holds []time.Time
	for _, h := range ev.holds {
		if h.Agent != run.Window.Service {
			continue
		}
		f.RequestsHeld++
		held[h.OrderID] = true
		holds = append(holds, h.At)
	}
	f.OrdersHeld = len(held)
	for _, k := range ev.kills {
		if k.Before(run.PausedAt) || (!run.ResumedAt.IsZero() && k.After(run.ResumedAt)) {
			continue
		}
		f.KillsWhilePaused++
		n := 0
		for _, h := range holds {
			if !h.After(k) && k.Sub(h) < heldFor {
				n++
			}
		}
		if n > 0 {
			f.KillsWhileHeld++
			f.HeldAtKills += n
		}
	}
	for id, hs := range ev.histories {
		deferred := false
		for _, e := range hs {
			if e.Event == "deferred" && strings.Contains(e.Reason, "paused by an operator") {
				deferred = true
			}
			if strings.Contains(e.Reason, "timed out") && !e.At.Before(run.PausedAt) && (run.ResumedAt.IsZero() || e.At.Before(run.ResumedAt)) &&
				ev.agentOf != nil && ev.agentOf(final[id], e.Step) == run.Window.Service {
				f.TimeoutsWhilePaused++
			}
		}
		if deferred {
			f.OrdersDeferred++
		}
	}
	kinds := map[string]acked{}
	for _, a := range orders {
		kinds[a.ID] = a
		if !held[a.ID] {
			continue
		}
		o, ok := final[a.ID]
		status := o.Status
		if !ok {
			status = "not read"
		}
		f.HeldOutcomes[string(status)]++
		if !slices.Contains(expectedStatuses(a), status) {
			f.heldWrongIDs = append(f.heldWrongIDs, a.ID)
			f.HeldWrong = append(f.HeldWrong, fmt.Sprintf("%s (%s %s): %s, %s", a.ID, a.Kind, a.Service, status, o.LastError))
		}
	}
	for _, al := range alerts {
		if al.At.Before(run.PausedAt) {
			continue
		}
		if al.Kind == order.AlertVersionUnknown {
			// A rollback's: an order of a version the running build
			// lacks. A pause changes no version.
			continue
		}
		a := kinds[al.OrderID]
		ofService := ev.agentOf != nil && ev.agentOf(final[al.OrderID], al.Step) == run.Window.Service
		called := a.Kind == UndoStuck && al.Kind == order.AlertUndoFailed
		if ofService || (held[al.OrderID] && !called) {
			f.AlertsCaused = append(f.AlertsCaused, fmt.Sprintf("%s about order %s (%s), step %s at %s: %s",
				al.Kind, al.OrderID, a.Kind, al.Step, al.At.UTC().Format(time.RFC3339), al.Reason))
		}
	}
	return f
}

// expectedStatuses are the final statuses an order's kind calls for.
func expectedStatuses(a acked) []order.Status {
	switch a.Kind {
	case Permanent, UndoFlaky, FulfilRejected:
		return []order.Status{order.StatusFailed}
	case UndoStuck:
		// Failed once redriven; still in Error if every redrive met
		// its undo refused again.
		return []order.Status{order.StatusFailed, order.StatusError}
	case FulfilCancel:
		// Its carrier never confirms: it cannot end Processed.
		return []order.Status{order.StatusCancelled}
	case Cancel:
		if a.CancelAnswer == http.StatusAccepted {
			return []order.Status{order.StatusCancelled}
		}
		return []order.Status{order.StatusProcessed}
	}
	return []order.Status{order.StatusProcessed}
}

// print writes the pause's rows of the report's table.
func (f PauseFacts) print(row func(k string, v any)) {
	clock := func(t time.Time) string {
		if t.IsZero() {
			return "never"
		}
		return t.Format("15:04:05")
	}
	row("operator's pause of "+f.Service+": paused / down / resumed", fmt.Sprintf("%s / %s to %s / %s (%s)",
		clock(f.PausedAt), clock(f.DownFrom), clock(f.DownTill), clock(f.ResumedAt), f.ResumedAt.Sub(f.PausedAt).Round(time.Second)))
	if f.Error != "" {
		row("  pause or resume failed", f.Error)
	}
	row("  calls to it before / while paused (must be 0) / after", fmt.Sprintf("%d / %d / %d", f.CallsBefore, f.CallsWhilePaused, f.CallsAfter))
	row("  requests held / orders held / deferred for it", fmt.Sprintf("%d / %d / %d", f.RequestsHeld, f.OrdersHeld, f.OrdersDeferred))
	row("  kill -9 while paused / with requests held / held", fmt.Sprintf("%d / %d / %d", f.KillsWhilePaused, f.KillsWhileHeld, f.HeldAtKills))
	for _, k := range slices.Sorted(maps.Keys(f.HeldOutcomes)) {
		row("  held orders "+k, f.HeldOutcomes[k])
	}
	row("  held orders not as their kind calls for", len(f.HeldWrong))
	for _, w := range f.HeldWrong {
		row("    held wrong", w)
	}
	row("  alerts the pause caused (must be 0)", len(f.AlertsCaused))
	for _, a := range f.AlertsCaused {
		row("    alert", a)
	}
	row("  timeouts counted at it while paused", f.TimeoutsWhilePaused)
	row("  its agents' pause reads failed, no pause known", f.UnreadWhilePaused)
}
