package order

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reasons say why a step or an order is where it is: a step's and an
// order's LastError, the reasons in its history and in its status events.
// Clients read the order's own (its LastError, its status entries and
// events); operators read every one. They are made here, in the engine's words, from what
// happened, never from an error's text: an AWS error can name the account
// and its roles, and a remote service's answer can be long. The error
// itself goes to the logs of the actor that met it.

// Bounds on reasons, in bytes.
const (
	// MaxDetailBytes bounds a remote service's own words kept in a reason.
	MaxDetailBytes = 256
	// MaxReasonBytes bounds a reason an agent's reply carries.
	MaxReasonBytes = 512
)

// InternalError is what clients read of a failure inside the engine or
// its AWS services.
const InternalError = "internal error"

// ServiceError is a remote service's answer to a call that failed: its
// HTTP status and its own explanation.
type ServiceError struct {
	Service string
	Status  int
	Message string
}

func (e *ServiceError) Error() string { return fmt.Sprintf("status %d: %s", e.Status, e.Message) }

// Refused is the reason of a step whose remote service refused its work,
// with the service's own words, cut to MaxDetailBytes.
func Refused(service, detail string) string {
	if detail = Cut(detail, MaxDetailBytes); detail == "" {
		return "remote service " + service + " refused the request"
	}
	return "remote service " + service + " refused the request: " + detail
}

// ContractError is a remote service's success whose answer breaks the
// step's contract (its result bound or schema). Problem is in the
// engine's words, never the answer's values.
type ContractError struct {
	Service string
	Step    string
	Problem string
}

func (e *ContractError) Error() string {
	return fmt.Sprintf("remote service %s did step %s's work, but its answer %s", e.Service, e.Step, e.Problem)
}

// ReasonFor is the reason clients read of err, the permanent fault that
// ended a step's attempt: a remote service's refusal (a ServiceError), in
// its own words; an answer that breaks its contract (a ContractError);
// anything else is an InternalError, whatever err says.
func ReasonFor(err error) string {
	var se *ServiceError
	if errors.As(err, &se) {
		return Refused(se.Service, se.Message)
	}
	var ce *ContractError
	if errors.As(err, &ce) {
		return Cut(ce.Error()+"; an operator must act", MaxReasonBytes)
	}
	return InternalError
}

// ReplyReason is the reason kept of an agent's failure reply: the reason
// the agent gave (ReasonFor's, from this build's agents), cut to
// MaxReasonBytes, since a reply is a message from another process.
func ReplyReason(reason string) string {
	if reason = Cut(reason, MaxReasonBytes); reason == "" {
		return "the agent reported a permanent fault without a reason"
	}
	return reason
}

// NotSent is the reason of a claim given back because its request could
// not be sent to its agent.
func NotSent(agent string) string {
	return fmt.Sprintf("request not sent to the %s agent (%s); the step waits for a claim again", agent, InternalError)
}

// Cut makes s, text from outside the engine (a remote service's words, a
// client's parameter), fit to quote in a reason, an error or a log: one
// line of valid UTF-8, spaces and control characters collapsed to single
// spaces, at most maxBytes bytes, ended by an ellipsis where it was cut.
func Cut(s string, maxBytes int) string {
	s = strings.Join(strings.FieldsFunc(strings.ToValidUTF8(s, "\uFFFD"), func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r)
	}), " ")
	if len(s) <= maxBytes {
		return s
	}
	const ellipsis = "…"
	cut := max(maxBytes-len(ellipsis), 0)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strings.TrimRight(s[:cut], " ") + ellipsis
}
