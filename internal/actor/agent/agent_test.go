package agent_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/agent"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestBackoffDelay(t *testing.T) {
	justUnderOne := math.Nextafter(1, 0)
	tests := []struct {
		name    string
		backoff agent.Backoff
		n       int
		rnd     float64
		// The delay must be in [wantMin, wantMax].
		wantMin, wantMax time.Duration
	}{
		{"rnd 0 is no wait", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 0, 0, 0, 0},
		{"rnd 0 is no wait on a late retry", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 7, 0, 0, 0},
		{"half of base", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 0, 0.5, 50 * time.Millisecond, 50 * time.Millisecond},
		{"just under base", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 0, justUnderOne, 99_999_990, 100*time.Millisecond - 1},
		{"ceiling doubles once", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 1, justUnderOne, 199_999_990, 200*time.Millisecond - 1},
		{"ceiling doubles twice", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 2, 0.5, 200 * time.Millisecond, 200 * time.Millisecond},
		{"ceiling doubles thrice", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 3, justUnderOne, 799_999_990, 800*time.Millisecond - 1},
		{"ceiling capped", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 4, justUnderOne, 999_999_990, time.Second - 1},
		{"cap not a power-of-two multiple", agent.Backoff{Base: 100 * time.Millisecond, Cap: 250 * time.Millisecond}, 2, 0.5, 125 * time.Millisecond, 125 * time.Millisecond},
		{"huge retry number does not overflow", agent.Backoff{Base: 100 * time.Millisecond, Cap: time.Second}, 10_000, 0.5, 500 * time.Millisecond, 500 * time.Millisecond},
		{"base above cap is capped", agent.Backoff{Base: 2 * time.Second, Cap: time.Second}, 0, 0.5, 500 * time.Millisecond, 500 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := tt.backoff.Delay(tt.n, tt.rnd)
			if got < tt.wantMin || got > tt.wantMax {
				t.Errorf("%+v.Delay(%d, %v) = %s, want within [%s, %s]", tt.backoff, tt.n, tt.rnd, got, tt.wantMin, tt.wantMax)
			}
		})
	}
}

// result is one scripted answer of the fake remote service. block makes
// the call wait until its context ends and then fail transiently, as a
// hung HTTP call would.
type result struct {
	ref   string
	body  json.RawMessage
	err   error
	block bool
	// accepted: the service took the call and calls back (202).
	accepted bool
}

var (
	ok        = func(ref string) result { return result{ref: ref} }
	transient = result{err: fmt.Errorf("payment: POST /payment/charges: status 503: busy: %w", order.ErrTransient)}
	permanent = result{err: fmt.Errorf("payment: POST /payment/charges: %w: %w", &order.ServiceError{Service: "payment", Status: 402, Message: "card declined"}, order.ErrPermanent)}
	hang      = result{block: true}
)

type call struct {
	service string
	req     order.StepRequest
	at      time.Time
	// deadline is the context's deadline; hasDeadline is false when the
	// agent called without one.
	deadline    time.Time
	hasDeadline bool
}

// fakeCaller answers each order's calls from its script in turn and repeats
// the script's last result once it runs out.
type fakeCaller struct {
	scripts map[string][]result // by order id

	mu    sync.Mutex
	calls []call
	next  map[string]int
}

func newFakeCaller(scripts map[string][]result) *fakeCaller {
	return &fakeCaller{scripts: scripts, next: map[string]int{}}
}

func (f *fakeCaller) Call(ctx context.Context, service string, req order.StepRequest) (order.Answer, error) {
	deadline, hasDeadline := ctx.Deadline()
	f.mu.Lock()
	f.calls = append(f.calls, call{service: service, req: req, at: time.Now(), deadline: deadline, hasDeadline: hasDeadline})
	script := f.scripts[req.OrderID]
	n := f.next[req.OrderID]
	f.next[req.OrderID]++
	f.mu.Unlock()
	if len(script) == 0 {
		return order.Answer{}, fmt.Errorf("fake caller: no script for order %s: %w", req.OrderID, order.ErrPermanent)
	}
	r := script[min(n, len(script)-1)]
	if r.block {
		<-ctx.Done()
		return order.Answer{}, fmt.Errorf("payment: %w: %w", ctx.Err(), order.ErrTransient)
	}
	return order.Answer{Reference: r.ref, Body: r.body, Accepted: r.accepted}, r.err
}

func (f *fakeCaller) callsFor(orderID string) []call {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []call
	for _, c := range f.calls {
		if c.req.OrderID == orderID {
			out = append(out, c)
		}
	}
	return out
}

type sentReply struct {
	reply order.StepReply
	at    time.Time
}

// fakeReplier records replies; it fails for the order ids in failFor.
type fakeReplier struct {
	failFor map[string]bool
	// failTimes fails the first n sends for an order.
	failTimes map[string]int
	failed    map[string]int

	mu      sync.Mutex
	replies []sentReply
}

func (f *fakeReplier) SendReply(ctx context.Context, rep order.StepReply) error {
	if f.failFor[rep.OrderID] {
		return errors.New("sqs: SendMessage: service unavailable")
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.failed == nil {
		f.failed = map[string]int{}
	}
	if f.failed[rep.OrderID] < f.failTimes[rep.OrderID] {
		f.failed[rep.OrderID]++
		return errors.New("sqs: SendMessage: service unavailable")
	}
	f.replies = append(f.replies, sentReply{reply: rep, at: time.Now()})
	return nil
}

func (f *fakeReplier) sent() []sentReply {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.replies)
}

func (f *fakeReplier) repliesFor(orderID string) []order.StepReply {
	var out []order.StepReply
	for _, r := range f.sent() {
		if r.reply.OrderID == orderID {
			out = append(out, r.reply)
		}
	}
	return out
}

func newAgent(c agent.Caller, r agent.Replier, now func() time.Time) *agent.Service {
	if now == nil {
		now = time.Now
	}
	return agent.New(agent.Config{
		Name:    ordertest.AgentPayment,
		Remote:  c,
		Replies: r,
		Backoff: agent.Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond},
		Now:     now,
		Log:     slog.New(slog.NewTextHandler(io.Discard, nil)),
		Metrics: metrics.Discard(),
	})
}

func request(key string, completeBy time.Time) order.StepRequest {
	id := order.IDForKey("caller", "", "cust-1", key)
	return order.StepRequest{
		OrderID: id, Step: ordertest.StepChargePayment, Attempt: 2, CompleteBy: completeBy,
		IdempotencyKey: order.IdempotencyKeyFor(id, ordertest.StepChargePayment),
		Input:          order.LegacyInput("cust-1", []order.Line{{SKU: "ABC-1", Quantity: 2}}, ""),
	}
}

func message(t *testing.T, id string, req order.StepRequest) events.SQSMessage {
	t.Helper()
	body, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	return events.SQSMessage{MessageId: id, Body: string(body)}
}

func failedIDs(resp events.SQSEventResponse) []string {
	var ids []string
	for _, f := range resp.BatchItemFailures {
		ids = append(ids, f.ItemIdentifier)
	}
	slices.Sort(ids)
	return ids
}

func TestProcessReplies(t *testing.T) {
	tests := []struct {
		name      string
		script    []result
		wantCalls int
		want      order.StepReply // OrderID, Step and Attempt are filled in
		// wantReason is a fragment of the reply's Reason.
		wantReason string
	}{
		{"success", []result{ok("ch_1")}, 1, order.StepReply{Outcome: order.OutcomeSucceeded, Reference: "ch_1"}, ""},
		{"transient twice then success", []result{transient, transient, ok("ch_2")}, 3, order.StepReply{Outcome: order.OutcomeSucceeded, Reference: "ch_2"}, ""},
		{"permanent", []result{permanent}, 1, order.StepReply{Outcome: order.OutcomeFailed}, "card declined"},
		{"transient then permanent", []result{transient, permanent}, 2, order.StepReply{Outcome: order.OutcomeFailed}, "card declined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-"+tt.name, time.Now().Add(5*time.Second))
			caller := newFakeCaller(map[string][]result{req.OrderID: tt.script})
			replier := &fakeReplier{}

			if err := newAgent(caller, replier, nil).Process(context.Background(), req); err != nil {
				t.Fatalf("Process() = %v, want nil", err)
			}

			calls := caller.callsFor(req.OrderID)
			if len(calls) != tt.wantCalls {
				t.Errorf("remote calls = %d, want %d", len(calls), tt.wantCalls)
			}
			for i, c := range calls {
				if c.service != ordertest.AgentPayment {
					t.Errorf("call %d service = %q, want %q", i, c.service, ordertest.AgentPayment)
				}
				if c.req.IdempotencyKey != req.IdempotencyKey || c.req.OrderID != req.OrderID || !bytes.Equal(c.req.Input, req.Input) {
					t.Errorf("call %d request = %+v, want %+v", i, c.req, req)
				}
				if !c.hasDeadline || !c.deadline.Equal(req.CompleteBy) {
					t.Errorf("call %d context deadline = %s (set: %t), want CompleteBy %s", i, c.deadline, c.hasDeadline, req.CompleteBy)
				}
			}

			replies := replier.repliesFor(req.OrderID)
			if len(replies) != 1 {
				t.Fatalf("replies = %+v, want exactly one", replies)
			}
			got := replies[0]
			want := tt.want
			want.OrderID, want.Step, want.Attempt = req.OrderID, req.Step, req.Attempt
			want.Reason = got.Reason
			if !reflect.DeepEqual(got, want) {
				t.Errorf("reply = %+v, want %+v", got, want)
			}
			if tt.wantReason == "" && got.Reason != "" {
				t.Errorf("reply Reason = %q, want none", got.Reason)
			}
			if tt.wantReason != "" && !strings.Contains(got.Reason, tt.wantReason) {
				t.Errorf("reply Reason = %q, want it to mention %q", got.Reason, tt.wantReason)
			}
		})
	}
}

func TestProcessTransientUntilCompleteBy(t *testing.T) {
	const (
		window = 300 * time.Millisecond
		// slack covers scheduling latency between a timer firing and the
		// goroutine running, which the race detector lengthens.
		slack = 25 * time.Millisecond
		// The agent gives up when the next delay (under Cap) would pass
		// CompleteBy, so it returns no earlier than CompleteBy - Cap.
		backoffCap = 50 * time.Millisecond
	)
	tests := []struct {
		name   string
		script []result
	}{
		{"fails fast every time", []result{transient}},
		{"hangs until the deadline", []result{hang}},
		{"fails fast then hangs", []result{transient, transient, hang}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-"+tt.name, time.Now().Add(window))
			caller := newFakeCaller(map[string][]result{req.OrderID: tt.script})
			replier := &fakeReplier{}

			err := newAgent(caller, replier, nil).Process(context.Background(), req)
			returned := time.Now()

			if err != nil {
				t.Errorf("Process() = %v, want nil: running out of time is not an error", err)
			}
			if got := replier.sent(); len(got) != 0 {
				t.Errorf("replies = %+v, want none after running out of time", got)
			}
			if returned.After(req.CompleteBy.Add(slack)) {
				t.Errorf("Process() returned %s after CompleteBy, want by CompleteBy + %s", returned.Sub(req.CompleteBy), slack)
			}
			if earliest := req.CompleteBy.Add(-backoffCap - slack); returned.Before(earliest) {
				t.Errorf("Process() returned %s before CompleteBy, want it to keep retrying until less than one capped backoff (%s) was left",
					req.CompleteBy.Sub(returned), backoffCap)
			}
			calls := caller.callsFor(req.OrderID)
			// Base 10ms and Cap 50ms in a 300ms window allow a few dozen
			// calls at the very most; a retry loop without backoff makes
			// thousands.
			if len(calls) < 1 || len(calls) > 60 {
				t.Errorf("remote calls = %d, want between 1 and 60", len(calls))
			}
			for i, c := range calls {
				if c.at.After(req.CompleteBy.Add(slack)) {
					t.Errorf("call %d started %s after CompleteBy, want no call after CompleteBy", i, c.at.Sub(req.CompleteBy))
				}
			}
		})
	}
}

func TestProcessTransientRetriesSeveralTimes(t *testing.T) {
	req := request("k-retries", time.Now().Add(300*time.Millisecond))
	caller := newFakeCaller(map[string][]result{req.OrderID: {transient}})
	if err := newAgent(caller, &fakeReplier{}, nil).Process(context.Background(), req); err != nil {
		t.Fatalf("Process() = %v, want nil", err)
	}
	// Even if every jittered delay were as long as the 50ms cap, 300ms
	// leaves room for at least four calls.
	if got := len(caller.callsFor(req.OrderID)); got < 4 {
		t.Errorf("remote calls = %d, want at least 4 within the window", got)
	}
}

func TestProcessAfterCompleteBy(t *testing.T) {
	fixed := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name       string
		completeBy time.Time
		now        func() time.Time
	}{
		{"long past", time.Now().Add(-time.Minute), nil},
		{"just past", time.Now().Add(-time.Millisecond), nil},
		{"exactly at CompleteBy", fixed, func() time.Time { return fixed }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-late", tt.completeBy)
			caller := newFakeCaller(map[string][]result{req.OrderID: {ok("ch_late")}})
			replier := &fakeReplier{}

			if err := newAgent(caller, replier, tt.now).Process(context.Background(), req); err != nil {
				t.Errorf("Process() = %v, want nil", err)
			}
			if got := caller.callsFor(req.OrderID); len(got) != 0 {
				t.Errorf("remote calls = %d, want none for a request past CompleteBy", len(got))
			}
			if got := replier.sent(); len(got) != 0 {
				t.Errorf("replies = %+v, want none for a request past CompleteBy", got)
			}
		})
	}
}

func TestProcessReplyFails(t *testing.T) {
	req := request("k-reply-fails", time.Now().Add(300*time.Millisecond))
	caller := newFakeCaller(map[string][]result{req.OrderID: {ok("ch_1")}})
	replier := &fakeReplier{failFor: map[string]bool{req.OrderID: true}}
	if err := newAgent(caller, replier, nil).Process(context.Background(), req); err == nil {
		t.Errorf("Process() = nil, want the reply error so the message is redelivered")
	}
}

func TestHandleReportsOnlyMessagesToSeeAgain(t *testing.T) {
	completeBy := time.Now().Add(time.Second)
	good := request("k-good", completeBy)
	replyFails := request("k-reply-fails", completeBy)
	declined := request("k-declined", completeBy)
	timedOut := request("k-timed-out", time.Now().Add(-time.Second))
	caller := newFakeCaller(map[string][]result{
		good.OrderID:       {transient, ok("ch_good")},
		replyFails.OrderID: {ok("ch_reply_fails")},
		declined.OrderID:   {permanent},
		timedOut.OrderID:   {ok("ch_timed_out")},
	})
	replier := &fakeReplier{failFor: map[string]bool{replyFails.OrderID: true}}

	resp, err := newAgent(caller, replier, nil).Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
		message(t, "m-good", good),
		message(t, "m-reply-fails", replyFails),
		message(t, "m-declined", declined),
		message(t, "m-timed-out", timedOut),
	}})
	if err != nil {
		t.Fatalf("Handle() error = %v, want nil", err)
	}
	if got, want := failedIDs(resp), []string{"m-reply-fails"}; !slices.Equal(got, want) {
		t.Errorf("BatchItemFailures = %q, want %q", got, want)
	}
	if got := replier.repliesFor(good.OrderID); len(got) != 1 || got[0].Outcome != order.OutcomeSucceeded || got[0].Reference != "ch_good" {
		t.Errorf("replies for the good order = %+v, want one success with reference ch_good", got)
	}
	if got := replier.repliesFor(declined.OrderID); len(got) != 1 || got[0].Outcome != order.OutcomeFailed {
		t.Errorf("replies for the declined order = %+v, want one failure", got)
	}
	if got := replier.repliesFor(timedOut.OrderID); len(got) != 0 {
		t.Errorf("replies for the late order = %+v, want none", got)
	}
}

func TestHandleMalformedMessages(t *testing.T) {
	completeBy := time.Now().Add(5 * time.Second)
	valid := request("k-valid", completeBy)
	with := func(f func(*order.StepRequest)) string {
		r := request("k-bad", completeBy)
		f(&r)
		b, _ := json.Marshal(r)
		return string(b)
	}
	tests := []struct {
		name string
		body string
	}{
		{"not JSON", `{"orderId": `},
		{"empty body", ``},
		{"JSON array", `[]`},
		{"wrong type", `{"orderId": 42}`},
		{"missing orderId", with(func(r *order.StepRequest) { r.OrderID = "" })},
		{"invalid orderId", with(func(r *order.StepRequest) { r.OrderID = "../x" })},
		{"missing step", with(func(r *order.StepRequest) { r.Step = "" })},
		{"attempt 0", with(func(r *order.StepRequest) { r.Attempt = 0 })},
		{"missing completeBy", with(func(r *order.StepRequest) { r.CompleteBy = time.Time{} })},
		{"missing idempotencyKey", with(func(r *order.StepRequest) { r.IdempotencyKey = "" })},
		{"empty object", `{}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bad := request("k-bad", completeBy)
			caller := newFakeCaller(map[string][]result{valid.OrderID: {ok("ch_valid")}, bad.OrderID: {ok("ch_bad")}})
			replier := &fakeReplier{}

			resp, err := newAgent(caller, replier, nil).Handle(context.Background(), events.SQSEvent{Records: []events.SQSMessage{
				message(t, "m-valid-1", valid),
				{MessageId: "m-bad", Body: tt.body},
				message(t, "m-valid-2", valid),
			}})
			if err != nil {
				t.Fatalf("Handle() error = %v, want nil", err)
			}
			if got, want := failedIDs(resp), []string{"m-bad"}; !slices.Equal(got, want) {
				t.Errorf("BatchItemFailures = %q, want %q", got, want)
			}
			if got := replier.repliesFor(valid.OrderID); len(got) != 2 {
				t.Errorf("replies for the valid batch-mates = %+v, want 2", got)
			}
			caller.mu.Lock()
			gotCalls := len(caller.calls)
			caller.mu.Unlock()
			if gotCalls != 2 {
				t.Errorf("remote calls = %d, want 2: only the valid batch-mates are called", gotCalls)
			}
		})
	}
}

func TestHandleRunsBatchInParallel(t *testing.T) {
	start := time.Now()
	blockerDeadline := start.Add(time.Second)
	blocker := request("k-blocker", blockerDeadline)
	scripts := map[string][]result{blocker.OrderID: {hang}}
	msgs := []events.SQSMessage{message(t, "m-blocker", blocker)}
	var fast []order.StepRequest
	for i := range 4 {
		r := request(fmt.Sprintf("k-fast-%d", i), start.Add(5*time.Second))
		fast = append(fast, r)
		scripts[r.OrderID] = []result{ok(fmt.Sprintf("ch_%d", i))}
		msgs = append(msgs, message(t, fmt.Sprintf("m-fast-%d", i), r))
	}
	caller := newFakeCaller(scripts)
	replier := &fakeReplier{}

	resp, err := newAgent(caller, replier, nil).Handle(context.Background(), events.SQSEvent{Records: msgs})
	elapsed := time.Since(start)
	if err != nil {
		t.Fatalf("Handle() error = %v, want nil", err)
	}
	if len(resp.BatchItemFailures) != 0 {
		t.Errorf("BatchItemFailures = %+v, want none", resp.BatchItemFailures)
	}
	sent := replier.sent()
	if len(sent) != len(fast) {
		t.Fatalf("replies = %+v, want %d (one per fast message, none for the blocked one)", sent, len(fast))
	}
	for _, r := range sent {
		if r.reply.OrderID == blocker.OrderID {
			t.Errorf("reply %+v for the blocked order, want none", r.reply)
		}
		// Processed one after another, a fast message behind the blocker
		// would wait for its full second.
		if waited := r.at.Sub(start); waited > 500*time.Millisecond {
			t.Errorf("reply for order %s sent %s after the batch started, want well before the blocked call's deadline (1s)", r.reply.OrderID, waited)
		}
	}
	if elapsed > 2*time.Second {
		t.Errorf("Handle() took %s, want about the blocked call's 1s deadline", elapsed)
	}
}

// Finding 1 of the reliability review: the agent called until exactly
// CompleteBy, so a success could come too late to count. It now stops a
// margin before, at most a quarter of the time the request had left.
func TestProcessStopsAMarginBeforeCompleteBy(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name           string
		window, waited time.Duration
		wantStop       time.Duration // before CompleteBy
	}{
		{"a long window keeps the whole margin", 30 * time.Second, 0, 2 * time.Second},
		{"a short window keeps a quarter of it", 2 * time.Second, 0, 500 * time.Millisecond},
		{"a request that waited keeps a quarter of what is left", 2 * time.Second, time.Second, 250 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request("k-"+tt.name, now.Add(tt.window))
			caller := newFakeCaller(map[string][]result{req.OrderID: {ok("ch_1")}})
			ag := agent.New(agent.Config{Name: ordertest.AgentPayment, Remote: caller, Replies: &fakeReplier{},
				ReplyMargin: 2 * time.Second, Now: func() time.Time { return now.Add(tt.waited) },
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
			if err := ag.Process(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			calls := caller.callsFor(req.OrderID)
			if len(calls) != 1 {
				t.Fatalf("remote calls = %d, want 1", len(calls))
			}
			if want := req.CompleteBy.Add(-tt.wantStop); !calls[0].hasDeadline || !calls[0].deadline.Equal(want) {
				t.Errorf("call deadline %s before CompleteBy, want %s", req.CompleteBy.Sub(calls[0].deadline), tt.wantStop)
			}
		})
	}
}

// One hung call must not eat the whole window: each try has its own
// timeout, and the agent retries after it.
func TestProcessTimesOutAHungTryAndRetries(t *testing.T) {
	req := request("k-hung-try", time.Now().Add(3*time.Second))
	caller := newFakeCaller(map[string][]result{req.OrderID: {hang, ok("ch_after_hang")}})
	replier := &fakeReplier{}
	ag := agent.New(agent.Config{Name: ordertest.AgentPayment, Remote: caller, Replies: replier,
		Backoff: agent.Backoff{Base: 10 * time.Millisecond, Cap: 50 * time.Millisecond}, TryTimeout: 200 * time.Millisecond,
		Now: time.Now, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
	began := time.Now()
	if err := ag.Process(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	took := time.Since(began)
	replies := replier.repliesFor(req.OrderID)
	if len(replies) != 1 || replies[0].Outcome != order.OutcomeSucceeded || replies[0].Reference != "ch_after_hang" {
		t.Fatalf("replies %+v, want the second try's success", replies)
	}
	if calls := caller.callsFor(req.OrderID); len(calls) != 2 || took > time.Second {
		t.Errorf("%d calls in %s, want 2 within about the 200ms try timeout, not the 3s window", len(calls), took)
	}
}

// Finding 10 of the reliability review: a reply the agent could not send
// came back only with its request, after the queue's visibility timeout,
// always past CompleteBy. The agent now keeps trying to send it while the
// window lasts.
func TestProcessRetriesAReplyItCouldNotSend(t *testing.T) {
	req := request("k-reply-retried", time.Now().Add(3*time.Second))
	caller := newFakeCaller(map[string][]result{req.OrderID: {ok("ch_1")}})
	replier := &fakeReplier{failTimes: map[string]int{req.OrderID: 2}}
	if err := newAgent(caller, replier, nil).Process(context.Background(), req); err != nil {
		t.Fatalf("Process() = %v, want the third send to succeed", err)
	}
	if got := replier.repliesFor(req.OrderID); len(got) != 1 || got[0].Outcome != order.OutcomeSucceeded {
		t.Errorf("replies %+v, want the success sent once", got)
	}
	if calls := caller.callsFor(req.OrderID); len(calls) != 1 {
		t.Errorf("remote calls = %d, want 1: only the reply is retried", len(calls))
	}
}

// A success reports the step's latency from its claim (one allowance
// before the request's deadline) to the reply; a failure reports none.
func TestProcessReportsTheStepsLatency(t *testing.T) {
	tests := []struct {
		name   string
		script []result
		undo   bool
		want   string // the metric written, or none
	}{
		{"a step's success", []result{ok("ch_1")}, false, metrics.StepLatency},
		{"an undo's success", []result{ok("rf_1")}, true, metrics.UndoLatency},
		{"a permanent failure", []result{permanent}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now()
			req := request("k-latency-"+tt.name, now.Add(5*time.Second))
			req.AllowanceMs, req.Undo = 8000, tt.undo // claimed 3 s ago
			var buf bytes.Buffer
			a := agent.New(agent.Config{Name: ordertest.AgentPayment, Remote: newFakeCaller(map[string][]result{req.OrderID: tt.script}),
				Replies: &fakeReplier{}, Backoff: agent.Backoff{Base: time.Millisecond, Cap: time.Millisecond},
				Now: func() time.Time { return now }, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
				Metrics: metrics.New(&buf, "payment-agent")})
			if err := a.Process(context.Background(), req); err != nil {
				t.Fatal(err)
			}
			var latency float64
			for line := range strings.Lines(buf.String()) {
				var rec map[string]any
				json.Unmarshal([]byte(line), &rec)
				for _, name := range []string{metrics.StepLatency, metrics.UndoLatency} {
					if v, ok := rec[name].(float64); ok {
						if name != tt.want {
							t.Errorf("wrote %s = %v", name, v)
						}
						latency = v
					}
				}
			}
			if tt.want != "" && latency != 3000 {
				t.Errorf("%s = %v ms, want 3000 (claimed 3 s before the reply)", tt.want, latency)
			}
		})
	}
}
