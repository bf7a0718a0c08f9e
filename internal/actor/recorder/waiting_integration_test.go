package recorder_test

import (
	"encoding/json"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A Waiting order's status event carries what its step waits for, since
// when and until when, under the names its view uses, so a subscriber
// need not read the order to know; the event that ends the wait has none.
func TestAWaitingOrdersStatusEventSaysWhatItWaitsFor(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	timing := order.Timing{Allowance: 10 * time.Second, MaxAllowance: 10 * time.Second, FailureThreshold: 2, ClaimWithin: 5 * time.Second}
	w := testenv.NewWorld(t, timing)
	shipped := w.Workflow
	tests := []struct {
		name string
		wf   order.Workflow
		wait time.Duration
		want map[string]string // the event's waiting, without its times
	}{
		{"a timer", ordertest.Timed(shipped, 0, time.Hour), time.Hour, map[string]string{"for": order.WaitTimer}},
		{"an event", ordertest.Reviewed(shipped, 0, 2*time.Hour), 2 * time.Hour,
			map[string]string{"for": order.WaitEvent, "event": ordertest.EventReview}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w.Run(t, tt.wf)
			id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
			since := w.Clock.Now().UTC().Truncate(time.Millisecond)
			w.Follow(id).Record(t)

			var found bool
			for _, body := range w.StatusEvents(t) {
				var ev struct {
					Detail struct {
						OrderID string            `json:"orderId"`
						Status  order.Status      `json:"status"`
						Waiting map[string]string `json:"waiting"`
					} `json:"detail"`
				}
				if err := json.Unmarshal([]byte(body), &ev); err != nil {
					t.Fatalf("status event %s: %v", body, err)
				}
				if ev.Detail.OrderID != id {
					continue
				}
				found = true
				got := ev.Detail.Waiting
				if ev.Detail.Status != order.StatusWaiting || got == nil {
					t.Fatalf("status event %s: want Waiting with what it waits for", body)
				}
				if got["since"] != since.Format(time.RFC3339Nano) || got["until"] != since.Add(tt.wait).Format(time.RFC3339Nano) {
					t.Errorf("waiting %v: want since %s, until %s later", got, since.Format(time.RFC3339Nano), tt.wait)
				}
				delete(got, "since")
				delete(got, "until")
				if len(got) != len(tt.want) || got["for"] != tt.want["for"] || got["event"] != tt.want["event"] {
					t.Errorf("waiting %v: want %v and its times", got, tt.want)
				}
			}
			if !found {
				t.Fatalf("no status event of order %s", id)
			}
		})
	}
}
