package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `orderly workflow validate` says "valid" for each good file and nothing
// else; with a bad one, one line per problem, naming the file and field,
// and an error (exit 1).
func TestWorkflowValidate(t *testing.T) {
	shipped := filepath.Join("..", "..", "workflows", "order", "v1.json")
	bad := filepath.Join("..", "..", "internal", "definition", "testdata", "bad", "many-problems.json")
	missing := filepath.Join(t.TempDir(), "v9.json")
	raw, err := os.ReadFile(shipped)
	if err != nil {
		t.Fatal(err)
	}
	// A copy for a new version whose "version" was not changed; the
	// same outside a directory named workflows; and a definition kept
	// under another name.
	copied := writeFile(t, raw, t.TempDir(), "workflows", "order", "v2.json")
	elsewhere := writeFile(t, raw, t.TempDir(), "drafts", "order", "v2.json")
	loose := writeFile(t, raw, t.TempDir(), "order-v1.json")
	good := filepath.Join("..", "..", "internal", "definition", "testdata", "good.json")
	tests := []struct {
		name    string
		files   []string
		want    []string
		wantErr bool
	}{
		{"shipped", []string{shipped}, []string{shipped + ": valid"}, false},
		{"good and bad", []string{shipped, bad, missing}, []string{
			shipped + ": valid",
			bad + `: version: must not be empty`,
			bad + `: steps[0].call.path: "reservations": must start with "/"`,
			bad + `: steps[1].service: "Payment": must be lower-case letters, digits and "-" ([a-z0-9-])`,
			bad + `: steps[1].timing.maxAllowance: 1s is below allowance 10s`,
			bad + `: name: "trial": must be the directory's name, "bad"`,
			missing + `: cannot read: no such file or directory`,
		}, true},
		{"misplaced", []string{copied}, []string{copied + `: version: "1": the file must be named v1.json`}, true},
		{"misplaced anywhere", []string{elsewhere, loose, good}, []string{
			elsewhere + `: version: "1": the file must be named v1.json`,
			loose + `: name: "order": must be the directory's name, "` + filepath.Base(filepath.Dir(loose)) + `"`,
			loose + `: version: "1": the file must be named v1.json`,
			good + `: name: "trial": must be the directory's name, "testdata"`,
			good + `: version: "1": the file must be named v1.json`,
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(append([]string{"workflow", "validate"}, tt.files...), &out)
			if got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", out.String(), strings.Join(tt.want, "\n"))
			}
			if gotErr := errors.Is(err, errInvalidDefinitions); gotErr != tt.wantErr || (err != nil && !gotErr) {
				t.Errorf("error %v, want invalid definitions: %t", err, tt.wantErr)
			}
		})
	}
}

// writeFile writes data at the path of elem, making its directories.
func writeFile(t *testing.T, data []byte, elem ...string) string {
	t.Helper()
	name := filepath.Join(elem...)
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return name
}

// Without files there is nothing to check: usage, not success.
func TestWorkflowValidateNeedsFiles(t *testing.T) {
	for _, args := range [][]string{{"workflow"}, {"workflow", "validate"}, {"workflow", "check", "x.json"}} {
		if err := run(args, &bytes.Buffer{}); err == nil {
			t.Errorf("%q: no error, want usage", args)
		}
	}
}
