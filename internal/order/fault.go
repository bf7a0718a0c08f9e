package order

import (
	"encoding/json"
	"errors"
	"time"
)

// What an agent makes of a remote service's answer. A service's success
// is an Answer; every failure of a call wraps exactly one of the fault
// classes below, which decide what the agent does: retry, fail the step,
// hold its requests, or leave the order to its version.
var (
	// ErrTransient marks a fault that a later attempt with the same
	// idempotency key may get past: an overloaded or unreachable service,
	// a timeout, a cancelled context.
	ErrTransient = errors.New("transient fault")
	// ErrPermanent marks a fault that retrying cannot fix: the service
	// refused the work (a declined card, an unknown SKU) or the request
	// itself is wrong.
	ErrPermanent = errors.New("permanent fault")
	// ErrConfiguration marks a fault in how the service is called, not in
	// the work: a wrong base URL or path, a missing or refused credential,
	// a WAF or network rule, a format the service does not take (the
	// remote adapter's ConfigurationStatuses say which answers are one).
	// It is the same for every order until someone fixes the
	// configuration, so it says nothing about the order: the agent neither
	// fails the step nor retries the call, but holds its requests.
	ErrConfiguration = errors.New("configuration fault")
	// ErrNotInBuild marks a request this build cannot make: its workflow
	// version is not in the build (an order of a newer build, after a
	// rollback). Nothing is called; the order waits for its version.
	ErrNotInBuild = errors.New("workflow version not in this build")
	// ErrContract marks a success whose answer breaks the contract: over
	// the step's result bound (when the workflow keeps it) or not matching
	// its result schema. The work was done and a retry replays the same
	// answer, so an operator must act.
	ErrContract = errors.New("contract fault")
)

// Answer is a service's successful answer: its reference for the work
// and the whole JSON object, the step's result.
type Answer struct {
	Reference string
	Body      json.RawMessage
	// Accepted says that the service of a step that calls back took the
	// call (202): the work's answer comes with its callback. For a step
	// whose service is polled, it took the call, or a check says the work
	// goes on: StatusURL is where to check (a new one, or "" to keep it),
	// and RetryAfter when (0: the service did not say).
	Accepted   bool
	StatusURL  string
	RetryAfter time.Duration
}

// StatusFault is a service's failed answer: the classified error (Err
// wraps one fault class), with the answer's status as the adapter names
// it (the remote adapter: "403", or "3xx" for any redirect), and the
// service's hint on when to try again (HasAfter: it sent one).
type StatusFault struct {
	Err      error
	Status   string
	After    time.Duration
	HasAfter bool
	// Unknown says the service does not know what the call names (an
	// HTTP 404): it may be one order's own fault, an order naming an
	// unknown entity, when the same call works for other orders; any
	// other configuration fault is every order's.
	Unknown bool
}

func (e *StatusFault) Error() string { return e.Err.Error() }
func (e *StatusFault) Unwrap() error { return e.Err }

// RetryAfter returns how long the service asked the caller to wait before
// trying again, if it said so with the failure in err.
func RetryAfter(err error) (time.Duration, bool) {
	var f *StatusFault
	if errors.As(err, &f) && f.HasAfter {
		return f.After, true
	}
	return 0, false
}

// UnknownEntity reports whether err is a service's answer that it does
// not know what the call names (StatusFault.Unknown).
func UnknownEntity(err error) bool {
	var f *StatusFault
	return errors.As(err, &f) && f.Unknown
}

// ConfigurationStatus names the status of the configuration fault in err,
// as the adapter that produced it does (StatusFault.Status), if err is
// one that a service answered. The agent's metric and the stack's alarms
// take the name as it is.
func ConfigurationStatus(err error) (string, bool) {
	var f *StatusFault
	if !errors.As(err, &f) || !errors.Is(f.Err, ErrConfiguration) {
		return "", false
	}
	return f.Status, true
}
