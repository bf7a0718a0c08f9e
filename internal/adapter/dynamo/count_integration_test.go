package dynamo_test

import (
	"context"
	"fmt"
	"maps"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A count tallies exactly the orders its query matches, by status (the
// running ones' read from their items), over the query's window; with a
// bound too small for the window it stops, Partial, and is exact from
// Through on, having evaluated no more than the bound.
func TestCountCountsWhatTheQueryMatches(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	type want struct {
		o     order.Order
		ended time.Time
	}
	var orders []want
	start := w.Clock.Now()
	for i := range 30 {
		id := submitAs(t, w, testenv.Caller, fmt.Sprintf("c-%d", i%2))
		o, err := w.Store.Order(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		wt := want{o: o}
		w.Clock.Advance(time.Second)
		first := w.Step(t, id, ordertest.StepReserveInventory)
		switch i % 4 {
		case 0: // Error
			if _, _, err := w.Store.Apply(ctx, order.FailReply(first, "declined", w.Clock.Now())); err != nil {
				t.Fatal(err)
			}
			wt.o.Status, wt.ended = order.StatusError, w.Clock.Now()
		case 1: // Processed
			for st := first; ; {
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
		case 2: // Processing: its first step done
			o, _, err := w.Store.Apply(ctx, w.Workflow.Completion(first, "ref", nil, "s1", w.Clock.Now()).Transition(w.Clock.Now()))
			if err != nil || o.Status != order.StatusProcessing {
				t.Fatalf("complete the first step: %s, %v", o.Status, err)
			}
			wt.o.Status = order.StatusProcessing
		}
		orders = append(orders, wt)
		w.Clock.Advance(time.Second)
	}
	// The table keeps milliseconds.
	mid := start.Add(20 * time.Second).Truncate(time.Millisecond)
	queries := map[string]order.Query{
		"every order":                          {},
		"one customer's":                       {CustomerID: "c-1"},
		"one customer's, in a created window":  {CustomerID: "c-0", CreatedFrom: mid, CreatedTo: mid.Add(30 * time.Second)},
		"ended in a window":                    {EndedFrom: start, EndedTo: mid},
		"ended, one customer's":                {CustomerID: "c-0", EndedFrom: start},
		"a status and a limit are not filters": {Status: order.StatusError, Limit: 3, CustomerID: "c-1"},
		"of another workflow":                  {Workflow: "checkout"},
	}
	for name, q := range queries {
		// Every shard is read at least once, so a bound under 16 is 16.
		for _, budget := range []int{0, 1, 20, 40} {
			t.Run(fmt.Sprintf("%s, at most %d", name, budget), func(t *testing.T) {
				got, err := w.Store.Count(ctx, q, budget)
				if err != nil {
					t.Fatal(err)
				}
				if bound := max(budget, resources.DueShards); budget > 0 && got.Evaluated > bound {
					t.Errorf("evaluated %d index items, over the bound %d", got.Evaluated, bound)
				}
				by, from, to := q.Window()
				if got.By != by || !got.From.Equal(from) || !got.To.Equal(to) {
					t.Errorf("window %s %v to %v, want %s %v to %v", got.By, got.From, got.To, by, from, to)
				}
				all := q
				all.Status = ""
				wanted := order.NewCounts(all)
				for _, o := range orders {
					at := o.o.CreatedAt
					if by == order.WindowEnded {
						at = o.ended
					}
					if all.Matches(o.o, o.ended) && (!got.Partial || !at.Before(got.Through)) {
						wanted.Add(o.o.Status)
					}
				}
				if !maps.Equal(got.ByStatus, wanted.ByStatus) || got.Total != wanted.Total {
					t.Errorf("counted %v (%d), want %v (%d); partial %t through %v", got.ByStatus, got.Total, wanted.ByStatus, wanted.Total, got.Partial, got.Through)
				}
				if budget == 0 && got.Partial {
					t.Errorf("the default bound stopped a count of %d orders at %v", len(orders), got.Through)
				}
			})
		}
	}
	if c, err := w.Store.Count(ctx, order.Query{}, 1); err != nil || !c.Partial || c.Through.IsZero() {
		t.Errorf("a count of 30 orders that may read 16 index items: %+v, %v; want it partial, with where it stopped", c, err)
	}
}

// A count reads a bounded number of running orders' statuses, newest
// first: past them it is Partial, exact from Through on. And what a count
// costs, in read units, as DynamoDB Local reports them.
func TestCountIsBoundedAndWhatItCosts(t *testing.T) {
	cfg := testenv.AWS(t)
	catalog := resources.New(testenv.Stage(t), ordertest.OrderWorkflow(order.DefaultTiming).Agents())
	catalog.Orders.Stream = false // thousands of writes no test reads from the stream
	stack, clients := testenv.Provision(t, cfg, catalog)
	m := &meter{Client: clients.DynamoDB}
	m.reset()
	store := dynamo.NewStore(m, stack.Catalog.Orders.Name)
	writer := dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name)
	ctx := context.Background()

	// 2,000 orders created a millisecond apart; the newest 400 of them
	// went into Error an hour later, a millisecond apart too.
	const n, failed = 2000, 400
	start := time.Now().UTC().Truncate(time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for writerID := range 8 {
		wg.Go(func() {
			for i := writerID; i < n; i += 8 {
				st, err := createOrder(ctx, writer, start.Add(time.Duration(i)*time.Millisecond))
				if err == nil && i >= n-failed {
					at := start.Add(time.Hour + time.Duration(i)*time.Millisecond)
					var claimed order.StepState
					if _, claimed, err = writer.Apply(ctx, order.Claim(st, "s1", at.Add(time.Minute), at)); err == nil {
						_, _, err = writer.Apply(ctx, order.FailReply(claimed, "declined", at))
					}
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	window := order.Query{CreatedFrom: start, CreatedTo: start.Add(time.Minute)}

	m.reset()
	all, err := store.Count(ctx, window, 0)
	if err != nil || all.Partial || all.ByStatus[order.StatusPending] != n-failed || all.ByStatus[order.StatusError] != failed || all.Evaluated != n {
		t.Fatalf("count of %d orders: %+v, %v; want %d Pending, %d Error, every index item read once", n, all, err, n-failed, failed)
	}
	t.Logf("count of %d orders created in a window (%d running): %s", n, n-failed, m)

	m.reset()
	ended, err := store.Count(ctx, order.Query{EndedFrom: start}, 0)
	if err != nil || ended.Partial || ended.Total != failed || ended.ByStatus[order.StatusError] != failed {
		t.Fatalf("count of the %d ended: %+v, %v", failed, ended, err)
	}
	t.Logf("count of %d orders ended in a window (none running): %s", failed, m)

	// A bound of 200 index items over the ended orders: it stops, and
	// counts exactly those that ended from where it got down to.
	m.reset()
	part, err := store.Count(ctx, order.Query{EndedFrom: start}, 200)
	if err != nil || !part.Partial || part.Evaluated > 200 {
		t.Fatalf("count of the ended at most 200: %+v, %v; want it partial", part, err)
	}
	endedFrom := int(part.Through.Sub(start.Add(time.Hour)) / time.Millisecond) // the oldest order it counts
	if part.Total != n-endedFrom || part.ByStatus[order.StatusError] != part.Total {
		t.Errorf("count of the ended at most 200, through order %d: %v; want the %d from it on, in Error", endedFrom, part.ByStatus, n-endedFrom)
	}
	t.Logf("count of the ended bounded at 200 index items: %d counted of %d evaluated; %s", part.Total, part.Evaluated, m)

	// A bound of 1,000 index items over them all: it reads the 100
	// newest running orders' statuses (1,000/20 is less than a batch).
	m.reset()
	half, err := store.Count(ctx, window, 1000)
	if err != nil || !half.Partial || half.Evaluated > 1000 {
		t.Fatalf("count at most 1,000: %+v, %v; want it partial", half, err)
	}
	from := int(half.Through.Sub(start) / time.Millisecond) // the oldest order it counts
	if half.ByStatus[order.StatusError] != failed || half.ByStatus[order.StatusPending] != n-failed-from || half.ByStatus[order.StatusPending] > 100 {
		t.Errorf("count at most 1,000, through order %d: %v; want %d Error and %d Pending (exact from Through), at most 100",
			from, half.ByStatus, failed, n-failed-from)
	}
	t.Logf("count bounded at 1,000 index items: %d counted of %d evaluated; %s", half.Total, half.Evaluated, m)

	// A bound of 3,000 reads every index item, but only 150 running
	// orders' statuses (3,000/20): the 150 newest, and every order in
	// Error, which the index tells.
	capped, err := store.Count(ctx, window, 3000)
	if err != nil || !capped.Partial || capped.ByStatus[order.StatusPending] != 150 || capped.ByStatus[order.StatusError] != failed || capped.Evaluated != n {
		t.Fatalf("count that may read 150 statuses: %+v, %v; want it partial with 150 Pending and %d Error, every index item read", capped, err, failed)
	}
	if want := start.Add(time.Duration(n-failed-150) * time.Millisecond); !capped.Through.Equal(want) {
		t.Errorf("it counts from %v, want %v: the 150th newest running order", capped.Through, want)
	}
}

// meter is a DynamoDB client that asks every read for the capacity it
// consumed and adds it up, by operation.
type meter struct {
	dynamo.Client
	mu    sync.Mutex
	units map[string]float64
	calls map[string]int
}

func (m *meter) reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.units, m.calls = map[string]float64{}, map[string]int{}
}

func (m *meter) add(op string, cs ...types.ConsumedCapacity) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[op]++
	for _, c := range cs {
		if c.CapacityUnits != nil {
			m.units[op] += *c.CapacityUnits
		}
	}
}

func (m *meter) String() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return fmt.Sprintf("%d Query calls, %.1f read units; %d BatchGetItem calls, %.1f read units",
		m.calls["Query"], m.units["Query"], m.calls["BatchGetItem"], m.units["BatchGetItem"])
}

func (m *meter) Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.Query(ctx, in, optFns...)
	if err == nil && out.ConsumedCapacity != nil {
		m.add("Query", *out.ConsumedCapacity)
	} else if err == nil {
		m.add("Query")
	}
	return out, err
}

func (m *meter) BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error) {
	in.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
	out, err := m.Client.BatchGetItem(ctx, in, optFns...)
	if err == nil {
		m.add("BatchGetItem", out.ConsumedCapacity...)
	}
	return out, err
}
