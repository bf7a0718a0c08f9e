package main

import (
	"bytes"
	"context"
	"io"
	"strings"
	"testing"
	"time"

	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// An operator pauses a service and resumes it: bad input (an unknown
// service, no reason, no length, a resume of what is not paused) exits 1
// naming what is wrong with nothing written; a held order's show names
// the pause; pauses lists it; its history says who paused and resumed.
func TestPauseAndResume(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second})
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	agent := w.Step(t, id, w.Workflow.Steps[0].Name).Agent
	cli := func(who string, args ...string) (string, int) {
		var out bytes.Buffer
		a := &app{stage: stage.Name, output: "text", out: &out, opened: stage, caller: who}
		c := a.pauseCmd()
		switch args[0] {
		case "resume":
			c = a.resumeCmd()
		case "pauses":
			c = a.pausesCmd()
		case "show":
			c = a.showCmd()
		}
		c.SetArgs(args[1:])
		c.SetOut(&out)
		c.SetErr(io.Discard)
		c.SilenceErrors, c.SilenceUsage = true, true
		if err := c.ExecuteContext(context.Background()); err != nil {
			return err.Error(), exitCode(err)
		}
		return out.String(), 0
	}
	for _, tt := range []struct {
		name string
		args []string
		code int
		says string
	}{
		{"an unknown service", []string{"pause", "service", "paymnt", "--for", "1h", "--reason", "x"}, 1, `no service "paymnt"`},
		{"no reason", []string{"pause", "service", agent, "--for", "1h"}, 1, "say why"},
		{"no length", []string{"pause", "service", agent, "--reason", "x"}, 1, "how long"},
		{"too long", []string{"pause", "service", agent, "--for", "200h", "--reason", "x"}, 1, "longer than a pause may"},
		{"submissions of a service", []string{"pause", "service", agent, "--for", "1h", "--reason", "x", "--submissions", "refuse"}, 1, "not a service's"},
		{"an unknown kind", []string{"pause", "queue", agent, "--for", "1h", "--reason", "x"}, 2, `"queue": want service or workflow`},
		{"a resume of what is not paused", []string{"resume", "service", agent}, 1, "is not paused"},
		{"a resume of an unknown workflow", []string{"resume", "workflow", "nope"}, 1, `no workflow "nope"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, code := cli("ops-a", tt.args...)
			if code != tt.code || !strings.Contains(got, tt.says) {
				t.Errorf("exit %d: %s; want exit %d saying %q", code, got, tt.code, tt.says)
			}
			if ps, err := stage.Pauses(context.Background()); err != nil || slicesAnyOn(ps) {
				t.Errorf("pauses after bad input: %+v, %v; want none on", ps, err)
			}
		})
	}

	if got, code := cli("arn:aws:iam::1:user/ana", "pause", "service", agent, "--for", "2h", "--reason", "partner maintenance"); code != 0 || !strings.Contains(got, "service "+agent+" paused since") {
		t.Fatalf("pause: exit %d: %s", code, got)
	}
	if got, code := cli("x", "show", id); code != 0 || !strings.Contains(got, "held: service "+agent+" paused by arn:aws:iam::1:user/ana") {
		t.Errorf("show of a held order: exit %d: %s; want the pause named", code, got)
	}
	if got, code := cli("x", "pauses"); code != 0 || !strings.Contains(got, agent) || !strings.Contains(got, "partner maintenance") {
		t.Errorf("pauses: exit %d: %s", code, got)
	}
	if got, code := cli("arn:aws:iam::1:user/bo", "resume", "service", agent, "--reason", "done"); code != 0 || !strings.Contains(got, "resumed after") {
		t.Fatalf("resume: exit %d: %s", code, got)
	}
	if got, code := cli("x", "show", id); code != 0 || strings.Contains(got, "held:") {
		t.Errorf("show after the resume: exit %d: %s; want no pause named", code, got)
	}
	if got, code := cli("x", "pauses", "--history", "service:"+agent); code != 0 {
		t.Errorf("pauses --history: exit %d: %s", code, got)
	}
}

func slicesAnyOn(ps []order.Pause) bool {
	for _, p := range ps {
		if p.On() {
			return true
		}
	}
	return false
}
