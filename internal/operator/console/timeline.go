package console

import (
	"fmt"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// Timeline is an order laid out over time, from its history: a lane for
// the order's status, then one per record (the workflow's steps, then the
// undos), each a row of phases (waiting for a claim, an attempt running,
// a step's wait)
// with marks for what happened in between (heartbeats, deferrals,
// re-announcements, alerts) and the deadline the Supervisor watches.
type Timeline struct {
	Start, End time.Time
	Lanes      []Lane
	Ticks      []Tick
}

// Lane is one row of the timeline.
type Lane struct {
	Label string
	// Order marks the order's own lane, whose phases are its statuses.
	Order  bool
	Undo   bool
	Phases []Phase
	Marks  []Mark
}

// Phase is a stretch of time a record (or the order) spent in one state.
type Phase struct {
	State   string
	Attempt int
	From    time.Time
	To      time.Time
	// Ended is the state the phase ended in; empty while it goes on.
	Ended       string
	Left, Width float64 // percent of the timeline
}

// Open reports whether the phase still goes on.
func (p Phase) Open() bool { return p.Ended == "" }

// Title describes the phase for a tooltip.
func (p Phase) Title() string {
	what := p.State
	if p.Attempt > 0 {
		what = fmt.Sprintf("%s, attempt %d", p.State, p.Attempt)
	}
	d := p.To.Sub(p.From).Round(time.Millisecond)
	if p.Open() {
		return fmt.Sprintf("%s since %s (%s so far)", what, clock(p.From), d)
	}
	return fmt.Sprintf("%s %s → %s (%s), then %s", what, clock(p.From), clock(p.To), d, p.Ended)
}

// Mark is a point on a lane.
type Mark struct {
	Kind  string // heartbeat, deferred, re-announced, alert, deadline, removed, or an end state
	At    time.Time
	Left  float64
	Title string
}

// Tick labels a time on the axis, relative to the start.
type Tick struct {
	Left  float64
	Label string
}

// final reports whether an order in status s will not change on its own.
func final(s order.Status) bool {
	switch s {
	case order.StatusProcessed, order.StatusFailed, order.StatusCancelled, order.StatusError:
		return true
	}
	return false
}

// moving reports whether a record in state s waits for something to
// happen: a claim (Pending), a reply (Processing) or the end of its wait
// (Waiting).
func moving(s string) bool {
	return s == string(order.Pending) || s == string(order.Processing) || s == string(order.Waiting)
}

// waiting reports whether a record in state s is drawn as a phase: while
// it moves, and while it waits in Error for an operator.
func waiting(s string) bool { return moving(s) || s == string(order.Error) }

// BuildTimeline lays out an order's history. now ends the phases that
// still go on; an order that ended (or waits for an operator in Error)
// ends at its last change, or at now for Error, which is how long it has
// waited.
func BuildTimeline(v api.OrderView, history []order.HistoryEntry, now time.Time) Timeline {
	t := Timeline{Start: v.CreatedAt, End: v.UpdatedAt}
	if len(history) > 0 && (t.Start.IsZero() || history[0].At.Before(t.Start)) {
		t.Start = history[0].At
	}
	for _, h := range history {
		if h.At.After(t.End) {
			t.End = h.At
		}
	}
	if !final(v.Status) || v.Status == order.StatusError {
		t.End = now
	}

	lanes := []Lane{{Label: "order", Order: true}}
	lane := func(record int) *Lane {
		for len(lanes) <= record+1 {
			i := len(lanes) - 1
			l := Lane{Label: fmt.Sprintf("record %d", i)}
			if i < len(v.Steps) {
				l.Label, l.Undo = order.RecordLabel(v.Steps[i].Step, v.Steps[i].Undo), v.Steps[i].Undo
			}
			lanes = append(lanes, l)
		}
		return &lanes[record+1]
	}
	closeOpen := func(l *Lane, at time.Time, ended string) {
		if n := len(l.Phases); n > 0 && l.Phases[n-1].Open() {
			l.Phases[n-1].To, l.Phases[n-1].Ended = at, ended
		}
	}
	for _, h := range history {
		l := lane(h.Record)
		if h.Step != "" && h.Record >= 0 && l.Label == fmt.Sprintf("record %d", h.Record) {
			l.Label, l.Undo = order.RecordLabel(h.Step, h.Undo), h.Undo
		}
		switch h.Event {
		case "status", "state":
			closeOpen(l, h.At, h.To)
			// The order's statuses are phases until one it ends in; a
			// record's, while it waits for a claim or a reply.
			if h.Record < 0 && (!final(order.Status(h.To)) || h.To == string(order.StatusError)) || h.Record >= 0 && waiting(h.To) {
				l.Phases = append(l.Phases, Phase{State: h.To, Attempt: h.Attempt, From: h.At})
			} else {
				l.Marks = append(l.Marks, Mark{Kind: h.To, At: h.At, Title: fmt.Sprintf("%s at %s %s", h.To, clock(h.At), h.Reason)})
			}
		case "removed":
			closeOpen(l, h.At, "removed")
			l.Marks = append(l.Marks, Mark{Kind: "removed", At: h.At, Title: "removed at " + clock(h.At) + ": " + h.Reason})
		case "alert recorded", "alert sent", "alert withdrawn":
			l.Marks = append(l.Marks, Mark{Kind: "alert", At: h.At, Title: fmt.Sprintf("%s (%s) at %s", h.Event, h.Reason, clock(h.At))})
		default: // heartbeat, deferred, re-announced, cancel requested
			l.Marks = append(l.Marks, Mark{Kind: h.Event, At: h.At, Title: fmt.Sprintf("%s at %s %s", h.Event, clock(h.At), h.Reason)})
		}
	}
	// The deadline of each record still waiting, as the Supervisor sees it.
	for i, s := range v.Steps {
		if s.CompleteBy != nil && moving(s.State) && !final(v.Status) {
			l := lane(i)
			title := "deadline " + clock(*s.CompleteBy)
			if s.State == string(order.Waiting) {
				title = "the wait ends " + clock(*s.CompleteBy)
			}
			l.Marks = append(l.Marks, Mark{Kind: "deadline", At: *s.CompleteBy, Title: title})
			if s.CompleteBy.After(t.End) {
				t.End = *s.CompleteBy
			}
		}
	}

	span := t.End.Sub(t.Start)
	if span <= 0 {
		span = time.Millisecond
	}
	pct := func(at time.Time) float64 {
		return min(100, max(0, float64(at.Sub(t.Start))/float64(span)*100))
	}
	for li := range lanes {
		l := &lanes[li]
		for pi := range l.Phases {
			p := &l.Phases[pi]
			if p.Open() {
				p.To = t.End
			}
			p.Left = pct(p.From)
			p.Width = max(pct(p.To)-p.Left, 0.5)
		}
		for mi := range l.Marks {
			l.Marks[mi].Left = pct(l.Marks[mi].At)
		}
	}
	for i := range 5 {
		at := t.Start.Add(span * time.Duration(i) / 4)
		t.Ticks = append(t.Ticks, Tick{Left: pct(at), Label: "+" + roundFor(at.Sub(t.Start), span).String()})
	}
	t.Lanes = lanes
	return t
}

func clock(t time.Time) string { return t.UTC().Format("15:04:05.000") }

// roundFor rounds d to a precision that suits a span.
func roundFor(d, span time.Duration) time.Duration {
	switch {
	case span >= time.Hour:
		return d.Round(time.Minute)
	case span >= time.Minute:
		return d.Round(time.Second)
	case span >= time.Second:
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Millisecond)
}
