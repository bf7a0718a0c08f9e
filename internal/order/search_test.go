package order_test

import (
	"testing"
	"time"

	"orderly/internal/order"
)

func TestQueryMatches(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	o := order.Order{ID: "o-1", Caller: "alice", CustomerID: "c-1", Workflow: "order", Version: "2", Status: order.StatusProcessed, CreatedAt: day.Add(time.Hour)}
	ended := day.Add(2 * time.Hour)
	tests := []struct {
		name  string
		q     order.Query
		ended time.Time
		want  bool
	}{
		{"no filter", order.Query{}, ended, true},
		{"its caller, customer, workflow, version and status", order.Query{Caller: "alice", CustomerID: "c-1", Workflow: "order", Version: "2", Status: order.StatusProcessed}, ended, true},
		{"another caller's", order.Query{Caller: "bob"}, ended, false},
		{"another customer", order.Query{CustomerID: "c-2"}, ended, false},
		{"another status", order.Query{Status: order.StatusFailed}, ended, false},
		{"created in the window", order.Query{CreatedFrom: day, CreatedTo: day.Add(24 * time.Hour)}, ended, true},
		{"created at the window's end (exclusive)", order.Query{CreatedTo: day.Add(time.Hour)}, ended, false},
		{"created at the window's start (inclusive)", order.Query{CreatedFrom: day.Add(time.Hour)}, ended, true},
		{"ended in the window", order.Query{EndedFrom: day, EndedTo: day.Add(3 * time.Hour)}, ended, true},
		{"ended after the window", order.Query{EndedTo: day.Add(time.Hour)}, ended, false},
		{"still running, an end asked", order.Query{EndedFrom: day}, time.Time{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.q.Matches(o, tt.ended); got != tt.want {
				t.Errorf("matches %v, want %v", got, tt.want)
			}
		})
	}
}

// Two queries that differ have different keys, whatever their values
// hold: a page token of one does not continue the other.
func TestQueryKey(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	pairs := [][2]order.Query{
		{{Status: order.StatusError}, {Status: order.StatusFailed}},
		{{Caller: "a"}, {}},
		{{CustomerID: "x\x1fy", Workflow: "z", Version: "v"}, {CustomerID: "x", Workflow: "y\x1fz", Version: "v"}},
		{{CustomerID: "x\x1fy", Workflow: "z", Version: "v"}, {CustomerID: "x", Workflow: "y", Version: "z\x1fv"}},
		{{CustomerID: `a","b`}, {CustomerID: "a", Workflow: "b"}},
		{{CreatedFrom: day}, {EndedFrom: day}},
		{{Limit: 20}, {Limit: 21}},
	}
	for _, p := range pairs {
		if p[0].Key() == p[1].Key() {
			t.Errorf("%+v and %+v share the key %q", p[0], p[1], p[0].Key())
		}
	}
	a, b := order.Query{CustomerID: "c", CreatedFrom: day, Limit: 5}, order.Query{CustomerID: "c", CreatedFrom: day.In(time.FixedZone("CET", 3600)), Limit: 5}
	if a.Key() != b.Key() {
		t.Errorf("one query, two keys: %q and %q", a.Key(), b.Key())
	}
}
