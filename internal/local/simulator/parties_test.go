package simulator_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/local/simulator"
)

// waitingAPI stands for the operators' routes of the API the parties
// use: a search that lists the waiting orders, each order's view, and
// the events sent, which it keeps.
type waitingAPI struct {
	views map[string]string // by order id, as GET /ops/orders/{id} answers
	mu    sync.Mutex
	sent  []string // "id event data"
	query []string
	// refuse is how many sends are answered 503, as by an API that is
	// starting, before any is taken.
	refuse int
}

func (a *waitingAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	switch rest, _ := strings.CutPrefix(r.URL.Path, "/ops/orders"); {
	case r.Method == http.MethodGet && rest == "":
		a.mu.Lock()
		a.query = append(a.query, r.URL.RawQuery)
		a.mu.Unlock()
		var orders []map[string]string
		for _, id := range slices.Sorted(maps.Keys(a.views)) {
			orders = append(orders, map[string]string{"orderId": id})
		}
		json.NewEncoder(w).Encode(map[string]any{"orders": orders})
	case r.Method == http.MethodGet:
		fmt.Fprint(w, a.views[strings.TrimPrefix(rest, "/")])
	case r.Method == http.MethodPost:
		id, event, _ := strings.Cut(strings.TrimPrefix(rest, "/"), "/events/")
		raw, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.refuse > 0 {
			a.refuse--
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		a.sent = append(a.sent, id+" "+event+" "+string(raw))
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprint(w, `{}`)
	}
}

// view is an order of the fulfilment example whose step at waits for
// what, since when, with lines of skus.
func view(id string, at int, what, event string, since time.Time, skus ...string) string {
	steps := []map[string]any{
		{"step": "fraud-screen", "state": "Processed", "reference": "fs_1"},
		{"step": "manual-review", "state": "NotStarted"},
		{"step": "charge-payment", "state": "NotStarted"},
		{"step": "pick-and-ship", "state": "NotStarted"},
		{"step": "delivery", "state": "NotStarted"},
	}
	for i := range at {
		steps[i]["state"], steps[i]["reference"] = "Processed", fmt.Sprintf("ref_%s_%d", id, i)
	}
	steps[at]["state"] = "Waiting"
	steps[at]["waiting"] = map[string]any{"for": what, "event": event, "since": since, "until": since.Add(time.Hour)}
	var lines []map[string]any
	for _, s := range append([]string{"SKU-1"}, skus...) {
		lines = append(lines, map[string]any{"sku": s, "quantity": 1})
	}
	raw, _ := json.Marshal(map[string]any{"orderId": id, "status": "Waiting", "workflow": "fulfilment", "steps": steps, "customerId": "c-42", "lines": lines})
	return string(raw)
}

// The parties send each waiting order the event its party sends, once,
// after it has waited a while, as the test values say; never an event of
// another kind of wait, nor one a test value keeps silent.
func TestPartiesSendTheEventsOrdersWaitFor(t *testing.T) {
	t.Parallel()
	long := time.Now().Add(-time.Minute)
	api := &waitingAPI{views: map[string]string{
		"approve": view("approve", 1, "event", simulator.EventReview, long),
		"reject":  view("reject", 1, "event", simulator.EventReview, long, "TEST-REVIEW-REJECT"),
		"silent":  view("silent", 1, "event", simulator.EventReview, long, "TEST-REVIEW-SILENT"),
		"deliver": view("deliver", 4, "event", simulator.EventDelivered, long),
		"lost":    view("lost", 4, "event", simulator.EventDelivered, long, "TEST-CARRIER-SILENT"),
		"fresh":   view("fresh", 1, "event", simulator.EventReview, time.Now().Add(time.Hour)),
		"paying":  view("paying", 2, "callback", "", long),
	}}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- simulator.NewParties(ts.URL, simulator.PartyConfig{Every: 10 * time.Millisecond, After: 10 * time.Second}).Run(ctx)
	}()
	// Several looks, each of which sees every order waiting still.
	waitFor(t, "several looks", func() bool { api.mu.Lock(); defer api.mu.Unlock(); return len(api.query) >= 5 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	want := []string{
		`approve review {"decision":"approve","note":"approved by the simulated fraud analyst"}`,
		`deliver delivered {"trackingId":"ref_deliver_3"}`,
		`reject review {"decision":"reject","note":"rejected by the simulated fraud analyst (TEST-REVIEW-REJECT)"}`,
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	slices.Sort(api.sent)
	if !slices.Equal(api.sent, want) {
		t.Errorf("events sent:\n%s\nwant:\n%s", strings.Join(api.sent, "\n"), strings.Join(want, "\n"))
	}
	if q := api.query[0]; !strings.Contains(q, "status=Waiting") || !strings.Contains(q, "workflow=fulfilment") {
		t.Errorf("search %q, want the fulfilment example's waiting orders", q)
	}
}

// An event whose send the API does not take (it answers 5xx, or is down)
// is sent again at a later look, and counted.
func TestPartiesSendAnEventAgainThatTheAPIDidNotTake(t *testing.T) {
	t.Parallel()
	api := &waitingAPI{refuse: 2, views: map[string]string{
		"approve": view("approve", 1, "event", simulator.EventReview, time.Now().Add(-time.Minute)),
	}}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	parties := simulator.NewParties(ts.URL, simulator.PartyConfig{Every: 10 * time.Millisecond})
	go func() { done <- parties.Run(ctx) }()
	waitFor(t, "the event taken", func() bool { api.mu.Lock(); defer api.mu.Unlock(); return len(api.sent) == 1 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := parties.SendsFailed(); got != 2 {
		t.Errorf("%d sends failed, want 2", got)
	}
}
