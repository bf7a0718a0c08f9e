package order

import (
	"regexp"
	"strings"
)

// ClientReason is what the order's client reads of its order's reason
// (its LastError, in status status): its view's lastError, its history's
// status entries and its status events. The stored reason is the
// operators': it names attempts, deadlines, agents and services, which
// clients are never shown (docs/security.md).
//
// The reason is one of the engine's own, made in this package ("step X: "
// and Refused, ReasonFor, ReplyReason, Assess's, CancelUnclaimed's, a
// redrive's), so each kind is told by the words its maker writes; the
// tests make every kind with its maker, so a change of their words shows.
// A refusal keeps the service's own words, which are meant for clients,
// not the service's name. Anything not known to be a refusal, a timeout, a
// cancel or a redrive is said to have failed, whatever its text: an
// unknown reason never reaches a client.
func ClientReason(status Status, reason string) string {
	if reason == "" {
		return ""
	}
	looking := ""
	if status == StatusError {
		looking = "; an operator is looking into it"
	}
	if reason == RedriveReason(RedriveRetry) {
		return "an operator ran the order again"
	}
	step, why, ok := stepReason(reason)
	if !ok {
		return "the order failed" + looking
	}
	subject := "step " + step
	if rest, undo := strings.CutPrefix(why, "undo: "); undo {
		subject, why = "the undo of step "+step, rest
	}
	if m := refusal.FindStringSubmatch(why); m != nil {
		if m[1] == "" {
			return subject + " was refused" + looking
		}
		return subject + " was refused: " + m[1] + looking
	}
	switch {
	case timeout.MatchString(why):
		return subject + " did not complete in time" + looking
	case why == cancelledUnclaimed:
		return "the order was cancelled before " + subject + " started"
	case strings.HasPrefix(why, cancelledReclaim), strings.HasPrefix(why, cancelledTimedOut), why == cancelledAccepted:
		return "the order was cancelled while " + subject + " was under way: its work, if done, is undone too"
	case strings.HasPrefix(why, eventRejected) && strings.HasSuffix(why, "was rejected (its rejectWhen holds)"):
		return subject + " was rejected" + looking
	case strings.HasPrefix(why, noEvent):
		return subject + " did not receive its event in time" + looking
	case why == cancelledWait:
		return "the order was cancelled while " + subject + " waited"
	case why == RedriveReason(RedriveCompensate):
		return "an operator had the order's work undone from " + subject
	}
	return subject + " failed" + looking
}

// The engine's reasons ClientReason tells apart: their makers
// (CancelUnclaimed, UndoCancelledWait, Assess) write them from these.
const (
	cancelledUnclaimed = "the order was cancelled before the step was claimed"
	cancelledReclaim   = "the order was cancelled while the step waited to be claimed again: "
	cancelledTimedOut  = "the order was cancelled and attempt "
	cancelledWait      = "the order was cancelled while the step waited"
	cancelledAccepted  = "the order was cancelled while the step's call was accepted: its work, if done, is undone too"
	noEvent            = "no event "
	eventRejected      = "event "
)

// RedriveReason is the reason of an operator's redrive with action.
func RedriveReason(action string) string { return "redriven by an operator (" + action + ")" }

var (
	// refusal is Refused's reason: the service's name is a definition's
	// (lower-case letters, digits and hyphens), its words the rest.
	refusal = regexp.MustCompile(`^remote service [a-z0-9-]+ refused the request(?:: (.+))?$`)
	// timeout is Assess's reason of an attempt that timed out for good.
	timeout = regexp.MustCompile(`^attempt \d+ timed out: no reply by \S+; \d+ of \d+ allowed timeouts used$`)
	// stepPrefix is the adapter's "step X: " before a step's reason.
	stepPrefix = regexp.MustCompile(`^step ([a-z0-9-]+): `)
)

// stepReason splits an order's reason into its step and the step's reason.
func stepReason(reason string) (step, why string, ok bool) {
	m := stepPrefix.FindStringSubmatch(reason)
	if m == nil {
		return "", "", false
	}
	return m[1], reason[len(m[0]):], true
}
