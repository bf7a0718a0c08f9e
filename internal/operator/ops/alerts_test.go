package ops

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
)

// fakeAlerts is the history's alert index: alerts newest first, read as
// the real one reads them, up to a limit, whatever their kind.
type fakeAlerts struct {
	alerts []order.Alert
	reads  []int
}

func (f *fakeAlerts) Alerts(_ context.Context, since, _ time.Time, limit int) ([]order.Alert, error) {
	f.reads = append(f.reads, limit)
	var out []order.Alert
	for _, a := range f.alerts {
		if len(out) == limit {
			break
		}
		if !a.At.Before(since) {
			out = append(out, a)
		}
	}
	return out, nil
}

// index returns alerts of the given kinds, newest first, each named by its
// position (order "0" is the newest).
func index(now time.Time, kinds ...order.AlertKind) []order.Alert {
	out := make([]order.Alert, len(kinds))
	for i, k := range kinds {
		out[i] = order.Alert{Kind: k, OrderID: fmt.Sprint(i), At: now.Add(-time.Duration(i) * time.Minute)}
	}
	return out
}

// --kind is kept before --max counts: with the newest alerts of other
// kinds, up to max alerts of the kind asked for are still listed.
func TestAlertsOfKindFiltersBeforeTheLimit(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	const (
		failed = order.AlertStepFailed
		undo   = order.AlertUndoFailed
	)
	mixed := index(now, failed, failed, failed, undo, failed, undo, undo, failed)
	tests := []struct {
		name  string
		kind  order.AlertKind
		limit int
		want  []string
	}{
		{"the kind after others", undo, 2, []string{"3", "5"}},
		{"every one of the kind", undo, 10, []string{"3", "5", "6"}},
		{"exactly the limit", undo, 3, []string{"3", "5", "6"}},
		{"any kind", "", 3, []string{"0", "1", "2"}},
		{"a kind with none", order.AlertUndoTimedOut, 5, nil},
		{"no limit", undo, 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := &fakeAlerts{alerts: mixed}
			got, err := alertsOfKind(context.Background(), h, now.Add(-time.Hour), now, tt.kind, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, a := range got {
				ids = append(ids, a.OrderID)
				if tt.kind != "" && a.Kind != tt.kind {
					t.Errorf("alert of order %s is %s, want %s", a.OrderID, a.Kind, tt.kind)
				}
			}
			if !slices.Equal(ids, tt.want) {
				t.Errorf("orders %v (reads of %v), want %v", ids, h.reads, tt.want)
			}
		})
	}
}

// The reads grow by doubling, so a rare kind costs a few reads, not one
// per alert.
func TestAlertsOfKindReadsTwiceAsManyEachTime(t *testing.T) {
	now := time.Date(2026, 1, 2, 12, 0, 0, 0, time.UTC)
	kinds := make([]order.AlertKind, 100)
	for i := range kinds {
		kinds[i] = order.AlertStepFailed
	}
	kinds[99] = order.AlertUndoFailed
	h := &fakeAlerts{alerts: index(now, kinds...)}
	got, err := alertsOfKind(context.Background(), h, now.Add(-time.Hour*3), now, order.AlertUndoFailed, 5)
	if err != nil || len(got) != 1 || got[0].OrderID != "99" {
		t.Fatalf("%+v, %v; want the one UndoFailed alert, of order 99", got, err)
	}
	if want := []int{5, 10, 20, 40, 80, 160}; !slices.Equal(h.reads, want) {
		t.Errorf("reads of %v, want %v", h.reads, want)
	}
}
