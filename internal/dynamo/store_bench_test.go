package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"orderly/internal/dynamo"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/supervisor"
	"orderly/internal/testenv"
)

var benchWorkflow = order.OrderWorkflow(order.DefaultTiming)

// newBenchStore provisions throwaway tables and returns a store over them.
// The state table has no stream: nothing here reads it, and DynamoDB Local
// keeps every stream record of every table (deleted ones too) in one shared
// store that each later write to a streamed table scans, so thousands of
// streamed writes would slow every other user of the emulator.
func newBenchStore(b *testing.B) *dynamo.Store {
	b.Helper()
	cfg := testenv.AWS(b)
	catalog := resources.New(testenv.Stage(b), benchWorkflow.Agents())
	catalog.State.Stream = false
	stack, clients := testenv.Provision(b, cfg, catalog)
	return dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name, stack.Catalog.State.Name)
}

// createOrder writes a fresh order whose first step is Pending.
func createOrder(ctx context.Context, store *dynamo.Store, now time.Time) (string, error) {
	id := order.NewID()
	o := order.Order{ID: id, CustomerID: "c-bench", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}},
		Status: order.StatusPending, RequestHash: "bench", CreatedAt: now, UpdatedAt: now}
	return id, store.CreateOrder(ctx, o, benchWorkflow.NewStates(id, now))
}

// BenchmarkClaimStep measures the Scheduler's claim, one conditional
// UpdateItem: won on a fresh Pending step, and lost on a step another
// Scheduler already holds (the condition fails, ErrStale).
func BenchmarkClaimStep(b *testing.B) {
	store := newBenchStore(b)
	ctx := context.Background()
	first := benchWorkflow.Steps[0]

	b.Run("won", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			now := time.Now()
			id, err := createOrder(ctx, store, now)
			if err != nil {
				b.Fatalf("create order: %v", err)
			}
			b.StartTimer()
			st, err := store.ClaimStep(ctx, id, first.Name, "scheduler-bench", now.Add(first.Allowance), now)
			if err != nil || st.ProcessState != order.Processing || st.Attempt != 1 {
				b.Fatalf("ClaimStep() = %s attempt %d, %v; want Processing attempt 1", st.ProcessState, st.Attempt, err)
			}
		}
	})

	b.Run("lost", func(b *testing.B) {
		now := time.Now()
		id, err := createOrder(ctx, store, now)
		if err != nil {
			b.Fatalf("create order: %v", err)
		}
		if _, err := store.ClaimStep(ctx, id, first.Name, "scheduler-winner", now.Add(first.Allowance), now); err != nil {
			b.Fatalf("first claim: %v", err)
		}
		for b.Loop() {
			if _, err := store.ClaimStep(ctx, id, first.Name, "scheduler-bench", now.Add(first.Allowance), now); !errors.Is(err, order.ErrStale) {
				b.Fatalf("ClaimStep() on a held step: error %v, want ErrStale", err)
			}
		}
	})
}

// dueOrders is how many orders BenchmarkDueStepsQuery creates: each has
// one Pending step in the due index, spread over the index's shards, so
// the fullest shard holds about dueOrders/DueShards = 500 due items.
const dueOrders = 500 * resources.DueShards

// BenchmarkDueStepsQuery measures the Supervisor's query of one due-index
// shard holding about 500 due steps: once with the Supervisor's per-shard
// limit, once reading the whole shard.
func BenchmarkDueStepsQuery(b *testing.B) {
	store := newBenchStore(b)
	ctx := context.Background()
	now := time.Now()
	if err := createOrders(ctx, store, now, dueOrders); err != nil {
		b.Fatal(err)
	}
	// Every claim deadline has passed by then.
	later := now.Add(benchWorkflow.ClaimWithin + time.Second)

	shard, due := 0, 0
	for s := range store.Shards() {
		steps, err := store.DueSteps(ctx, s, later, dueOrders)
		if err != nil {
			b.Fatalf("count shard %d: %v", s, err)
		}
		if len(steps) > due {
			shard, due = s, len(steps)
		}
	}
	b.Logf("shard %d holds %d of %d due steps", shard, due, dueOrders)

	for _, limit := range []int{supervisor.PerShardLimit, 1000} {
		want := min(limit, due)
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				steps, err := store.DueSteps(ctx, shard, later, limit)
				if err != nil || len(steps) != want {
					b.Fatalf("DueSteps(shard %d, limit %d) = %d steps, %v; want %d", shard, limit, len(steps), err, want)
				}
			}
			b.ReportMetric(float64(due), "due-in-shard")
			b.ReportMetric(float64(want), "steps/op")
		})
	}
}

// createOrders writes n orders with a few writers in parallel.
func createOrders(ctx context.Context, store *dynamo.Store, now time.Time, n int) error {
	const writers = 8
	work := make(chan struct{}, n)
	for range n {
		work <- struct{}{}
	}
	close(work)
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for range writers {
		wg.Go(func() {
			for range work {
				if _, err := createOrder(ctx, store, now); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
					return
				}
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}
