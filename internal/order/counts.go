package order

import (
	"cmp"
	"slices"
	"time"
)

// The times a count's window (and a search's range) can bound.
const (
	WindowCreated = "created"
	WindowEnded   = "ended"
)

// Window is which of q's ranges a search or a count reads by: when the
// orders ended if q bounds that (only ended orders have an end), else
// when they were created; and that range, from inclusive, to exclusive,
// zero unbounded.
func (q Query) Window() (by string, from, to time.Time) {
	if !q.EndedFrom.IsZero() || !q.EndedTo.IsZero() {
		return WindowEnded, q.EndedFrom, q.EndedTo
	}
	return WindowCreated, q.CreatedFrom, q.CreatedTo
}

// DefaultCountWindow is how far back a count looks when its query
// bounds no time.
const DefaultCountWindow = 24 * time.Hour

// Bounded is q as a count reads it: as it is when it bounds a time;
// else the orders created in the DefaultCountWindow before now, and
// defaulted says so.
func (q Query) Bounded(now time.Time) (bounded Query, defaulted bool) {
	if _, from, to := q.Window(); !from.IsZero() || !to.IsZero() {
		return q, false
	}
	q.CreatedFrom = now.Add(-DefaultCountWindow).UTC()
	return q, true
}

// Counts is how many orders a query matches in each status, over the
// query's window (Query.Window): `orderly counts` and the console's
// search page show them.
type Counts struct {
	// ByStatus is the count of each status that has any.
	ByStatus map[Status]int `json:"byStatus"`
	Total    int            `json:"total"`
	// By, From and To are the window counted: by when the orders were
	// created or ended, from inclusive, to exclusive, zero unbounded.
	By   string    `json:"by"`
	From time.Time `json:"from,omitzero"`
	To   time.Time `json:"to,omitzero"`
	// Partial says the count reached its bound on reads before it got
	// down to From: it counts the orders of the window from Through on
	// (to To), exactly, and none older. A count reads newest first.
	Partial bool      `json:"partial,omitempty"`
	Through time.Time `json:"through,omitzero"`
	// Evaluated is how many index items the count read, matches or not.
	Evaluated int `json:"evaluated"`
}

// NewCounts returns the empty counts of q's window.
func NewCounts(q Query) Counts {
	by, from, to := q.Window()
	return Counts{ByStatus: map[Status]int{}, By: by, From: from.UTC(), To: to.UTC()}
}

// Add counts one order in status s.
func (c *Counts) Add(s Status) {
	if c.ByStatus == nil {
		c.ByStatus = map[Status]int{}
	}
	c.ByStatus[s]++
	c.Total++
}

// StatusCount is one status's count.
type StatusCount struct {
	Status Status
	N      int
}

// InOrder lists every status's count, none left out, in the order an
// order can reach them (Statuses); a status no order is in counts 0.
// A status outside Statuses (a newer build's) follows, by name.
func (c Counts) InOrder() []StatusCount {
	out := make([]StatusCount, 0, len(Statuses))
	for _, s := range Statuses {
		out = append(out, StatusCount{s, c.ByStatus[s]})
	}
	var others []StatusCount
	for s, n := range c.ByStatus {
		if !slices.Contains(Statuses, s) {
			others = append(others, StatusCount{s, n})
		}
	}
	slices.SortFunc(others, func(a, b StatusCount) int { return cmp.Compare(a.Status, b.Status) })
	return append(out, others...)
}

// Span says which orders were counted, by the window's time, in UTC:
// "created from 2026-11-26T00:00:00Z to 2026-11-27T00:00:00Z", "ended
// before …", "created at any time". A partial count's span starts at
// Through.
func (c Counts) Span() string {
	from := c.From
	if c.Partial {
		from = c.Through
	}
	at := func(t time.Time) string { return t.UTC().Format(time.RFC3339) }
	switch {
	case !from.IsZero() && !c.To.IsZero():
		return c.By + " from " + at(from) + " to " + at(c.To)
	case !from.IsZero():
		return c.By + " from " + at(from) + " on"
	case !c.To.IsZero():
		return c.By + " before " + at(c.To)
	}
	return c.By + " at any time"
}
