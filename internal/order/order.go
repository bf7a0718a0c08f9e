// Package order holds orderly's domain: orders, the workflow of steps that
// processes them, each step's state in the Scheduler Agent Supervisor pattern,
// and the messages the actors exchange. It has no AWS imports.
package order

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"time"
)

// Status is an order's overall state.
type Status string

// Order statuses. An order ends Processed, Failed, Cancelled or, only when
// an operator must act, Error.
const (
	StatusPending    Status = "Pending"    // accepted, first step not finished yet
	StatusProcessing Status = "Processing" // at least one step finished
	// StatusWaiting: the active step waits (a durable timer): nothing
	// runs, and the Supervisor moves the order on when the wait ends.
	StatusWaiting   Status = "Waiting"
	StatusProcessed Status = "Processed" // every step finished
	// StatusCompensating: a step failed for good; the work of the steps
	// before it (and its own, if its outcome is unknown) is being undone,
	// in reverse order. It ends Failed.
	StatusCompensating Status = "Compensating"
	StatusFailed       Status = "Failed"
	// StatusCancelling: the client cancelled; a step in flight finishes or
	// times out, then completed work is undone in reverse. It ends
	// Cancelled.
	StatusCancelling Status = "Cancelling"
	StatusCancelled  Status = "Cancelled"
	// StatusError: an operator must act (an undo that cannot be done, a
	// step nobody claims, or a failure the workflow does not compensate);
	// operators were alerted, and POST /orders/{id}/redrive resumes it.
	StatusError Status = "Error"
)

// Statuses lists every order status, in the order an order can reach them.
var Statuses = []Status{StatusPending, StatusProcessing, StatusWaiting, StatusProcessed, StatusCompensating,
	StatusFailed, StatusCancelling, StatusCancelled, StatusError}

// Terminal reports whether an order in this status is done: nothing in
// the engine moves it on any more (an Error order waits for an operator).
func (s Status) Terminal() bool {
	switch s {
	case StatusProcessed, StatusFailed, StatusCancelled, StatusError:
		return true
	}
	return false
}

// ProcessState is one step's state, the pattern's ProcessState field.
type ProcessState string

// Step states. NotStarted marks steps the workflow has not reached yet.
// An undo record (StepState.Undo) goes through NotStarted, Pending,
// Processing and Processed (the work was undone) or Error, like a step.
const (
	NotStarted ProcessState = "NotStarted"
	Pending    ProcessState = "Pending"
	Processing ProcessState = "Processing"
	// Waiting: the step waits (see StepDef.Wait); no agent works on it and
	// no Scheduler holds it. CompleteBy is when the wait ends.
	Waiting   ProcessState = "Waiting"
	Processed ProcessState = "Processed"
	Error     ProcessState = "Error"
	// Failed: the step failed for good (a permanent fault or too many
	// timeouts) and the order is compensated.
	Failed ProcessState = "Failed"
	// Undone: the step's work was undone by its undo record.
	Undone ProcessState = "Undone"
	// Skipped: the step's condition (StepDef.When) did not hold where it
	// would have started: it did not run, and has nothing to undo.
	Skipped ProcessState = "Skipped"
	// Cancelled: the order was cancelled while the step waited for a
	// claim, so it does not run (again). A step claimed before is undone
	// all the same (see CancelUnclaimed).
	Cancelled ProcessState = "Cancelled"
)

// Errors shared by the actors and their adapters. Adapters wrap them;
// callers test them with errors.Is.
var (
	// ErrInvalid marks input that breaks a rule; it is the caller's fault.
	ErrInvalid = errors.New("invalid input")
	// ErrTooLarge marks a request body over the size limit.
	ErrTooLarge = errors.New("request too large")
	// ErrNotFound marks an order that does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict marks an idempotency key reused with a different request.
	ErrConflict = errors.New("conflict")
	// ErrExists marks an order id that is already taken: a replayed
	// Idempotency-Key.
	ErrExists = errors.New("already exists")
	// ErrStale marks a conditional write that found the step already moved
	// on: a lost claim race, a stale or duplicate reply, a recovery another
	// Supervisor already made. It is a normal outcome, not a failure.
	ErrStale = errors.New("step state moved on")
	// ErrNotAllowed marks an operation the order's status does not allow
	// (cancelling a Processed order, redriving one not in Error).
	ErrNotAllowed = errors.New("not allowed in this status")
	// ErrCancelRequested says that a step's success arrived for an order
	// the client has cancelled: the success is recorded by the write that
	// starts undoing the order's work instead.
	ErrCancelRequested = errors.New("the order was cancelled")
	// ErrTooLate says that what arrived (an event) came after the wait
	// for it ended: nothing is written.
	ErrTooLate = errors.New("too late")
	// ErrHeartbeatLimit says that an attempt's deadline was moved on as
	// often as its step allows: the agent must finish by the deadline it
	// has.
	ErrHeartbeatLimit = errors.New("heartbeat limit reached")
)

// Line is one line item of an order.
type Line struct {
	SKU      string `json:"sku" dynamodbav:"SKU"`
	Quantity int    `json:"quantity" dynamodbav:"Quantity"`
}

// Order is a customer's order as stored in the orders table.
type Order struct {
	ID string
	// Workflow and Version name the workflow version the order was
	// submitted under (none: LegacyWorkflow, LegacyVersion).
	Workflow string
	Version  string
	// Input is what the submission carried, as its workflow's input
	// schema checked it: a JSON object. Steps whose requests carry the
	// order (CarriesOrder) send its fields to their services.
	Input json.RawMessage
	// CustomerID and NotificationTarget are the input's "customerId" and
	// "notificationTarget" strings, when it has them: the two input fields
	// orderly itself reads (operators see the customer; an order's
	// idempotency keys are scoped to it).
	CustomerID string
	// NotificationTarget is where progress reports go (not used yet).
	NotificationTarget string
	// Results are the kept answers of the order's Processed steps (see
	// Workflow.Keeps), by step name.
	Results map[string]json.RawMessage
	Status  Status
	// RequestHash fingerprints the submitted body so that a replay with
	// the same Idempotency-Key can be told apart from a conflicting one.
	RequestHash    string
	IdempotencyKey string
	// KeyNonce is the secret the order's remote idempotency keys are
	// derived from (see RemoteKey), made at submission and stored with the
	// order; it is never shown. Empty for orders stored before nonces.
	KeyNonce Secret
	// Caller is the authenticated principal that submitted the order; only
	// it (and operators) may read the order, and its Idempotency-Keys are
	// its own.
	Caller    string
	LastError string
	CreatedAt time.Time
	UpdatedAt time.Time
}

// StepState is the state record of one step of one order.
type StepState struct {
	OrderID string
	// Workflow and Version are the order's (WorkflowOf and VersionOf the
	// recorded ones).
	Workflow string
	Version  string
	// Parked is the version whose absence last parked the order (see
	// AlertVersionUnknown); a claim clears it.
	Parked string
	Step   string
	// Index is the record's position in the order's list of steps: the
	// workflow's steps first, then, once a compensation starts, one undo
	// record per step to undo, in the order they are undone.
	Index int
	// Undo marks an undo record: it undoes the work of the workflow step
	// named Step.
	Undo         bool
	Agent        string
	ProcessState ProcessState
	// CancelRequested is the order's: the client cancelled it.
	CancelRequested bool
	// Held is the order's: it was accepted while its workflow was paused
	// with submissions held (see Pause), and its first step waits, not
	// announced, until the resume releases it.
	Held bool
	// LockedBy names the Scheduler instance that claimed the step.
	LockedBy string
	// CompleteBy is the deadline of the current phase: for a Processing
	// step, when the agent must have replied; for a Pending step, when a
	// Scheduler must have claimed it; for a Waiting step, when its wait
	// ends. Zero for steps not yet reached.
	CompleteBy time.Time
	// Since is when a Waiting step started to wait.
	Since time.Time
	// StatusURL is where the service of a Waiting step that is polled
	// says how its work goes (StepDef.Poll).
	StatusURL    string
	FailureCount int
	// PastFailures counts the timeouts an operator's redrive took out of
	// FailureCount when it gave the record a fresh count: with it, every
	// timeout the record ever had.
	PastFailures int
	// Attempt counts claims. It is the fencing token: requests and replies
	// carry it, and a write on behalf of attempt N only succeeds while the
	// step is still on attempt N. An undo record counts on from UndoFloor.
	Attempt int
	// UndoFloor is the order's: the highest attempt any undo record
	// reached before an operator's forward redrive dropped the undo
	// records. Undo records appended later, at the same indexes, number
	// their attempts above it, so that no attempt number repeats at an
	// index and a late reply of a dropped attempt stays stale.
	UndoFloor int
	// Nudges counts how often the Supervisor re-announced a Pending step
	// that no Scheduler claimed in time.
	Nudges int
	// Releases counts claims given back because their request could not
	// be sent.
	Releases int
	// Deferrals counts how often this attempt's deadline was moved
	// because its agent's queue had a backlog.
	Deferrals int
	// Heartbeats counts how often the agent working on this attempt
	// moved its deadline on: when it started a request that had waited,
	// and while a long call ran.
	Heartbeats int
	// AlertPending is set together with the state that needs an alert
	// (Error, or a step nobody claims) and cleared once operators were
	// alerted, so an alert is never lost between two writes. AlertKind
	// says which alert.
	AlertPending bool
	AlertKind    AlertKind
	LastError    string
	// Reference is the remote service's id for the work a Processed step
	// did (a reservation, charge or shipment).
	Reference string
	// Result is a Processed step's answer, when its workflow keeps it
	// (Workflow.Keeps).
	Result json.RawMessage
	// Undone lists, for the active record, the workflow steps whose work
	// has been undone so far, in the order they were undone.
	Undone []string
	// DueAt is when the Supervisor next looks at the order, set only on
	// the active step. It is never later than CompleteBy.
	DueAt     time.Time
	UpdatedAt time.Time
}

// Expired reports whether the step's current deadline has passed.
func (s StepState) Expired(now time.Time) bool {
	return !s.CompleteBy.IsZero() && now.After(s.CompleteBy)
}

// The input fields orderly itself reads (see Order.CustomerID).
const (
	InputCustomerID         = "customerId"
	InputNotificationTarget = "notificationTarget"
)

// WithInput is o with its Input, and the CustomerID and
// NotificationTarget read from it.
func (o Order) WithInput(input json.RawMessage) Order {
	o.Input = input
	var known map[string]any
	_ = json.Unmarshal(input, &known) // not an object: neither is known
	o.CustomerID, _ = known[InputCustomerID].(string)
	o.NotificationTarget, _ = known[InputNotificationTarget].(string)
	return o
}

// legacySubmission is the shipped workflow's submission as orders stored
// before inputs hold it.
type legacySubmission struct {
	CustomerID         string `json:"customerId"`
	Lines              []Line `json:"lines"`
	NotificationTarget string `json:"notificationTarget,omitempty"`
}

// LegacyInput is the input of an order stored before inputs: the shipped
// workflow's submission, {customerId, lines, notificationTarget}.
func LegacyInput(customerID string, lines []Line, notificationTarget string) json.RawMessage {
	raw, _ := json.Marshal(legacySubmission{customerID, lines, notificationTarget}) // strings and ints cannot fail
	return raw
}

// LegacyHash is the fingerprint orders of the shipped workflow stored
// before inputs have (their RequestHash): the hash of the submission as
// its Go struct's JSON. An order of that workflow whose input the old
// shape holds exactly keeps it, so that a client retrying a submission
// from before the upgrade gets its order, not a conflict. false when the
// shape cannot hold the input.
func LegacyHash(input json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(input))
	dec.DisallowUnknownFields()
	var s legacySubmission
	if err := dec.Decode(&s); err != nil {
		return "", false
	}
	canonical, _ := json.Marshal(s)
	sum := sha256.Sum256(canonical)
	return hex.EncodeToString(sum[:]), true
}
