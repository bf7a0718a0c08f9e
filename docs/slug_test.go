package docs_test

import "testing"

func TestSlug(t *testing.T) {
	tests := map[string]string{
		"State model": "state-model",
		"Remote services: the contract and the fault classes": "remote-services-the-contract-and-the-fault-classes",
		"`orderly` CLI":                     "orderly-cli",
		"On LocalStack, without Docker":     "on-localstack-without-docker",
		"Known limits and noise":            "known-limits-and-noise",
		"Step 1 — deploy":                   "step-1--deploy",
		"[Runbook](#runbook) for operators": "runbook-for-operators",
	}
	for title, want := range tests {
		if got := slug(title); got != want {
			t.Errorf("slug(%q) = %q, want %q", title, got, want)
		}
	}
	got := slugs("# A\n## A\n```\n# not a heading\n```\n## B ##\n")
	for _, want := range []string{"a", "a-1", "b"} {
		if !got[want] {
			t.Errorf("slugs lack %q: %v", want, got)
		}
	}
	if got["not-a-heading"] {
		t.Error("a heading inside a code fence counted")
	}
}
