package dynamo

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
)

func TestDiffListsWhatAWriteChanged(t *testing.T) {
	one := 0
	three := 3
	base := func() orderRecord {
		return orderRecord{OrderID: "O", Status: "Processing", By: "supervisor", UpdatedAt: 1000, Active: &one,
			Steps: []stepRecord{{Step: "a", State: "Processing", Attempt: 1, CompleteBy: 5000}, {Step: "b", State: "NotStarted"}}}
	}
	tests := []struct {
		name   string
		change func(r *orderRecord)
		want   []string
	}{
		{"nothing but DueAt", func(r *orderRecord) { r.DueAt = 9 }, nil},
		{"a retry", func(r *orderRecord) {
			r.Steps[0].State, r.Steps[0].FailureCount, r.Steps[0].LastError = "Pending", 1, "attempt 1 timed out"
		}, []string{"0 state Processing>Pending attempt 1 (attempt 1 timed out)"}},
		{"a heartbeat", func(r *orderRecord) { r.Steps[0].Heartbeats, r.Steps[0].CompleteBy = 1, 8000 }, []string{"0 heartbeat > attempt 1"}},
		{"a deferral", func(r *orderRecord) {
			r.Steps[0].Deferrals, r.Steps[0].LastError = 1, "backlog"
		}, []string{"0 deferred > attempt 1 (backlog)"}},
		{"a re-announcement with an alert", func(r *orderRecord) {
			r.Steps[0].State = "Pending"
			r.Steps[0].Nudges, r.AlertPending, r.AlertKind = 3, true, "StepUnclaimed"
		}, []string{"0 state Processing>Pending attempt 1", "0 alert recorded > attempt 1 (StepUnclaimed)"}},
		{"a cancel", func(r *orderRecord) { r.Cancel, r.Status = true, "Cancelling" }, []string{
			"-1 status Processing>Cancelling", "-1 cancel requested > (the order was cancelled)"}},
		{"undo records appended", func(r *orderRecord) {
			r.Status, r.Active = "Compensating", &three
			r.Steps[0].State = "Failed"
			r.Steps = append(r.Steps, stepRecord{Step: "x"}, stepRecord{Step: "a", Undo: true, State: "Processing", Attempt: 1})
		}, []string{"-1 status Processing>Compensating", "0 state Processing>Failed attempt 1", "2 state >", "3 state >Processing attempt 1 (appended to undo the work done)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before, now := base(), base()
			now.Steps = slices.Clone(before.Steps)
			tt.change(&now)
			var got []string
			for _, tr := range diff(&before, now) {
				s := fmt.Sprintf("%d %s %s>%s", tr.Record, tr.Event, tr.From, tr.To)
				if tr.Attempt > 0 {
					s += fmt.Sprintf(" attempt %d", tr.Attempt)
				}
				if tr.Reason != "" && tr.Event != "heartbeat" && tr.Record != 2 {
					s += " (" + tr.Reason + ")"
				}
				if tr.By != "supervisor" {
					t.Errorf("transition %+v: by %q, want the write's actor", tr, tr.By)
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("diff:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

// An alert cleared while the record stays as it was was sent; one cleared
// by a claim (an operator's redrive, say) before it was sent was
// withdrawn, and the history says so.
func TestDiffTellsASentAlertFromAnAnsweredOne(t *testing.T) {
	one := 0
	before := orderRecord{OrderID: "O", Status: "Error", Active: &one, AlertPending: true, AlertKind: "UndoFailed",
		Steps: []stepRecord{{Step: "a", State: "Error", Attempt: 2}}}
	sent := before
	sent.AlertPending, sent.AlertKind = false, ""
	if got := diff(&before, sent); len(got) != 1 || got[0].Event != "alert sent" || got[0].Reason != "UndoFailed" {
		t.Errorf("cleared alert: %+v, want one 'alert sent'", got)
	}
	// The change carries the alert as it was sent, for the alert index.
	before.Steps[0].LastError, before.Steps[0].FailureCount = "refund refused", 1
	sent.Steps, sent.UpdatedAt = before.Steps, 1_700_000_000_123
	a := sentAlert(&before, sent)
	want := order.Alert{Kind: "UndoFailed", OrderID: "O", Step: "a", Attempt: 2, FailureCount: 1, Reason: "refund refused",
		At: time.UnixMilli(1_700_000_000_123).UTC()}
	if a == nil || !reflect.DeepEqual(*a, want) {
		t.Errorf("sent alert %+v, want %+v", a, want)
	}
	claimed := sent
	claimed.Steps = []stepRecord{{Step: "a", State: "Processing", Attempt: 3}}
	withdrawn := 0
	for _, tr := range diff(&before, claimed) {
		switch tr.Event {
		case "alert sent":
			t.Errorf("a claim's cleared alert counted as sent: %+v", tr)
		case "alert withdrawn":
			withdrawn++
			if tr.Reason != "UndoFailed" || tr.Record != 0 || tr.Attempt != 2 {
				t.Errorf("withdrawal %+v, want the alert's kind and the record and attempt it was about", tr)
			}
		}
	}
	if withdrawn != 1 {
		t.Errorf("a claim's cleared alert: %d withdrawals in the history, want 1", withdrawn)
	}
	if a := sentAlert(&before, claimed); a != nil {
		t.Errorf("a claim's cleared alert recorded as sent: %+v", a)
	}
	if a := sentAlert(&before, before); a != nil {
		t.Errorf("an alert still pending recorded as sent: %+v", a)
	}
}

// A cancel is told by who made it: clients read the entry, and an
// operator's cancel is not the client's.
func TestDiffSaysWhoCancelled(t *testing.T) {
	tests := []struct {
		by, want string
	}{
		{"client cancel", "the client cancelled the order"},
		{"operator cancel", "an operator cancelled the order"},
		{"", "the order was cancelled"},
	}
	for _, tt := range tests {
		t.Run(tt.by, func(t *testing.T) {
			one := 0
			before := orderRecord{OrderID: "O", Status: "Processing", By: "scheduler s1", UpdatedAt: 1000, Active: &one,
				Steps: []stepRecord{{Step: "a", State: "Processing", Attempt: 1}}}
			now := before
			now.Steps = slices.Clone(before.Steps)
			now.Cancel, now.Status, now.By = true, "Cancelling", tt.by
			var got []string
			for _, e := range diff(&before, now) {
				if e.Event == "cancel requested" {
					got = append(got, e.Reason)
				}
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("cancel requested by %q: reasons %q, want %q", tt.by, got, tt.want)
			}
		})
	}
}

// A status event says why in the words a client reads (its consumers are
// the clients' own rules), not the engine's.
func TestStatusChangeCarriesTheClientsReason(t *testing.T) {
	one := 1
	before := orderRecord{OrderID: "O", Status: "Processing", UpdatedAt: 1000, Active: &one,
		Steps: []stepRecord{{Step: "a", State: "Processed"}, {Step: "charge-payment", State: "Processing", Attempt: 2}}}
	now := before
	now.Steps = slices.Clone(before.Steps)
	now.Status, now.Steps[1].State = "Compensating", "Failed"
	now.LastError = "step charge-payment: attempt 2 timed out: no reply by 2026-03-01T12:00:00Z; 2 of 2 allowed timeouts used"
	c := statusChange(&before, now, "7")
	if c.Reason != "step charge-payment did not complete in time" || c.FailedStep != "charge-payment" {
		t.Errorf("got reason %q, failed step %q; want the client's reason of charge-payment", c.Reason, c.FailedStep)
	}
}

// A step that starts to wait says until when, in the history its order's
// client and operators read; the end of a wait says so; and the time a
// record started to wait, written with the wait, makes no entry of its
// own.
func TestDiffTellsAWait(t *testing.T) {
	zero, one := 0, 1
	until := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC)
	step := func(name, state string, attempt int) stepRecord {
		return stepRecord{Step: name, State: state, Attempt: attempt}
	}
	waiting := stepRecord{Step: "cool-off", State: "Waiting", Attempt: 1, Since: 1000, CompleteBy: until.UnixMilli()}
	tests := []struct {
		name        string
		before, now orderRecord
		want        []string
	}{
		{"submitted to wait at once", orderRecord{},
			orderRecord{Status: "Waiting", By: "submit", Active: &zero, Steps: []stepRecord{waiting, step("charge", "NotStarted", 0)}},
			[]string{"-1 status >Waiting (submitted)", "0 state NotStarted>Waiting attempt 1 (waits until 2026-03-01T13:00:00Z)"}},
		{"a success starts the next step's wait",
			orderRecord{Status: "Processing", By: "scheduler s1", Active: &zero, Steps: []stepRecord{step("reserve", "Processing", 1), step("cool-off", "NotStarted", 0)}},
			orderRecord{Status: "Waiting", By: "scheduler s1", Active: &one, Steps: []stepRecord{step("reserve", "Processed", 1), waiting}},
			[]string{"-1 status Processing>Waiting", "0 state Processing>Processed attempt 1", "1 state NotStarted>Waiting attempt 1 (waits until 2026-03-01T13:00:00Z)"}},
		{"the Supervisor ends the wait",
			orderRecord{Status: "Waiting", By: "scheduler s1", Active: &zero, Steps: []stepRecord{waiting, step("charge", "NotStarted", 0)}},
			orderRecord{Status: "Processing", By: "supervisor", Active: &one, Steps: []stepRecord{
				{Step: "cool-off", State: "Processed", Attempt: 1, Since: 1000}, {Step: "charge", State: "Pending", CompleteBy: until.UnixMilli() + 1000}}},
			[]string{"-1 status Waiting>Processing", "0 state Waiting>Processed attempt 1 (the wait ended)", "1 state NotStarted>Pending"}},
		{"an operator's event ends the wait",
			orderRecord{Status: "Waiting", By: "scheduler s1", Active: &zero, Steps: []stepRecord{waiting, step("charge", "NotStarted", 0)}},
			orderRecord{Status: "Processing", By: "operator event", Active: &one, Steps: []stepRecord{
				{Step: "cool-off", State: "Processed", Attempt: 1, Since: 1000}, {Step: "charge", State: "Pending", CompleteBy: until.UnixMilli() + 1000}}},
			[]string{"-1 status Waiting>Processing", "0 state Waiting>Processed attempt 1 (its event arrived)", "1 state NotStarted>Pending"}},
		{"the time it waits since, alone, is no change",
			orderRecord{Status: "Waiting", Active: &zero, Steps: []stepRecord{waiting}},
			orderRecord{Status: "Waiting", Active: &zero, Steps: []stepRecord{{Step: "cool-off", State: "Waiting", Attempt: 1, Since: 2000, CompleteBy: until.UnixMilli()}}},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := &tt.before
			if tt.before.Status == "" {
				before = nil
			}
			var got []string
			for _, tr := range diff(before, tt.now) {
				s := fmt.Sprintf("%d %s %s>%s", tr.Record, tr.Event, tr.From, tr.To)
				if tr.Attempt > 0 {
					s += fmt.Sprintf(" attempt %d", tr.Attempt)
				}
				if tr.Reason != "" {
					s += " (" + tr.Reason + ")"
				}
				if tr.By != tt.now.By {
					t.Errorf("transition %+v: by %q, want the write's actor", tr, tr.By)
				}
				got = append(got, s)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("diff:\n%q\nwant:\n%q", got, tt.want)
			}
		})
	}
}

// A Waiting order's status event says which step waits and until when,
// in a client's words; other running statuses carry no reason.
func TestStatusChangeSaysWhatAWaitingOrderWaitsFor(t *testing.T) {
	zero, one := 0, 1
	until := time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC).UnixMilli()
	tests := []struct {
		name        string
		before, now orderRecord
		want        string
	}{
		{"submitted to wait", orderRecord{}, orderRecord{OrderID: "O", Status: "Waiting", Active: &zero,
			Steps: []stepRecord{{Step: "cool-off", State: "Waiting", Attempt: 1, Since: 1000, CompleteBy: until}}},
			"step cool-off waits until 2026-03-01T13:00:00Z"},
		{"a later step waits", orderRecord{OrderID: "O", Status: "Processing", Active: &zero,
			Steps: []stepRecord{{Step: "reserve", State: "Processing", Attempt: 1}, {Step: "cool-off", State: "NotStarted"}}},
			orderRecord{OrderID: "O", Status: "Waiting", Active: &one,
				Steps: []stepRecord{{Step: "reserve", State: "Processed", Attempt: 1}, {Step: "cool-off", State: "Waiting", Attempt: 1, Since: 1000, CompleteBy: until}}},
			"step cool-off waits until 2026-03-01T13:00:00Z"},
		{"the wait ended", orderRecord{OrderID: "O", Status: "Waiting", Active: &zero,
			Steps: []stepRecord{{Step: "cool-off", State: "Waiting", Attempt: 1, CompleteBy: until}, {Step: "charge", State: "NotStarted"}}},
			orderRecord{OrderID: "O", Status: "Processing", Active: &one,
				Steps: []stepRecord{{Step: "cool-off", State: "Processed", Attempt: 1}, {Step: "charge", State: "Pending", CompleteBy: until + 1000}}},
			""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := &tt.before
			if tt.before.Status == "" {
				before = nil
			}
			c := statusChange(before, tt.now, "7")
			if c.Reason != tt.want || c.FailedStep != "" {
				t.Errorf("reason %q, failed step %q; want reason %q and no failed step", c.Reason, c.FailedStep, tt.want)
			}
		})
	}
}
