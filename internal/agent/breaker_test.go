package agent_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"orderly/internal/agent"
	"orderly/internal/metrics"
	"orderly/internal/order"
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
	ag := agent.New(agent.Config{
		Name: order.AgentPayment, Remote: caller, Replies: replier, Holder: holder,
		Breaker: agent.Breaker{Failures: 3, OpenFor: openFor},
		Backoff: agent.Backoff{Base: 5 * time.Millisecond, Cap: 10 * time.Millisecond},
		Now:     time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard(),
	})
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
