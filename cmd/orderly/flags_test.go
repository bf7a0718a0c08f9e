package main

import (
	"io"
	"slices"
	"testing"
)

// The single-dash spelling of a long flag, which scripts and runbooks
// wrote for the flag package, is rewritten into the double-dash one;
// nothing else is touched.
func TestDoubleDash(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"after the command", []string{"list", "-status", "Error", "-max", "100"}, []string{"list", "--status", "Error", "--max", "100"}},
		{"a global flag first", []string{"-stage", "prod", "list"}, []string{"--stage", "prod", "list"}},
		{"with its value joined", []string{"-stage=prod", "show", "X", "-status=Error"}, []string{"--stage=prod", "show", "X", "-status=Error"}},
		{"a boolean after the argument", []string{"dlq", "redrive", "Q", "-dry-run"}, []string{"dlq", "redrive", "Q", "--dry-run"}},
		{"a boolean before the argument", []string{"dlq", "redrive", "-dry-run", "Q"}, []string{"dlq", "redrive", "--dry-run", "Q"}},
		{"a command's flag before the command", []string{"-max", "5", "list"}, []string{"--max", "5", "list"}},
		{"a global flag after", []string{"show", "X", "-stage", "prod", "-output", "json"}, []string{"show", "X", "--stage", "prod", "--output", "json"}},
		{"shorthands", []string{"-o", "json", "show", "X", "-h"}, []string{"-o", "json", "show", "X", "-h"}},
		{"help", []string{"list", "-help"}, []string{"list", "--help"}},
		{"double dashes", []string{"list", "--status", "Error"}, []string{"list", "--status", "Error"}},
		{"a flag's value that looks like a flag", []string{"conformance", "--header", "-stage", "-header", "-url"}, []string{"conformance", "--header", "-stage", "--header", "-url"}},
		{"another command's flag", []string{"show", "X", "-dry-run"}, []string{"show", "X", "-dry-run"}},
		{"an unknown flag", []string{"list", "-nope"}, []string{"list", "-nope"}},
		{"after --", []string{"show", "--", "-stage"}, []string{"show", "--", "-stage"}},
		{"a nested command", []string{"workflow", "diff", "-json", "a", "b", "-allowance", "45s", "-failure-threshold", "5"},
			[]string{"workflow", "diff", "--json", "a", "b", "--allowance", "45s", "--failure-threshold", "5"}},
		{"a shell's completion request", []string{"__complete", "list", "-status"}, []string{"__complete", "list", "-status"}},
		{"nothing", nil, []string{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := doubleDash(newRoot(io.Discard, io.Discard), tt.args); !slices.Equal(got, tt.want) {
				t.Errorf("doubleDash(%q) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}
