package agent_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/remote"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// shipped is the shipped workflow, whose steps name the calls the client makes.
var shipped = ordertest.Built(order.DefaultTiming)

// switchable is a remote service whose answer a test changes: a status
// and body for every call, counted.
type switchable struct {
	status atomic.Int32
	calls  atomic.Int32
}

func (s *switchable) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.calls.Add(1)
	io.Copy(io.Discard, r.Body)
	status := int(s.status.Load())
	w.WriteHeader(status)
	if status < 300 {
		io.WriteString(w, `{"id":"ch_1"}`)
		return
	}
	io.WriteString(w, `{"error":"blocked by policy"}`)
}

// metricRecords returns the records of the named metric in emf.
func metricRecords(t *testing.T, emf *testenv.JSONLines, name string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, rec := range emf.Records(t) {
		if rec[name] != nil {
			out = append(out, rec)
		}
	}
	return out
}

// A remote service that refuses the agent's configuration (403: a WAF
// block, a credential without the permission) answers the same to every
// order until someone fixes it. The first such answer opens the circuit
// (however many failures the breaker otherwise waits for), and its
// request is held in the queue like every request after it: no retry, no
// reply, no attempt spent, so no order fails or is undone. Each such
// answer is counted with its status; the circuit opening is not counted
// as a failing service, so operators get the one alarm on the status.
// Once the service answers again, the next probe closes the circuit and
// the held requests succeed with no one acting.
func TestConfigurationFaultHoldsRequestsUntilTheServiceAnswers(t *testing.T) {
	const openFor = 200 * time.Millisecond
	svc := &switchable{}
	svc.status.Store(http.StatusForbidden)
	ts := httptest.NewServer(svc)
	defer ts.Close()
	var emf testenv.JSONLines
	replier, holder := &fakeReplier{}, &fakeHolder{}
	ag := agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: remote.NewClient(ts.URL, ts.Client(), shipped), Replies: replier, Holder: holder,
		Breaker: agent.Breaker{Failures: 5, OpenFor: openFor},
		Backoff: agent.Backoff{Base: 5 * time.Millisecond, Cap: 10 * time.Millisecond},
		Now:     time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.New(&emf, ordertest.AgentPayment+"-agent"),
	})
	ctx := context.Background()
	first := request("k-config-1", time.Now().Add(5*time.Second))
	second := request("k-config-2", time.Now().Add(5*time.Second))

	if err := ag.Process(ctx, first); err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 1 {
		t.Errorf("calls answered 403 = %d, want 1: a configuration fault is not retried", n)
	}
	if err := ag.Process(ctx, second); err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 1 {
		t.Errorf("calls = %d after the first 403, want still 1: the circuit opens on it", n)
	}
	if got := holder.heldIDs(); len(got) != 2 || got[0] != first.OrderID || got[1] != second.OrderID {
		t.Fatalf("held %v, want both requests", got)
	}
	if reps := replier.sent(); len(reps) != 0 {
		t.Fatalf("replies %+v, want none: a configuration fault fails no step", reps)
	}
	faults := metricRecords(t, &emf, metrics.ConfigurationFaults)
	if len(faults) != 1 || faults[0][metrics.DimStatus] != "403" || faults[0]["Service"] != "payment-agent" || faults[0]["order_id"] != first.OrderID {
		t.Errorf("%s records %v, want one for payment-agent with status 403 and the order", metrics.ConfigurationFaults, faults)
	}
	if opened := metricRecords(t, &emf, metrics.CircuitOpened); len(opened) != 0 {
		t.Errorf("%s records %v, want none: the configuration fault's own alarm is the one alert", metrics.CircuitOpened, opened)
	}

	// Still refused when the circuit half-opens: the probe's answer opens
	// it again at once.
	time.Sleep(openFor + 50*time.Millisecond)
	if err := ag.Process(ctx, first); err != nil {
		t.Fatal(err)
	}
	if err := ag.Process(ctx, second); err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 2 {
		t.Errorf("calls = %d after a half-open probe, want 2", n)
	}
	if got := holder.heldIDs(); len(got) != 4 {
		t.Fatalf("held %v, want both requests held again", got)
	}
	if faults := metricRecords(t, &emf, metrics.ConfigurationFaults); len(faults) != 2 {
		t.Errorf("%s records %v, want 2: one per answer", metrics.ConfigurationFaults, faults)
	}

	// Fixed: the next probe succeeds and closes the circuit.
	svc.status.Store(http.StatusCreated)
	time.Sleep(openFor + 50*time.Millisecond)
	for _, req := range []order.StepRequest{second, first} {
		if err := ag.Process(ctx, req); err != nil {
			t.Fatal(err)
		}
		if reps := replier.repliesFor(req.OrderID); len(reps) != 1 || reps[0].Outcome != order.OutcomeSucceeded {
			t.Errorf("order %s: replies %+v once the service answers, want one success", req.OrderID, reps)
		}
	}
	if opened := metricRecords(t, &emf, metrics.CircuitOpened); len(opened) != 0 {
		t.Errorf("%s records %v, want none", metrics.CircuitOpened, opened)
	}
}

// Without a circuit breaker (no Holder) there is nowhere to hold a
// request: a configuration fault is still not retried, and no reply is
// sent, so the step is not failed; the Supervisor finds its deadline
// passed, as after any silence.
func TestConfigurationFaultWithoutACircuitSendsNoReply(t *testing.T) {
	svc := &switchable{}
	svc.status.Store(http.StatusUnauthorized)
	ts := httptest.NewServer(svc)
	defer ts.Close()
	replier := &fakeReplier{}
	ag := newAgent(remote.NewClient(ts.URL, ts.Client(), shipped), replier, nil)
	req := request("k-config-alone", time.Now().Add(2*time.Second))

	began := time.Now()
	if err := ag.Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 1 {
		t.Errorf("calls = %d, want 1: a configuration fault is not retried", n)
	}
	if reps := replier.sent(); len(reps) != 0 {
		t.Errorf("replies %+v, want none", reps)
	}
	if took := time.Since(began); took > time.Second {
		t.Errorf("Process took %s, want it to return at once rather than wait out the window", took)
	}
}

// A held request comes back late, after its own deadline, every time: its
// late start renews its window, one heartbeat each time it probes. A long
// outage uses them all up; the request must still be held, not dropped,
// or its attempt times out and the outage ends up compensating the order.
// At the limit the agent takes the deadline as stored, which the
// Supervisor moves on while the request is held, and holds the request
// while that has passed too. Once the service answers, the next probe
// inside the stored deadline succeeds.
func TestHeldRequestOutlastsItsHeartbeats(t *testing.T) {
	const (
		allowance = 300 * time.Millisecond
		openFor   = 400 * time.Millisecond // longer than the window, so each return is late
		maxBeats  = 2
	)
	svc := &switchable{}
	svc.status.Store(http.StatusForbidden)
	ts := httptest.NewServer(svc)
	defer ts.Close()
	replier, holder := &fakeReplier{}, &fakeHolder{}
	req := request("k-outlasts", time.Now().Add(-time.Second))
	req.AllowanceMs = allowance.Milliseconds()
	deadlines := &fakeDeadlines{completeBy: req.CompleteBy}
	ag := agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: remote.NewClient(ts.URL, ts.Client(), shipped), Replies: replier, Holder: holder,
		Deadlines: deadlines, Workflows: ordertest.OrderWorkflows(order.Timing{Allowance: allowance, MaxAllowance: allowance,
			FailureThreshold: 1, ClaimWithin: time.Second, MaxHeartbeats: maxBeats}),
		Breaker:     agent.Breaker{Failures: 5, OpenFor: openFor},
		Backoff:     agent.Backoff{Base: 5 * time.Millisecond, Cap: 10 * time.Millisecond},
		ReplyMargin: 50 * time.Millisecond,
		Now:         time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard(),
	})
	ctx := context.Background()

	for i := range maxBeats + 3 {
		if err := ag.Process(ctx, req); err != nil {
			t.Fatal(err)
		}
		if held := len(holder.heldIDs()); held != i+1 {
			t.Fatalf("return %d of the request during the outage: held %d times, want %d: the request was dropped", i+1, held, i+1)
		}
		time.Sleep(openFor + 20*time.Millisecond) // half-open when it comes back
	}
	if reps := replier.sent(); len(reps) != 0 {
		t.Fatalf("replies %+v during the outage, want none", reps)
	}

	// The Supervisor moved the stored deadline on; the service answers.
	deadlines.mu.Lock()
	deadlines.completeBy = time.Now().Add(2 * time.Second)
	deadlines.mu.Unlock()
	svc.status.Store(http.StatusCreated)
	if err := ag.Process(ctx, req); err != nil {
		t.Fatal(err)
	}
	if reps := replier.repliesFor(req.OrderID); len(reps) != 1 || reps[0].Outcome != order.OutcomeSucceeded {
		t.Errorf("replies %+v once the service answers, want one success", reps)
	}
}

// A request of a workflow version this build does not have (a newer
// build's order, in the queue when that build was rolled back) is not the
// order's failure: the agent neither calls nor replies, and the Supervisor
// parks the order until the version is back. Replying Failed would undo an
// order that only waits for its version.
func TestRequestOfAVersionNotInThisBuildIsNeitherCalledNorFailed(t *testing.T) {
	svc := &switchable{}
	svc.status.Store(http.StatusCreated)
	ts := httptest.NewServer(svc)
	defer ts.Close()
	replier := &fakeReplier{}
	ag := newAgent(remote.NewClient(ts.URL, ts.Client(), shipped), replier, nil)
	req := request("k-newer-version", time.Now().Add(2*time.Second))
	req.Version = "9"

	if err := ag.Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if n := svc.calls.Load(); n != 0 {
		t.Errorf("calls = %d, want none", n)
	}
	if reps := replier.sent(); len(reps) != 0 {
		t.Errorf("replies %+v, want none", reps)
	}
}
