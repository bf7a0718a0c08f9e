package main

import (
	"path/filepath"
	"strings"
	"testing"
)

// validate warns on stderr of what a definition allows but may not mean
// (the checkout example's refund carries its own charge, which an undo
// after a timeout is sent without), and the file stays valid: exit 0,
// and -o json on stdout is one document still.
func TestWorkflowValidateWarns(t *testing.T) {
	checkout := filepath.Join("..", "..", "examples", "workflows", "checkout", "v1.json")
	shipped := filepath.Join("..", "..", "workflows", "order", "v1.json")
	warning := "warning: " + checkout + `: steps[2].undo.carries[1]: "charge-payment": the step's own result: an undo after the step timed out (its work may be done, its answer never came) is sent without results.charge-payment, so the service must undo by the Idempotency-Key alone`
	for _, tt := range []struct {
		name       string
		args       []string
		wantStdout string
		wantStderr string
	}{
		{"text", []string{"workflow", "validate", checkout, shipped}, checkout + ": valid\n" + shipped + ": valid\n", warning + "\n"},
		{"json", []string{"workflow", "validate", "-o", "json", checkout}, `"valid": true`, warning + "\n"},
		{"no warning", []string{"workflow", "validate", shipped}, shipped + ": valid\n", ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := cli(t, tt.args...)
			if code != 0 || !strings.Contains(stdout, tt.wantStdout) || stderr != tt.wantStderr {
				t.Errorf("exit %d, stdout:\n%s\nstderr:\n%s\nwant exit 0, stdout with:\n%s\nstderr:\n%s", code, stdout, stderr, tt.wantStdout, tt.wantStderr)
			}
		})
	}
}
