package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/remote"
	"orderly/internal/callbacktoken"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// recorded keeps, as text, everything an agent writes besides its call:
// its transitions and held requests.
type recorded struct {
	mu   sync.Mutex
	text bytes.Buffer
}

func (r *recorded) add(v any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, _ := json.Marshal(v)
	fmt.Fprintf(&r.text, "%s\n%+v\n%#v\n", raw, v, v)
}

func (r *recorded) String() string { r.mu.Lock(); defer r.mu.Unlock(); return r.text.String() }

func (r *recorded) Apply(_ context.Context, t order.Transition) (order.Order, order.StepState, error) {
	r.add(t)
	st := t.Record
	if !t.Change.CompleteBy.IsZero() {
		st.CompleteBy = t.Change.CompleteBy
	}
	return order.Order{}, st, nil
}

func (r *recorded) HoldRequest(_ context.Context, _ string, req order.StepRequest, _ time.Duration) error {
	r.add(req)
	return nil
}

func (r *recorded) SendReply(_ context.Context, rep order.StepReply) error {
	r.add(rep)
	return nil
}

// The callback token of a step's call is in the HTTP request to its
// service and nowhere else the agent writes: not in a log line (at debug
// level), a metric, a reply, a transition or a held request, whatever the
// service answers, even when it echoes the token back in an error, in
// its result or in its id. A 202 is the call accepted.
func TestCallbackTokenIsOnlyInTheCall(t *testing.T) {
	wf := ordertest.Built(order.DefaultTiming).Latest()
	wf.Steps = slices.Clone(wf.Steps)
	index, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[index].Callback = &order.CallbackWait{Timeout: time.Hour, MaxTimeout: 4 * time.Hour}
	versions := order.MustVersions(wf)
	sealer, err := callbacktoken.New(bytes.Repeat([]byte{3}, callbacktoken.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	// answer is the service's answers in turn, the last repeated; TOKEN
	// in a body is the token the call carried.
	tests := []struct {
		name        string
		answers     []string // "status body"
		wantOutcome order.Outcome
	}{
		{"accepted", []string{`202 {"status":"pending"}`}, order.OutcomeAccepted},
		{"refused, echoing it", []string{`422 {"error":"token TOKEN refused"}`}, order.OutcomeFailed},
		{"busy, echoing it, then accepted", []string{`503 {"error":"busy with TOKEN"}`, `202 TOKEN`}, order.OutcomeAccepted},
		{"done at once, echoing it in the result", []string{`200 {"id":"ch_1","callback":"TOKEN"}`}, order.OutcomeSucceeded},
		{"done at once, with it for an id", []string{`201 {"id":"TOKEN"}`}, order.OutcomeSucceeded},
		{"a configuration fault, echoing it", []string{`401 {"error":"who is TOKEN"}`}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				wire   bytes.Buffer
				tokens []string
				n      int
			)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, _ := io.ReadAll(r.Body)
				var req struct {
					Callback struct{ Token string }
				}
				json.Unmarshal(body, &req)
				mu.Lock()
				fmt.Fprintf(&wire, "%s %s %v\n%s\n", r.Method, r.URL, r.Header, body)
				tokens = append(tokens, req.Callback.Token)
				answer := tt.answers[min(n, len(tt.answers)-1)]
				n++
				mu.Unlock()
				status, rest, _ := strings.Cut(answer, " ")
				var code int
				fmt.Sscan(status, &code)
				w.WriteHeader(code)
				io.WriteString(w, strings.ReplaceAll(rest, "TOKEN", req.Callback.Token))
			}))
			defer ts.Close()

			var logs, emf bytes.Buffer
			var rec recorded
			client := remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{
				URL: "https://api.example.com/dev/callbacks", Tokens: callbacktoken.Fixed(sealer)})
			ag := agent.New(agent.Config{
				Name: ordertest.AgentPayment, Remote: client, Replies: &rec, Deadlines: &rec, Holder: &rec,
				Breaker: agent.Breaker{Failures: 3, OpenFor: time.Minute}, Workflows: versions,
				Backoff: agent.Backoff{Base: time.Millisecond, Cap: 5 * time.Millisecond}, Now: time.Now,
				Log:     slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
				Metrics: metrics.New(&emf, "payment-agent"),
			})
			req := request("k-"+tt.name, time.Now().Add(30*time.Second))
			req.Workflow, req.Version, req.Record, req.AllowanceMs = wf.Name, wf.Version, index, 30_000
			err := ag.Process(context.Background(), req)

			mu.Lock()
			defer mu.Unlock()
			if len(tokens) == 0 || slices.Contains(tokens, "") {
				t.Fatalf("calls carried tokens %q, want one in each", tokens)
			}
			if !strings.Contains(wire.String(), tokens[0]) {
				t.Fatal("the token is not in the request either: the test proves nothing")
			}
			for what, text := range map[string]string{"a log line": logs.String(), "a metric": emf.String(),
				"a reply, a transition or a held request": rec.String(), "Process's error": fmt.Sprint(err)} {
				for _, token := range tokens {
					if strings.Contains(text, token) {
						t.Errorf("the token is in %s:\n%s", what, text)
					}
				}
			}
			if tt.wantOutcome != "" && !strings.Contains(rec.String(), `"outcome":"`+string(tt.wantOutcome)+`"`) {
				t.Errorf("replies %s, want one %s", rec.String(), tt.wantOutcome)
			}
			if !strings.Contains(logs.String(), `"msg":"replied"`) && tt.wantOutcome != "" {
				t.Errorf("logs %s, want the reply logged", logs.String())
			}
		})
	}
}

// An accepted call's reply says accepted and nothing else: no reference,
// no result, no reason. An undo of the same step is never accepted.
func TestAcceptedReply(t *testing.T) {
	wf := ordertest.Built(order.DefaultTiming).Latest()
	wf.Steps = slices.Clone(wf.Steps)
	index, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[index].Callback = &order.CallbackWait{Timeout: time.Hour}
	versions := order.MustVersions(wf)
	tests := []struct {
		name   string
		undo   bool
		answer result
		want   order.StepReply
	}{
		{"the call, accepted", false, result{accepted: true}, order.StepReply{Outcome: order.OutcomeAccepted}},
		// A service that finished at once answers as a synchronous one.
		{"the call, done at once", false, result{ref: "ch-1"}, order.StepReply{Outcome: order.OutcomeSucceeded, Reference: "ch-1"}},
		// An undo is never accepted: the remote client does not mark
		// one, and an answer with no reference is a success without one,
		// which the Scheduler's check refuses.
		{"its undo", true, result{}, order.StepReply{Outcome: order.OutcomeSucceeded, Undo: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-accept-"+tt.name, time.Now().Add(10*time.Second))
			req.Workflow, req.Version, req.Record = wf.Name, wf.Version, index
			if tt.undo {
				req.Undo, req.Record = true, len(wf.Steps)
			}
			caller := newFakeCaller(map[string][]result{req.OrderID: {tt.answer}})
			replier := &fakeReplier{}
			ag := agent.New(agent.Config{Name: ordertest.AgentPayment, Remote: caller, Replies: replier, Workflows: versions,
				Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
			if err := ag.Process(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			got := replier.repliesFor(req.OrderID)
			want := tt.want
			want.OrderID, want.Workflow, want.Version, want.Step, want.Record, want.Attempt = req.OrderID, wf.Name, wf.Version, req.Step, req.Record, req.Attempt
			if len(got) != 1 || fmt.Sprint(got[0]) != fmt.Sprint(want) {
				t.Errorf("replies %+v, want %+v", got, want)
			}
		})
	}
}
