package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// send-event moves on an order that waits for the event, from --data,
// --data-file or standard input, and prints its new status; data the
// step's schema refuses, or an event the order's workflow has not, exits
// 1 saying what is wrong, and the order is not changed. The stage runs on
// the emulators, with a workflow this binary does not ship.
func TestSendEvent(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second})
	// The first step waits for the review: each order waits from its
	// submission.
	w.Run(t, ordertest.Reviewed(w.Workflow, 0, time.Hour))
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	approve := `{"decision":"approve","note":"checked by phone"}`
	file := filepath.Join(t.TempDir(), "review.json")
	if err := os.WriteFile(file, []byte(approve), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name  string
		args  []string // after ID
		stdin string
		json  bool
		// code is the exit status; says, what the output (0) or the
		// error (1) says; status, the order's after it.
		code   int
		says   string
		status order.Status
	}{
		{"--data", []string{"review", "--data", approve}, "", false, 0, ": Processing\n", order.StatusProcessing},
		{"--data-file", []string{"review", "--data-file", file}, "", false, 0, ": Processing\n", order.StatusProcessing},
		{"standard input, -o json", []string{"review", "--data-file", "-"}, approve, true, 0, `"status": "Processing"`, order.StatusProcessing},
		{"data its schema refuses", []string{"review", "--data", `{"decision":"maybe"}`}, "", false, 1, "decision", order.StatusWaiting},
		{"no data: {} lacks the decision", []string{"review"}, "", false, 1, "decision", order.StatusWaiting},
		{"an event the workflow has not", []string{"approval", "--data", approve}, "", false, 1, `"approval": workflow order version 1 waits for no such event (its events: review)`, order.StatusWaiting},
	} {
		t.Run(tt.name, func(t *testing.T) {
			id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
			var out bytes.Buffer
			a := &app{stage: stage.Name, output: "text", out: &out, opened: stage}
			if tt.json {
				a.output = "json"
			}
			cmd := a.sendEventCmd()
			cmd.SetArgs(append([]string{id}, tt.args...))
			cmd.SetIn(strings.NewReader(tt.stdin))
			cmd.SetOut(&out)
			cmd.SetErr(io.Discard)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.ExecuteContext(context.Background())
			got := out.String()
			if err != nil {
				got = err.Error()
			}
			code := 0
			if err != nil {
				code = exitCode(err)
			}
			if code != tt.code || (err == nil && !strings.HasPrefix(got, "order "+id) && !tt.json) || !strings.Contains(got, tt.says) {
				t.Errorf("exit %d: %s; want exit %d saying %q", code, got, tt.code, tt.says)
			}
			if o, _ := w.Records(t, id); o.Status != tt.status {
				t.Errorf("the order is %s, want %s", o.Status, tt.status)
			}
		})
	}
}
