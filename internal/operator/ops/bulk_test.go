package ops

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// fakeSearch serves n orders, o-0 to o-(n-1), in pages of at most
// q.Limit; order i is at step "pay" when i%3 == 0, else "ship".
func fakeSearch(n int) (searchPager, readPlanned) {
	search := func(_ context.Context, q order.Query, position []byte) (order.SearchPage, error) {
		start := 0
		if position != nil {
			fmt.Sscan(string(position), &start)
		}
		var page order.SearchPage
		for i := start; i < min(n, start+q.Limit); i++ {
			page.Orders = append(page.Orders, order.Summary{ID: fmt.Sprintf("o-%d", i), Status: order.StatusError})
		}
		if next := start + q.Limit; next < n {
			page.Next = []byte(fmt.Sprint(next))
		}
		return page, nil
	}
	read := func(_ context.Context, id string) (Planned, error) {
		var i int
		fmt.Sscanf(id, "o-%d", &i)
		p := Planned{OrderID: id, Status: order.StatusError, Step: "ship"}
		switch {
		case i%3 == 0:
			p.Step = "pay"
		case i%7 == 1:
			p.Status = order.StatusProcessing // moved on since the search
		case i%11 == 2:
			return Planned{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
		}
		return p, nil
	}
	return search, read
}

func TestPlanBulkRefusals(t *testing.T) {
	inError := order.Query{Status: order.StatusError}
	tests := []struct {
		name    string
		matches int
		filter  BulkFilter
		max     int
		// want is the plan's size, or wantErr its error, saying says.
		want    int
		wantErr error
		says    string
	}{
		{"no filter", 10, BulkFilter{}, 1000, 0, ErrNoFilter, "at least one filter"},
		{"a limit below 1", 10, BulkFilter{Query: inError}, 0, 0, order.ErrInvalid, "limit 0"},
		{"nothing matches", 0, BulkFilter{Query: inError}, 1000, 0, ErrPlanEmpty, "matches no order"},
		{"nothing at the step", 50, BulkFilter{Query: inError, Step: "pack"}, 1000, 0, ErrPlanEmpty, "matches no order"},
		{"one over the limit", 11, BulkFilter{Query: inError}, 10, 0, ErrPlanTooLarge, "11 orders match, more than the limit of 10"},
		{"far over the limit: counted up to ten times it", 5000, BulkFilter{Query: inError}, 10, 0, ErrPlanTooLarge, "more than 200 orders match"},
		{"at the limit", 10, BulkFilter{Query: inError}, 10, 7, nil, ""}, // o-1 and o-8 moved on, o-2 is gone
		{"over the limit before the step, within it after", 30, BulkFilter{Query: inError, Step: "pay"}, 10, 10, nil, ""},
		{"over the limit at the step", 60, BulkFilter{Query: inError, Step: "pay"}, 10, 0, ErrPlanTooLarge, "20 orders match, more than the limit of 10"},
		{"too many to read for the step", 500, BulkFilter{Query: inError, Step: "pay"}, 10, 0, ErrPlanTooLarge, "narrow the filter"},
		{"a step alone is a filter", 9, BulkFilter{Step: "pay"}, 10, 3, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			search, read := fakeSearch(tt.matches)
			got, err := planBulk(context.Background(), search, read, tt.filter, tt.max)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.says) {
					t.Fatalf("got %d planned, error %v; want %v saying %q", len(got), err, tt.wantErr, tt.says)
				}
				return
			}
			if err != nil || len(got) != tt.want {
				t.Fatalf("got %d planned, error %v; want %d", len(got), err, tt.want)
			}
			for _, p := range got {
				if p.Status != order.StatusError || (tt.filter.Step != "" && p.Step != tt.filter.Step) {
					t.Errorf("planned %+v, which the filter does not match", p)
				}
			}
		})
	}
}

func planOf(ids ...string) []Planned {
	out := make([]Planned, len(ids))
	for i, id := range ids {
		out[i] = Planned{OrderID: id, Status: order.StatusError}
	}
	return out
}

// noWait is a pacer that never waits.
type noWait struct{}

func (noWait) Wait(ctx context.Context) error { return ctx.Err() }

var (
	redriveRetry = BulkAction{Kind: BulkRedrive, Redrive: order.RedriveRetry}
	inErrorAtPay = BulkFilter{Query: order.Query{Status: order.StatusError}, Step: "pay"}
)

// A run with a journal skips the orders it records as done or refused and
// acts again on those that failed; a journal of another run, or a file
// that is not one, is refused before anything is done.
func TestJournalResume(t *testing.T) {
	header := func(a BulkAction, f BulkFilter) string {
		return fmt.Sprintf(`{"journal":"orderly bulk","stage":"s","action":%q,"filter":%q}`, a.String(), f.Key())
	}
	head := header(redriveRetry, inErrorAtPay)
	tests := []struct {
		name    string
		journal string // "" for none yet
		// acted are the orders acted on; skipped, how many the journal
		// spared; wantErr, what opening it says.
		acted   []string
		skipped int
		wantErr string
	}{
		{"a new journal", "", []string{"a", "b", "c", "d"}, 0, ""},
		{"done and refused are skipped", head + "\n" + `{"orderId":"a","outcome":"done"}` + "\n" + `{"orderId":"b","outcome":"refused","reason":"not in Error"}` + "\n",
			[]string{"c", "d"}, 2, ""},
		{"a failure is tried again", head + "\n" + `{"orderId":"a","outcome":"failed","reason":"throttled"}` + "\n",
			[]string{"a", "b", "c", "d"}, 0, ""},
		{"the last outcome counts", head + "\n" + `{"orderId":"a","outcome":"failed"}` + "\n" + `{"orderId":"a","outcome":"done"}` + "\n",
			[]string{"b", "c", "d"}, 1, ""},
		{"a line cut short by a crash is dropped", head + "\n" + `{"orderId":"a","outcome":"done"}` + "\n" + `{"orderId":"b","outc`,
			[]string{"b", "c", "d"}, 1, ""},
		{"another action's journal", header(BulkAction{Kind: BulkCancel}, inErrorAtPay) + "\n", nil, 0, "records bulk cancel"},
		{"another filter's journal", header(redriveRetry, BulkFilter{Query: order.Query{Status: order.StatusError}}) + "\n", nil, 0, "over filter"},
		{"not a journal", "hello\n", nil, 0, "not a bulk journal"},
		{"a bad entry", head + "\n" + "{}\n" + `{"orderId":"a","outcome":"done"}` + "\n", nil, 0, "line 2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "new", "dir", "run.jsonl")
			if tt.journal != "" {
				os.MkdirAll(filepath.Dir(path), 0o700)
				if err := os.WriteFile(path, []byte(tt.journal), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			j, err := OpenJournal(path, "s", redriveRetry, inErrorAtPay.Key())
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("open: %v, want an error saying %q", err, tt.wantErr)
				}
				if after, _ := os.ReadFile(path); string(after) != tt.journal {
					t.Errorf("the refused journal changed to %q", after)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var acted []string
			act := func(_ context.Context, id string) error { acted = append(acted, id); return nil }
			rep, err := runBulk(context.Background(), planOf("a", "b", "c", "d"), "redrive", act, j, noWait{}, nil, time.Now)
			j.Close()
			if err != nil || !slices.Equal(acted, tt.acted) || rep.Skipped != tt.skipped || rep.Done != len(tt.acted) {
				t.Fatalf("acted on %v, report %+v, error %v; want %v acted, %d skipped", acted, rep, err, tt.acted, tt.skipped)
			}
			// A third run has nothing left to do.
			j, err = OpenJournal(path, "s", redriveRetry, inErrorAtPay.Key())
			if err != nil {
				t.Fatal(err)
			}
			defer j.Close()
			acted = nil
			if rep, err := runBulk(context.Background(), planOf("a", "b", "c", "d"), "redrive", act, j, noWait{}, nil, time.Now); err != nil || len(acted) != 0 || rep.Skipped != 4 {
				t.Errorf("run again: acted on %v, report %+v, error %v; want all 4 skipped", acted, rep, err)
			}
		})
	}
}

// Each order's outcome is reported and journaled: refused with the
// operation's reason, failed with its error. An interrupted run finishes
// the order it acts on, journals it, and stops; the next acts only on the
// rest.
func TestRunBulkOutcomesAndInterrupt(t *testing.T) {
	path := filepath.Join(t.TempDir(), "run.jsonl")
	j, err := OpenJournal(path, "s", redriveRetry, inErrorAtPay.Key())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var acted []string
	act := func(ctx context.Context, id string) error {
		acted = append(acted, id)
		switch id {
		case "b":
			return fmt.Errorf("order b is Processing: %w", order.ErrNotAllowed)
		case "c":
			return errors.New("throttled")
		case "e":
			cancel() // Ctrl-C while e is acted on
			if ctx.Err() != nil {
				return ctx.Err()
			}
		}
		return nil
	}
	plan := planOf("a", "b", "c", "d", "e", "f", "g")
	rep, err := runBulk(ctx, plan, "redrive", act, j, noWait{}, nil, time.Now)
	j.Close()
	if !errors.Is(err, context.Canceled) || !rep.Interrupted || !strings.Contains(err.Error(), path) {
		t.Fatalf("error %v, report %+v; want it interrupted, naming the journal", err, rep)
	}
	if rep.Done != 3 || rep.Refused != 1 || rep.Failed != 1 || rep.Left() != 2 {
		t.Errorf("report %+v: want 3 done (a, d, e), 1 refused, 1 failed, 2 left", rep)
	}
	if len(rep.Problems) != 2 || rep.Problems[0].Outcome != OutcomeRefused || !strings.Contains(rep.Problems[0].Reason, "is Processing") ||
		rep.Problems[1].Outcome != OutcomeFailed || !strings.Contains(rep.Problems[1].Reason, "throttled") {
		t.Errorf("problems %+v: want b refused (is Processing), c failed (throttled)", rep.Problems)
	}

	j, err = OpenJournal(path, "s", redriveRetry, inErrorAtPay.Key())
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	acted = nil
	rep, err = runBulk(context.Background(), plan, "redrive", act, j, noWait{}, nil, time.Now)
	if err != nil || !slices.Equal(acted, []string{"c", "f", "g"}) || rep.Skipped != 4 {
		t.Errorf("resumed: acted on %v, report %+v, error %v; want c (failed before), f, g, with 4 skipped", acted, rep, err)
	}
}

// fakeClock is a clock that sleeping moves.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time { return c.now }
func (c *fakeClock) Sleep(ctx context.Context, d time.Duration) error {
	c.now = c.now.Add(d)
	return ctx.Err()
}

// The pace spaces the orders at the rate, on the real token bucket with a
// fake clock: n orders take (n-1)/rate, each action's own time included.
func TestPaceHonoursRate(t *testing.T) {
	tests := []struct {
		rate    float64
		orders  int
		actTime time.Duration
		want    time.Duration
	}{
		{DefaultBulkRate, 100, 0, 9900 * time.Millisecond},
		{DefaultBulkRate, 100, 30 * time.Millisecond, 9900*time.Millisecond + 30*time.Millisecond},
		{2, 5, 0, 2 * time.Second},
		{DefaultBulkRate, 100, 200 * time.Millisecond, 100 * 200 * time.Millisecond}, // slower than the rate: no wait
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%g a second, %d orders, %v each", tt.rate, tt.orders, tt.actTime), func(t *testing.T) {
			clock := &fakeClock{now: time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)}
			start := clock.now
			p := newPace(tt.rate, clock.Now, clock.Sleep)
			var at []time.Time
			for range tt.orders {
				if err := p.Wait(context.Background()); err != nil {
					t.Fatal(err)
				}
				at = append(at, clock.now)
				clock.now = clock.now.Add(tt.actTime)
			}
			if got := clock.now.Sub(start); got != tt.want {
				t.Errorf("%d orders took %v, want %v", tt.orders, got, tt.want)
			}
			gap := time.Duration(float64(time.Second) / tt.rate)
			for i := 1; i < len(at); i++ {
				if d := at[i].Sub(at[i-1]); d < gap {
					t.Fatalf("orders %d and %d began %v apart, less than 1/rate (%v)", i-1, i, d, gap)
				}
			}
		})
	}
}

func TestBulkActionCheck(t *testing.T) {
	tests := []struct {
		a    BulkAction
		says string // "" when valid
	}{
		{BulkAction{Kind: BulkRedrive}, ""},
		{BulkAction{Kind: BulkRedrive, Redrive: order.RedriveCompensate}, ""},
		{BulkAction{Kind: BulkRedrive, Redrive: "again"}, `action "again"`},
		{BulkAction{Kind: BulkCancel}, ""},
		{BulkAction{Kind: BulkMove}, "version"},
		{BulkAction{Kind: BulkMove, Version: "2"}, ""},
		{BulkAction{Kind: BulkSendEvent, Data: []byte(`{}`)}, "name"},
		{BulkAction{Kind: BulkSendEvent, Event: "review", Data: []byte(`[1]`)}, "data"},
		{BulkAction{Kind: BulkSendEvent, Event: "review", Data: []byte(`{"decision":"approve"}`)}, ""},
		{BulkAction{Kind: "delete"}, `bulk action "delete": want one of redrive, cancel, move, send-event`},
	}
	for _, tt := range tests {
		err := tt.a.Check()
		if (tt.says == "") != (err == nil) || (err != nil && (!strings.Contains(err.Error(), tt.says) || !errors.Is(err, order.ErrInvalid))) {
			t.Errorf("%+v: %v, want an error saying %q", tt.a, err, tt.says)
		}
	}
}

// A journal kept in memory records each outcome as a file's does, reads
// while a run goes on, and skips what it recorded when run again; it has
// no path and writes nothing.
func TestMemoryJournal(t *testing.T) {
	j := MemoryJournal()
	defer j.Close()
	var seen []Outcome
	act := func(_ context.Context, id string) error {
		if id == "b" {
			return fmt.Errorf("order b is Processing: %w", order.ErrNotAllowed)
		}
		return nil
	}
	progress := func(r BulkReport) {
		// Read while the run goes on: the order just acted on is there.
		e, _ := j.Recorded(planOf("a", "b", "c")[r.Done+r.Refused-1].OrderID)
		seen = append(seen, e.Outcome)
	}
	rep, err := runBulk(context.Background(), planOf("a", "b", "c"), "redrive", act, j, noWait{}, progress, time.Now)
	if err != nil || rep.Done != 2 || rep.Refused != 1 || rep.Journal != "" {
		t.Fatalf("report %+v, error %v; want 2 done, 1 refused, no journal path", rep, err)
	}
	if want := []Outcome{OutcomeDone, OutcomeRefused, OutcomeDone}; !slices.Equal(seen, want) {
		t.Errorf("outcomes read during the run %v, want %v", seen, want)
	}
	if e, ok := j.Recorded("b"); !ok || e.Outcome != OutcomeRefused || !strings.Contains(e.Reason, "is Processing") || j.Len() != 3 {
		t.Errorf("b recorded as %+v (%t), %d recorded; want refused saying why, 3 recorded", e, ok, j.Len())
	}
	var acted []string
	again := func(_ context.Context, id string) error { acted = append(acted, id); return nil }
	if rep, err := runBulk(context.Background(), planOf("a", "b", "c", "d"), "redrive", again, j, noWait{}, nil, time.Now); err != nil || !slices.Equal(acted, []string{"d"}) || rep.Skipped != 3 {
		t.Errorf("run again: acted on %v, report %+v, error %v; want only d, 3 skipped", acted, rep, err)
	}
}

// A plan's check refuses, before anything is done, a move onto a version
// this build lacks for a planned order's workflow, and an event a planned
// order's version never waits for; the rest is each order's own check.
func TestCheckPlan(t *testing.T) {
	plain := ordertest.OrderWorkflow(order.DefaultTiming)
	reviewed := ordertest.Reviewed(plain, 0, time.Hour)
	reviewed.Version = "2"
	s := &Stage{workflows: order.MustVersions(plain, reviewed)}
	at := func(version string) []Planned {
		return []Planned{{OrderID: "a", Status: order.StatusWaiting, Workflow: plain.Name, Version: version}}
	}
	review := BulkAction{Kind: BulkSendEvent, Event: ordertest.EventReview, Data: []byte(`{}`)}
	tests := []struct {
		name    string
		plan    []Planned
		action  BulkAction
		wantErr string
	}{
		{"a move onto a version of the build", at("1"), BulkAction{Kind: BulkMove, Version: "2"}, ""},
		{"a move onto a version the build lacks", at("1"), BulkAction{Kind: BulkMove, Version: "9"}, `has no version "9" in this build (known: order/1, order/2)`},
		{"an event the order's version waits for", at("2"), review, ""},
		{"an event the order's version never waits for", at("1"), review, `workflow order/1 never waits for event "review" (this build's events: review)`},
		{"an event of an order of a version the build lacks", at("7"), review, ""},
		{"a redrive", at("1"), BulkAction{Kind: BulkRedrive}, ""},
		{"a bad action", at("1"), BulkAction{Kind: "delete"}, `bulk action "delete"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.CheckPlan(tt.plan, tt.action)
			if tt.wantErr == "" {
				if err != nil {
					t.Errorf("CheckPlan: %v, want none", err)
				}
				return
			}
			if !errors.Is(err, order.ErrInvalid) || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("CheckPlan: %v, want ErrInvalid saying %q", err, tt.wantErr)
			}
		})
	}
	if got := s.Events(); !slices.Equal(got, []string{ordertest.EventReview}) {
		t.Errorf("Events: %v, want [review]", got)
	}
}
