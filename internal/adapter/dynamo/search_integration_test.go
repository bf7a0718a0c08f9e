package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A search lists exactly the orders its query matches, newest first, page
// by page, from the indexes alone: by customer, caller, status (ended or
// running), workflow, and when they were created or ended.
func TestSearchListsWhatTheQueryMatches(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	type want struct {
		o     order.Order
		ended time.Time
	}
	var orders []*want
	start := w.Clock.Now()
	for i := range 36 {
		caller := testenv.Caller
		if i%5 == 0 {
			caller = "AROAOTHERCALLER000001:someone"
		}
		customer := fmt.Sprintf("c-%d", i%3)
		id := submitAs(t, w, caller, customer)
		o, err := w.Store.Order(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wt := &want{o: o}
		orders = append(orders, wt)
		w.Clock.Advance(time.Second)
		first := w.Step(t, id, ordertest.StepReserveInventory)
		switch {
		case i%3 == 0: // into Error
			if _, _, err := w.Store.Apply(ctx, order.FailReply(first, "declined", w.Clock.Now())); err != nil {
				t.Fatal(err)
			}
			wt.o.Status, wt.ended = order.StatusError, w.Clock.Now()
		case i%4 == 1: // Processed, step by step
			st := first
			for {
				o, next, err := w.Store.Apply(ctx, w.Workflow.Completion(st, "ref", nil, "s1", w.Clock.Now()).Transition(w.Clock.Now()))
				if err != nil {
					t.Fatal(err)
				}
				if o.Status == order.StatusProcessed {
					break
				}
				st = next
			}
			wt.o.Status, wt.ended = order.StatusProcessed, w.Clock.Now()
		}
		w.Clock.Advance(time.Second)
	}
	// The order of one listing: newest first.
	slices.SortFunc(orders, func(a, b *want) int { return b.o.CreatedAt.Compare(a.o.CreatedAt) })
	mid := start.Add(12 * time.Second)
	queries := map[string]order.Query{
		"every order":                   {},
		"one customer's":                {CustomerID: "c-2"},
		"one customer's, in a window":   {CustomerID: "c-1", CreatedFrom: mid, CreatedTo: mid.Add(30 * time.Second)},
		"one caller's":                  {Caller: testenv.Caller},
		"in Error":                      {Status: order.StatusError},
		"running (Pending)":             {Status: order.StatusPending},
		"Processed, ended in a window":  {Status: order.StatusProcessed, EndedFrom: mid, EndedTo: mid.Add(40 * time.Second)},
		"ended in a window, any status": {EndedFrom: start, EndedTo: mid},
		"of a workflow":                 {Workflow: w.Workflow.Name},
		"of another workflow":           {Workflow: "checkout"},
	}
	// Small reads and budgets leave shards part-read between pages (their
	// frontier): the merge lists nothing older than a shard's unread
	// items, and pages end short of their limit.
	small := w.Store.WithSearchRead(1, 2)
	for name, q := range queries {
		for _, limit := range []int{1, 4, order.MaxSearchLimit} {
			for _, store := range []*dynamo.Store{w.Store, small} {
				t.Run(fmt.Sprintf("%s, %d a page", name, limit), func(t *testing.T) {
					q.Limit = limit
					var wanted, got []string
					for _, o := range orders {
						if q.Matches(o.o, o.ended) {
							wanted = append(wanted, o.o.ID)
						}
					}
					if len(wanted) == 0 && q.Workflow != "checkout" {
						t.Fatal("the query matches no order: it would prove nothing")
					}
					var position []byte
					for pages := 0; ; pages++ {
						if pages > len(orders)+2 {
							t.Fatalf("%d pages and still a next one", pages)
						}
						page, err := store.Search(ctx, q, position)
						if err != nil {
							t.Fatal(err)
						}
						if len(page.Orders) > limit {
							t.Fatalf("a page of %d, over the limit %d", len(page.Orders), limit)
						}
						for _, s := range page.Orders {
							got = append(got, s.ID)
						}
						if position = page.Next; position == nil {
							break
						}
					}
					if !slices.Equal(got, wanted) {
						t.Errorf("listed %d orders\n%v\nwant %d\n%v", len(got), got, len(wanted), wanted)
					}
				})
			}
		}
	}
	if _, err := w.Store.Search(ctx, order.Query{Limit: 5}, []byte(`{"not":"a position"}`)); !errors.Is(err, order.ErrInvalid) {
		t.Errorf("an altered position: %v, want ErrInvalid", err)
	}
}

// submitAs posts an order of customer as caller.
func submitAs(t *testing.T, w *testenv.World, caller, customer string) string {
	t.Helper()
	body, _ := json.Marshal(ordertest.Submission{CustomerID: customer, Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: string(body),
		Headers: map[string]string{"Content-Type": "application/json"}, RequestContext: testenv.As(caller),
	})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: status %d, error %v, body %s", resp.StatusCode, err, resp.Body)
	}
	var out struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		t.Fatal(err)
	}
	return out.OrderID
}

// An operator's compensate of an order in Error with nothing to undo ends
// it in the same write that takes it out of Error: it is listed as ended
// Failed, not as running, and the write is one DynamoDB takes.
func TestCompensatingAnErrorWithNothingToUndoListsItFailed(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-9", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	first := w.Step(t, id, ordertest.StepReserveInventory)
	_, stuck, err := w.Store.Apply(ctx, order.FailReply(first, "declined", w.Clock.Now()))
	if err != nil {
		t.Fatal(err)
	}
	u := w.Workflow.UndoFromError(stuck, "redriven by an operator (compensate)", w.Clock.Now())
	u.Plan = nil // a first step without an undo
	tr, err := u.Transition(w.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	o, _, err := w.Store.Apply(ctx, tr)
	if err != nil || o.Status != order.StatusFailed {
		t.Fatalf("compensate: %s, %v; want the order Failed", o.Status, err)
	}
	page, err := w.Store.Search(ctx, order.Query{CustomerID: "c-9", Status: order.StatusFailed, Limit: 5}, nil)
	if err != nil || len(page.Orders) != 1 || page.Orders[0].ID != id || page.Orders[0].EndedAt.IsZero() {
		t.Fatalf("search for it Failed: %+v, %v; want it, ended", page.Orders, err)
	}
}

// Orders submitted in one millisecond are each listed once, whatever the
// page size: DynamoDB orders equal times in its own way, and each shard
// goes on from where DynamoDB left it, not from a place of our order.
func TestSearchListsOrdersOfOneInstantOnceEach(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	want := map[string]bool{}
	for range 48 {
		want[w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})] = true
	}
	for _, limit := range []int{1, 2, 5, 100} {
		t.Run(fmt.Sprintf("limit %d", limit), func(t *testing.T) {
			seen := map[string]int{}
			var position []byte
			for pages := 0; ; pages++ {
				if pages > 200 {
					t.Fatal("more than 200 pages")
				}
				page, err := w.Store.Search(ctx, order.Query{CustomerID: "c-1", Limit: limit}, position)
				if err != nil {
					t.Fatal(err)
				}
				for _, o := range page.Orders {
					seen[o.ID]++
				}
				if position = page.Next; position == nil {
					break
				}
			}
			for id, n := range seen {
				if n != 1 || !want[id] {
					t.Errorf("order %s listed %d times (one of the 48: %v)", id, n, want[id])
				}
			}
			if len(seen) != len(want) {
				t.Errorf("listed %d of the 48 orders", len(seen))
			}
		})
	}
}
