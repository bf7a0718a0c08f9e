package order_test

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
)

func TestQueryWindow(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name     string
		q        order.Query
		by       string
		from, to time.Time
	}{
		{"no range: created, unbounded", order.Query{}, order.WindowCreated, time.Time{}, time.Time{}},
		{"a created range", order.Query{CreatedFrom: day, CreatedTo: day.Add(24 * time.Hour)}, order.WindowCreated, day, day.Add(24 * time.Hour)},
		{"an ended range wins over a created one", order.Query{CreatedFrom: day, EndedTo: day.Add(time.Hour)}, order.WindowEnded, time.Time{}, day.Add(time.Hour)},
		{"an ended start alone", order.Query{EndedFrom: day}, order.WindowEnded, day, time.Time{}},
	}
	for _, tt := range tests {
		by, from, to := tt.q.Window()
		if by != tt.by || !from.Equal(tt.from) || !to.Equal(tt.to) {
			t.Errorf("%s: %s %v to %v, want %s %v to %v", tt.name, by, from, to, tt.by, tt.from, tt.to)
		}
	}
}

func TestCountsInOrder(t *testing.T) {
	c := order.NewCounts(order.Query{})
	for _, s := range []order.Status{order.StatusError, order.StatusPending, order.StatusError, "Paused", order.StatusProcessed, "Archived"} {
		c.Add(s)
	}
	if c.Total != 6 {
		t.Errorf("total %d, want 6", c.Total)
	}
	var got []string
	for _, sc := range c.InOrder() {
		got = append(got, fmt.Sprintf("%s=%d", sc.Status, sc.N))
	}
	want := []string{"Pending=1", "Processing=0", "Waiting=0", "Processed=1", "Compensating=0", "Failed=0", "Cancelling=0", "Cancelled=0", "Error=2",
		"Archived=1", "Paused=1"}
	if !slices.Equal(got, want) {
		t.Errorf("in order %v, want %v", got, want)
	}
	var zero order.Counts
	zero.Add(order.StatusFailed) // a zero Counts takes an order too
	if zero.ByStatus[order.StatusFailed] != 1 || zero.Total != 1 {
		t.Errorf("a zero Counts after Add: %+v", zero)
	}
}

func TestCountsSpan(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		c    order.Counts
		want string
	}{
		{order.NewCounts(order.Query{CreatedFrom: day, CreatedTo: day.Add(24 * time.Hour)}), "created from 2026-11-26T00:00:00Z to 2026-11-27T00:00:00Z"},
		{order.NewCounts(order.Query{EndedFrom: day.In(time.FixedZone("CET", 3600))}), "ended from 2026-11-26T00:00:00Z on"},
		{order.NewCounts(order.Query{EndedTo: day}), "ended before 2026-11-26T00:00:00Z"},
		{order.NewCounts(order.Query{}), "created at any time"},
		{order.Counts{By: order.WindowCreated, From: day, To: day.Add(24 * time.Hour), Partial: true, Through: day.Add(20 * time.Hour)},
			"created from 2026-11-26T20:00:00Z to 2026-11-27T00:00:00Z"},
		{order.Counts{By: order.WindowCreated, Partial: true, Through: day}, "created from 2026-11-26T00:00:00Z on"},
	}
	for _, tt := range tests {
		if got := tt.c.Span(); got != tt.want {
			t.Errorf("%+v: span %q, want %q", tt.c, got, tt.want)
		}
	}
}

// A count's query without a time is bounded to the last day's orders; one
// with a time is left as it is.
func TestQueryBounded(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	day := now.Add(-order.DefaultCountWindow)
	tests := []struct {
		name      string
		q         order.Query
		want      order.Query
		defaulted bool
	}{
		{"no time: the last day", order.Query{CustomerID: "c-1"}, order.Query{CustomerID: "c-1", CreatedFrom: day}, true},
		{"created before", order.Query{CreatedTo: now}, order.Query{CreatedTo: now}, false},
		{"ended since", order.Query{EndedFrom: day}, order.Query{EndedFrom: day}, false},
	}
	for _, tt := range tests {
		if got, defaulted := tt.q.Bounded(now); got != tt.want || defaulted != tt.defaulted {
			t.Errorf("%s: %+v, %v; want %+v, %v", tt.name, got, defaulted, tt.want, tt.defaulted)
		}
	}
}
