package api

import (
	"encoding/json"
	"slices"
	"strings"
	"time"

	"orderly/internal/order"
)

// StepView is one record's state as an operator's GET /ops/orders/{id},
// the CLI and the console show it: everything the engine keeps of it.
type StepView struct {
	Step string `json:"step"`
	// Undo marks an undo record: the undo of Step's work.
	Undo         bool       `json:"undo,omitempty"`
	Agent        string     `json:"agent"`
	State        string     `json:"state"`
	Attempt      int        `json:"attempt"`
	FailureCount int        `json:"failureCount"`
	CompleteBy   *time.Time `json:"completeBy,omitempty"`
	LockedBy     string     `json:"lockedBy,omitempty"`
	LastError    string     `json:"lastError,omitempty"`
	// Waiting is, for a Waiting step, what it waits for and until when.
	Waiting *WaitView `json:"waiting,omitempty"`
	// Reference is the remote service's id for the work a step did;
	// Result, its whole answer when the workflow keeps it.
	Reference string          `json:"reference,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// WaitView is what a Waiting step waits for, since when and until when,
// as clients and operators read it: the same object as a Waiting order's
// status event carries.
type WaitView = order.WaitingFor

// waitView is st's wait, nil unless st is Waiting. wf is the order's
// workflow version (the zero Workflow when this build lacks it).
func waitView(st order.StepState, wf order.Workflow) *WaitView {
	return wf.WaitOf(st)
}

// ClientStepView is one record's state as the order's client reads it
// (GET /orders/{id}): the step and its state, and the service's reference
// and answer only where the workflow shows them to clients
// (StepDef.ResultShownToClient). Its attempt (the fence), deadline,
// owner, service, failure count and reason are the operators' (see
// StepView); the order's own lastError says why it failed.
type ClientStepView struct {
	Step      string          `json:"step"`
	Undo      bool            `json:"undo,omitempty"`
	State     string          `json:"state"`
	Waiting   *WaitView       `json:"waiting,omitempty"`
	Reference string          `json:"reference,omitempty"`
	Result    json.RawMessage `json:"result,omitempty"`
	UpdatedAt time.Time       `json:"updatedAt"`
}

// ClientOrderView is the body of a client's GET /orders/{id}: its order as
// it submitted it, where it stands and why it failed (as order.ClientReason
// says it), and each record as ClientStepView shows it. Like OrderView, it
// shows the input's fields beside its own.
type ClientOrderView struct {
	OrderID    string           `json:"orderId"`
	Status     order.Status     `json:"status"`
	Workflow   string           `json:"workflow"`
	Version    string           `json:"version"`
	LastError  string           `json:"lastError,omitempty"`
	CreatedAt  time.Time        `json:"createdAt"`
	UpdatedAt  time.Time        `json:"updatedAt"`
	Steps      []ClientStepView `json:"steps"`
	Input      json.RawMessage  `json:"-"`
	CustomerID string           `json:"-"`
}

// MarshalJSON writes the view's fields and then the input's.
func (v ClientOrderView) MarshalJSON() ([]byte, error) {
	type own ClientOrderView // without this method
	raw, err := json.Marshal(own(v))
	if err != nil {
		return nil, err
	}
	return withInput(raw, v.Input)
}

// NewClientView is what the order's client reads of it: see
// ClientOrderView. wf is the order's workflow version; a version this
// build lacks (the zero Workflow) shows no step's result.
func NewClientView(o order.Order, steps []order.StepState, wf order.Workflow) ClientOrderView {
	view := ClientOrderView{
		OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Status: o.Status, Input: o.Input, CustomerID: o.CustomerID,
		LastError: order.ClientReason(o.Status, o.LastError),
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Steps: make([]ClientStepView, len(steps)),
	}
	for i, st := range steps {
		v := ClientStepView{Step: st.Step, Undo: st.Undo, State: string(st.ProcessState), Waiting: waitView(st, wf), UpdatedAt: st.UpdatedAt}
		if !st.Undo && wf.ShowsResult(st.Step) {
			v.Reference, v.Result = st.Reference, st.Result
		}
		view.Steps[i] = v
	}
	return view
}

// OrderView is the body of an operator's GET /ops/orders/{id}, and what
// the CLI and the console show: the order and every record as the engine
// keeps them (a client reads ClientOrderView).
//
// The order's input fields are shown beside the view's own, as the client
// submitted them (the shipped workflow's customerId, lines and
// notificationTarget); a definition's input may not use the view's names.
type OrderView struct {
	OrderID string       `json:"orderId"`
	Status  order.Status `json:"status"`
	// Workflow and Version are the workflow version the order runs under.
	Workflow  string     `json:"workflow"`
	Version   string     `json:"version"`
	LastError string     `json:"lastError,omitempty"`
	CreatedAt time.Time  `json:"createdAt"`
	UpdatedAt time.Time  `json:"updatedAt"`
	Steps     []StepView `json:"steps"`
	// Redrive, for an order in Error on the operators' route, says what
	// each redrive action does, or why it is refused (order.PlanRedrive).
	Redrive []RedriveView `json:"redrive,omitempty"`
	// HeldBy, on the operators' views (orderly show, the console), is the
	// pause that holds the order: its running step's service paused, or
	// its workflow's, holding it before its first step.
	HeldBy *order.Pause `json:"heldBy,omitempty"`
	// Input is the order's input; CustomerID is its customerId, if any.
	Input      json.RawMessage `json:"-"`
	CustomerID string          `json:"-"`
}

// UnmarshalJSON reads a view MarshalJSON wrote: the fields that are not
// the view's own are the input.
func (v *OrderView) UnmarshalJSON(data []byte) error {
	type own OrderView
	var o own
	if err := json.Unmarshal(data, &o); err != nil {
		return err
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return err
	}
	for _, name := range viewFields {
		delete(fields, name)
	}
	input, err := json.Marshal(fields)
	if err != nil {
		return err
	}
	*v = OrderView(o)
	v.Input = input
	if raw, ok := fields[order.InputCustomerID]; ok {
		_ = json.Unmarshal(raw, &v.CustomerID) // not a string: no customer
	}
	return nil
}

// viewFields are OrderView's own JSON names.
var viewFields = []string{"orderId", "status", "workflow", "version", "lastError", "createdAt", "updatedAt", "steps", "redrive", "heldBy"}

// MarshalJSON writes the view's fields and then the input's.
func (v OrderView) MarshalJSON() ([]byte, error) {
	type own OrderView // without this method
	raw, err := json.Marshal(own(v))
	if err != nil {
		return nil, err
	}
	return withInput(raw, v.Input)
}

// withInput adds the input's fields to a view's JSON object raw, beside
// (never over) the view's own.
func withInput(raw []byte, in json.RawMessage) ([]byte, error) {
	var input map[string]json.RawMessage
	if json.Unmarshal(in, &input) != nil || len(input) == 0 {
		return raw, nil
	}
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, err
	}
	for k, val := range input {
		if _, taken := fields[k]; !taken {
			fields[k] = val
		}
	}
	return json.Marshal(fields)
}

// RedriveView is what one redrive action does to an order in Error, or
// why it is refused and what to do instead.
type RedriveView struct {
	Action string `json:"action"`
	// Default marks the action a redrive without one takes.
	Default bool   `json:"default,omitempty"`
	What    string `json:"what,omitempty"`
	Refused string `json:"refused,omitempty"`
}

// redriveViews asks the domain what each redrive action would do to the
// order as read.
func redriveViews(o order.Order, steps []order.StepState) []RedriveView {
	if o.Status != order.StatusError {
		return nil
	}
	def, err := order.PlanRedrive(o.Status, steps, "")
	if err != nil {
		return nil
	}
	var views []RedriveView
	for _, action := range []string{order.RedriveRetry, order.RedriveCompensate} {
		v := RedriveView{Action: action, Default: action == def.Action}
		if p, err := order.PlanRedrive(o.Status, steps, action); err != nil {
			v.Refused = strings.TrimSuffix(err.Error(), ": "+order.ErrNotAllowed.Error())
		} else {
			v.What = p.What
		}
		views = append(views, v)
	}
	return views
}

// NewOrderView is how the operators' route, the CLI and the console show
// an order and its records, with, for an order in Error, what each
// redrive does. wf is the order's workflow version, which says what a
// Waiting step waits for; a version this build lacks (the zero Workflow)
// leaves that out.
func NewOrderView(o order.Order, steps []order.StepState, wf order.Workflow) OrderView {
	view := OrderView{
		OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Status: o.Status, Input: o.Input, CustomerID: o.CustomerID, LastError: o.LastError,
		CreatedAt: o.CreatedAt, UpdatedAt: o.UpdatedAt, Steps: make([]StepView, len(steps)),
	}
	for i, st := range steps {
		v := StepView{
			Step: st.Step, Undo: st.Undo, Agent: st.Agent, State: string(st.ProcessState), Attempt: st.Attempt,
			FailureCount: st.FailureCount, LockedBy: st.LockedBy, LastError: st.LastError, Waiting: waitView(st, wf),
			Reference: st.Reference, Result: st.Result, UpdatedAt: st.UpdatedAt,
		}
		if !st.CompleteBy.IsZero() {
			v.CompleteBy = &st.CompleteBy
		}
		view.Steps[i] = v
	}
	view.Redrive = redriveViews(o, steps)
	return view
}

// HistoryView is the body of GET /orders/{id}/history.
type HistoryView struct {
	OrderID string               `json:"orderId"`
	Status  order.Status         `json:"status"`
	History []order.HistoryEntry `json:"history"`
}

// clientEvents are the history's events a client reads: its order's
// status, its cancel, and each record's state. Heartbeats, deferrals,
// re-announcements and alerts are how the engine and its operators work.
var clientEvents = []string{"status", "cancel requested", "state", "removed"}

// ClientHistory is what an order's client reads of its history: when and
// how the order and each record changed, and why the order did; who
// changed it only when a person did (a client's cancel, an operator's
// redrive or cancel); a step's result only where wf shows it to clients
// (StepDef.ResultShownToClient), with its reference; a step's start of a
// wait with its reason (until when it waits). The order's reasons
// are said as order.ClientReason says them. Attempts (the fences), the
// instances and agents that wrote, and records' other reasons (timeouts,
// deadlines, a reference not shown) are the operators'. Each entry is built anew from
// the fields allowed, so a field added to order.HistoryEntry stays the
// operators' until it is allowed here.
func ClientHistory(wf order.Workflow, ts []order.HistoryEntry) []order.HistoryEntry {
	out := make([]order.HistoryEntry, 0, len(ts))
	for _, e := range ts {
		if !slices.Contains(clientEvents, e.Event) {
			continue
		}
		c := order.HistoryEntry{At: e.At, Record: e.Record, Step: e.Step, Undo: e.Undo, Event: e.Event, From: e.From, To: e.To}
		if strings.HasPrefix(e.By, "client ") || strings.HasPrefix(e.By, "operator ") {
			c.By = e.By
		}
		switch {
		case e.Event == "status" && e.Reason != order.ReasonSubmitted:
			c.Reason = order.ClientReason(order.Status(e.To), e.Reason) // the order's reason, as clients read it
		case e.Record < 0:
			c.Reason = e.Reason // a submission's, a cancel's: the engine's plain words
		case e.Event == "state" && e.To == string(order.Waiting):
			c.Reason = e.Reason // until when the step waits, which the client's view shows too
		case !e.Undo && wf.ShowsResult(e.Step) && strings.HasPrefix(e.Reason, order.ReferencePrefix):
			c.Reason = e.Reason // the reference, shown like the step's result
		}
		if !e.Undo && wf.ShowsResult(e.Step) {
			c.Result = e.Result
		}
		out = append(out, c)
	}
	return out
}
