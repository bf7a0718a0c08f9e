package dynamo

import (
	"hash/fnv"
	"strconv"
	"time"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// orderRecord is an order as stored in the orders table.
type orderRecord struct {
	OrderID            string       `dynamodbav:"OrderID"`
	CustomerID         string       `dynamodbav:"CustomerID"`
	Lines              []order.Line `dynamodbav:"Lines"`
	NotificationTarget string       `dynamodbav:"NotificationTarget,omitempty"`
	Status             string       `dynamodbav:"Status"`
	RequestHash        string       `dynamodbav:"RequestHash"`
	IdempotencyKey     string       `dynamodbav:"IdempotencyKey,omitempty"`
	LastError          string       `dynamodbav:"LastError,omitempty"`
	CreatedAt          time.Time    `dynamodbav:"CreatedAt"`
	UpdatedAt          time.Time    `dynamodbav:"UpdatedAt"`
}

func newOrderRecord(o order.Order) orderRecord {
	return orderRecord{
		OrderID: o.ID, CustomerID: o.CustomerID, Lines: o.Lines,
		NotificationTarget: o.NotificationTarget, Status: string(o.Status),
		RequestHash: o.RequestHash, IdempotencyKey: o.IdempotencyKey,
		LastError: o.LastError, CreatedAt: o.CreatedAt.UTC(), UpdatedAt: o.UpdatedAt.UTC(),
	}
}

func (r orderRecord) order() order.Order {
	return order.Order{
		ID: r.OrderID, CustomerID: r.CustomerID, Lines: r.Lines,
		NotificationTarget: r.NotificationTarget, Status: order.Status(r.Status),
		RequestHash: r.RequestHash, IdempotencyKey: r.IdempotencyKey,
		LastError: r.LastError, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt,
	}
}

// stateRecord is a step's state as stored in the state table. Times are
// epoch milliseconds: CompleteBy is the due index's sort key and must
// sort as a number.
type stateRecord struct {
	OrderID      string `dynamodbav:"OrderID"`
	Step         string `dynamodbav:"Step"`
	StepIndex    int    `dynamodbav:"StepIndex"`
	Agent        string `dynamodbav:"Agent"`
	ProcessState string `dynamodbav:"ProcessState"`
	LockedBy     string `dynamodbav:"LockedBy,omitempty"`
	CompleteBy   int64  `dynamodbav:"CompleteBy,omitempty"`
	FailureCount int    `dynamodbav:"FailureCount"`
	Attempt      int    `dynamodbav:"Attempt"`
	Nudges       int    `dynamodbav:"Nudges"`
	AlertPending bool   `dynamodbav:"AlertPending,omitempty"`
	LastError    string `dynamodbav:"LastError,omitempty"`
	DueShard     string `dynamodbav:"DueShard,omitempty"`
	UpdatedAt    int64  `dynamodbav:"UpdatedAt"`
}

func newStateRecord(s order.StepState, shards int) stateRecord {
	r := stateRecord{
		OrderID: s.OrderID, Step: s.Step, StepIndex: s.Index, Agent: s.Agent,
		ProcessState: string(s.ProcessState), LockedBy: s.LockedBy,
		CompleteBy: millis(s.CompleteBy), FailureCount: s.FailureCount,
		Attempt: s.Attempt, Nudges: s.Nudges, AlertPending: s.AlertPending,
		LastError: s.LastError, UpdatedAt: millis(s.UpdatedAt),
	}
	if watched(s) {
		r.DueShard = shardOf(s.OrderID, s.Step, shards)
	}
	return r
}

func (r stateRecord) step() order.StepState {
	return order.StepState{
		OrderID: r.OrderID, Step: r.Step, Index: r.StepIndex, Agent: r.Agent,
		ProcessState: order.ProcessState(r.ProcessState), LockedBy: r.LockedBy,
		CompleteBy: fromMillis(r.CompleteBy), FailureCount: r.FailureCount,
		Attempt: r.Attempt, Nudges: r.Nudges, AlertPending: r.AlertPending,
		LastError: r.LastError, UpdatedAt: fromMillis(r.UpdatedAt),
	}
}

// watched reports whether the Supervisor must keep an eye on the step,
// which is what puts it into the sparse due index.
func watched(s order.StepState) bool {
	switch s.ProcessState {
	case order.Pending, order.Processing:
		return true
	case order.Error:
		return s.AlertPending
	}
	return false
}

// shardOf spreads steps over the due index's partitions. The same step
// always lands on the same shard.
func shardOf(orderID, step string, shards int) string {
	h := fnv.New32a()
	h.Write([]byte(orderID))
	h.Write([]byte{0})
	h.Write([]byte(step))
	return strconv.Itoa(int(h.Sum32() % uint32(max(shards, 1))))
}

func millis(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixMilli()
}

func fromMillis(ms int64) time.Time {
	if ms == 0 {
		return time.Time{}
	}
	return time.UnixMilli(ms).UTC()
}

// key attribute names, re-exported for brevity.
const (
	attrOrderID    = resources.AttrOrderID
	attrStep       = resources.AttrStep
	attrDueShard   = resources.AttrDueShard
	attrCompleteBy = resources.AttrCompleteBy
	dueIndexName   = resources.DueIndexName
)
