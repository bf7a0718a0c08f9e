package ops_test

import (
	"context"
	"errors"
	"maps"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
)

// An operator counts yesterday's orders of one customer by status (the
// running ones' exact status read from their items) and pages through
// them; the other customers' and today's are not counted.
func TestCountAndSearchPages(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	yesterday, from := seedYesterday(t, w, stage, 5)
	q := order.Query{CustomerID: "c-1", CreatedFrom: from, CreatedTo: from.Add(24 * time.Hour), Limit: 2}

	c, err := stage.Count(ctx, q, 0)
	want := map[order.Status]int{order.StatusPending: 4, order.StatusCancelling: 1}
	if err != nil || !maps.Equal(c.ByStatus, want) || c.Total != 5 || c.Partial || c.By != order.WindowCreated || !c.From.Equal(from) {
		t.Fatalf("count of yesterday's orders of c-1: %+v, %v; want %v over yesterday", c, err, want)
	}

	var got []string
	var position []byte
	for pages := 1; ; pages++ {
		page, err := stage.SearchPage(ctx, q, position)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Orders) > q.Limit || pages > 5 {
			t.Fatalf("page %d: %d orders, limit %d", pages, len(page.Orders), q.Limit)
		}
		for _, o := range page.Orders {
			got = append(got, o.ID)
		}
		if position = page.Next; position == nil {
			break
		}
	}
	slices.Reverse(yesterday) // newest first
	if !slices.Equal(got, yesterday) {
		t.Errorf("paged through %v, want %v", got, yesterday)
	}
	if _, err := stage.SearchPage(ctx, q, []byte("[]")); !errors.Is(err, order.ErrInvalid) {
		t.Errorf("a position that is none of the stage's: %v, want ErrInvalid", err)
	}
}
