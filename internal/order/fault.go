package order

import (
	"encoding/json"
	"errors"
	"strconv"
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
	// the work: a redirect (a wrong base URL), 401 or 407 (a credential),
	// 403 (a WAF or network rule, a permission), 404 or 405 (a wrong URL),
	// 415 (a format the service does not take). It is the same for every
	// order until someone fixes the configuration, so it says nothing
	// about the order: the agent neither fails the step nor retries the
	// call, but holds its requests.
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
}

// ConfigurationStatuses name the statuses that are configuration faults,
// as ConfigurationStatus, the agent's metric and the stack's alarms do:
// every redirect is "3xx".
var ConfigurationStatuses = []string{"3xx", "401", "403", "404", "405", "407", "415"}

// StatusFault is a service's failed answer: the classified error (Err
// wraps one fault class), with the answer's status and the service's
// Retry-After hint (HasAfter: it sent one).
type StatusFault struct {
	Err      error
	Status   int
	After    time.Duration
	HasAfter bool
}

func (e *StatusFault) Error() string { return e.Err.Error() }
func (e *StatusFault) Unwrap() error { return e.Err }

// RetryAfter returns how long the service asked the caller to wait before
// trying again, if it sent a Retry-After header with the failure in err.
func RetryAfter(err error) (time.Duration, bool) {
	var f *StatusFault
	if errors.As(err, &f) && f.HasAfter {
		return f.After, true
	}
	return 0, false
}

// ConfigurationStatus names the status of the configuration fault in err
// (one of ConfigurationStatuses: "403", or "3xx" for any redirect), if err
// is one that a service answered.
func ConfigurationStatus(err error) (string, bool) {
	var f *StatusFault
	if !errors.As(err, &f) || !errors.Is(f.Err, ErrConfiguration) {
		return "", false
	}
	if f.Status >= 300 && f.Status < 400 {
		return "3xx", true
	}
	return strconv.Itoa(f.Status), true
}
