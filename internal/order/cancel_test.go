package order_test

import (
	"strings"
	"testing"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// A cancelled order's step that waits for a claim is not run (again); it
// is undone too unless no attempt of it was ever claimed.
func TestCancelUnclaimed(t *testing.T) {
	tests := []struct {
		name       string
		attempt    int
		failures   int
		mayHaveRun bool
		reason     string
	}{
		{"never claimed", 0, 0, false, "before the step was claimed"},
		{"attempt 1 timed out and waits for its retry", 1, 1, true, "attempt 1 may have done"},
		{"attempt 1's claim was released", 1, 0, true, "attempt 1 may have done"},
		{"redriven after attempt 3", 3, 0, true, "attempt 3 may have done"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := order.StepState{Step: ordertest.StepChargePayment, Index: 1, ProcessState: order.Pending, CancelRequested: true,
				Attempt: tt.attempt, FailureCount: tt.failures}
			got := order.CancelUnclaimed(st)
			if got.MayHaveRun != tt.mayHaveRun || !strings.Contains(got.Reason, tt.reason) {
				t.Errorf("CancelUnclaimed(attempt %d) = %+v, want MayHaveRun %t and a reason with %q", tt.attempt, got, tt.mayHaveRun, tt.reason)
			}
		})
	}
}
