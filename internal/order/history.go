package order

import (
	"encoding/json"
	"time"
)

// HistoryEntry is one change of an order, or of one of its records, as the
// order's history shows it: who changed what from which state to which,
// on which attempt, and why.
type HistoryEntry struct {
	At time.Time `json:"at" dynamodbav:"At"`
	// Record is the index in the order's list of steps (workflow steps,
	// then undo records); -1 is the order itself.
	Record int    `json:"record" dynamodbav:"R"`
	Step   string `json:"step,omitempty" dynamodbav:"S,omitempty"`
	Undo   bool   `json:"undo,omitempty" dynamodbav:"U,omitempty"`
	// Event is what happened: "status" (the order's), "state" (a
	// record's), "heartbeat", "deferred", "re-announced", "cancel
	// requested", "alert recorded", "alert sent", "alert withdrawn" (cleared
	// by a write that moved the record on before it was sent), "removed".
	Event   string `json:"event" dynamodbav:"E"`
	From    string `json:"from,omitempty" dynamodbav:"F,omitempty"`
	To      string `json:"to,omitempty" dynamodbav:"T,omitempty"`
	Attempt int    `json:"attempt,omitempty" dynamodbav:"A,omitempty"`
	// By is the actor that made the change: submit, scheduler <id>,
	// supervisor, agent <name>, client cancel, client event, operator
	// redrive, operator cancel (the CLI's), operator event.
	By     string `json:"by,omitempty" dynamodbav:"B,omitempty"`
	Reason string `json:"reason,omitempty" dynamodbav:"W,omitempty"`
	// Result is the answer a step's success kept (its workflow passes it
	// on), on the transition that recorded it.
	Result json.RawMessage `json:"result,omitempty" dynamodbav:"Res,omitempty"`
}

// ReasonSubmitted is the reason of an order's first status entry.
const ReasonSubmitted = "submitted"

// ReferencePrefix starts the reason of a record's history entry that
// recorded the service's reference (its id for the work), as
// ReferenceReason writes it.
const ReferencePrefix = "reference "

// ReferenceReason is the reason of the history entry that recorded a
// record's reference.
func ReferenceReason(reference string) string { return ReferencePrefix + reference }

// RecordLabel names one of an order's records: its step, or the undo of
// its step.
func RecordLabel(step string, undo bool) string {
	if undo {
		return "undo " + step
	}
	return step
}

// StatusChange is an order's move to a new status, published as an event
// for clients.
type StatusChange struct {
	// ID identifies the change, for consumers that drop duplicates
	// (delivery is at least once).
	ID                 string `json:"eventId"`
	OrderID            string `json:"orderId"`
	CustomerID         string `json:"customerId"`
	Status             Status `json:"status"`
	Previous           Status `json:"previousStatus,omitempty"`
	FailedStep         string `json:"failedStep,omitempty"`
	Reason             string `json:"reason,omitempty"`
	NotificationTarget string `json:"notificationTarget,omitempty"`
	// Waiting is, for StatusWaiting, what the order's step waits for and
	// until when: the same object as its view's.
	Waiting *WaitingFor `json:"waiting,omitempty"`
	At      time.Time   `json:"at"`
}

// Written is one write to an order, read from the table's stream: what it
// changed, entry by entry, and the status change it made, if any.
type Written struct {
	OrderID     string
	Transitions []HistoryEntry
	Status      *StatusChange
	// Sent is the alert the change recorded as sent to operators, as the
	// notifier sent it (its time is the change's); nil for other changes.
	Sent *Alert
	// Submitted is when the order was submitted, for its latency; At is
	// when the change was made; Current is the order's status after it.
	Submitted time.Time
	At        time.Time
	Current   Status
	// Pause is, for a write to a pause's item (OrderID is then its key),
	// the pause's change; its one transition is kept as its history.
	Pause *PauseChange
}
