// Package loadgen measures orderly's speed as a client of its public API
// sees it (issue 20): a burst of orders from concurrent clients, the
// latency of one order at a time, and whether that latency is the same
// after the burst as before it.
package loadgen

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"orderly/internal/order"
)

// Config says how much load to make. Orders or Sequential may be 0 to
// skip the burst or the sequential runs; the other zero fields take the
// defaults below.
type Config struct {
	// Orders are submitted in the burst by Clients at once.
	Orders, Clients int
	// Sequential orders are submitted one at a time before the burst and
	// again after it.
	Sequential int
	// Pollers read the burst's orders, each one GET every PollEvery, so
	// the reads stay a small share of what the emulators serve (default
	// 4 every 50 ms: 80 reads a second).
	Pollers   int
	PollEvery time.Duration
	// FinePoll is how often a sequential order is read (default 5 ms).
	FinePoll time.Duration
	// Timeout bounds the burst, from its first submission until every
	// order is terminal (default 10 minutes).
	Timeout time.Duration
	// OrderTimeout bounds each sequential order (default 30 s).
	OrderTimeout time.Duration
	// MaxFailures failed submissions, or failed reads, are tolerated in a
	// phase; one more stops it.
	MaxFailures int
	// MaxSlowdown bounds the sequential p50 after the burst over the one
	// before it (default MaxSlowdown).
	MaxSlowdown float64
	Log         *slog.Logger
}

// Defaults are the settings a zero field of Config takes.
func Defaults() Config {
	return Config{Pollers: 4, PollEvery: 50 * time.Millisecond, FinePoll: 5 * time.Millisecond,
		Timeout: 10 * time.Minute, OrderTimeout: 30 * time.Second, MaxSlowdown: MaxSlowdown}
}

func (c Config) withDefaults() Config {
	d := Defaults()
	c.Pollers = cmp.Or(c.Pollers, d.Pollers)
	c.PollEvery = cmp.Or(c.PollEvery, d.PollEvery)
	c.FinePoll = cmp.Or(c.FinePoll, d.FinePoll)
	c.Timeout = cmp.Or(c.Timeout, d.Timeout)
	c.OrderTimeout = cmp.Or(c.OrderTimeout, d.OrderTimeout)
	c.MaxSlowdown = cmp.Or(c.MaxSlowdown, d.MaxSlowdown)
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c
}

// Validate names every setting that is wrong.
func (c Config) Validate() error {
	var errs []error
	check := func(bad bool, format string, args ...any) {
		if bad {
			errs = append(errs, fmt.Errorf(format, args...))
		}
	}
	check(c.Orders < 0, "orders: got %d, want 0 or more", c.Orders)
	check(c.Sequential < 0, "sequential: got %d, want 0 or more", c.Sequential)
	check(c.Orders == 0 && c.Sequential == 0, "orders and sequential are both 0: nothing to measure")
	check(c.Orders > 0 && c.Clients < 1, "clients: got %d, want 1 or more", c.Clients)
	check(c.Pollers < 0, "pollers: got %d, want 1 or more", c.Pollers)
	check(c.PollEvery < 0, "poll-every: got %s, want more than 0", c.PollEvery)
	check(c.FinePoll < 0, "fine-poll: got %s, want more than 0", c.FinePoll)
	check(c.Timeout < 0, "timeout: got %s, want more than 0", c.Timeout)
	check(c.OrderTimeout < 0, "order-timeout: got %s, want more than 0", c.OrderTimeout)
	check(c.MaxFailures < 0, "max-failures: got %d, want 0 or more", c.MaxFailures)
	check(c.MaxSlowdown < 0, "max-slowdown: got %g, want more than 0", c.MaxSlowdown)
	return errors.Join(errs...)
}

// Report is what a run measured. Problems lists everything that went
// wrong; a healthy run has none.
type Report struct {
	URL      string      `json:"url"`
	Path     string      `json:"path"`
	Before   *Sequential `json:"sequentialBefore,omitempty"`
	Burst    *Burst      `json:"burst,omitempty"`
	After    *Sequential `json:"sequentialAfter,omitempty"`
	Slowdown *Slowdown   `json:"slowdown,omitempty"`
	Problems []string    `json:"problems"`
}

// OK reports whether nothing went wrong.
func (r Report) OK() bool { return len(r.Problems) == 0 }

// Run measures the API c speaks to: sequential orders, the burst, then
// sequential orders again, and compares the two sequential p50s. A phase
// that could not finish (a timeout, too many failures, an interrupt)
// ends the run. Its error is only for a Config that is wrong.
func Run(ctx context.Context, c *Client, cfg Config) (Report, error) {
	if err := cfg.Validate(); err != nil {
		return Report{}, err
	}
	cfg = cfg.withDefaults()
	// Idempotency-Keys unique to this run: a key sent again would replay
	// an order of an earlier run instead of placing one.
	run := runID()
	r := Report{URL: c.base, Path: c.path, Problems: []string{}}
	keep := func(problems []string, finished bool) bool {
		r.Problems = append(r.Problems, problems...)
		if finished && ctx.Err() != nil { // interrupted as the phase ended
			r.Problems = append(r.Problems, "interrupted: the run stopped before its end")
			return false
		}
		return finished
	}
	if cfg.Sequential > 0 {
		cfg.Log.Info("sequential orders before the burst", "orders", cfg.Sequential)
		s, problems, finished := runSequential(ctx, c, cfg, "sequential before", run+"-before")
		r.Before = &s
		if !keep(problems, finished) {
			return r, nil
		}
	}
	if cfg.Orders > 0 {
		cfg.Log.Info("burst", "orders", cfg.Orders, "clients", cfg.Clients)
		b, problems, finished := runBurst(ctx, c, cfg, run+"-burst")
		r.Burst = &b
		if !keep(problems, finished) || cfg.Sequential == 0 {
			return r, nil
		}
		cfg.Log.Info("sequential orders after the burst", "orders", cfg.Sequential)
		s, problems, finished := runSequential(ctx, c, cfg, "sequential after", run+"-after")
		r.After = &s
		if !keep(problems, finished) {
			return r, nil
		}
		if sd, ok := compareAges(r.Before.Latency, r.After.Latency, cfg.MaxSlowdown); ok {
			r.Slowdown = &sd
			if !sd.OK {
				r.Problems = append(r.Problems, fmt.Sprintf("slowdown with age: sequential p50 after the burst is %.2f times the one before (%.1f ms against %.1f ms), over the limit of %.2f",
					sd.Ratio, sd.AfterP50, sd.BeforeP50, sd.Limit))
			}
		}
	}
	return r, nil
}

func runID() string {
	b := make([]byte, 4)
	_, _ = rand.Read(b) // never fails (crypto/rand)
	return "load-" + time.Now().UTC().Format("20060102T150405") + "-" + hex.EncodeToString(b)
}

// tally counts the failures of one kind of request and keeps the first.
type tally struct {
	mu    sync.Mutex
	n     int
	first string
}

// add counts err and returns how many there are now.
func (t *tally) add(err error) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.n++
	if t.first == "" {
		t.first = err.Error()
	}
	return t.n
}

// counted renders counts by status as "Failed 2, Processing 1", largest
// first.
func counted[K ~string](m map[K]int) string {
	keys := slices.Collect(maps.Keys(m))
	slices.SortFunc(keys, func(a, b K) int { return cmp.Or(cmp.Compare(m[b], m[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}

// notProcessed counts the terminal outcomes other than Processed.
func notProcessed(outcomes map[order.Status]int) (int, map[order.Status]int) {
	others := map[order.Status]int{}
	n := 0
	for st, k := range outcomes {
		if st != order.StatusProcessed {
			others[st] = k
			n += k
		}
	}
	return n, others
}

// Print writes the report as a short table, then its problems.
func (r Report) Print(w io.Writer) {
	fmt.Fprintf(w, "orderly load on %s, POST %s\n\n", r.URL, r.Path)
	fmt.Fprintf(w, "%-18s %7s %9s %14s %9s %9s %9s %9s\n", "phase", "orders", "terminal", "not Processed", "p50 ms", "p90 ms", "p99 ms", "max ms")
	row := func(name string, orders, terminal, others int, l Latency) {
		fmt.Fprintf(w, "%-18s %7d %9d %14d %9.1f %9.1f %9.1f %9.1f\n", name, orders, terminal, others, l.P50, l.P90, l.P99, l.Max)
	}
	if s := r.Before; s != nil {
		row("sequential before", s.Orders, s.Terminal, s.NotProcessed, s.Latency)
	}
	if b := r.Burst; b != nil {
		row("burst", b.Orders, b.Terminal, b.NotProcessed, b.Latency)
	}
	if s := r.After; s != nil {
		row("sequential after", s.Orders, s.Terminal, s.NotProcessed, s.Latency)
	}
	if b := r.Burst; b != nil {
		fmt.Fprintf(w, "\nburst: %d orders from %d clients submitted in %.2f s (%.1f/s);\n       %d terminal %.2f s after the first submission: %.2f orders/s\n",
			b.Submitted, b.Clients, b.SubmitSeconds, b.SubmittedPerSecond, b.Terminal, b.Seconds, b.OrdersPerSecond)
		if b.ObservedTimes > 0 {
			fmt.Fprintf(w, "       %d terminal times are a poller's reads: their updatedAt was not between submission and read (another clock?)\n", b.ObservedTimes)
		}
	}
	if sd := r.Slowdown; sd != nil {
		verdict := "ok"
		if !sd.OK {
			verdict = "TOO SLOW"
		}
		fmt.Fprintf(w, "slowdown with age: sequential p50 after / before the burst = %.2f (limit %.2f): %s\n", sd.Ratio, sd.Limit, verdict)
	}
	if r.OK() {
		fmt.Fprintln(w, "\nno problems")
		return
	}
	fmt.Fprintln(w, "\nproblems:")
	for _, p := range r.Problems {
		fmt.Fprintf(w, "  - %s\n", p)
	}
}
