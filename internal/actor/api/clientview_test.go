package api_test

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// A client's history keeps, of each entry, what happened to its order and
// why the order moved, never the engine's workings: attempts, writers
// other than people, records' reasons, results the workflow does not
// show, and the operators' events.
func TestClientHistoryShowsTheOrderNotTheEnginesWorkings(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	wf := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
		{Name: "fraud-check", Carries: []string{order.CarriesOrder}},
		{Name: "charge-payment", Carries: []string{order.CarriesOrder, "fraud-check"}},
		{Name: "arrange-shipping", ResultShownToClient: true},
	}}
	score, shipment := json.RawMessage(`{"id":"fc_1","score":0.9}`), json.RawMessage(`{"id":"shp_1","tracking":"T-1"}`)
	tests := []struct {
		name string
		wf   order.Workflow
		in   order.HistoryEntry
		// want is nil when the client does not see the entry at all.
		want *order.HistoryEntry
	}{
		{"the order's status, with its reason in the client's words; the engine's writer left out", wf,
			order.HistoryEntry{At: at, Record: -1, Event: "status", From: "Processing", To: "Compensating", By: "scheduler 4f2a",
				Reason: "step charge-payment: remote service payment refused the request: card declined"},
			&order.HistoryEntry{At: at, Record: -1, Event: "status", From: "Processing", To: "Compensating",
				Reason: "step charge-payment was refused: card declined"}},
		{"the order's status after timeouts: no attempt nor deadline", wf,
			order.HistoryEntry{At: at, Record: -1, Event: "status", From: "Processing", To: "Compensating", By: "supervisor",
				Reason: "step charge-payment: attempt 2 timed out: no reply by 2026-03-01T12:00:00Z; 2 of 2 allowed timeouts used"},
			&order.HistoryEntry{At: at, Record: -1, Event: "status", From: "Processing", To: "Compensating",
				Reason: "step charge-payment did not complete in time"}},
		{"the order's submission", wf,
			order.HistoryEntry{At: at, Record: -1, Event: "status", To: "Pending", By: "submit", Reason: "submitted"},
			&order.HistoryEntry{At: at, Record: -1, Event: "status", To: "Pending", Reason: "submitted"}},
		{"a client's cancel names the client", wf,
			order.HistoryEntry{At: at, Record: -1, Event: "cancel requested", By: "client cancel", Reason: "the client cancelled the order"},
			&order.HistoryEntry{At: at, Record: -1, Event: "cancel requested", By: "client cancel", Reason: "the client cancelled the order"}},
		{"an operator's redrive names the operator, not the attempt", wf,
			order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Error", To: "Pending", Attempt: 3, By: "operator redrive"},
			&order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Error", To: "Pending", By: "operator redrive"}},
		{"a step's timeout: the state, not the deadline nor the attempt", wf,
			order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Processing", To: "Pending", Attempt: 2, By: "supervisor",
				Reason: "attempt 2 timed out: no reply by 2026-03-01T12:00:00Z"},
			&order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Processing", To: "Pending"}},
		{"a result the workflow does not show, nor its reference", wf,
			order.HistoryEntry{At: at, Record: 0, Step: "fraud-check", Event: "state", From: "Processing", To: "Processed", Attempt: 1, By: "scheduler 4f2a",
				Reason: "reference fc_1", Result: score},
			&order.HistoryEntry{At: at, Record: 0, Step: "fraud-check", Event: "state", From: "Processing", To: "Processed"}},
		{"a result the workflow shows, with its reference", wf,
			order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Processed", Attempt: 1, By: "scheduler 4f2a",
				Reason: "reference shp_1", Result: shipment},
			&order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Processed",
				Reason: "reference shp_1", Result: shipment}},
		{"a shown step's other reasons stay the operators'", wf,
			order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Pending", Attempt: 1, By: "supervisor",
				Reason: "attempt 1 timed out: no reply by 2026-03-01T12:00:00Z"},
			&order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Pending"}},
		{"an operator's cancel says so", wf,
			order.HistoryEntry{At: at, Record: -1, Event: "cancel requested", By: "operator cancel", Reason: "an operator cancelled the order"},
			&order.HistoryEntry{At: at, Record: -1, Event: "cancel requested", By: "operator cancel", Reason: "an operator cancelled the order"}},
		{"a version this build lacks shows no result", order.Workflow{},
			order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Processed", Result: shipment},
			&order.HistoryEntry{At: at, Record: 2, Step: "arrange-shipping", Event: "state", From: "Processing", To: "Processed"}},
		{"an undo record's state", wf,
			order.HistoryEntry{At: at, Record: 3, Step: "fraud-check", Undo: true, Event: "state", To: "Pending", Attempt: 1, Reason: "appended to undo the work done"},
			&order.HistoryEntry{At: at, Record: 3, Step: "fraud-check", Undo: true, Event: "state", To: "Pending"}},
		{"a step that starts to wait says until when", wf,
			order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "NotStarted", To: "Waiting", Attempt: 1, By: "scheduler 4f2a",
				Reason: "waits until 2026-03-01T13:00:00Z"},
			&order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "NotStarted", To: "Waiting",
				Reason: "waits until 2026-03-01T13:00:00Z"}},
		{"the end of a wait, by the Supervisor", wf,
			order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Waiting", To: "Processed", Attempt: 1, By: "supervisor",
				Reason: "the wait ended"},
			&order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "state", From: "Waiting", To: "Processed"}},
		{"a heartbeat is the agent's", wf,
			order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "heartbeat", Attempt: 1, By: "agent payment", Reason: "deadline moved to …"}, nil},
		{"a deferral is the Supervisor's", wf, order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "deferred", By: "supervisor"}, nil},
		{"a re-announcement is the Supervisor's", wf, order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "re-announced", By: "supervisor"}, nil},
		{"an alert is the operators'", wf, order.HistoryEntry{At: at, Record: 1, Step: "charge-payment", Event: "alert recorded", Reason: "StepFailed"}, nil},
		{"an alert sent", wf, order.HistoryEntry{At: at, Record: -1, Event: "alert sent", Reason: "StepFailed"}, nil},
		{"an alert withdrawn", wf, order.HistoryEntry{At: at, Record: -1, Event: "alert withdrawn", Reason: "StepFailed"}, nil},
		{"an event this build does not know", wf, order.HistoryEntry{At: at, Record: -1, Event: "parked", Reason: "version 2 unknown"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := api.ClientHistory(tt.wf, []order.HistoryEntry{tt.in})
			var want []order.HistoryEntry
			if tt.want != nil {
				want = []order.HistoryEntry{*tt.want}
			}
			if len(got) != len(want) || (len(got) == 1 && !reflect.DeepEqual(got[0], want[0])) {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// A client's view says why its order is where it is in the client's
// words: a refusal in the service's own words without the service's
// name, a timeout without its attempt and deadline.
func TestClientViewSaysWhyInTheClientsWords(t *testing.T) {
	wf := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{{Name: "charge-payment"}}}
	tests := []struct {
		name   string
		status order.Status
		stored string
		want   string
	}{
		{"refused", order.StatusCompensating, "step charge-payment: remote service payment refused the request: card declined",
			"step charge-payment was refused: card declined"},
		{"timed out", order.StatusFailed, "step charge-payment: attempt 3 timed out: no reply by 2026-03-01T12:00:00Z; 3 of 3 allowed timeouts used",
			"step charge-payment did not complete in time"},
		{"a contract fault", order.StatusError,
			"step charge-payment: remote service payment did step charge-payment's work, but its answer is over 4096 bytes; an operator must act",
			"step charge-payment failed; an operator is looking into it"},
		{"processed", order.StatusProcessed, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := order.Order{ID: "O", Workflow: "checkout", Version: "1", Status: tt.status, LastError: tt.stored}
			got := api.NewClientView(o, []order.StepState{{Step: "charge-payment", ProcessState: order.Failed, LastError: tt.stored}}, wf)
			if got.LastError != tt.want {
				t.Errorf("lastError %q, want %q", got.LastError, tt.want)
			}
		})
	}
}

// A Waiting step shows, to clients and operators alike, what it waits for
// (from the step's definition in the order's workflow version: an
// event's name too), since when and until when; a step that does not
// wait shows no wait, and a version this build lacks leaves out what the
// wait is for.
func TestViewsShowWhatAWaitingStepWaitsFor(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	wf := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
		{Name: "cool-off", Wait: &order.Wait{For: time.Hour}}, {Name: "charge-payment", Agent: "payment"}}}
	o := order.Order{ID: "O", Workflow: "checkout", Version: "1", Status: order.StatusWaiting, CreatedAt: since, UpdatedAt: since}
	waiting := order.StepState{Step: "cool-off", ProcessState: order.Waiting, Attempt: 1, Since: since, CompleteBy: until, UpdatedAt: since,
		DueAt: since.Add(30 * time.Second)}
	notStarted := order.StepState{Step: "charge-payment", Agent: "payment", ProcessState: order.NotStarted}
	tests := []struct {
		name string
		wf   order.Workflow
		// want is each step's "waiting" as JSON, "" for none.
		want []string
	}{
		{"a timer of a version this build has", wf,
			[]string{`{"for":"timer","since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z"}`, ""}},
		{"an event, named", order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
			{Name: "cool-off", Wait: &order.Wait{Event: "review", Timeout: time.Hour}}, wf.Steps[1]}},
			[]string{`{"for":"event","event":"review","since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z"}`, ""}},
		{"a service's callback", order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
			{Name: "cool-off", Agent: "payment", Callback: &order.CallbackWait{Timeout: time.Hour}}, wf.Steps[1]}},
			[]string{`{"for":"callback","since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z"}`, ""}},
		{"a service's status, checked next at its due time", order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
			{Name: "cool-off", Agent: "payment", Poll: &order.PollWait{Timeout: time.Hour, Every: time.Minute}}, wf.Steps[1]}},
			[]string{`{"for":"poll","since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z","nextCheck":"2026-03-01T12:00:30Z"}`, ""}},
		{"a version this build lacks: what it waits for is not known", order.Workflow{},
			[]string{`{"since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z"}`, ""}},
	}
	for _, tt := range tests {
		for _, view := range []struct {
			who  string
			view any
		}{
			{"client", api.NewClientView(o, []order.StepState{waiting, notStarted}, tt.wf)},
			{"operator", api.NewOrderView(o, []order.StepState{waiting, notStarted}, tt.wf)},
		} {
			t.Run(tt.name+", "+view.who, func(t *testing.T) {
				raw, err := json.Marshal(view.view)
				if err != nil {
					t.Fatal(err)
				}
				var got struct {
					Steps []struct {
						State   string          `json:"state"`
						Waiting json.RawMessage `json:"waiting"`
					} `json:"steps"`
				}
				if err := json.Unmarshal(raw, &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Steps) != len(tt.want) || got.Steps[0].State != "Waiting" {
					t.Fatalf("steps %s, want %d with the first Waiting", raw, len(tt.want))
				}
				for i, s := range got.Steps {
					if string(s.Waiting) != tt.want[i] {
						t.Errorf("step %d: waiting %s, want %q", i, s.Waiting, tt.want[i])
					}
				}
			})
		}
	}
}
