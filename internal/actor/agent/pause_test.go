package agent_test

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// fakePauses is the stage's pause of one service, as an operator sets it.
type fakePauses struct {
	mu    sync.Mutex
	pause order.Pause
	err   error
	reads int
}

func (f *fakePauses) PauseOf(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reads++
	if f.err != nil {
		return order.Pause{}, f.err
	}
	if kind != order.PauseService || name != f.pause.Name {
		return order.Pause{Kind: kind, Name: name}, nil
	}
	return f.pause, nil
}

func (f *fakePauses) set(p order.Pause, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.pause, f.err = p, err
}

// While an operator pauses its service, an agent calls it not at all:
// every request (a step's work, an undo, a status check) is held in the
// queue for about a minute, with no failure counted, no circuit opened
// and no breaker metric; after the resume (seen within the agent's cache
// of a few seconds) calls go out again. A pause that cannot be read is
// taken as last read.
func TestAPausedServiceIsNotCalledAndItsRequestsAreHeld(t *testing.T) {
	var mu sync.Mutex
	now := time.Now()
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); defer mu.Unlock(); now = now.Add(d) }
	paused := order.Pause{Kind: order.PauseService, Name: ordertest.AgentPayment, By: "ops", Reason: "PSP maintenance", Since: now, Until: now.Add(time.Hour)}
	pauses := &fakePauses{pause: paused}
	work := request("k-work", now.Add(30*time.Second))
	undo := request("k-undo", now.Add(30*time.Second))
	undo.Undo = true
	check := request("k-check", now.Add(30*time.Second))
	check.Poll = "https://payments.example/jobs/1"
	other := request("k-other", now.Add(time.Minute))
	caller := newFakeCaller(map[string][]result{work.OrderID: {ok("ch_work")}, other.OrderID: {ok("ch_other")}})
	calls := func() int {
		return len(caller.callsFor(work.OrderID)) + len(caller.callsFor(undo.OrderID)) + len(caller.callsFor(check.OrderID))
	}
	replier, holder := &fakeReplier{}, &fakeHolder{}
	var logs, emf bytes.Buffer
	ag := agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: caller, Replies: replier, Holder: holder, Pauses: pauses,
		Breaker: agent.Breaker{Failures: 1, OpenFor: time.Minute},
		Now:     clock, Log: slog.New(slog.NewJSONHandler(&logs, nil)), Metrics: metrics.New(&emf, "test"),
	})
	ctx := context.Background()

	for _, req := range []order.StepRequest{work, undo, check} {
		if err := ag.Process(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if n := calls(); n != 0 {
		t.Fatalf("calls while paused = %d, want 0", n)
	}
	if got := holder.heldIDs(); len(got) != 3 {
		t.Fatalf("held %v, want all three requests", got)
	}
	for _, d := range holder.delays {
		if d < 30*time.Second || d > time.Minute {
			t.Errorf("held for %s, want within [30s, 1m]", d)
		}
	}
	if n := len(replier.sent()); n != 0 {
		t.Errorf("replies while paused = %d, want none", n)
	}
	if pauses.reads != 1 {
		t.Errorf("pause read %d times for three requests, want once (cached)", pauses.reads)
	}
	if strings.Contains(emf.String(), metrics.CircuitOpened) || strings.Contains(emf.String(), metrics.RequestsHeld) || !strings.Contains(emf.String(), metrics.RequestsPaused) {
		t.Errorf("metrics = %s; want RequestsPaused only, no breaker metric", emf.String())
	}

	// Resumed, the agent sees it once its cached read is stale.
	pauses.set(order.Pause{Kind: order.PauseService, Name: ordertest.AgentPayment}, nil)
	if err := ag.Process(ctx, work); err != nil {
		t.Fatal(err)
	}
	if n := calls(); n != 0 {
		t.Fatalf("calls inside the cache's freshness = %d, want 0 (still paused as read)", n)
	}
	advance(6 * time.Second)
	if err := ag.Process(ctx, work); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(work.OrderID)); n != 1 {
		t.Fatalf("calls after the resume = %d, want 1", n)
	}
	if got := replier.sent(); len(got) != 1 || got[0].reply.Outcome != order.OutcomeSucceeded {
		t.Fatalf("replies after the resume = %+v, want one success", got)
	}

	// A read that fails keeps the last read: not paused, so calls go on.
	pauses.set(paused, errors.New("throttled"))
	advance(6 * time.Second)
	if err := ag.Process(ctx, other); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(other.OrderID)); n != 1 || !strings.Contains(logs.String(), "pause not read") {
		t.Fatalf("calls on a failed read = %d, want 1 and a warning", n)
	}
}
