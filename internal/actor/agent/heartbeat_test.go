package agent_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/remote"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// fakeDeadlines stores each extension it allows, as the state store would:
// fenced on the attempt (over says it is not current any more) and limited
// to max heartbeats.
type fakeDeadlines struct {
	mu         sync.Mutex
	over       bool
	completeBy time.Time
	beats      int
	extensions []time.Time // requested deadlines, in order
	gaveUp     int
	parked     []order.Transition
}

// Apply keeps the transitions the agent decides, judging a heartbeat's
// guard by the domain's rules (order.Transition.Holds) on the record as
// the fake stores it: the attempt over, a deadline already as late, the
// limit reached. It keeps giving an attempt up, and parking an order of
// a version its build lacks.
func (f *fakeDeadlines) Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	switch t.Name {
	case order.GaveUp(t.Record, t.At).Name:
		f.gaveUp++
	case order.Park(t.Record, t.At, true, "", t.At).Name:
		f.parked = append(f.parked, t)
	case order.Heartbeat(t.Record, t.At, 1, t.At).Name:
		f.extensions = append(f.extensions, t.Change.CompleteBy)
		stored := t.Record
		stored.ProcessState, stored.CompleteBy, stored.Heartbeats = order.Processing, f.completeBy, f.beats
		if f.over {
			stored.Attempt++
		}
		found := order.Found{Active: stored.Index, Steps: make([]order.StepState, stored.Index+1)}
		found.Steps[stored.Index] = stored
		if !t.Holds(found) {
			return order.Order{}, order.StepState{}, fmt.Errorf("heartbeat: %w", &order.StaleWrite{Found: found})
		}
		stored = t.Applied(stored)
		f.beats, f.completeBy = stored.Heartbeats, stored.CompleteBy
		return order.Order{}, stored, nil
	}
	return order.Order{}, t.Record, nil
}

func (f *fakeDeadlines) endAttempt() { f.mu.Lock(); f.over = true; f.mu.Unlock() }

func (f *fakeDeadlines) requested() []time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]time.Time(nil), f.extensions...)
}

// slowCaller answers after took, or fails transiently when its context ends
// first, as a slow HTTP call would.
type slowCaller struct {
	took time.Duration

	mu    sync.Mutex
	calls int
}

func (c *slowCaller) Call(ctx context.Context, service string, req order.StepRequest) (order.Answer, error) {
	c.mu.Lock()
	c.calls++
	c.mu.Unlock()
	select {
	case <-time.After(c.took):
		return order.Answer{Reference: "ref-slow"}, nil
	case <-ctx.Done():
		return order.Answer{}, fmt.Errorf("%s: %w: %w", service, ctx.Err(), order.ErrTransient)
	}
}

func (c *slowCaller) count() int { c.mu.Lock(); defer c.mu.Unlock(); return c.calls }

func heartbeatingAgent(c agent.Caller, r agent.Replier, d agent.Deadlines, maxHeartbeats int) *agent.Service {
	return agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: c, Replies: r, Deadlines: d,
		Workflows: ordertest.OrderWorkflows(order.Timing{Allowance: time.Second, MaxAllowance: time.Second, FailureThreshold: 1,
			ClaimWithin: time.Second, MaxHeartbeats: maxHeartbeats}),
		Backoff:     agent.Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond},
		ReplyMargin: 100 * time.Millisecond,
		Now:         time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard(),
	})
}

// A request that waited in its queue for most of its window gets a fresh
// window when the agent starts it; one whose attempt is already over is
// dropped without a remote call.
func TestProcessStartsALateRequestsWindowAfresh(t *testing.T) {
	const allowance = 600 * time.Millisecond
	tests := []struct {
		name     string
		left     time.Duration // of the request's window when it arrives
		over     bool          // the Supervisor already retried the attempt
		took     time.Duration // the remote call
		wantExt  bool
		wantCall bool
		wantRep  bool
	}{
		{"fresh request: no write", allowance, false, 10 * time.Millisecond, false, true, true},
		{"waited most of its window: extended, called, replied", 100 * time.Millisecond, false, 250 * time.Millisecond, true, true, true},
		{"arrived after its deadline, attempt still on: extended", -50 * time.Millisecond, false, 10 * time.Millisecond, true, true, true},
		{"attempt already over: dropped without a call", 100 * time.Millisecond, true, 10 * time.Millisecond, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-late-"+tt.name, time.Now().Add(tt.left))
			req.AllowanceMs = allowance.Milliseconds()
			caller := &slowCaller{took: tt.took}
			replier := &fakeReplier{}
			deadlines := &fakeDeadlines{over: tt.over, completeBy: req.CompleteBy}
			if err := heartbeatingAgent(caller, replier, deadlines, 5).Process(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			ext := deadlines.requested()
			if got := len(ext) > 0; got != tt.wantExt {
				t.Errorf("deadline extended: %v (%v), want %v", got, ext, tt.wantExt)
			}
			if len(ext) > 0 && ext[0].Sub(req.CompleteBy) < allowance-tt.left-50*time.Millisecond {
				t.Errorf("extended to %s after the request's deadline, want about a full window from arrival", ext[0].Sub(req.CompleteBy))
			}
			if got := caller.count() > 0; got != tt.wantCall {
				t.Errorf("remote called: %v, want %v", got, tt.wantCall)
			}
			reps := replier.repliesFor(req.OrderID)
			if got := len(reps) == 1 && reps[0].Outcome == order.OutcomeSucceeded; got != tt.wantRep {
				t.Errorf("replies %+v, want a success: %v", reps, tt.wantRep)
			}
		})
	}
}

// A call longer than the window is kept alive by heartbeats, up to the
// step's limit; when the attempt turns out to be over, the call stops and
// nothing is replied.
func TestProcessHeartbeatsOnALongCall(t *testing.T) {
	const allowance = 300 * time.Millisecond
	tests := []struct {
		name      string
		took      time.Duration
		max       int
		endAfter  time.Duration // the Supervisor ends the attempt then; 0 never
		wantReply bool
		wantBeats int // at least
		// wantGaveUp: the agent records that it took the request and gave
		// it up at its deadline, so its timeout is not taken for
		// back-pressure; an attempt already over needs no such record.
		wantGaveUp int
	}{
		{"a call three windows long succeeds", 900 * time.Millisecond, 20, 0, true, 5, 0},
		{"the limit ends the call at the last deadline", 2 * time.Second, 2, 0, false, 2, 1},
		{"an attempt that ended stops the call", 2 * time.Second, 20, 250 * time.Millisecond, false, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-long-"+tt.name, time.Now().Add(allowance))
			req.AllowanceMs = allowance.Milliseconds()
			caller := &slowCaller{took: tt.took}
			replier := &fakeReplier{}
			deadlines := &fakeDeadlines{completeBy: req.CompleteBy}
			if tt.endAfter > 0 {
				time.AfterFunc(tt.endAfter, deadlines.endAttempt)
			}
			began := time.Now()
			if err := heartbeatingAgent(caller, replier, deadlines, tt.max).Process(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			took := time.Since(began)
			reps := replier.repliesFor(req.OrderID)
			if got := len(reps) == 1 && reps[0].Outcome == order.OutcomeSucceeded; got != tt.wantReply {
				t.Errorf("replies %+v after %s, want a success: %v", reps, took, tt.wantReply)
			}
			if beats := len(deadlines.requested()); beats < tt.wantBeats {
				t.Errorf("%d heartbeats, want at least %d", beats, tt.wantBeats)
			}
			deadlines.mu.Lock()
			gaveUp := deadlines.gaveUp
			deadlines.mu.Unlock()
			if gaveUp != tt.wantGaveUp {
				t.Errorf("recorded giving up %d times, want %d", gaveUp, tt.wantGaveUp)
			}
			if !tt.wantReply && took > tt.took/2+allowance {
				t.Errorf("took %s: the call was not stopped", took)
			}
		})
	}
}

// An agent whose build lacks the request's workflow version (after a
// rollback) drops the request without a call or a reply, and parks the
// order by the record the request names, with a VersionUnknown alert:
// otherwise a build with the version back would take the drop for a
// request still waiting in a backlogged queue.
func TestAgentParksARequestOfAVersionItsBuildLacks(t *testing.T) {
	var calls atomic.Int32
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusCreated)
	}))
	defer ts.Close()
	req := request("not-in-build", time.Now().Add(time.Minute))
	req.Workflow, req.Version, req.Record = order.LegacyWorkflow, "9", 1
	replier := &fakeReplier{}
	deadlines := &fakeDeadlines{completeBy: req.CompleteBy}
	build := ordertest.OrderWorkflows(order.DefaultTiming)
	ag := agent.New(agent.Config{
		Name: ordertest.AgentPayment, Remote: remote.NewClient(ts.URL, ts.Client(), build), Replies: replier,
		Deadlines: deadlines, Workflows: build, Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard(),
	})
	if err := ag.Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 0 || len(replier.repliesFor(req.OrderID)) != 0 {
		t.Errorf("%d calls, replies %+v; want neither", calls.Load(), replier.repliesFor(req.OrderID))
	}
	if len(deadlines.parked) != 1 {
		t.Fatalf("parked %+v, want the order parked once", deadlines.parked)
	}
	p := deadlines.parked[0]
	want := order.StepState{OrderID: req.OrderID, Workflow: order.LegacyWorkflow, Version: "9", Step: req.Step, Index: 1,
		Attempt: req.Attempt, ProcessState: order.Processing}
	if !reflect.DeepEqual(p.Record, want) || p.Change.Alert != order.AlertVersionUnknown || p.Change.Parked != "9" ||
		!strings.Contains(p.Change.Reason, "order/9 is not in this build") {
		t.Errorf("parked %+v with %+v; want %+v parked for 9 with an alert naming order/9", p.Record, p.Change, want)
	}
}
