package main

import (
	"bytes"
	"errors"
	"os"
	"strings"
	"testing"

	"orderly/internal/order"
)

// The diff docs/workflows.md shows is what the command prints for the
// v2.json it describes (testdata/order/v2.json), so that the page cannot
// drift from the code.
func TestWorkflowDiffAsDocumented(t *testing.T) {
	page, err := os.ReadFile("../../docs/workflows.md")
	if err != nil {
		t.Fatal(err)
	}
	const prompt = "$ orderly workflow diff workflows/order/v1.json workflows/order/v2.json\n"
	_, block, found := strings.Cut(string(page), prompt)
	if !found {
		t.Fatalf("docs/workflows.md has no block starting %q", prompt)
	}
	block, _, _ = strings.Cut(block, "```")

	var out bytes.Buffer
	err = workflowDiff(&out, "../../workflows/order/v1.json", "testdata/order/v2.json", order.DefaultTiming, false)
	if !errors.Is(err, errCannotMove) {
		t.Errorf("diff: %v, want %v", err, errCannotMove)
	}
	if got := out.String(); got != block {
		t.Errorf("docs/workflows.md shows:\n%s\nthe command prints:\n%s", block, got)
	}
}
