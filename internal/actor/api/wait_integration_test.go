package api_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A waiting order is one like any other to its client and its operators:
// its view says what its step waits for, since when and until when; a
// search by status Waiting finds it; its history and its status events
// say it waits until when, and that the Supervisor ended the wait.
func TestAWaitingOrderIsShownFoundAndHasAHistory(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	w.Run(t, ordertest.Timed(w.Workflow, 0, time.Hour))
	resp := post(t, w, validBody, nil)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"status":"Waiting"`) {
		t.Fatalf("submit: %d %s, want 202 Waiting", resp.StatusCode, resp.Body)
	}
	id := orderID(t, resp)
	rec := w.Follow(id)
	rec.Record(t)
	since := w.Clock.Now().UTC().Truncate(time.Millisecond)
	until := since.Add(time.Hour)
	wantWait := api.WaitView{For: order.WaitTimer, Since: since, Until: until}

	for _, resource := range []string{api.ResourceOrder, api.ResourceOperatorOrder} {
		resp := getAs(t, w, testenv.Caller, resource, id)
		var v struct {
			Status order.Status `json:"status"`
			Steps  []struct {
				Step    string        `json:"step"`
				State   string        `json:"state"`
				Waiting *api.WaitView `json:"waiting"`
			} `json:"steps"`
		}
		if err := json.Unmarshal([]byte(resp.Body), &v); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", resource, resp.StatusCode, resp.Body)
		}
		if v.Status != order.StatusWaiting || v.Steps[0].State != string(order.Waiting) || v.Steps[0].Waiting == nil ||
			!v.Steps[0].Waiting.Since.Equal(wantWait.Since) || !v.Steps[0].Waiting.Until.Equal(wantWait.Until) || v.Steps[0].Waiting.For != wantWait.For {
			t.Errorf("GET %s: %s, want the first step Waiting for %+v", resource, resp.Body, wantWait)
		}
		if v.Steps[1].Waiting != nil {
			t.Errorf("GET %s: a step not reached shows a wait: %s", resource, resp.Body)
		}
	}
	for _, resource := range []string{api.ResourceOrders, api.ResourceOperatorOrders} {
		if got := everyPage(t, w, testenv.Caller, resource, url.Values{"status": {"Waiting"}}); !slices.Equal(got, []string{id}) {
			t.Errorf("GET %s?status=Waiting: %v, want [%s]", resource, got, id)
		}
	}

	// The wait ends at its time.
	w.Clock.Advance(time.Hour + timing.SkewGrace + time.Second)
	if r, err := w.Supervisor().Run(context.Background()); err != nil || r.WaitsEnded != 1 {
		t.Fatalf("supervisor: %+v, %v; want the wait ended", r, err)
	}
	rec.Record(t)
	for _, resource := range []string{api.ResourceOrders, api.ResourceOperatorOrders} {
		if got := everyPage(t, w, testenv.Caller, resource, url.Values{"status": {"Waiting"}}); len(got) != 0 {
			t.Errorf("GET %s?status=Waiting after the wait: %v, want none", resource, got)
		}
	}
	waits := "waits until " + until.Format(time.RFC3339Nano)
	history := func(resource string) []order.HistoryEntry {
		t.Helper()
		resp := getAs(t, w, testenv.Caller, resource, id)
		var h api.HistoryView
		if err := json.Unmarshal([]byte(resp.Body), &h); err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: %d %s", resource, resp.StatusCode, resp.Body)
		}
		return h.History
	}
	for _, tt := range []struct {
		resource string
		want     []string
	}{
		{api.ResourceHistory, []string{"status >Waiting  (submitted)", "state NotStarted>Waiting  (" + waits + ")",
			"status Waiting>Processing  ()", "state Waiting>Processed  ()", "state NotStarted>Pending  ()"}},
		{api.ResourceOperatorHistory, []string{"status >Waiting submit (submitted)", "state NotStarted>Waiting submit (" + waits + ")",
			"status Waiting>Processing supervisor ()", "state Waiting>Processed supervisor (the wait ended)", "state NotStarted>Pending supervisor ()"}},
	} {
		var got []string
		for _, e := range history(tt.resource) {
			got = append(got, e.Event+" "+e.From+">"+e.To+" "+e.By+" ("+e.Reason+")")
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("GET %s:\n%q\nwant\n%q", tt.resource, got, tt.want)
		}
	}

	var events []string
	for _, body := range w.StatusEvents(t) {
		var ev struct {
			Detail order.StatusChange `json:"detail"`
		}
		if err := json.Unmarshal([]byte(body), &ev); err != nil || ev.Detail.OrderID != id {
			t.Fatalf("status event %s: %v", body, err)
		}
		events = append(events, string(ev.Detail.Previous)+">"+string(ev.Detail.Status)+" ("+ev.Detail.Reason+")")
	}
	slices.Sort(events) // delivered at least once, not in order
	events = slices.Compact(events)
	if want := []string{">Waiting (step " + ordertest.StepCoolOff + " " + waits + ")", "Waiting>Processing ()"}; !slices.Equal(events, want) {
		t.Errorf("status events %q, want %q", events, want)
	}
}
