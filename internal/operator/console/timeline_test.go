package console_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/operator/console"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

var t0 = time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

// phases renders a lane's phases as "State/attempt[from-to]->Ended".
func phases(l console.Lane) string {
	var out []string
	for _, p := range l.Phases {
		s := fmt.Sprintf("%s/%d[%d-%d]", p.State, p.Attempt, p.From.Sub(t0).Milliseconds(), p.To.Sub(t0).Milliseconds())
		if p.Open() {
			s += "..."
		} else {
			s += "->" + p.Ended
		}
		out = append(out, s)
	}
	return strings.Join(out, " ")
}

func marks(l console.Lane) string {
	var out []string
	for _, m := range l.Marks {
		out = append(out, fmt.Sprintf("%s@%d", m.Kind, m.At.Sub(t0).Milliseconds()))
	}
	return strings.Join(out, " ")
}

func TestBuildTimeline(t *testing.T) {
	pay := func(ms int, from, to string, attempt int) order.HistoryEntry {
		return order.HistoryEntry{At: at(ms), Record: 0, Step: ordertest.StepChargePayment, Event: "state", From: from, To: to, Attempt: attempt}
	}
	status := func(ms int, to string) order.HistoryEntry {
		return order.HistoryEntry{At: at(ms), Record: -1, Event: "status", To: to}
	}
	deadline := at(9000)
	tests := []struct {
		name    string
		view    api.OrderView
		history []order.HistoryEntry
		now     time.Time
		lanes   []string // per lane: label: phases | marks
		start   int
		end     int
	}{
		{
			name: "a timed-out attempt retried, then done",
			view: api.OrderView{Status: order.StatusProcessed, CreatedAt: at(0), UpdatedAt: at(4000),
				Steps: []api.StepView{{Step: ordertest.StepChargePayment, State: "Processed"}}},
			history: []order.HistoryEntry{status(0, "Pending"), pay(0, "NotStarted", "Processing", 1),
				{At: at(500), Record: 0, Step: ordertest.StepChargePayment, Event: "heartbeat"},
				pay(1000, "Processing", "Pending", 1), pay(2000, "Pending", "Processing", 2),
				pay(4000, "Processing", "Processed", 2), status(4000, "Processed")},
			now: at(60000), // ended: the timeline stops at the last change
			lanes: []string{
				"order: Pending/0[0-4000]->Processed | Processed@4000",
				"charge-payment: Processing/1[0-1000]->Pending Pending/1[1000-2000]->Processing Processing/2[2000-4000]->Processed | heartbeat@500 Processed@4000",
			},
			start: 0, end: 4000,
		},
		{
			name: "in flight: the open attempt runs to now, and its deadline is marked beyond",
			view: api.OrderView{Status: order.StatusPending, CreatedAt: at(0), UpdatedAt: at(0),
				Steps: []api.StepView{{Step: ordertest.StepChargePayment, State: "Processing", CompleteBy: &deadline}}},
			history: []order.HistoryEntry{status(0, "Pending"), pay(0, "NotStarted", "Processing", 1)},
			now:     at(3000),
			lanes: []string{
				"order: Pending/0[0-9000]... | ",
				"charge-payment: Processing/1[0-9000]... | deadline@9000",
			},
			start: 0, end: 9000,
		},
		{
			name: "a step that waits: a phase until now, and the end of its wait marked beyond",
			view: api.OrderView{Status: order.StatusWaiting, CreatedAt: at(0), UpdatedAt: at(0),
				Steps: []api.StepView{{Step: "cool-off", State: "Waiting", Attempt: 1, CompleteBy: &deadline}, {Step: ordertest.StepChargePayment, State: "NotStarted"}}},
			history: []order.HistoryEntry{status(0, "Waiting"), {At: at(0), Record: 0, Step: "cool-off", Event: "state", From: "NotStarted", To: "Waiting", Attempt: 1}},
			now:     at(3000),
			lanes: []string{
				"order: Waiting/0[0-9000]... | ",
				"cool-off: Waiting/1[0-9000]... | deadline@9000",
			},
			start: 0, end: 9000,
		},
		{
			name: "an undo refused: Error until now, with its alert; an appended undo not yet started",
			view: api.OrderView{Status: order.StatusError, CreatedAt: at(0), UpdatedAt: at(2000),
				Steps: []api.StepView{{Step: ordertest.StepChargePayment, State: "Failed"}, {Step: ordertest.StepChargePayment, Undo: true, State: "Error", CompleteBy: &deadline}}},
			history: []order.HistoryEntry{status(0, "Pending"), pay(0, "NotStarted", "Processing", 1),
				pay(1000, "Processing", "Failed", 1), status(1000, "Compensating"),
				{At: at(1000), Record: 1, Step: ordertest.StepChargePayment, Undo: true, Event: "state", To: "Processing", Attempt: 1},
				{At: at(2000), Record: 1, Step: ordertest.StepChargePayment, Undo: true, Event: "state", From: "Processing", To: "Error", Attempt: 1},
				status(2000, "Error"),
				{At: at(2000), Record: 1, Step: ordertest.StepChargePayment, Undo: true, Event: "alert recorded", Reason: "UndoFailed"}},
			now: at(10000),
			lanes: []string{
				"order: Pending/0[0-1000]->Compensating Compensating/0[1000-2000]->Error Error/0[2000-10000]... | ",
				"charge-payment: Processing/1[0-1000]->Failed | Failed@1000",
				"undo charge-payment: Processing/1[1000-2000]->Error Error/1[2000-10000]... | alert@2000",
			},
			start: 0, end: 10000,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := console.BuildTimeline(tt.view, tt.history, tt.now)
			var got []string
			for _, l := range tl.Lanes {
				got = append(got, l.Label+": "+phases(l)+" | "+marks(l))
			}
			if strings.Join(got, "\n") != strings.Join(tt.lanes, "\n") {
				t.Errorf("lanes:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(tt.lanes, "\n"))
			}
			if s, e := tl.Start.Sub(t0).Milliseconds(), tl.End.Sub(t0).Milliseconds(); s != int64(tt.start) || e != int64(tt.end) {
				t.Errorf("span %d-%d ms, want %d-%d", s, e, tt.start, tt.end)
			}
			for _, l := range tl.Lanes {
				for _, p := range l.Phases {
					if p.Left < 0 || p.Width <= 0 || p.Left+p.Width > 100.5 {
						t.Errorf("%s: phase %s at %.1f%% +%.1f%% is off the axis", l.Label, p.State, p.Left, p.Width)
					}
				}
			}
			if n := len(tl.Ticks); n != 5 || tl.Ticks[0].Label != "+0s" || tl.Ticks[n-1].Left != 100 {
				t.Errorf("ticks %+v, want 5 from +0s to the end", tl.Ticks)
			}
		})
	}
}

// Positions are proportional to time.
func TestBuildTimelinePositions(t *testing.T) {
	v := api.OrderView{Status: order.StatusProcessed, CreatedAt: at(0), UpdatedAt: at(4000),
		Steps: []api.StepView{{Step: ordertest.StepChargePayment, State: "Processed"}}}
	tl := console.BuildTimeline(v, []order.HistoryEntry{
		{At: at(1000), Record: 0, Step: ordertest.StepChargePayment, Event: "state", To: "Processing", Attempt: 1},
		{At: at(3000), Record: 0, Step: ordertest.StepChargePayment, Event: "state", From: "Processing", To: "Processed", Attempt: 1},
		{At: at(4000), Record: -1, Event: "status", From: "Pending", To: "Processed"},
	}, at(9000))
	p := tl.Lanes[1].Phases[0]
	if p.Left != 25 || p.Width != 50 {
		t.Errorf("attempt from 1 s to 3 s of 4 s at %.1f%% +%.1f%%, want 25%% +50%%", p.Left, p.Width)
	}
}
