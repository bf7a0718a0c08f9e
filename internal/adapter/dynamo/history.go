package dynamo

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
)

// ChangeOf reads a stream record of the orders table (NEW_AND_OLD_IMAGES).
// Every write to an order is one record, so the changes of all its records
// are, in sequence, the order's exact history. A removal changes nothing.
// A Waiting status event says since and until when its step waits; what
// it waits for needs the workflows (History.Knowing).
func ChangeOf(rec events.DynamoDBEventRecord) (order.Written, error) {
	return changeOf(rec, order.Versions{})
}

func changeOf(rec events.DynamoDBEventRecord, workflows order.Versions) (order.Written, error) {
	if rec.EventName == string(events.DynamoDBOperationTypeRemove) || len(rec.Change.NewImage) == 0 {
		return order.Written{}, nil
	}
	if key, ok := rec.Change.Keys[attrOrderID]; ok && key.DataType() == events.DataTypeString {
		if _, _, ok := order.PauseOfKey(key.String()); ok {
			return pauseChangeOf(key.String(), rec)
		}
	}
	now, err := recordOf(rec.Change.NewImage)
	if err != nil {
		return order.Written{}, fmt.Errorf("new image: %w", err)
	}
	var before *orderRecord
	if len(rec.Change.OldImage) > 0 {
		old, err := recordOf(rec.Change.OldImage)
		if err != nil {
			return order.Written{}, fmt.Errorf("old image: %w", err)
		}
		before = &old
	}
	c := order.Written{OrderID: now.OrderID, Transitions: diff(before, now), Sent: sentAlert(before, now),
		Submitted: fromMillis(now.CreatedAt), At: fromMillis(now.UpdatedAt), Current: order.Status(now.Status)}
	if before == nil || before.Status != now.Status {
		c.Status = statusChange(before, now, rec.Change.SequenceNumber)
		c.Status.Waiting = waitingFor(now, workflows)
	}
	return c, nil
}

// sentAlert is the alert a write recorded as sent: it cleared a pending alert
// and left the record as it was (a write that moved the record on made the
// alert moot instead).
func sentAlert(before *orderRecord, now orderRecord) *order.Alert {
	if before == nil || !before.AlertPending || now.AlertPending || !sameRecord(before, now) {
		return nil
	}
	st, ok := before.active()
	if !ok {
		return nil
	}
	return &order.Alert{Kind: order.AlertKind(before.AlertKind), OrderID: before.OrderID, Step: st.Step, Attempt: st.Attempt,
		FailureCount: st.FailureCount, Reason: st.LastError, Undo: st.Undo, Undone: st.Undone, At: fromMillis(now.UpdatedAt)}
}

func recordOf(image map[string]events.DynamoDBAttributeValue) (orderRecord, error) {
	item, err := itemOf(image)
	if err != nil {
		return orderRecord{}, err
	}
	return unmarshal(item)
}

// itemOf reads a stream image as the item it is.
func itemOf(image map[string]events.DynamoDBAttributeValue) (map[string]types.AttributeValue, error) {
	item := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		av, err := fromEvent(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %s: %w", k, err)
		}
		item[k] = av
	}
	return item, nil
}

// pauseChangeOf reads a write to a pause's item: its one history entry,
// kept under the pause's key, and the event for operators' rules.
func pauseChangeOf(key string, rec events.DynamoDBEventRecord) (order.Written, error) {
	image := func(which string, img map[string]events.DynamoDBAttributeValue) (order.Pause, time.Time, error) {
		if len(img) == 0 {
			return order.Pause{}, time.Time{}, nil
		}
		item, err := itemOf(img)
		if err != nil {
			return order.Pause{}, time.Time{}, fmt.Errorf("%s image of %s: %w", which, key, err)
		}
		var p pauseItem
		if err := attributevalue.UnmarshalMap(item, &p); err != nil {
			return order.Pause{}, time.Time{}, fmt.Errorf("%s image of %s: %w", which, key, err)
		}
		return p.pause(), p.Changed, nil
	}
	before, _, err := image("old", rec.Change.OldImage)
	if err != nil {
		return order.Written{}, err
	}
	after, at, err := image("new", rec.Change.NewImage)
	if err != nil {
		return order.Written{}, err
	}
	entry, ok := order.PauseHistory(before, after, at)
	if !ok {
		return order.Written{}, nil
	}
	c := &order.PauseChange{ID: key + "/" + rec.Change.SequenceNumber, Event: entry.Event, Pause: after, At: at}
	if entry.Event == order.ResumedEvent {
		c.PausedSince = before.Since
	}
	return order.Written{OrderID: key, Transitions: []order.HistoryEntry{entry}, At: at, Pause: c}, nil
}

// diff lists what a write changed, from the item before (nil for the
// submission) to the item after.
func diff(before *orderRecord, now orderRecord) []order.HistoryEntry {
	at, by := fromMillis(now.UpdatedAt), now.By
	var out []order.HistoryEntry
	add := func(t order.HistoryEntry) {
		t.At, t.By = at, by
		out = append(out, t)
	}
	if before == nil {
		add(order.HistoryEntry{Record: -1, Event: "status", To: now.Status, Reason: order.ReasonSubmitted})
		for i, s := range now.Steps {
			if s.State != string(order.NotStarted) {
				add(order.HistoryEntry{Record: i, Step: s.Step, Undo: s.Undo, Event: "state", From: string(order.NotStarted), To: s.State, Attempt: s.Attempt,
					Reason: waitReason(s)})
			}
		}
		return out
	}
	if before.Status != now.Status {
		t := order.HistoryEntry{Record: -1, Event: "status", From: before.Status, To: now.Status}
		if now.LastError != before.LastError {
			t.Reason = now.LastError
		}
		add(t)
	}
	if now.Cancel && !before.Cancel {
		add(order.HistoryEntry{Record: -1, Event: "cancel requested", Reason: cancelledBy(by)})
	}
	for i := range max(len(before.Steps), len(now.Steps)) {
		if i >= len(now.Steps) {
			o := before.Steps[i]
			add(order.HistoryEntry{Record: i, Step: o.Step, Undo: o.Undo, Event: "removed", From: o.State, Attempt: o.Attempt,
				Reason: "an operator's redrive runs the failed step again instead"})
			continue
		}
		n := now.Steps[i]
		t := order.HistoryEntry{Record: i, Step: n.Step, Undo: n.Undo, Attempt: n.Attempt}
		if i >= len(before.Steps) {
			t.Event, t.To = "state", n.State
			t.Reason = "appended to undo the work done"
			add(t)
			continue
		}
		o := before.Steps[i]
		if n.LastError != o.LastError {
			t.Reason = n.LastError
		}
		switch {
		case o.State != n.State || o.Attempt != n.Attempt:
			t.Event, t.From, t.To = "state", o.State, n.State
			if n.Reference != "" && n.Reference != o.Reference {
				t.Reason = order.ReferenceReason(n.Reference)
			}
			if n.Result != "" && n.Result != o.Result {
				t.Result = json.RawMessage(n.Result)
			}
			switch {
			case n.State == string(order.Waiting):
				t.Reason = waitReason(n)
			case o.State == string(order.Waiting) && n.State == string(order.Processed) && t.Reason == "":
				t.Reason = waitEnded
				if strings.HasSuffix(by, " event") {
					t.Reason = eventArrived
				}
			}
		case n.Heartbeats > o.Heartbeats:
			t.Event = "heartbeat"
			t.Reason = fmt.Sprintf("deadline moved to %s (heartbeat %d)", fromMillis(n.CompleteBy).Format(time.RFC3339Nano), n.Heartbeats)
		case n.Deferrals > o.Deferrals:
			t.Event = "deferred"
		case n.Nudges > o.Nudges:
			t.Event = "re-announced"
		default:
			continue
		}
		add(t)
	}
	switch active := now.Active; {
	case now.AlertPending && (!before.AlertPending || before.AlertKind != now.AlertKind):
		add(alertTransition(now, active, "alert recorded", now.AlertKind))
	case before.AlertPending && !now.AlertPending && sameRecord(before, now):
		add(alertTransition(now, before.Active, "alert sent", before.AlertKind))
	case before.AlertPending && !now.AlertPending:
		// The write moved the record on before the alert went out (an
		// operator's redrive, a late claim): nobody is told of it now.
		add(alertTransition(*before, before.Active, "alert withdrawn", before.AlertKind))
	}
	return out
}

// waitEnded is the reason of a step's success when its wait ended;
// eventArrived, when the event it waited for arrived (its data is the
// entry's result).
const (
	waitEnded    = "the wait ended"
	eventArrived = "its event arrived"
)

// waitReason is the reason of a record's entry as it starts to wait: until
// when (its CompleteBy). The time it waits since is the entry's own. A
// record that does not wait has none.
func waitReason(s stepRecord) string {
	if s.State != string(order.Waiting) {
		return ""
	}
	return "waits until " + fromMillis(s.CompleteBy).UTC().Format(time.RFC3339Nano)
}

// cancelledBy is the reason of a cancel's history entry, which clients
// read: who cancelled, as the write's actor says.
func cancelledBy(by string) string {
	switch by {
	case "client cancel":
		return "the client cancelled the order"
	case "operator cancel":
		return "an operator cancelled the order"
	}
	return "the order was cancelled"
}

// sameRecord reports whether a write left the active record's state as it
// was: an alert cleared by such a write was sent, not made moot.
func sameRecord(before *orderRecord, now orderRecord) bool {
	if before.Active == nil || now.Active == nil || *before.Active != *now.Active {
		return before.Active == nil && now.Active == nil
	}
	i := *now.Active
	return i < len(before.Steps) && i < len(now.Steps) && before.Steps[i].State == now.Steps[i].State &&
		before.Steps[i].Attempt == now.Steps[i].Attempt
}

func alertTransition(r orderRecord, active *int, event, kind string) order.HistoryEntry {
	t := order.HistoryEntry{Record: -1, Event: event, Reason: kind}
	if active != nil && *active < len(r.Steps) {
		s := r.Steps[*active]
		t.Record, t.Step, t.Undo, t.Attempt = *active, s.Step, s.Undo, s.Attempt
	}
	return t
}

// waitingFor is what the order's active step waits for, as its view shows
// it, when the order is Waiting; nil otherwise. A version not among
// workflows (Get gives the zero Workflow) shows the times alone.
func waitingFor(now orderRecord, workflows order.Versions) *order.WaitingFor {
	if order.Status(now.Status) != order.StatusWaiting {
		return nil
	}
	st, ok := now.active()
	if !ok {
		return nil
	}
	wf, _ := workflows.Get(now.Workflow, now.Version)
	return wf.WaitOf(st)
}

// statusChange is the event of an order's new status.
func statusChange(before *orderRecord, now orderRecord, seq string) *order.StatusChange {
	o, _ := now.order()
	c := &order.StatusChange{ID: now.OrderID + "/" + seq, OrderID: now.OrderID, CustomerID: o.CustomerID,
		Status: order.Status(now.Status), NotificationTarget: o.NotificationTarget, At: fromMillis(now.UpdatedAt)}
	if before != nil {
		c.Previous = order.Status(before.Status)
	}
	switch c.Status {
	case order.StatusWaiting:
		// Which step waits, and until when: a client's words too.
		if st, ok := now.active(); ok && st.ProcessState == order.Waiting {
			c.Reason = fmt.Sprintf("step %s waits until %s", st.Step, st.CompleteBy.UTC().Format(time.RFC3339Nano))
		}
	case order.StatusCompensating, order.StatusFailed, order.StatusError:
		// Clients' own rules receive the events: the reason is the
		// client's, not the engine's (the order's history keeps that).
		c.Reason = order.ClientReason(c.Status, now.LastError)
		for _, s := range now.Steps {
			if s.State == string(order.Failed) || s.State == string(order.Error) {
				c.FailedStep = s.Step
			}
		}
	}
	return c
}
