package agent_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// fakeHolder records the requests an agent held back.
type fakeHolder struct {
	mu     sync.Mutex
	held   []order.StepRequest
	delays []time.Duration
}

func (f *fakeHolder) HoldRequest(ctx context.Context, agentName string, req order.StepRequest, delay time.Duration) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held = append(f.held, req)
	f.delays = append(f.delays, delay)
	return nil
}

func (f *fakeHolder) heldIDs() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var ids []string
	for _, r := range f.held {
		ids = append(ids, r.OrderID)
	}
	return ids
}

// A remote service that fails call after call opens the circuit: the
// requests that come while it is open are held in their queue with no call
// and no attempt spent, and once it has been open for OpenFor one probe
// call that succeeds closes it again.
func TestCircuitBreakerHoldsRequestsWhileTheServiceIsDown(t *testing.T) {
	const openFor = 300 * time.Millisecond
	down := request("k-down", time.Now().Add(5*time.Second))
	waiting := request("k-waiting", time.Now().Add(5*time.Second))
	later := request("k-later", time.Now().Add(5*time.Second))
	caller := newFakeCaller(map[string][]result{
		down.OrderID:    {transient},
		waiting.OrderID: {ok("ch_waiting")},
		later.OrderID:   {ok("ch_later")},
	})
	replier := &fakeReplier{}
	holder := &fakeHolder{}
	ag := newBreakerAgent(caller, replier, holder, openFor, 0)
	ctx := context.Background()

	// Three failed calls open the circuit; the request is held, not given up.
	if err := ag.Process(ctx, down); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(down.OrderID)); n != 3 {
		t.Errorf("calls while the service was down = %d, want 3 (the breaker's threshold)", n)
	}
	// While it is open, a request is held without a call.
	if err := ag.Process(ctx, waiting); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(waiting.OrderID)); n != 0 {
		t.Errorf("calls while the circuit was open = %d, want 0", n)
	}
	if got := holder.heldIDs(); len(got) != 2 || got[0] != down.OrderID || got[1] != waiting.OrderID {
		t.Fatalf("held %v, want both requests", got)
	}
	for _, d := range holder.delays {
		if d < openFor/2 || d > openFor {
			t.Errorf("held for %s, want within [%s, %s]", d, openFor/2, openFor)
		}
	}
	if reps := replier.sent(); len(reps) != 0 {
		t.Errorf("replies %+v while the circuit was open, want none: the attempts are not spent", reps)
	}

	// After OpenFor a probe goes through; its success closes the circuit.
	time.Sleep(openFor + 50*time.Millisecond)
	for _, req := range []order.StepRequest{later, waiting} {
		if err := ag.Process(ctx, req); err != nil {
			t.Fatal(err)
		}
		if reps := replier.repliesFor(req.OrderID); len(reps) != 1 || reps[0].Outcome != order.OutcomeSucceeded {
			t.Errorf("order %s: replies %+v after the circuit closed, want a success", req.OrderID, reps)
		}
	}
}

// newBreakerAgent returns an agent whose circuit opens after three failed
// calls and whose tries time out after tryFor (zero: at the window's end).
func newBreakerAgent(caller agent.Caller, replier *fakeReplier, holder *fakeHolder, openFor, tryFor time.Duration) *agent.Service {
	return agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: caller, Replies: replier, Holder: holder,
		Breaker: agent.Breaker{Failures: 3, OpenFor: openFor}, TryTimeout: tryFor,
		Backoff: agent.Backoff{Base: 5 * time.Millisecond, Cap: 10 * time.Millisecond},
		Now:     time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard(),
	})
}

// One request whose call hangs every time (one stuck order, not a stuck
// service) times out try after try, but its timeouts count once: the
// circuit stays closed and the agent's other requests are called.
func TestCircuitBreakerCountsARequestThatHangsOnce(t *testing.T) {
	const tryFor = 30 * time.Millisecond
	stuck := request("k-stuck", time.Now().Add(600*time.Millisecond))
	other := request("k-other", time.Now().Add(5*time.Second))
	caller := newFakeCaller(map[string][]result{stuck.OrderID: {hang}, other.OrderID: {ok("ch_other")}})
	replier, holder := &fakeReplier{}, &fakeHolder{}
	ag := newBreakerAgent(caller, replier, holder, time.Minute, tryFor)
	ctx := context.Background()

	if err := ag.Process(ctx, stuck); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(stuck.OrderID)); n < 4 {
		t.Fatalf("calls of the stuck request = %d, want at least 4 timed-out tries in its window", n)
	}
	if err := ag.Process(ctx, other); err != nil {
		t.Fatal(err)
	}
	if held := holder.heldIDs(); len(held) != 0 {
		t.Errorf("held %v: one request's timeouts opened the circuit", held)
	}
	if reps := replier.repliesFor(other.OrderID); len(reps) != 1 || reps[0].Outcome != order.OutcomeSucceeded {
		t.Errorf("replies to the other request %+v, want a success", reps)
	}
}

// Calls of different requests that all time out are a hung service: they
// open the circuit. When it half-opens, a request that timed out before
// does not take the one probe: its call goes ahead outside the count,
// another request probes, and that probe's success closes the circuit.
func TestCircuitBreakerOpensOnTimeoutsOfDifferentRequests(t *testing.T) {
	const (
		tryFor  = 30 * time.Millisecond
		openFor = 200 * time.Millisecond
	)
	var hung []order.StepRequest
	scripts := map[string][]result{}
	for _, key := range []string{"k-hung-1", "k-hung-2", "k-hung-3"} {
		req := request(key, time.Time{}) // its window starts when it is processed
		hung = append(hung, req)
		scripts[req.OrderID] = []result{hang}
	}
	probe := request("k-probe", time.Now().Add(5*time.Second))
	scripts[probe.OrderID] = []result{ok("ch_probe")}
	caller := newFakeCaller(scripts)
	replier, holder := &fakeReplier{}, &fakeHolder{}
	ag := newBreakerAgent(caller, replier, holder, openFor, tryFor)
	ctx := context.Background()

	for _, req := range hung {
		req.CompleteBy = time.Now().Add(200 * time.Millisecond)
		if err := ag.Process(ctx, req); err != nil {
			t.Fatal(err)
		}
	}
	if err := ag.Process(ctx, probe); err != nil {
		t.Fatal(err)
	}
	if held := holder.heldIDs(); len(held) != 2 || held[0] != hung[2].OrderID || held[1] != probe.OrderID {
		t.Fatalf("held %v, want the third hung request (its timeout opened the circuit) and the next request", held)
	}
	if n := len(caller.callsFor(probe.OrderID)); n != 0 {
		t.Errorf("calls while the circuit was open = %d, want 0", n)
	}

	// Half-open: the first hung request comes back first and is called
	// (it times out again) without spending the probe.
	time.Sleep(openFor + 50*time.Millisecond)
	again := hung[0]
	again.CompleteBy = time.Now().Add(200 * time.Millisecond)
	before := len(caller.callsFor(again.OrderID))
	if err := ag.Process(ctx, again); err != nil {
		t.Fatal(err)
	}
	if n := len(caller.callsFor(again.OrderID)) - before; n == 0 {
		t.Errorf("a request that hung before was held in the half-open circuit; want it called")
	}
	if err := ag.Process(ctx, probe); err != nil {
		t.Fatal(err)
	}
	if reps := replier.repliesFor(probe.OrderID); len(reps) != 1 || reps[0].Outcome != order.OutcomeSucceeded {
		t.Errorf("probe replies %+v, want a success: the hung request's timeout reopened the circuit", reps)
	}
}

// A call cut short by the end of its window is a timeout too, whether the
// agent has a try timeout or not: three different requests whose calls
// hang to the end of their windows open the circuit.
func TestCircuitBreakerCountsCallsCutByTheirWindow(t *testing.T) {
	caller := newFakeCaller(map[string][]result{})
	var reqs []order.StepRequest
	for _, key := range []string{"k-window-1", "k-window-2", "k-window-3", "k-after"} {
		req := request(key, time.Time{})
		reqs = append(reqs, req)
		caller.scripts[req.OrderID] = []result{hang}
	}
	replier, holder := &fakeReplier{}, &fakeHolder{}
	ag := newBreakerAgent(caller, replier, holder, time.Minute, 0)
	for _, req := range reqs {
		req.CompleteBy = time.Now().Add(100 * time.Millisecond)
		if err := ag.Process(context.Background(), req); err != nil {
			t.Fatal(err)
		}
	}
	if held := holder.heldIDs(); len(held) != 1 || held[0] != reqs[3].OrderID {
		t.Errorf("held %v, want the request after three calls cut by their windows", held)
	}
}
