package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var benchWorkflow = ordertest.OrderWorkflow(order.DefaultTiming)

// newBenchStore provisions a throwaway table and returns a store over it.
// The table has no stream: nothing here reads it, and DynamoDB Local
// keeps every stream record of every table (deleted ones too) in one shared
// store that each later write to a streamed table scans, so thousands of
// streamed writes would slow every other user of the emulator.
func newBenchStore(b *testing.B) *dynamo.Store {
	b.Helper()
	cfg := testenv.AWS(b)
	catalog := resources.New(testenv.Stage(b), benchWorkflow.Agents())
	catalog.Orders.Stream = false
	stack, clients := testenv.Provision(b, cfg, catalog)
	return dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name)
}

// createOrder writes a fresh order whose first step waits for a claim, as
// after a retry.
func createOrder(ctx context.Context, store *dynamo.Store, now time.Time) (order.StepState, error) {
	id := order.NewID()
	o := order.Order{ID: id,
		Status: order.StatusPending, RequestHash: "bench", KeyNonce: order.NewKeyNonce(), CreatedAt: now, UpdatedAt: now}.WithInput(order.LegacyInput("c-bench", []order.Line{{SKU: "BOOK-1", Quantity: 1}}, ""))
	steps := benchWorkflow.NewStates(id, "", now)
	steps[0].ProcessState, steps[0].Attempt, steps[0].CompleteBy = order.Pending, 0, now.Add(benchWorkflow.ClaimWithin)
	_, err := store.CreateOrder(ctx, o, steps)
	return steps[0], err
}

// BenchmarkClaimStep measures the Scheduler's claim from the stream, one
// conditional UpdateItem: won on a Pending step, and lost on a step another
// Scheduler already holds (the condition fails, ErrStale).
func BenchmarkClaimStep(b *testing.B) {
	store := newBenchStore(b)
	ctx := context.Background()
	first := benchWorkflow.Steps[0]

	b.Run("won", func(b *testing.B) {
		for b.Loop() {
			b.StopTimer()
			now := time.Now()
			seen, err := createOrder(ctx, store, now)
			if err != nil {
				b.Fatalf("create order: %v", err)
			}
			b.StartTimer()
			_, st, err := store.Apply(ctx, order.Claim(seen, "scheduler-bench", now.Add(first.Allowance), now))
			if err != nil || st.ProcessState != order.Processing || st.Attempt != 1 {
				b.Fatalf("Apply(Claim) = %s attempt %d, %v; want Processing attempt 1", st.ProcessState, st.Attempt, err)
			}
		}
	})

	b.Run("lost", func(b *testing.B) {
		now := time.Now()
		seen, err := createOrder(ctx, store, now)
		if err != nil {
			b.Fatalf("create order: %v", err)
		}
		if _, _, err := store.Apply(ctx, order.Claim(seen, "scheduler-winner", now.Add(first.Allowance), now)); err != nil {
			b.Fatalf("first claim: %v", err)
		}
		for b.Loop() {
			if _, _, err := store.Apply(ctx, order.Claim(seen, "scheduler-bench", now.Add(first.Allowance), now)); !errors.Is(err, order.ErrStale) {
				b.Fatalf("Apply(Claim) on a held step: error %v, want ErrStale", err)
			}
		}
	})
}

// BenchmarkCompleteStep measures the critical path's one write per step: a
// success reply applied together with the claim of the next step.
func BenchmarkCompleteStep(b *testing.B) {
	store := newBenchStore(b)
	ctx := context.Background()
	next := benchWorkflow.Steps[1]
	for b.Loop() {
		b.StopTimer()
		now := time.Now()
		seen, err := createOrder(ctx, store, now)
		if err != nil {
			b.Fatalf("create order: %v", err)
		}
		_, claimed, err := store.Apply(ctx, order.Claim(seen, "scheduler-bench", now.Add(benchWorkflow.Steps[0].Allowance), now))
		if err != nil {
			b.Fatalf("claim: %v", err)
		}
		b.StartTimer()
		// As the Scheduler decides it: one write, which lands.
		_, st, err := store.Apply(ctx, benchWorkflow.Completion(claimed, "ref", nil, "scheduler-bench", now).Transition(now))
		if err != nil || st.Step != next.Name || st.ProcessState != order.Processing {
			b.Fatalf("complete: Apply() claimed %s %s, %v; want %s Processing", st.Step, st.ProcessState, err, next.Name)
		}
	}
}

// dueOrders is how many orders BenchmarkDueStepsQuery creates: each has
// one Pending step in the due index, spread over the index's shards, so
// the fullest shard holds about dueOrders/DueShards = 500 due items.
const dueOrders = 500 * resources.DueShards

// BenchmarkDueStepsQuery measures the Supervisor's read of one page of a
// due-index shard holding about 500 due orders: the keys-only Query and
// the consistent BatchGetItem calls that read the orders, with the
// Supervisor's page size and with a page of the whole shard.
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
		steps, _, err := store.DueSteps(ctx, s, later, dueOrders, nil)
		if err != nil {
			b.Fatalf("count shard %d: %v", s, err)
		}
		if len(steps) > due {
			shard, due = s, len(steps)
		}
	}
	b.Logf("shard %d holds %d of %d due steps", shard, due, dueOrders)

	for _, limit := range []int{supervisor.PageSize, 1000} {
		want := min(limit, due)
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			for b.Loop() {
				steps, _, err := store.DueSteps(ctx, shard, later, limit, nil)
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
