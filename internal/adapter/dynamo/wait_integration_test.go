package dynamo_test

import (
	"context"
	"encoding/json"
	"maps"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// Orders whose step waits are found by status Waiting and counted as
// Waiting, like any running status; one whose wait ended is Processing.
func TestWaitingOrdersAreFoundAndCounted(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	start := w.Clock.Now()
	pending := submitAs(t, w, testenv.Caller, "c-1")
	wf := ordertest.Timed(w.Workflow, 0, time.Hour)
	var waiting []string
	for range 3 {
		w.Clock.Advance(time.Second)
		now := w.Clock.Now().Truncate(time.Millisecond)
		o := order.Order{ID: order.NewID(), Workflow: wf.Name, Version: wf.Version, KeyNonce: order.NewKeyNonce(),
			Caller: testenv.Caller, CreatedAt: now, UpdatedAt: now}.WithInput(json.RawMessage(`{"customerId":"c-1"}`))
		states := wf.NewStates(o.ID, "", now)
		o.Status = wf.StartStatus(states)
		if _, err := w.Store.CreateOrder(ctx, o, states); err != nil {
			t.Fatal(err)
		}
		waiting = append(waiting, o.ID)
	}
	// The oldest one's wait ends: it runs on, Processing.
	ended := waiting[0]
	waiting = waiting[1:]
	after := w.Clock.Now().Add(time.Hour + time.Minute)
	st := w.Step(t, ended, ordertest.StepCoolOff)
	if o, _, err := w.Store.Apply(ctx, wf.WaitEnded(st, after).Transition(after)); err != nil || o.Status != order.StatusProcessing {
		t.Fatalf("end the wait: %s, %v; want Processing", o.Status, err)
	}
	for _, tt := range []struct {
		status order.Status
		want   []string
	}{
		{order.StatusWaiting, waiting},
		{order.StatusProcessing, []string{ended}},
		{order.StatusPending, []string{pending}},
	} {
		t.Run("search "+string(tt.status), func(t *testing.T) {
			for _, limit := range []int{1, order.MaxSearchLimit} {
				var got []string
				var position []byte
				for pages := 0; pages < 10; pages++ {
					page, err := w.Store.Search(ctx, order.Query{Status: tt.status, CustomerID: "c-1", Limit: limit}, position)
					if err != nil {
						t.Fatal(err)
					}
					for _, s := range page.Orders {
						if s.Status != tt.status {
							t.Errorf("listed %s as %s, want %s", s.ID, s.Status, tt.status)
						}
						got = append(got, s.ID)
					}
					if position = page.Next; position == nil {
						break
					}
				}
				if !slices.Equal(slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(tt.want))) {
					t.Errorf("%d a page: found %v, want %v", limit, got, tt.want)
				}
			}
		})
	}
	counts, err := w.Store.Count(ctx, order.Query{CreatedFrom: start.Add(-time.Second)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[order.Status]int{order.StatusWaiting: 2, order.StatusProcessing: 1, order.StatusPending: 1}
	if !maps.Equal(counts.ByStatus, want) || counts.Total != 4 || counts.Partial {
		t.Errorf("counts %+v, want %v", counts, want)
	}
	if in := counts.InOrder(); !slices.ContainsFunc(in, func(c order.StatusCount) bool { return c.Status == order.StatusWaiting && c.N == 2 }) {
		t.Errorf("counts in order %v: want Waiting 2 among them", in)
	}
}
