package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"orderly/internal/config"
	"orderly/internal/definition"
)

// `orderly workflow validate` says "valid" for each good file and nothing
// else; with a bad one, one line per problem, naming the file and field,
// and an error (exit 1).
func TestWorkflowValidate(t *testing.T) {
	stageTiming(t, "")
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
			err := runArgs(append([]string{"workflow", "validate"}, tt.files...), &out)
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
		if err := runArgs(args, &bytes.Buffer{}); !isUsage(err) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// -o json reports each file, valid or not, with its problems by field.
func TestWorkflowValidateJSON(t *testing.T) {
	stageTiming(t, "")
	shipped := filepath.Join("..", "..", "workflows", "order", "v1.json")
	bad := filepath.Join("..", "..", "internal", "definition", "testdata", "bad", "many-problems.json")
	var out bytes.Buffer
	err := runArgs([]string{"workflow", "validate", shipped, bad, "-o", "json"}, &out)
	if !errors.Is(err, errInvalidDefinitions) {
		t.Errorf("error %v, want %v", err, errInvalidDefinitions)
	}
	var report []validated
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	if len(report) != 2 || !report[0].Valid || report[0].File != shipped || len(report[0].Problems) != 0 ||
		report[1].Valid || len(report[1].Problems) != 5 || report[1].Problems[0] != (problemReport{Field: "version", Rule: "must not be empty"}) {
		t.Errorf("report %+v", report)
	}
}

// version writes a copy of the shipped workflow as version v under dir
// (dir/order/vV.json), changed by change.
func version(t *testing.T, dir, v string, change func(steps []any)) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "workflows", "order", "v1.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	doc["version"] = v
	change(doc["steps"].([]any))
	raw, err = json.MarshalIndent(doc, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, raw, dir, "order", "v"+v+".json")
}

func stepAt(steps []any, i int) map[string]any { return steps[i].(map[string]any) }

// `orderly workflow diff OLD NEW` prints what orders in flight under OLD
// would do under NEW, and exits 0 when all can move, 1 when some cannot
// (naming them), 2 for usage and invalid files (validate's lines).
func TestWorkflowDiff(t *testing.T) {
	stageTiming(t, "")
	dir := t.TempDir()
	v1 := version(t, dir, "1", func([]any) {})
	slower := version(t, dir, "2", func(steps []any) {
		stepAt(steps, 1)["timing"] = map[string]any{"allowance": "45s"}
	})
	noRefund := version(t, dir, "3", func(steps []any) {
		delete(stepAt(steps, 1), "undo")
	})
	renamed := version(t, dir, "4", func(steps []any) {
		stepAt(steps, 1)["name"] = "charge"
	})
	misnamed := writeFile(t, []byte(`{"name": "order", "version": "1", "input": {}, "steps": [{"name": "x", "service": "y", "call": {"method": "POST", "path": "/x"}}]}`),
		dir, "order", "v5.json")
	other := filepath.Join("..", "..", "internal", "definition", "testdata", "good.json")
	tests := []struct {
		name string
		args []string
		// want are lines the output must have, in this order.
		want []string
		// wantErr is the error's kind; nil with exit 2, a usage error.
		wantErr  error
		wantCode int
	}{
		{"timing only", []string{v1, slower}, []string{
			"workflow order, version 1 -> 2 (where a step sets no timing, the stage's: allowance 30s, maxAllowance 2m0s, failureThreshold 3, maxHeartbeats 10)",
			"charge-payment: timing.allowance: 30s (the stage's) -> 45s: applies from the next attempt of this step and of its undo",
			"at reserve-inventory: moves; changed from here: charge-payment timing.allowance",
			// Past the step, an order meets its timing if it compensates:
			// the step's undo runs with it.
			"at arrange-shipping: moves; changed from here: charge-payment timing.allowance",
			"undoing reserve-inventory: moves; nothing changes from here",
			"every order in flight under version 1 can move to version 2",
		}, nil, 0},
		{"the stage's timing from flags, after the files", []string{v1, slower, "--allowance", "45s", "-failure-threshold", "5"}, []string{
			"workflow order, version 1 -> 2 (where a step sets no timing, the stage's: allowance 45s, maxAllowance 3m0s, failureThreshold 5, maxHeartbeats 10)",
			"no differences an order in flight can meet",
		}, nil, 0},
		{"an undo removed", []string{v1, noRefund}, []string{
			"charge-payment: undo: POST /payment/refunds -> (none): ",
			"undoing charge-payment: cannot move: it holds an undo record of charge-payment, which version 3 cannot undo",
			"3 of 6 positions cannot move to version 3: undoing arrange-shipping, undoing charge-payment, undoing reserve-inventory",
		}, errCannotMove, 1},
		{"a step renamed", []string{v1, renamed}, []string{
			"charge-payment: name: charge-payment -> charge: renamed or replaced by charge in version 4: no order of version 1 can move",
			"at reserve-inventory: cannot move: charge-payment is not in version 4 (steps[1] is charge there)",
			"6 of 6 positions cannot move to version 4: ",
		}, errCannotMove, 1},
		{"an invalid file", []string{v1, misnamed}, []string{
			misnamed + `: version: "1": the file must be named v1.json`,
		}, errNotCompared, 2},
		{"another workflow", []string{v1, other}, []string{
			other + `: name: "trial": must be the directory's name, "testdata"`,
		}, errNotCompared, 2},
		{"one file", []string{v1}, nil, nil, 2},
		{"three files", []string{v1, slower, renamed}, nil, nil, 2},
		{"a stage timing that does not work", []string{v1, slower, "-failure-threshold", "0"}, nil, nil, 2},
		{"a flag that does not exist", []string{v1, slower, "--threshold", "0"}, nil, nil, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runArgs(append([]string{"workflow", "diff"}, tt.args...), &out)
			ok := err == nil && tt.wantCode == 0
			switch {
			case err != nil && tt.wantErr != nil:
				ok = errors.Is(err, tt.wantErr) && exitCode(err) == tt.wantCode
			case err != nil:
				ok = isUsage(err) && tt.wantCode == 2
			}
			if !ok {
				t.Fatalf("error %v (exit %d), want %v (exit %d)\n%s", err, exitCode(err), tt.wantErr, tt.wantCode, out.String())
			}
			rest := out.String()
			for _, w := range tt.want {
				k := strings.Index(rest, w)
				if k < 0 {
					t.Fatalf("output:\n%s\nlacks, in order: %q", out.String(), w)
				}
				rest = rest[k+len(w):]
			}
		})
	}
}

// stageTiming sets the stage's timing variables to allowance, the rest
// unset, for the test.
func stageTiming(t *testing.T, allowance string) {
	t.Setenv(config.EnvAllowance, allowance)
	for _, name := range []string{config.EnvMaxAllowance, config.EnvFailureThreshold, config.EnvMaxHeartbeats} {
		t.Setenv(name, "")
	}
}

// The stage's timing comes from the functions' variables unless flags say
// otherwise.
func TestWorkflowDiffTakesTheStagesTiming(t *testing.T) {
	stageTiming(t, "45s")
	dir := t.TempDir()
	v1 := version(t, dir, "1", func([]any) {})
	v2 := version(t, dir, "2", func(steps []any) { stepAt(steps, 1)["timing"] = map[string]any{"allowance": "45s"} })
	var out bytes.Buffer
	if err := runArgs([]string{"workflow", "diff", v1, v2}, &out); err != nil {
		t.Fatalf("diff: %v\n%s", err, out.String())
	}
	want := "workflow order, version 1 -> 2 (where a step sets no timing, the stage's: allowance 45s, maxAllowance 3m0s, failureThreshold 3, maxHeartbeats 10)\n" +
		"no differences an order in flight can meet\n"
	if !strings.HasPrefix(out.String(), want) {
		t.Errorf("output:\n%s\nwant it to start\n%s", out.String(), want)
	}
}

// --json (or -o json, before or after) prints the diff for scripts.
func TestWorkflowDiffJSON(t *testing.T) {
	stageTiming(t, "")
	dir := t.TempDir()
	v1 := version(t, dir, "1", func([]any) {})
	v2 := version(t, dir, "2", func(steps []any) { delete(stepAt(steps, 0), "undo") })
	for _, args := range [][]string{{"workflow", "diff", "-json", v1, v2}, {"workflow", "diff", "--json", v1, v2}, {"-o", "json", "workflow", "diff", v1, v2},
		{"workflow", "diff", v1, v2, "-o", "json"}} {
		var out bytes.Buffer
		err := runArgs(args, &out)
		if !errors.Is(err, errCannotMove) {
			t.Errorf("%q: error %v, want %v", args, err, errCannotMove)
		}
		var d definition.Diff
		if err := json.Unmarshal(out.Bytes(), &d); err != nil {
			t.Fatalf("%q: %v\n%s", args, err, out.String())
		}
		if d.Moves || len(d.Findings) != 1 || d.Findings[0].Field != "undo" || !d.Findings[0].Blocks || len(d.Positions) != 6 {
			t.Errorf("%q: %+v, want one blocking undo finding and 6 positions", args, d)
		}
	}
}

// cdkJSON writes a cdk.json whose context is ctx, at elem under a new
// directory (there, when elem is empty), and returns its path.
func cdkJSON(t *testing.T, ctx map[string]any, elem ...string) string {
	t.Helper()
	if len(elem) == 0 {
		elem = []string{"cdk.json"}
	}
	raw, err := json.Marshal(map[string]any{"app": "go run .", "context": ctx})
	if err != nil {
		t.Fatal(err)
	}
	return writeFile(t, raw, append([]string{t.TempDir()}, elem...)...)
}

// validate builds each file for the stage's timing, as cdk synth and diff
// do, with synth's words: a step's allowance of 2m10s without a
// maxAllowance of its own is above the stage's maximum (2m by default)
// and refused, as synth and diff refuse it. The stage's timing is
// infra/cdk.json's context unless flags say otherwise.
func TestWorkflowValidateAppliesTheStagesTiming(t *testing.T) {
	stageTiming(t, "")
	long := version(t, t.TempDir(), "2", func(steps []any) {
		stepAt(steps, 1)["timing"] = map[string]any{"allowance": "2m10s"}
	})
	refused := func(max string) string {
		return long + `: steps[1].timing: allowance 2m10s with maxAllowance ` + max + ` (the stage's where not set): maxAllowance is below allowance`
	}
	tests := []struct {
		name string
		args []string
		// want is the output, or with exit 2 what the error says.
		want     string
		wantCode int
	}{
		{"the default stage", []string{long}, refused("2m0s"), 1},
		{"a maximum from a flag", []string{long, "--max-allowance", "2m20s"}, long + ": valid", 0},
		{"a maximum from cdk.json", []string{long, "--cdk-json", cdkJSON(t, map[string]any{"stepMaxAllowance": "2m20s"})}, long + ": valid", 0},
		{"a shorter stage from cdk.json", []string{long, "--cdk-json", cdkJSON(t, map[string]any{"stepAllowance": "20s"})}, refused("1m20s"), 1},
		{"a stage synth refuses", []string{long, "--cdk-json", cdkJSON(t, map[string]any{"stepAllowance": "40s"})},
			"max allowance 2m40s leaves the agents' 2m30s timeout no margin", 2},
		{"a stage's timing that does not parse", []string{long, "--cdk-json", cdkJSON(t, map[string]any{"stepAllowance": "fast"})},
			`context stepAllowance, stepMaxAllowance or maxHeartbeats: configuration: STEP_ALLOWANCE="fast" is not a positive duration like 30s`, 2},
		{"a flag over cdk.json", []string{long, "--cdk-json", cdkJSON(t, map[string]any{"stepAllowance": "40s"}), "--max-allowance", "2m20s"}, long + ": valid", 0},
		{"no cdk.json there", []string{long, "--cdk-json", filepath.Join(t.TempDir(), "cdk.json")}, "cdk.json: cannot read: no such file or directory", 2},
		{"a cdk.json that is not one", []string{long, "--cdk-json", writeFile(t, []byte(`{"context": []}`), t.TempDir(), "cdk.json")}, `"context" is not an object`, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runArgs(append([]string{"workflow", "validate"}, tt.args...), &out)
			if code := exitCode(err); err != nil && code != tt.wantCode || err == nil && tt.wantCode != 0 {
				t.Fatalf("error %v (exit %d), want exit %d\n%s", err, code, tt.wantCode, out.String())
			}
			if tt.wantCode == 2 {
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("error %v, want it to say %q", err, tt.want)
				}
				return
			}
			if got := strings.TrimSuffix(out.String(), "\n"); got != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tt.want)
			}
		})
	}
}

// The stage's timing, for validate and diff alike: the flags, over
// --cdk-json's context, over the functions' variables when one is set,
// over infra/cdk.json's context where the command runs, over the
// defaults. diff's first line says which timing it took.
func TestStageTimingSources(t *testing.T) {
	stageTiming(t, "")
	dir := t.TempDir()
	v1 := version(t, dir, "1", func([]any) {})
	v2 := version(t, dir, "2", func([]any) {})
	repo := filepath.Dir(filepath.Dir(cdkJSON(t, map[string]any{"stepAllowance": "10s"}, "infra", "cdk.json")))
	other := cdkJSON(t, map[string]any{"stepAllowance": "20s", "stepMaxAllowance": "1m", "maxHeartbeats": 0})
	tests := []struct {
		name      string
		chdir     string
		allowance string // STEP_ALLOWANCE
		flags     []string
		want      string
	}{
		{"the defaults", "", "", nil, "allowance 30s, maxAllowance 2m0s, failureThreshold 3, maxHeartbeats 10"},
		{"infra/cdk.json", repo, "", nil, "allowance 10s, maxAllowance 40s, failureThreshold 3, maxHeartbeats 10"},
		{"the variables over infra/cdk.json", repo, "45s", nil, "allowance 45s, maxAllowance 3m0s, failureThreshold 3, maxHeartbeats 10"},
		{"--cdk-json over the variables", repo, "45s", []string{"--cdk-json", other}, "allowance 20s, maxAllowance 1m0s, failureThreshold 3, maxHeartbeats 0"},
		{"flags over --cdk-json", repo, "", []string{"--cdk-json", other, "--allowance", "5s", "--max-heartbeats", "2"},
			"allowance 5s, maxAllowance 1m0s, failureThreshold 3, maxHeartbeats 2"},
		{"a flag's allowance keeps the ratio", repo, "", []string{"--allowance", "5s"}, "allowance 5s, maxAllowance 20s, failureThreshold 3, maxHeartbeats 10"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chdir != "" {
				t.Chdir(tt.chdir)
			}
			t.Setenv(config.EnvAllowance, tt.allowance)
			var out bytes.Buffer
			if err := runArgs(append([]string{"workflow", "diff", v1, v2}, tt.flags...), &out); err != nil {
				t.Fatalf("diff: %v\n%s", err, out.String())
			}
			if first, _, _ := strings.Cut(out.String(), "\n"); !strings.Contains(first, "the stage's: "+tt.want+")") {
				t.Errorf("first line %q, want the stage's %s", first, tt.want)
			}
			out.Reset()
			if err := runArgs(append([]string{"workflow", "validate", v1}, tt.flags...), &out); err != nil {
				t.Errorf("validate: %v\n%s", err, out.String())
			}
		})
	}
}

// A service's agent is the Lambda function orderly-<stage>-<service>-agent,
// and Lambda takes at most 64 characters: validate checks the name for the
// stage synth deploys, which is --stage, over --cdk-json's context, over
// $ORDERLY_STAGE, over infra/cdk.json's context where the command runs,
// over synth's default, dev. A service of 47 characters fits a stage of
// two ("qa") but not dev.
func TestWorkflowValidateChecksAgentNamesForTheStage(t *testing.T) {
	stageTiming(t, "")
	service := strings.Repeat("s", 47)
	long := version(t, t.TempDir(), "2", func(steps []any) {
		stepAt(steps, 1)["service"] = service
	})
	repo := filepath.Dir(filepath.Dir(cdkJSON(t, map[string]any{"stage": "qa"}, "infra", "cdk.json")))
	refused := func(stage string) string {
		fn := "orderly-" + stage + "-" + service + "-agent"
		return fmt.Sprintf(`%s: steps[1].service: %q: the service's agent is the Lambda function %q, %d characters with stage %q, and Lambda takes at most 64: use a service of at most %d characters, or a shorter stage`,
			long, service, fn, len(fn), stage, 64-len("orderly-"+stage+"--agent"))
	}
	tests := []struct {
		name   string
		chdir  string
		env    string // ORDERLY_STAGE
		args   []string
		want   string
		wantOK bool
	}{
		{"synth's default, dev", "", "", nil, refused("dev"), false},
		{"--stage", "", "", []string{"--stage", "qa"}, long + ": valid", true},
		{"a longer --stage", "", "", []string{"--stage", "prod"}, refused("prod"), false},
		{"$ORDERLY_STAGE", "", "qa", nil, long + ": valid", true},
		{"infra/cdk.json's context", repo, "", nil, long + ": valid", true},
		{"$ORDERLY_STAGE over infra/cdk.json", repo, "prod", nil, refused("prod"), false},
		{"--cdk-json's context over $ORDERLY_STAGE", "", "prod", []string{"--cdk-json", cdkJSON(t, map[string]any{"stage": "qa"})}, long + ": valid", true},
		{"--cdk-json without a stage: synth's default", repo, "qa", []string{"--cdk-json", cdkJSON(t, map[string]any{})}, refused("dev"), false},
		{"a stage that is not a string: synth's default", "", "", []string{"--cdk-json", cdkJSON(t, map[string]any{"stage": 7})}, refused("dev"), false},
		{"--stage over --cdk-json", "", "", []string{"--cdk-json", cdkJSON(t, map[string]any{"stage": "production"}), "--stage", "qa"}, long + ": valid", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.chdir != "" {
				t.Chdir(tt.chdir)
			}
			t.Setenv(envStage, tt.env)
			var out bytes.Buffer
			err := runArgs(append([]string{"workflow", "validate", long}, tt.args...), &out)
			if got := strings.TrimSuffix(out.String(), "\n"); got != tt.want {
				t.Errorf("output:\n%s\nwant:\n%s", got, tt.want)
			}
			if ok := err == nil; ok != tt.wantOK || err != nil && !errors.Is(err, errInvalidDefinitions) {
				t.Errorf("error %v, want valid: %t", err, tt.wantOK)
			}
		})
	}
}

// An empty --stage names no stage: a usage error.
func TestWorkflowValidateRefusesAnEmptyStage(t *testing.T) {
	stageTiming(t, "")
	v1 := version(t, t.TempDir(), "1", func([]any) {})
	err := runArgs([]string{"workflow", "validate", v1, "--stage", ""}, io.Discard)
	if !isUsage(err) || !strings.Contains(err.Error(), "--stage") {
		t.Errorf("error %v, want a usage error naming --stage", err)
	}
}
