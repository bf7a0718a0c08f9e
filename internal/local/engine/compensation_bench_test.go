package engine_test

import (
	"testing"
	"time"

	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// BenchmarkCompensation measures a 3-step order whose last step is refused
// (TEST-SHIPPING-PERMANENT): the time from the write that starts undoing
// (the order turns Compensating) to the write that ends it Failed, with
// both undos done in between, each through the Scheduler, an agent and the
// simulator's undo endpoint. The times come from the order's history, so
// polling does not blur them. One order at a time, default timing.
func BenchmarkCompensation(b *testing.B) {
	e := start(b, func(c *engine.Config) {
		c.Timing, c.SupervisorEvery = order.DefaultTiming, engine.DefaultSupervisorEvery
	})
	var undoing, whole time.Duration
	for b.Loop() {
		id := submit(b, e, lines("TEST-SHIPPING-PERMANENT"))
		var began, compensating, failed time.Time
		testenv.Eventually(b, 30*time.Second, func() (bool, string) {
			h := history(b, e, id)
			for _, tr := range h.History {
				switch {
				case tr.Record == -1 && tr.To == string(order.StatusPending):
					began = tr.At
				case tr.Record == -1 && tr.To == string(order.StatusCompensating):
					compensating = tr.At
				case tr.Record == -1 && tr.To == string(order.StatusFailed):
					failed = tr.At
				}
			}
			return !failed.IsZero(), string(h.Status)
		})
		undoing += failed.Sub(compensating)
		whole += failed.Sub(began)
	}
	b.ReportMetric(float64(undoing.Milliseconds())/float64(b.N), "ms-undoing")
	b.ReportMetric(float64(whole.Milliseconds())/float64(b.N), "ms-submit-to-Failed")
}
