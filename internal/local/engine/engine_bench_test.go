package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// BenchmarkOrderEndToEnd measures orders from POST /orders to Processed
// through every actor of one running engine: API, stream, Schedulers,
// request queues, agents calling the simulator, response queue. ns/op is
// wall time per order with the sub-benchmark's number of orders in flight:
// one alone shows the critical path, eight show it under contention. Latency is measured
// from just before the POST to the order item's UpdatedAt, which the
// Scheduler sets in the same write that makes the order Processed,
// so the polling interval does not blur it.
func BenchmarkOrderEndToEnd(b *testing.B) {
	for _, inFlight := range []int{1, 8} {
		b.Run(fmt.Sprintf("in-flight-%d", inFlight), func(b *testing.B) { benchmarkOrders(b, inFlight) })
	}
}

func benchmarkOrders(b *testing.B, ordersInFlight int) {
	// The default timing: with several orders in flight on a loaded
	// emulator, enginetest.Fast's one-second allowance would turn slowness into
	// timeouts and retries and measure those instead.
	e := start(b, func(c *engine.Config) {
		c.Timing, c.SupervisorEvery = order.DefaultTiming, engine.DefaultSupervisorEvery
	})
	ctx := context.Background()
	sub := ordertest.Submission{CustomerID: "c-bench", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}
	latencies := make([]time.Duration, b.N)
	processedAt := make([]time.Time, b.N)
	next := make(chan int)
	var wg sync.WaitGroup

	b.ResetTimer()
	began := time.Now()
	for range ordersInFlight {
		wg.Go(func() {
			for i := range next {
				submitted := time.Now()
				id, err := submitOrder(e.URL(), sub)
				if err != nil {
					b.Error(err)
					continue
				}
				done, err := awaitProcessed(ctx, e.Engine, id, time.Minute)
				if err != nil {
					b.Error(err)
					continue
				}
				latencies[i], processedAt[i] = done.Sub(submitted), done
			}
		})
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	b.StopTimer()
	if b.Failed() {
		return
	}

	slices.Sort(latencies)
	var total time.Duration
	for _, l := range latencies {
		total += l
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(total/time.Duration(b.N)), "ms/order")
	b.ReportMetric(ms(percentile(latencies, 50)), "p50-ms")
	b.ReportMetric(ms(percentile(latencies, 95)), "p95-ms")
	b.ReportMetric(float64(b.N)/slices.MaxFunc(processedAt, time.Time.Compare).Sub(began).Seconds(), "orders/s")
}

// percentile returns the nearest-rank p-th percentile of sorted.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

func submitOrder(baseURL string, sub ordertest.Submission) (string, error) {
	body, err := json.Marshal(sub)
	if err != nil {
		return "", err
	}
	resp, err := http.Post(baseURL+"/orders", "application/json", bytes.NewReader(body))
	if err != nil {
		return "", fmt.Errorf("POST /orders: %w", err)
	}
	defer resp.Body.Close()
	var out struct{ OrderID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST /orders: status %d, %v", resp.StatusCode, err)
	}
	return out.OrderID, nil
}

// awaitProcessed polls the order item and returns when it became Processed.
func awaitProcessed(ctx context.Context, e *engine.Engine, id string, timeout time.Duration) (time.Time, error) {
	deadline := time.Now().Add(timeout)
	for {
		o, err := e.Store.Order(ctx, id)
		if err != nil {
			return time.Time{}, err
		}
		switch o.Status {
		case order.StatusProcessed:
			return o.UpdatedAt, nil
		case order.StatusError:
			return time.Time{}, fmt.Errorf("order %s ended in Error: %s", id, o.LastError)
		}
		if time.Now().After(deadline) {
			return time.Time{}, fmt.Errorf("order %s still %s after %s", id, o.Status, timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
