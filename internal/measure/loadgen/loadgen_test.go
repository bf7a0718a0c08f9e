package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
)

// quick is a Config for the fake API: pollers paced at 5 ms, so a test
// cycles through its orders in well under a second.
func quick(orders, clients, sequential int) Config {
	return Config{Orders: orders, Clients: clients, Sequential: sequential, Pollers: 2, PollEvery: 5 * time.Millisecond,
		FinePoll: 2 * time.Millisecond, Timeout: 20 * time.Second, OrderTimeout: 5 * time.Second, MaxFailures: 3}
}

func TestBurst(t *testing.T) {
	processed := fate{delay: 20 * time.Millisecond, final: order.StatusProcessed}
	tests := []struct {
		name    string
		plan    func(key string, n int) fate
		timeout time.Duration
		// want
		submitted, failed, terminal int
		outcomes                    map[order.Status]int
		notTerminal                 map[string]int
		observed                    int
		problems                    []string // each a substring of one problem, in order
		finished                    bool
	}{
		{
			name: "every order Processed", plan: everyOrder(processed),
			submitted: 40, terminal: 40, outcomes: map[order.Status]int{order.StatusProcessed: 40}, finished: true,
		},
		{
			name: "a submission refused with 400, counted and quoted",
			plan: func(_ string, n int) fate {
				return fate{refuse: n == 7, delay: processed.delay, final: processed.final}
			},
			submitted: 39, failed: 1, terminal: 39, outcomes: map[order.Status]int{order.StatusProcessed: 39},
			problems: []string{`burst: 1 of 40 submissions failed; first: POST /orders answered 400 Bad Request: {"error":"invalid_request"`},
			finished: true,
		},
		{
			name: "every submission refused: stops after too many", plan: everyOrder(fate{refuse: true}),
			problems: []string{"submissions failed (more than 3: stopped submitting); first: POST /orders answered 400"},
		},
		{
			name: "an order that never ends: the timeout names it and its status",
			plan: func(_ string, n int) fate {
				if n == 3 {
					return fate{} // Processing forever
				}
				return processed
			},
			timeout:   time.Second,
			submitted: 40, terminal: 39, outcomes: map[order.Status]int{order.StatusProcessed: 39},
			notTerminal: map[string]int{"Processing": 1},
			problems:    []string{"burst: 1 of 40 orders not terminal within 1s of the first submission: Processing 1"},
		},
		{
			name: "a Failed order counted",
			plan: func(_ string, n int) fate {
				if n == 5 {
					return fate{delay: 10 * time.Millisecond, final: order.StatusFailed}
				}
				return processed
			},
			submitted: 40, terminal: 40, outcomes: map[order.Status]int{order.StatusProcessed: 39, order.StatusFailed: 1},
			problems: []string{"burst: 1 of 40 orders ended other than Processed: Failed 1"},
			finished: true,
		},
		{
			name:      "an API on another clock: terminal times are the reads'",
			plan:      everyOrder(fate{delay: processed.delay, final: order.StatusProcessed, skew: time.Hour}),
			submitted: 40, terminal: 40, outcomes: map[order.Status]int{order.StatusProcessed: 40}, observed: 40, finished: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.plan)
			cfg := quick(40, 5, 0)
			if tt.timeout > 0 {
				cfg.Timeout = tt.timeout
			}
			began := time.Now()
			b, problems, finished := runBurst(context.Background(), api.client(t), cfg.withDefaults(), "load-test-burst")
			took := time.Since(began)

			if b.Submitted != tt.submitted || b.Terminal != tt.terminal || b.ObservedTimes != tt.observed {
				t.Errorf("submitted, terminal, observed times = %d, %d, %d; want %d, %d, %d",
					b.Submitted, b.Terminal, b.ObservedTimes, tt.submitted, tt.terminal, tt.observed)
			}
			if tt.failed > 0 && b.SubmitFailed != tt.failed {
				t.Errorf("SubmitFailed = %d, want %d", b.SubmitFailed, tt.failed)
			}
			if b.Submitted+b.SubmitFailed+b.NotSent != b.Orders {
				t.Errorf("submitted %d + failed %d + not sent %d = %d, want every one of %d orders accounted for",
					b.Submitted, b.SubmitFailed, b.NotSent, b.Submitted+b.SubmitFailed+b.NotSent, b.Orders)
			}
			if !maps.Equal(b.Outcomes, orEmpty(tt.outcomes)) {
				t.Errorf("Outcomes = %v, want %v", b.Outcomes, tt.outcomes)
			}
			if !maps.Equal(b.NotTerminalByStatus, tt.notTerminal) || (b.NotTerminal > 0) != b.TimedOut {
				t.Errorf("NotTerminalByStatus = %v (timed out %t), want %v", b.NotTerminalByStatus, b.TimedOut, tt.notTerminal)
			}
			checkProblems(t, problems, tt.problems)
			if finished != tt.finished {
				t.Errorf("finished = %t, want %t", finished, tt.finished)
			}
			if b.Latency.Count != b.Terminal {
				t.Errorf("Latency.Count = %d, want one per terminal order, %d", b.Latency.Count, b.Terminal)
			}
			// The engine's write is 20 ms after acceptance: a latency
			// below it was not measured from the order's submission.
			if b.Terminal > 0 && tt.observed == 0 && b.Latency.P50 < 20 {
				t.Errorf("Latency.P50 = %.1f ms, want at least the 20 ms each order takes", b.Latency.P50)
			}
			if b.Terminal > 0 && (b.OrdersPerSecond <= 0 || b.SubmittedPerSecond <= 0) {
				t.Errorf("orders/s = %.1f, submitted/s = %.1f; want both above 0", b.OrdersPerSecond, b.SubmittedPerSecond)
			}
			if got := api.maxReadsNow.Load(); got > int64(cfg.Pollers) {
				t.Errorf("at most %d reads at once, want at most the %d pollers", got, cfg.Pollers)
			}
			if got, most := api.reads.Load(), int64(cfg.Pollers)*(int64(took/cfg.PollEvery)+1); got > most {
				t.Errorf("%d reads in %s, want at most %d: each of %d pollers reads once every %s", got, took, most, cfg.Pollers, cfg.PollEvery)
			}
		})
	}
}

func TestSequential(t *testing.T) {
	tests := []struct {
		name         string
		plan         func(key string, n int) fate
		orderTimeout time.Duration
		// want
		terminal, failed int
		outcomes         map[order.Status]int
		stuck            string
		problems         []string
		finished         bool
	}{
		{
			name: "every order Processed", plan: everyOrder(fate{delay: 30 * time.Millisecond, final: order.StatusProcessed}),
			terminal: 8, outcomes: map[order.Status]int{order.StatusProcessed: 8}, finished: true,
		},
		{
			name: "a refused submission counted, the rest measured",
			plan: func(_ string, n int) fate {
				return fate{refuse: n == 2, delay: 30 * time.Millisecond, final: order.StatusProcessed}
			},
			terminal: 7, failed: 1, outcomes: map[order.Status]int{order.StatusProcessed: 7},
			problems: []string{"sequential before: 1 of 8 submissions failed; first: POST /orders answered 400"}, finished: true,
		},
		{
			name: "a Failed order counted",
			plan: func(_ string, n int) fate {
				if n == 4 {
					return fate{delay: 30 * time.Millisecond, final: order.StatusFailed}
				}
				return fate{delay: 30 * time.Millisecond, final: order.StatusProcessed}
			},
			terminal: 8, outcomes: map[order.Status]int{order.StatusProcessed: 7, order.StatusFailed: 1},
			problems: []string{"sequential before: 1 of 8 orders ended other than Processed: Failed 1"}, finished: true,
		},
		{
			name: "an order that never ends stops the phase",
			plan: func(_ string, n int) fate {
				if n == 1 {
					return fate{}
				}
				return fate{delay: 30 * time.Millisecond, final: order.StatusProcessed}
			},
			orderTimeout: 300 * time.Millisecond,
			terminal:     1, outcomes: map[order.Status]int{order.StatusProcessed: 1}, stuck: "ORDER0001 (last status Processing)",
			problems: []string{"sequential before: order ORDER0001 (last status Processing) not terminal within 300ms of its submission; stopped"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, tt.plan)
			cfg := quick(0, 0, 8)
			if tt.orderTimeout > 0 {
				cfg.OrderTimeout = tt.orderTimeout
			}
			s, problems, finished := runSequential(context.Background(), api.client(t), cfg.withDefaults(), "sequential before", "load-test-before")

			if s.Terminal != tt.terminal || s.SubmitFailed != tt.failed || s.Stuck != tt.stuck {
				t.Errorf("terminal, failed, stuck = %d, %d, %q; want %d, %d, %q", s.Terminal, s.SubmitFailed, s.Stuck, tt.terminal, tt.failed, tt.stuck)
			}
			if !maps.Equal(s.Outcomes, orEmpty(tt.outcomes)) {
				t.Errorf("Outcomes = %v, want %v", s.Outcomes, tt.outcomes)
			}
			checkProblems(t, problems, tt.problems)
			if finished != tt.finished {
				t.Errorf("finished = %t, want %t", finished, tt.finished)
			}
			// Each order is terminal 30 ms after the fake accepted it.
			if s.Latency.Count != s.Terminal || (s.Terminal > 0 && s.Latency.P50 < 30) {
				t.Errorf("Latency = %+v, want %d latencies of at least 30 ms", s.Latency, s.Terminal)
			}
		})
	}
}

func TestRun(t *testing.T) {
	// fast and slow are far apart, so that the check's verdict does not
	// depend on a busy machine's timing.
	const fast, slow = 100 * time.Millisecond, 400 * time.Millisecond
	tests := []struct {
		name          string
		before, after time.Duration
		wantOK        bool
		problems      []string
	}{
		{"no slowdown", fast, fast, true, nil},
		{"slower after the burst", fast, slow, false, []string{"slowdown with age: sequential p50 after the burst is"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, func(key string, _ int) fate {
				d := tt.before
				if inPhase(key, "after") {
					d = tt.after
				}
				return fate{delay: d, final: order.StatusProcessed}
			})
			r, err := Run(context.Background(), api.client(t), quick(30, 5, 6))
			if err != nil {
				t.Fatal(err)
			}
			if r.Before == nil || r.Burst == nil || r.After == nil || r.Slowdown == nil {
				t.Fatalf("report %+v, want sequential before, burst, sequential after and the slowdown", r)
			}
			if r.Before.Terminal != 6 || r.Burst.Terminal != 30 || r.After.Terminal != 6 {
				t.Errorf("terminal orders %d, %d, %d; want 6, 30, 6", r.Before.Terminal, r.Burst.Terminal, r.After.Terminal)
			}
			if api.accepted != 42 {
				t.Errorf("the API accepted %d orders, want 42 (each key new)", api.accepted)
			}
			if r.Slowdown.OK != tt.wantOK || r.OK() != tt.wantOK {
				t.Errorf("slowdown %+v, report OK %t; want %t", *r.Slowdown, r.OK(), tt.wantOK)
			}
			if want := r.After.Latency.P50 / r.Before.Latency.P50; r.Slowdown.Ratio != want {
				t.Errorf("Slowdown.Ratio = %v, want after/before p50 = %v", r.Slowdown.Ratio, want)
			}
			checkProblems(t, r.Problems, tt.problems)
		})
	}
}

func TestRunStopsAfterAPhaseThatCouldNotFinish(t *testing.T) {
	api := newFakeAPI(t, func(key string, _ int) fate {
		if inPhase(key, "before") {
			return fate{refuse: true}
		}
		return fate{final: order.StatusProcessed}
	})
	r, err := Run(context.Background(), api.client(t), quick(30, 5, 6))
	if err != nil {
		t.Fatal(err)
	}
	if r.Before == nil || r.Burst != nil || r.After != nil || r.OK() {
		t.Errorf("report %+v, want only the sequential run before, and problems", r)
	}
	if api.posts != 4 {
		t.Errorf("%d submissions, want 4: more than MaxFailures (3) stops the run", api.posts)
	}
}

func TestRunRefusesAWrongConfig(t *testing.T) {
	tests := []struct {
		name string
		cfg  Config
		want []string
	}{
		{"nothing to measure", Config{}, []string{"nothing to measure"}},
		{"a burst without clients", Config{Orders: 10}, []string{"clients: got 0"}},
		{"every problem", Config{Orders: -1, Sequential: -2, Timeout: -time.Second, MaxFailures: -1},
			[]string{"orders: got -1", "sequential: got -2", "timeout: got -1s", "max-failures: got -1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			api := newFakeAPI(t, everyOrder(fate{final: order.StatusProcessed}))
			_, err := Run(context.Background(), api.client(t), tt.cfg)
			for _, want := range tt.want {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("Run error = %v, want it to contain %q", err, want)
				}
			}
			if api.posts != 0 {
				t.Errorf("%d submissions, want none", api.posts)
			}
		})
	}
}

func TestSubmitsTheGivenBodyAndPath(t *testing.T) {
	api := newFakeAPI(t, everyOrder(fate{final: order.StatusProcessed}))
	body := `{"customerId":"c-9","card":"4242"}`
	c, err := NewClient(api.srv.URL, "/workflows/checkout/orders", []byte(body), nil, 2)
	if err != nil {
		t.Fatal(err)
	}
	cfg := quick(3, 2, 2)
	cfg.MaxSlowdown = 1e6 // orders of no delay: their p50s are noise
	r, err := Run(context.Background(), c, cfg)
	if err != nil || !r.OK() {
		t.Fatalf("Run = %+v, %v; want no problems", r, err)
	}
	want := map[string]bool{"/workflows/checkout/orders " + body: true}
	if !maps.Equal(api.bodies, want) {
		t.Errorf("the API got %v, want every order to be %v", api.bodies, want)
	}
}

func TestReportPrint(t *testing.T) {
	lat := Latency{Count: 100, P50: 48.2, P90: 60, P99: 75.5, Max: 80}
	ok := Report{URL: "http://127.0.0.1:8080", Path: "/orders", Problems: []string{},
		Before: &Sequential{Orders: 100, Terminal: 100, Latency: lat},
		Burst: &Burst{Orders: 1000, Clients: 20, Submitted: 1000, SubmitSeconds: 6.5, SubmittedPerSecond: 153.8, Terminal: 1000,
			Seconds: 98.2, OrdersPerSecond: 10.18, Latency: lat},
		After:    &Sequential{Orders: 100, Terminal: 100, Latency: lat},
		Slowdown: &Slowdown{BeforeP50: 48.2, AfterP50: 48.2, Ratio: 1, Limit: 1.5, OK: true},
	}
	failed := ok
	failed.Problems = []string{"burst: 3 of 1000 orders not terminal within 10m0s of the first submission: Processing 3"}
	tests := []struct {
		name    string
		r       Report
		want    []string
		notWant string
	}{
		{"healthy", ok, []string{"http://127.0.0.1:8080, POST /orders",
			"burst: 1000 orders from 20 clients submitted in 6.50 s (153.8/s);\n       1000 terminal 98.20 s after the first submission: 10.18 orders/s",
			"sequential before      100       100              0      48.2      60.0      75.5      80.0",
			"after / before the burst = 1.00 (limit 1.50): ok", "no problems"}, "problems:"},
		{"a problem", failed, []string{"problems:\n  - burst: 3 of 1000 orders not terminal"}, "no problems"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			tt.r.Print(&out)
			for _, want := range tt.want {
				if !strings.Contains(out.String(), want) {
					t.Errorf("Print wrote\n%s\nwant it to contain %q", out.String(), want)
				}
			}
			if strings.Contains(out.String(), tt.notWant) {
				t.Errorf("Print wrote\n%s\nwant no %q", out.String(), tt.notWant)
			}
		})
	}
	data, err := json.Marshal(failed)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"sequentialBefore"`, `"ordersPerSecond":10.18`, `"p99Ms":75.5`, `"ratio":1`, `"problems":["burst: 3 of`} {
		if !bytes.Contains(data, []byte(key)) {
			t.Errorf("JSON %s, want it to contain %s", data, key)
		}
	}
}

// checkProblems wants one problem holding each of want, in order, and no
// other problem.
func checkProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("problems = %q, want %d holding %q", got, len(want), want)
		return
	}
	for i := range want {
		if !strings.Contains(got[i], want[i]) {
			t.Errorf("problem %d = %q, want it to contain %q", i, got[i], want[i])
		}
	}
}

func orEmpty[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

func TestRunInterrupted(t *testing.T) {
	api := newFakeAPI(t, func(key string, _ int) fate {
		if inPhase(key, "burst") {
			return fate{} // never terminal: the interrupt comes first
		}
		return fate{final: order.StatusProcessed}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	r, err := Run(ctx, api.client(t), quick(10, 2, 2))
	if err != nil {
		t.Fatal(err)
	}
	if r.Burst == nil || r.After != nil || r.Burst.TimedOut || r.Burst.NotTerminal != 10 {
		t.Fatalf("report %+v, want the burst cut short with 10 orders not terminal, not timed out, and nothing after", r)
	}
	checkProblems(t, r.Problems, []string{"burst: 10 of 10 orders not terminal when the run was interrupted: Processing 10"})
}
