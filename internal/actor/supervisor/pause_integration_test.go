package supervisor_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/supervisor"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// While an operator pauses a service, its steps past their deadline are
// not the service's failure: with no request in any queue (the agent took
// it, or it is between holds) the Supervisor still moves the deadline on,
// counting nothing, however long the pause lasts; once resumed, a silent
// step is a timeout as before. Each run counts the pauses on, and those
// past their stated end (the stage alarms on that).
func TestAPausedServicesStepsAreDeferredNotFailed(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	id := w.Submit(t, someOrder)
	agent := w.Step(t, id, first).Agent
	_, err := order.PlanPause(order.PauseRequest{Kind: order.PauseService, Name: agent, For: time.Hour, Reason: "warehouse maintenance", By: "ops"},
		order.Versions{}, w.Clock.Now())
	if err == nil || !strings.Contains(err.Error(), "no service") {
		t.Fatalf("a pause planned against no workflows: %v; want the service named unknown", err)
	}
	versions, _ := order.NewVersions(w.Workflow)
	p, err := order.PlanPause(order.PauseRequest{Kind: order.PauseService, Name: agent, For: 2 * time.Minute, Reason: "warehouse maintenance", By: "ops"},
		versions, w.Clock.Now())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Store.Pause(ctx, p); err != nil {
		t.Fatal(err)
	}
	var emf bytes.Buffer
	sup := func() *supervisor.Service {
		return w.Supervisor(func(c *supervisor.Config) {
			c.Metrics = metrics.New(&emf, "test")
			c.Log = slog.New(slog.DiscardHandler)
		})
	}
	for range 10 { // far more than MaxDeferrals, and past the failure threshold
		expire(t, w, id)
		r, err := sup().Run(ctx)
		if err != nil {
			t.Fatal(err)
		}
		st := w.Step(t, id, first)
		if r.Deferred != 1 || r.Retried+r.Failed+r.Compensated != 0 || st.FailureCount != 0 || !strings.Contains(st.LastError, "paused by an operator") {
			t.Fatalf("report %+v; step %d failures, %q; want the deadline moved on for the pause", r, st.FailureCount, st.LastError)
		}
		if r.Paused != 1 {
			t.Fatalf("report %+v; want one pause counted", r)
		}
	}
	if !strings.Contains(emf.String(), `"PausesOverrun":1`) {
		t.Errorf("metrics %s; want the pause counted overrun once the clock passed its two minutes", emf.String())
	}
	if _, err := w.Store.Resume(ctx, order.PauseService, agent, "ops", ""); err != nil {
		t.Fatal(err)
	}
	expire(t, w, id)
	if r, err := sup().Run(ctx); err != nil || r.Retried != 1 || r.Paused != 0 {
		t.Fatalf("after the resume: report %+v, %v; want a silent step retried", r, err)
	}
}
