package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// Bad input is a usage error naming what is wrong, before any AWS call.
func TestBulkUsageErrors(t *testing.T) {
	for _, tt := range []struct {
		args []string
		says string
	}{
		{[]string{"bulk", "redrive"}, "needs at least one filter"},
		{[]string{"bulk", "delete"}, `unknown command "delete"`},
		{[]string{"bulk", "redrive", "--status", "Error", "--action", "again"}, `action "again"`},
		{[]string{"bulk", "move", "--status", "Error"}, "the version to move the orders onto is missing"},
		{[]string{"bulk", "send-event", "review", "--status", "Waiting", "--data", "[1]"}, "--data"},
		{[]string{"bulk", "cancel", "--status", "Pending", "--rate", "0"}, "--rate 0"},
		{[]string{"bulk", "cancel", "--status", "Pending", "--max", "0"}, "--max 0"},
		{[]string{"bulk", "cancel", "--status", "Done"}, "--status"},
	} {
		var out, errOut strings.Builder
		if code := run(context.Background(), tt.args, &out, &errOut); code != 2 || !strings.Contains(errOut.String(), tt.says) {
			t.Errorf("%q: exit %d: %s; want exit 2 saying %q", tt.args, code, errOut.String(), tt.says)
		}
	}
}

// Without --yes, bulk lists the orders it would act on and acts on none;
// with it, it acts and prints what it did, with no progress line when
// stderr is not a terminal; run again, it finds nothing left.
func TestBulkDryRunThenYes(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second})
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	var ids []string
	for range 3 {
		ids = append(ids, w.Submit(t, ordertest.Submission{CustomerID: "c-bulk", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}))
	}
	other := w.Submit(t, ordertest.Submission{CustomerID: "c-other", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	journal := filepath.Join(t.TempDir(), "cancel.jsonl")
	bulk := func(args ...string) (string, string, error) {
		var out, errOut bytes.Buffer
		a := &app{stage: stage.Name, output: "text", out: &out, opened: stage}
		cmd := a.bulkCmd()
		cmd.SetArgs(append([]string{"cancel", "--customer", "c-bulk", "--status", "Pending", "--journal", journal}, args...))
		cmd.SetOut(&out)
		cmd.SetErr(&errOut)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		err := cmd.ExecuteContext(context.Background())
		return out.String(), errOut.String(), err
	}

	// A move to a version no planned order's workflow has is refused
	// before anything is done, dry run or not.
	for _, yes := range []string{"", "--yes"} {
		var out bytes.Buffer
		a := &app{stage: stage.Name, output: "text", out: &out, opened: stage}
		cmd := a.bulkCmd()
		cmd.SetArgs(slices.DeleteFunc([]string{"move", "--to", "99", "--customer", "c-bulk", "--status", "Pending", "--journal", journal, yes}, func(s string) bool { return s == "" }))
		cmd.SetOut(&out)
		cmd.SetErr(io.Discard)
		cmd.SilenceErrors, cmd.SilenceUsage = true, true
		if err := cmd.ExecuteContext(context.Background()); err == nil || !strings.Contains(err.Error(), `no version "99"`) || exitCode(err) != 1 {
			t.Fatalf("bulk move --to 99 %s: %v; want it refused naming the version", yes, err)
		}
	}

	out, _, err := bulk()
	if err != nil || !strings.Contains(out, "would act on 3 orders") || !strings.Contains(out, journal) || strings.Contains(out, other) {
		t.Fatalf("dry run: %v\n%s\nwant the 3 orders of c-bulk and the journal", err, out)
	}
	for _, id := range ids {
		if !strings.Contains(out, id) {
			t.Errorf("dry run does not list %s", id)
		}
		if o, _ := w.Records(t, id); o.Status != order.StatusPending {
			t.Errorf("after the dry run, %s is %s: the dry run acted", id, o.Status)
		}
	}

	out, errOut, err := bulk("--yes", "--rate", "100")
	if err != nil || !strings.Contains(out, "3 planned, 3 done, 0 refused, 0 failed") || !strings.Contains(errOut, journal) || strings.Contains(errOut, "\r") {
		t.Fatalf("--yes: %v\nout: %s\nerr: %q\nwant 3 done, the journal named on stderr, no progress line", err, out, errOut)
	}
	for _, id := range ids {
		if o, _ := w.Records(t, id); o.Status != order.StatusCancelling {
			t.Errorf("after --yes, %s is %s, want Cancelling", id, o.Status)
		}
	}
	if o, _ := w.Records(t, other); o.Status != order.StatusPending {
		t.Errorf("another customer's order is %s, want it untouched", o.Status)
	}
	// Cancelling, they match the filter no more: nothing is left to do,
	// which is no error after a run the journal records.
	out, _, err = bulk("--yes", "--rate", "100")
	if err != nil || !strings.Contains(out, "nothing left to do") || !strings.Contains(out, "3 orders") {
		t.Errorf("run again: %v\n%s\nwant nothing left to do, the journal's 3 orders named", err, out)
	}
}

// On a terminal, a run rewrites one line after each order: a bar of the
// orders acted on (skipped ones from the journal count as acted on) and
// the counts; a file or a pipe gets none.
func TestBulkProgressLine(t *testing.T) {
	for _, tt := range []struct {
		name string
		r    ops.BulkReport
		want string
	}{
		{"none yet", ops.BulkReport{Planned: 10}, "\r[..............................] 0/10  done 0  refused 0  failed 0  skipped 0 "},
		{"a third", ops.BulkReport{Planned: 9, Done: 2, Refused: 1}, "\r[##########....................] 3/9  done 2  refused 1  failed 0  skipped 0 "},
		{"resumed, all acted on", ops.BulkReport{Planned: 4, Skipped: 2, Done: 1, Failed: 1}, "\r[##############################] 4/4  done 1  refused 0  failed 1  skipped 2 "},
		{"an empty plan", ops.BulkReport{}, "\r[..............................] 0/0  done 0  refused 0  failed 0  skipped 0 "},
	} {
		if got := progress(tt.r); got != tt.want {
			t.Errorf("%s: %q, want %q", tt.name, got, tt.want)
		}
	}
	f, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) || isTerminal(&bytes.Buffer{}) {
		t.Error("a file or a buffer taken for a terminal")
	}
}
