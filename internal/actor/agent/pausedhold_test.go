package agent_test

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// A paused service's request is held about a minute (half to all of
// it, jittered) unless the agent is told otherwise: local tests hold it
// a second, so a pause of a few seconds holds each request again and
// again and its resume is felt at once.
func TestPausedHoldIsAMinuteUnlessTold(t *testing.T) {
	for _, tc := range []struct {
		name     string
		hold     time.Duration
		min, max time.Duration
	}{
		{"by default", 0, 30 * time.Second, time.Minute},
		{"told a second", time.Second, time.Second / 2, time.Second},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Now()
			pauses := &fakePauses{pause: order.Pause{Kind: order.PauseService, Name: ordertest.AgentPayment, By: "ops", Reason: "maintenance",
				Since: now, Until: now.Add(time.Hour)}}
			holder := &fakeHolder{}
			ag := agent.New(agent.Config{
				Name: ordertest.AgentPayment, Remote: newFakeCaller(nil), Replies: &fakeReplier{}, Holder: holder, Pauses: pauses,
				PausedHold: tc.hold, Now: func() time.Time { return now }, Log: slog.New(slog.DiscardHandler), Metrics: metrics.Discard(),
			})
			for i := range 20 {
				req := request("k-"+string(rune('a'+i)), now.Add(30*time.Second))
				if err := ag.Process(context.Background(), req); err != nil {
					t.Fatal(err)
				}
			}
			if len(holder.delays) != 20 {
				t.Fatalf("held %d requests, want 20", len(holder.delays))
			}
			for _, d := range holder.delays {
				if d < tc.min || d > tc.max {
					t.Errorf("held for %s, want within [%s, %s]", d, tc.min, tc.max)
				}
			}
		})
	}
}
