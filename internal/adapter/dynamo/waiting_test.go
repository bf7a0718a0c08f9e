package dynamo

import (
	"encoding/json"
	"testing"
	"time"

	"orderly/internal/order"
)

// A Waiting order's status event carries its view's waiting object: what
// the active step waits for, from its definition in the order's version,
// since when and until when. A version the reader lacks gives the times
// alone; an order that is not Waiting gives none.
func TestStatusChangeCarriesWhatAWaitingStepWaitsFor(t *testing.T) {
	zero, one := 0, 1
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	wf := order.Workflow{Name: "checkout", Version: "2", Steps: []order.StepDef{
		{Name: "cool-off", Wait: &order.Wait{For: time.Hour}},
		{Name: "review", Wait: &order.Wait{Event: "approval", Timeout: time.Hour}},
		{Name: "charge", Agent: "payment", Callback: &order.CallbackWait{Timeout: time.Hour}},
	}}
	workflows := order.MustVersions(wf)
	waitingAt := func(i int, version string) orderRecord {
		r := orderRecord{OrderID: "O", Workflow: "checkout", Version: version, Status: "Waiting", Active: &[]int{i}[0], UpdatedAt: since.UnixMilli()}
		for j, d := range wf.Steps {
			s := stepRecord{Step: d.Name, Agent: d.Agent, State: "Processed", Attempt: 1}
			switch {
			case j == i:
				s.State, s.Since, s.CompleteBy = "Waiting", since.UnixMilli(), until.UnixMilli()
			case j > i:
				s.State, s.Attempt = "NotStarted", 0
			}
			r.Steps = append(r.Steps, s)
		}
		return r
	}
	times := `"since":"2026-03-01T12:00:00Z","until":"2026-03-01T13:00:00Z"`
	tests := []struct {
		name string
		now  orderRecord
		want string // the event's "waiting", "" for none
	}{
		{"a timer", waitingAt(0, "2"), `{"for":"timer",` + times + `}`},
		{"an event, named", waitingAt(1, "2"), `{"for":"event","event":"approval",` + times + `}`},
		{"a service's callback", waitingAt(2, "2"), `{"for":"callback",` + times + `}`},
		{"a version the recorder lacks", waitingAt(1, "9"), `{` + times + `}`},
		{"not Waiting", orderRecord{OrderID: "O", Workflow: "checkout", Version: "2", Status: "Processing", Active: &zero,
			Steps: []stepRecord{{Step: "cool-off", State: "Processed", Attempt: 1}, {Step: "review", State: "Processing", Attempt: 1}}}, ""},
		{"ended", orderRecord{OrderID: "O", Workflow: "checkout", Version: "2", Status: "Processed", Active: &one}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := statusChange(nil, tt.now, "7")
			c.Waiting = waitingFor(tt.now, workflows)
			raw, err := json.Marshal(c)
			if err != nil {
				t.Fatal(err)
			}
			var got struct {
				Waiting json.RawMessage `json:"waiting"`
			}
			if err := json.Unmarshal(raw, &got); err != nil {
				t.Fatal(err)
			}
			if string(got.Waiting) != tt.want {
				t.Errorf("event %s: waiting %s, want %q", raw, got.Waiting, tt.want)
			}
		})
	}
}
