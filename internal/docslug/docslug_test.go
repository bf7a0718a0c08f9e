package docslug_test

import (
	"testing"

	"orderly/internal/docslug"
)

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"State model": "state-model",
		"Remote services: the contract and the fault classes": "remote-services-the-contract-and-the-fault-classes",
		"`orderly` CLI":                     "orderly-cli",
		"On LocalStack, without Docker":     "on-localstack-without-docker",
		"Known limits and noise":            "known-limits-and-noise",
		"Step 1 — deploy":                   "step-1--deploy",
		"[Runbook](#runbook) for operators": "runbook-for-operators",
		"The local runtime's variables":     "the-local-runtimes-variables",
	}
	for title, want := range tests {
		if got := docslug.Slug(title); got != want {
			t.Errorf("Slug(%q) = %q, want %q", title, got, want)
		}
	}
}

func TestAnchors(t *testing.T) {
	got := docslug.Anchors("# A\n## A\n```\n# not a heading\n```\n## B ##\n<a id=\"c\"></a>\n")
	for _, want := range []string{"a", "a-1", "b", "c"} {
		if !got[want] {
			t.Errorf("anchors lack %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a heading inside a code fence counted")
	}
}
