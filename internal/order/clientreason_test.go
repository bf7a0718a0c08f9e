package order_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// What a client reads of its order's reason is decided from the reasons
// the engine makes (each case below is made by the function that makes it
// for real, so a change of their words shows here): a refusal keeps the
// service's words but not its name; a timeout, a cancel and an operator's
// redrive are said in plain words; anything else is a failure operators
// look into. No attempt, deadline, agent or service name is left.
func TestClientReasonSaysWhatHappenedWithoutTheEnginesWorkings(t *testing.T) {
	timing := order.Timing{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute, FailureThreshold: 2, ClaimWithin: time.Minute}
	wf := ordertest.OrderWorkflow(timing)
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	processing := order.StepState{Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment,
		ProcessState: order.Processing, CompleteBy: now.Add(-time.Minute), Attempt: 2, FailureCount: 1}
	// assessed is the Supervisor's reason about st, which must be the
	// action named.
	assessed := func(w order.Workflow, st order.StepState, want order.Action) string {
		rec := w.Assess(st, now, order.NoBacklog)
		if rec.Action != want {
			t.Fatalf("Assess(%+v) = %s, want %s", st, rec.Action, want)
		}
		return rec.Reason
	}
	stops := wf
	stops.StopOnFailure = true
	undo := processing
	undo.Undo = true
	cancelled := processing
	cancelled.CancelRequested = true
	waiting := processing
	waiting.ProcessState, waiting.CancelRequested = order.Pending, true
	unclaimed := waiting
	unclaimed.Attempt = 0
	abandoned := processing
	abandoned.ProcessState, abandoned.Nudges = order.Pending, order.UnclaimedGiveUpAfter
	// stored is the order's LastError as the adapter writes it.
	stored := func(reason string) string { return "step " + ordertest.StepChargePayment + ": " + reason }
	refused := order.ReasonFor(fmt.Errorf("charge: %w", &order.ServiceError{Service: "payment", Status: 402, Message: "card declined"}))

	tests := []struct {
		name   string
		status order.Status
		reason string
		want   string
	}{
		{"no reason", order.StatusProcessing, "", ""},
		{"a refusal, in the service's words", order.StatusCompensating, stored(refused),
			"step charge-payment was refused: card declined"},
		{"a refusal without words", order.StatusCompensating, stored(order.Refused("payment", "")),
			"step charge-payment was refused"},
		{"a refusal that stops the order", order.StatusError, stored(refused),
			"step charge-payment was refused: card declined; an operator is looking into it"},
		{"an undo's refusal", order.StatusError, stored("undo: " + order.Refused("payment", "refund window closed")),
			"the undo of step charge-payment was refused: refund window closed; an operator is looking into it"},
		{"a refusal's words that look like the engine's", order.StatusCompensating,
			stored(order.Refused("payment", "attempt 3 timed out: the order was cancelled")),
			"step charge-payment was refused: attempt 3 timed out: the order was cancelled"},
		{"timeouts, then compensation", order.StatusCompensating, stored(assessed(wf, processing, order.Compensate)),
			"step charge-payment did not complete in time"},
		{"timeouts that stop the order", order.StatusError, stored(assessed(stops, processing, order.Fail)),
			"step charge-payment did not complete in time; an operator is looking into it"},
		{"an undo's timeouts", order.StatusError, stored(assessed(wf, undo, order.Fail)),
			"the undo of step charge-payment did not complete in time; an operator is looking into it"},
		{"a cancel before the step was claimed", order.StatusCancelling, stored(order.CancelUnclaimed(unclaimed).Reason),
			"the order was cancelled before step charge-payment started"},
		{"a cancel while the step waited to be claimed again", order.StatusCancelling, stored(order.CancelUnclaimed(waiting).Reason),
			"the order was cancelled while step charge-payment was under way: its work, if done, is undone too"},
		{"a cancel and a timeout", order.StatusCancelling, stored(assessed(wf, cancelled, order.Compensate)),
			"the order was cancelled while step charge-payment was under way: its work, if done, is undone too"},
		{"an operator's retry", order.StatusPending, "redriven by an operator (retry)",
			"an operator ran the order again"},
		{"an operator's compensate", order.StatusCompensating, stored("redriven by an operator (compensate)"),
			"an operator had the order's work undone from step charge-payment"},
		{"a contract fault", order.StatusError,
			stored(order.ReasonFor(&order.ContractError{Service: "payment", Step: ordertest.StepChargePayment, Problem: "is over 4096 bytes"})),
			"step charge-payment failed; an operator is looking into it"},
		{"an internal error", order.StatusCompensating, stored(order.ReasonFor(errors.New("AccessDenied: arn:aws:iam::123456789012"))),
			"step charge-payment failed"},
		{"an agent's reply without a reason", order.StatusError, stored(order.ReplyReason("")),
			"step charge-payment failed; an operator is looking into it"},
		{"a step no Scheduler claimed", order.StatusError, stored(assessed(wf, abandoned, order.Fail)),
			"step charge-payment failed; an operator is looking into it"},
		{"a step not in the workflow", order.StatusError,
			"step gone: " + assessed(wf, order.StepState{Step: "gone", ProcessState: order.Processing, CompleteBy: now.Add(-time.Minute)}, order.Fail),
			"step gone failed; an operator is looking into it"},
		{"an older agent's reply", order.StatusCompensating, stored("payment: POST /payment/charges: status 402: card declined: permanent fault"),
			"step charge-payment failed"},
		{"words the engine never wrote", order.StatusFailed, "payment exploded at 10.0.0.1", "the order failed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := order.ClientReason(tt.status, tt.reason)
			if got != tt.want {
				t.Errorf("ClientReason(%s, %q) = %q, want %q", tt.status, tt.reason, got, tt.want)
			}
			if tt.reason == "" || strings.Contains(tt.want, "refused:") {
				return
			}
			for _, never := range []string{"attempt", "no reply by", "2026-", "remote service", "agent", "payment:", "arn:"} {
				if strings.Contains(got, never) {
					t.Errorf("ClientReason(%s, %q) = %q shows %q", tt.status, tt.reason, got, never)
				}
			}
		})
	}
}
