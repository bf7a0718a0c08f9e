package dynamo

import (
	"encoding/json"
	"fmt"
	"hash/fnv"
	"strconv"
	"time"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// orderRecord is one order as stored: the order itself and the state of
// every step of its workflow, in one item. One item means submission is a
// single conditional PutItem, every transition a single conditional
// UpdateItem, and a read shows the order and its steps as of one moment.
//
// Attribute names are short because they count towards the item's size,
// and so towards every write's cost.
type orderRecord struct {
	OrderID string `dynamodbav:"OrderID"`
	// Workflow and Version are the workflow version the order runs
	// under; none is order.LegacyWorkflow, order.LegacyVersion.
	Workflow string `dynamodbav:"Workflow,omitempty"`
	Version  string `dynamodbav:"Version,omitempty"`
	// Input is the order's input, as JSON text. Items written before
	// inputs have CustomerID, Lines and Notify instead.
	Input      string `dynamodbav:"Input,omitempty"`
	CustomerID string `dynamodbav:"CustomerID,omitempty"`
	// Parked is the version whose absence parked the order last (see
	// order.AlertVersionUnknown); the next claim removes it.
	Parked             string       `dynamodbav:"Parked,omitempty"`
	Lines              []order.Line `dynamodbav:"Lines,omitempty"`
	NotificationTarget string       `dynamodbav:"Notify,omitempty"`
	Status             string       `dynamodbav:"Status"`
	RequestHash        string       `dynamodbav:"ReqHash"`
	IdempotencyKey     string       `dynamodbav:"IdemKey,omitempty"`
	Caller             string       `dynamodbav:"Caller"`
	LastError          string       `dynamodbav:"LastError,omitempty"`
	CreatedAt          int64        `dynamodbav:"Created"`
	UpdatedAt          int64        `dynamodbav:"Updated"`
	Steps              []stepRecord `dynamodbav:"Steps"`
	// KeyNonce is the secret of the order's remote idempotency keys (see
	// order.Order.RemoteKey), written by the submission's PutItem and never
	// changed; items written before nonces have none.
	KeyNonce string `dynamodbav:"Nonce,omitempty"`
	// Active is the index of the step the workflow is on; absent once the
	// order is Processed.
	Active *int `dynamodbav:"Active,omitempty"`
	// AlertPending is set with Error and cleared once operators were
	// alerted: an outbox, so an alert survives a crash between the two.
	AlertPending bool   `dynamodbav:"AlertPending,omitempty"`
	AlertKind    string `dynamodbav:"AlertKind,omitempty"`
	// Cancel is set when the client cancelled the order: the step in
	// flight may finish, nothing new starts, and done work is undone.
	Cancel bool `dynamodbav:"Cancel,omitempty"`
	// Held is order.StepState.Held: the order waits for its workflow's
	// resume. Its first step is Pending but not announced (no Unclaimed).
	Held bool `dynamodbav:"Held,omitempty"`
	// UndoFloor is order.StepState.UndoFloor: set by a forward redrive
	// that drops undo records, the attempt undo records appended later
	// count on from.
	UndoFloor int `dynamodbav:"UndoFloor,omitempty"`
	// By names the actor of the latest write, for the history.
	By string `dynamodbav:"By,omitempty"`
	// Unclaimed names the active step while it is Pending and unlocked. It
	// is what the stream filter matches, so only those changes invoke the
	// Scheduler.
	Unclaimed string `dynamodbav:"Unclaimed,omitempty"`
	// DueShard and DueAt are the due index's keys, present while the
	// Supervisor must watch the order. DueAt is never later than the
	// active step's CompleteBy, so the Supervisor never looks too late; it
	// may be earlier, and the Supervisor then moves it on.
	DueShard string `dynamodbav:"DueShard,omitempty"`
	DueAt    int64  `dynamodbav:"DueAt,omitempty"`
	// Listed is the order's shard in the search indexes, written by its
	// submission and never changed; Ended and Outcome are when and how it
	// ended (or went into Error), until a redrive (see
	// resources.CreatedIndexName).
	Listed  string `dynamodbav:"Listed,omitempty"`
	Ended   int64  `dynamodbav:"Ended,omitempty"`
	Outcome string `dynamodbav:"Outcome,omitempty"`
}

// stepRecord is one step's state inside the order item.
type stepRecord struct {
	Step string `dynamodbav:"Step"`
	// Undo marks an undo record, appended when a compensation starts.
	Undo         bool   `dynamodbav:"Undo,omitempty"`
	Agent        string `dynamodbav:"Agent"`
	State        string `dynamodbav:"State"`
	Attempt      int    `dynamodbav:"Attempt"`
	FailureCount int    `dynamodbav:"Failures"`
	// PastFailures is what an operator's redrive took out of Failures.
	PastFailures int    `dynamodbav:"PastFailures,omitempty"`
	Nudges       int    `dynamodbav:"Nudges"`
	Releases     int    `dynamodbav:"Releases,omitempty"`
	Deferrals    int    `dynamodbav:"Deferrals,omitempty"`
	Heartbeats   int    `dynamodbav:"Heartbeats,omitempty"`
	LockedBy     string `dynamodbav:"LockedBy,omitempty"`
	CompleteBy   int64  `dynamodbav:"CompleteBy,omitempty"`
	// Since is when a Waiting step started to wait.
	Since int64 `dynamodbav:"Since,omitempty"`
	// StatusURL is where a polled step's service says how the work
	// goes, while the step waits for it.
	StatusURL string `dynamodbav:"StatusURL,omitempty"`
	LastError string `dynamodbav:"LastError,omitempty"`
	Reference string `dynamodbav:"Ref,omitempty"`
	// Result is the step's answer, as JSON text, when the workflow keeps
	// it (order.Workflow.Keeps).
	Result    string `dynamodbav:"Result,omitempty"`
	UpdatedAt int64  `dynamodbav:"Updated"`
}

// Attribute names used in expressions.
const (
	attrOrderID      = resources.AttrOrderID
	attrDueShard     = resources.AttrDueShard
	attrDueAt        = resources.AttrDueAt
	attrUnclaimed    = resources.AttrUnclaimed
	attrStatus       = "Status"
	attrActive       = "Active"
	attrAlertPending = "AlertPending"
	attrAlertKind    = "AlertKind"
	attrLastError    = "LastError"
	attrUpdated      = "Updated"
	attrInError      = resources.AttrInError
	attrInErrorSince = resources.AttrInErrorSince
	attrCancel       = "Cancel"
	attrHeld         = "Held"
	attrUndoFloor    = "UndoFloor"
	attrBy           = "By"
	attrSteps        = "Steps"
	attrParked       = "Parked"
	attrVersion      = "Version"
	attrExpiresAt    = resources.AttrExpiresAt
	attrEnded        = resources.AttrEnded
	attrOutcome      = resources.AttrOutcome
	dueIndexName     = resources.DueIndexName
)

// stepPath is the document path of step record i.
func stepPath(i int) string { return fmt.Sprintf("%s[%d]", attrSteps, i) }

// stepAttr is the document path of one attribute of step record i.
func stepAttr(i int, name string) string { return stepPath(i) + "." + name }

func newOrderRecord(o order.Order, steps []order.StepState, shards int) orderRecord {
	r := orderRecord{
		OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Input: string(o.Input), Status: string(o.Status),
		RequestHash: o.RequestHash, IdempotencyKey: o.IdempotencyKey, KeyNonce: string(o.KeyNonce), Caller: o.Caller, LastError: o.LastError,
		CreatedAt: millis(o.CreatedAt), UpdatedAt: millis(o.UpdatedAt),
		Steps: make([]stepRecord, len(steps)), Listed: shardOf(o.ID, shards), CustomerID: o.CustomerID,
	}
	for i, st := range steps {
		r.Steps[i] = newStepRecord(st)
		if watched(st) && r.Active == nil {
			active := i
			r.Active = &active
			r.AlertPending, r.AlertKind = st.AlertPending, string(st.AlertKind)
			r.DueShard, r.DueAt = shardOf(o.ID, shards), millis(st.CompleteBy)
			r.Held = st.Held
			if st.ProcessState == order.Pending && st.LockedBy == "" && !st.Held {
				r.Unclaimed = st.Step
			}
		}
	}
	return r
}

// newStepRecord is st as stored.
func newStepRecord(st order.StepState) stepRecord {
	return stepRecord{
		Step: st.Step, Undo: st.Undo, Agent: st.Agent, State: string(st.ProcessState), Attempt: st.Attempt,
		FailureCount: st.FailureCount, PastFailures: st.PastFailures, Nudges: st.Nudges, Releases: st.Releases, Deferrals: st.Deferrals, Heartbeats: st.Heartbeats, LockedBy: st.LockedBy,
		CompleteBy: millis(st.CompleteBy), Since: millis(st.Since), StatusURL: st.StatusURL, LastError: st.LastError, Reference: st.Reference, Result: string(st.Result),
		UpdatedAt: millis(st.UpdatedAt),
	}
}

// order returns the order and the states of its steps in workflow order.
func (r orderRecord) order() (order.Order, []order.StepState) {
	input := json.RawMessage(r.Input)
	if r.Input == "" {
		input = order.LegacyInput(r.CustomerID, r.Lines, r.NotificationTarget)
	}
	o := order.Order{
		ID: r.OrderID, Workflow: order.WorkflowOf(r.Workflow), Version: order.VersionOf(r.Version), Status: order.Status(r.Status),
		RequestHash: r.RequestHash, IdempotencyKey: r.IdempotencyKey, KeyNonce: order.Secret(r.KeyNonce), Caller: r.Caller, LastError: r.LastError,
		CreatedAt: fromMillis(r.CreatedAt), UpdatedAt: fromMillis(r.UpdatedAt),
	}.WithInput(input)
	steps := make([]order.StepState, len(r.Steps))
	var undone []string
	for i, s := range r.Steps {
		if s.Undo && s.State == string(order.Processed) {
			undone = append(undone, s.Step)
		}
		steps[i] = order.StepState{
			OrderID: r.OrderID, Workflow: o.Workflow, Version: o.Version, Parked: r.Parked,
			Step: s.Step, Index: i, Undo: s.Undo, CancelRequested: r.Cancel, Held: r.Held, UndoFloor: r.UndoFloor, Agent: s.Agent,
			ProcessState: order.ProcessState(s.State), LockedBy: s.LockedBy,
			CompleteBy: fromMillis(s.CompleteBy), Since: fromMillis(s.Since), StatusURL: s.StatusURL, FailureCount: s.FailureCount, PastFailures: s.PastFailures,
			Attempt: s.Attempt, Nudges: s.Nudges, Releases: s.Releases, Deferrals: s.Deferrals, Heartbeats: s.Heartbeats, LastError: s.LastError,
			Reference: s.Reference, UpdatedAt: fromMillis(s.UpdatedAt),
		}
		if s.Result != "" {
			steps[i].Result = json.RawMessage(s.Result)
			if !s.Undo { // written only by its success
				if o.Results == nil {
					o.Results = map[string]json.RawMessage{}
				}
				o.Results[s.Step] = steps[i].Result
			}
		}
	}
	if r.Active != nil && *r.Active >= 0 && *r.Active < len(steps) {
		a := &steps[*r.Active]
		a.AlertPending, a.AlertKind = r.AlertPending, order.AlertKind(r.AlertKind)
		a.DueAt = fromMillis(r.DueAt)
		a.Undone = undone
	}
	return o, steps
}

// found is the order as stored, for a guard (see order.Found).
func (r orderRecord) found() order.Found {
	o, steps := r.order()
	f := order.Found{Status: o.Status, Version: o.Version, Active: -1, Steps: steps}
	if r.Active != nil {
		f.Active = *r.Active
	}
	return f
}

// active returns the state of the step the workflow is on.
func (r orderRecord) active() (order.StepState, bool) {
	if r.Active == nil || *r.Active < 0 || *r.Active >= len(r.Steps) {
		return order.StepState{}, false
	}
	_, steps := r.order()
	return steps[*r.Active], true
}

// watched reports whether the Supervisor must keep an eye on a step, which
// is what puts its order into the sparse due index.
func watched(s order.StepState) bool {
	switch s.ProcessState {
	case order.Pending, order.Processing, order.Waiting:
		return true
	case order.Error:
		return s.AlertPending
	}
	return false
}

// shardOf spreads orders over the due index's partitions. The same order
// always lands on the same shard, so moving DueAt never moves the shard.
func shardOf(orderID string, shards int) string {
	h := fnv.New32a()
	h.Write([]byte(orderID))
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
