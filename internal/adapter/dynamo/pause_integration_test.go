package dynamo_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A pause is stored, made again (its start kept), read, listed and
// resumed; a resume of what is not paused is refused. No index, search,
// count or due read of the orders table ever sees its item.
func TestPauseIsStoredAndResumedAndSeenByNoOrderRead(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Second)
	pending := submitAs(t, w, testenv.Caller, "c-1")

	p, err := order.PlanPause(order.PauseRequest{Kind: order.PauseService, Name: "payment", For: time.Hour, Reason: "PSP maintenance", By: "arn:aws:iam::1:user/ops"}, ordertest.Built(timing), now)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := w.Store.Pause(ctx, p)
	if err != nil || !stored.On() || !stored.Since.Equal(now) || !stored.Until.Equal(now.Add(time.Hour)) || stored.By != p.By {
		t.Fatalf("pause = %+v, %v; want on since %s until an hour later", stored, err, now)
	}
	// Made again later, with a longer window: it keeps its start.
	again := p
	again.Since, again.Until, again.Reason = now.Add(time.Minute), now.Add(3*time.Hour), "PSP maintenance, longer"
	stored, err = w.Store.Pause(ctx, again)
	if err != nil || !stored.Since.Equal(now) || !stored.Until.Equal(again.Until) || stored.Reason != again.Reason {
		t.Fatalf("pause again = %+v, %v; want since %s kept, until %s", stored, err, now, again.Until)
	}
	read, err := w.Store.PauseOf(ctx, order.PauseService, "payment")
	if err != nil || read != stored {
		t.Fatalf("PauseOf = %+v, %v; want %+v", read, err, stored)
	}
	if never, err := w.Store.PauseOf(ctx, order.PauseService, "inventory"); err != nil || never.On() || never.Name != "inventory" {
		t.Fatalf("PauseOf a service never paused = %+v, %v; want not on", never, err)
	}
	all, err := w.Store.PausesOf(ctx, []string{"inventory", "payment"}, []string{"order"})
	if err != nil || len(all) != 3 || all[0].On() || !all[1].On() || all[2].On() || all[2].Kind != order.PauseWorkflow {
		t.Fatalf("PausesOf = %+v, %v; want payment alone on, in the order asked", all, err)
	}

	// No order read sees the pause's item.
	page, err := w.Store.Search(ctx, order.Query{Limit: order.MaxSearchLimit}, nil)
	if err != nil || len(page.Orders) != 1 || page.Orders[0].ID != pending {
		t.Fatalf("search = %+v, %v; want the one order", page.Orders, err)
	}
	counts, err := w.Store.Count(ctx, order.Query{}, 1000)
	if err != nil || counts.Total != 1 {
		t.Fatalf("count = %+v, %v; want 1 order", counts, err)
	}
	for shard := range w.Store.Shards() {
		due, _, err := w.Store.DueSteps(ctx, shard, now.AddDate(1, 0, 0), 100, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range due {
			if st.OrderID != pending {
				t.Fatalf("due index holds %q; want only the order", st.OrderID)
			}
		}
	}

	ended, err := w.Store.Resume(ctx, order.PauseService, "payment", "arn:aws:iam::1:user/ops", "done early")
	if err != nil || !ended.On() || !ended.Since.Equal(now) {
		t.Fatalf("resume = %+v, %v; want the pause that was on since %s", ended, err, now)
	}
	after, err := w.Store.PauseOf(ctx, order.PauseService, "payment")
	if err != nil || after.On() || after.ResumedBy != "arn:aws:iam::1:user/ops" || after.ResumeReason != "done early" || after.Resumed.IsZero() {
		t.Fatalf("after resume = %+v, %v; want not on, resumed by the operator", after, err)
	}
	if _, err := w.Store.Resume(ctx, order.PauseService, "payment", "x", ""); !errors.Is(err, order.ErrNotPaused) {
		t.Fatalf("resume again: %v; want ErrNotPaused", err)
	}
	// Paused again after a resume: a new start.
	p.Since, p.Until = now.Add(time.Hour), now.Add(2*time.Hour)
	if stored, err := w.Store.Pause(ctx, p); err != nil || !stored.Since.Equal(p.Since) || !stored.Resumed.IsZero() {
		t.Fatalf("pause after resume = %+v, %v; want a new start, no resume", stored, err)
	}
}
