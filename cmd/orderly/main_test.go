package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"runtime/debug"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// cli runs a command line as main does: its output, its errors and its
// exit status.
func cli(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return out.String(), errOut.String(), code
}

// runArgs runs a command line and returns its error, for the tests that
// check which it is.
func runArgs(args []string, out io.Writer) error {
	_, err := execute(context.Background(), args, out, io.Discard)
	return err
}

// noAWS leaves the SDK no credentials to find, and no way to look for
// them over the network (the EC2 instance metadata service).
func noAWS(t *testing.T) {
	t.Helper()
	for _, name := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE", "AWS_DEFAULT_PROFILE",
		"AWS_WEB_IDENTITY_TOKEN_FILE", "AWS_ROLE_ARN", "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
		"AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", envStage, "ORDERLY_WORKFLOWS"} {
		t.Setenv(name, "")
	}
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent/aws/config")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent/aws/credentials")
	t.Setenv("AWS_REGION", "us-east-1")
}

// Help goes to standard output with exit 0, however it is asked for, and
// nothing goes to standard error.
func TestHelpGoesToStdout(t *testing.T) {
	noAWS(t)
	tests := []struct {
		args []string
		want []string
	}{
		{[]string{"--help"}, []string{"orderly [command]", "list        Orders in flight", "Exit status:", "2  usage error"}},
		{[]string{"-h"}, []string{"orderly [command]", "Exit status:"}},
		{nil, []string{"orderly [command]", "Exit status:"}},
		{[]string{"help"}, []string{"orderly [command]", "Exit status:"}},
		{[]string{"help", "list"}, []string{"orderly list [--late 5m | --status STATUS] [--max 100]", "--status string", "--stage string"}},
		{[]string{"list", "--help"}, []string{"orderly list [--late 5m | --status STATUS] [--max 100]"}},
		{[]string{"list", "-help"}, []string{"orderly list [--late 5m | --status STATUS] [--max 100]"}},
		{[]string{"dlq", "list", "-h"}, []string{"orderly dlq list", "Global Flags:"}},
		{[]string{"dlq", "-h"}, []string{"orderly dlq [command]", "redrive     Move a dead-letter queue's messages back"}},
		{[]string{"help", "dlq", "redrive"}, []string{"orderly dlq redrive QUEUE [--max N] [--dry-run]", "--dry-run"}},
		{[]string{"show", "X", "-h"}, []string{"orderly show ID"}},
		{[]string{"-o", "json", "workflow", "diff", "-h"}, []string{"orderly workflow diff OLD NEW [flags]", "Exit 0 when every one can move"}},
		{[]string{"conformance", "--help"}, []string{"orderly conformance --workflow FILE --url BASE"}},
		{[]string{"completion", "--help"}, []string{"bash", "zsh", "fish", "powershell"}},
	}
	for _, tt := range tests {
		stdout, stderr, code := cli(t, tt.args...)
		if code != 0 || stderr != "" {
			t.Errorf("%q: exit %d, stderr %q; want 0 and nothing", tt.args, code, stderr)
		}
		for _, w := range tt.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%q: stdout\n%s\nlacks %q", tt.args, stdout, w)
			}
		}
		if strings.Contains(stdout, "orderly [flags]") {
			t.Errorf("%q: the help offers orderly [flags] alone, which only prints help:\n%s", tt.args, stdout)
		}
	}
}

// orderly version says devel, or the module version and the commit.
func TestVersion(t *testing.T) {
	stdout, stderr, code := cli(t, "version")
	if code != 0 || stderr != "" || !strings.HasPrefix(stdout, "orderly ") || strings.Count(stdout, "\n") != 1 {
		t.Errorf("version: %q, stderr %q, exit %d; want one line orderly VERSION", stdout, stderr, code)
	}
	stdout, _, code = cli(t, "version", "-o", "json")
	var v buildVersion
	if err := json.Unmarshal([]byte(stdout), &v); err != nil || code != 0 || v.Version == "" {
		t.Errorf("version -o json: %q (%v), exit %d", stdout, err, code)
	}
	settings := []debug.BuildSetting{{Key: "vcs.revision", Value: "c385ac2"}, {Key: "vcs.time", Value: "2026-01-02T03:04:05Z"}, {Key: "vcs.modified", Value: "true"}}
	for _, tt := range []struct {
		info *debug.BuildInfo
		ok   bool
		want string
	}{
		{nil, false, "orderly devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}}, true, "orderly devel"},
		{&debug.BuildInfo{Main: debug.Module{Version: "(devel)"}, Settings: settings}, true, "orderly devel (c385ac2, 2026-01-02T03:04:05Z, modified)"},
		{&debug.BuildInfo{Main: debug.Module{Version: "v1.4.0"}, Settings: settings[:1]}, true, "orderly v1.4.0 (c385ac2)"},
	} {
		if got := versionOf(tt.info, tt.ok).String(); got != tt.want {
			t.Errorf("versionOf(%+v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}

// A command line orderly cannot carry out is a usage error: exit 2, one
// line saying what is wrong and where help is, on standard error, before
// anything is asked of AWS.
func TestUsageErrorsExitTwo(t *testing.T) {
	noAWS(t)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"nope"}, `unknown command "nope" for "orderly"`},
		{[]string{"lst"}, `unknown command "lst" for "orderly"; did you mean list?`},
		{[]string{"list", "--nope"}, "unknown flag: --nope"},
		{[]string{"list", "-nope"}, "unknown shorthand flag: 'n' in -nope"},
		{[]string{"list", "Error"}, `unknown command "Error" for "orderly list"`},
		{[]string{"versions", "extra"}, `unknown command "extra" for "orderly versions"`},
		{[]string{"dlq", "list", "extra"}, `unknown command "extra" for "orderly dlq list"`},
		{[]string{"show"}, "accepts 1 arg(s), received 0"},
		{[]string{"show", "a", "b"}, "accepts 1 arg(s), received 2"},
		{[]string{"dlq", "redrive", "q", "r", "--dry-run"}, "accepts 1 arg(s), received 2"},
		{[]string{"dlq", "redrive", "--dry-run"}, "accepts 1 arg(s), received 0"},
		{[]string{"dlq", "redrive", "q", "-nope"}, "unknown shorthand flag: 'n' in -nope"},
		{[]string{"workflow", "validate"}, "requires at least 1 arg(s), only received 0"},
		{[]string{"dlq"}, "orderly dlq needs a command: list, redrive, show"},
		{[]string{"dlq", "purge", "q"}, `unknown command "purge" for "orderly dlq"`},
		{[]string{"workflow", "check", "x.json"}, `unknown command "check" for "orderly workflow"`},
		{[]string{"completion"}, "orderly completion needs a command: bash, fish, powershell, zsh"},
		{[]string{"completion", "tcsh"}, `unknown command "tcsh" for "orderly completion"`},
		{[]string{"-o", "yaml", "version"}, `invalid argument "yaml" for "-o, --output" flag: want text or json`},
		{[]string{"list", "--max", "many"}, `invalid argument "many" for "--max" flag`},
		{[]string{"watch", "X", "-every", "soon"}, `invalid argument "soon" for "--every" flag`},
		{[]string{"list", "--late", "5m", "--status", "Error"}, "--late lists the orders in flight, whatever their status: leave out --status"},
		{[]string{"list", "--status", "Processed"}, "--status Processed: only Error and the statuses in flight"},
		{[]string{"move", "X"}, "move: --version is required"},
		{[]string{"send-event", "X"}, "accepts 2 arg(s), received 1"},
		{[]string{"send-event", "X", "review", "--data", "[1]"}, "--data: body: must be a JSON object"},
		{[]string{"send-event", "X", "review", "--data", `{"decision":`}, "--data: body: malformed JSON: unexpected EOF"},
		{[]string{"send-event", "X", "review", "--data", `{"a":1,"a":2}`}, "--data: a: appears more than once"},
		{[]string{"send-event", "X", "review", "--data", "{}", "--data-file", "d.json"}, "--data and --data-file: give one"},
		{[]string{"send-event", "X", "review", "--data-file", "/nonexistent/d.json"}, "--data-file /nonexistent/d.json: open /nonexistent/d.json: no such file"},
		{[]string{"help", "nope"}, `no help for "nope": no such command`},
	}
	for _, tt := range tests {
		stdout, stderr, code := cli(t, tt.args...)
		lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
		if code != 2 || stdout != "" || len(lines) != 2 || !strings.HasPrefix(lines[0], "orderly: ") || !strings.Contains(lines[0], tt.want) ||
			!strings.HasSuffix(lines[1], " --help' for usage.") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2, nothing on stdout, and on stderr %q and where help is", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// Flags go before or after the command and its arguments, in either
// spelling, the global ones (--stage, -o) too. Each command line here is
// parsed whole, then stops at the credentials it lacks (exit 1).
func TestFlagsGoAnywhere(t *testing.T) {
	noAWS(t)
	tests := []struct {
		args []string
		// want are the command's path, its arguments and flag values.
		path  string
		pos   []string
		flags map[string]string
	}{
		{[]string{"dlq", "redrive", "q"}, "orderly dlq redrive", []string{"q"}, map[string]string{"dry-run": "false", "max": "1000"}},
		{[]string{"dlq", "redrive", "-dry-run", "q"}, "orderly dlq redrive", []string{"q"}, map[string]string{"dry-run": "true"}},
		{[]string{"dlq", "redrive", "q", "-dry-run"}, "orderly dlq redrive", []string{"q"}, map[string]string{"dry-run": "true"}},
		{[]string{"dlq", "redrive", "-max", "3", "q", "--dry-run"}, "orderly dlq redrive", []string{"q"}, map[string]string{"dry-run": "true", "max": "3"}},
		{[]string{"dlq", "redrive", "q", "--max=3"}, "orderly dlq redrive", []string{"q"}, map[string]string{"dry-run": "false", "max": "3"}},
		{[]string{"show", "X", "-o", "json"}, "orderly show", []string{"X"}, map[string]string{"output": "json", "stage": "local"}},
		{[]string{"show", "X", "--output=json", "--stage", "prod"}, "orderly show", []string{"X"}, map[string]string{"output": "json", "stage": "prod"}},
		{[]string{"-o", "json", "show", "X"}, "orderly show", []string{"X"}, map[string]string{"output": "json"}},
		{[]string{"-stage", "prod", "-o", "json", "show", "X"}, "orderly show", []string{"X"}, map[string]string{"output": "json", "stage": "prod"}},
		{[]string{"-stage=prod", "list", "-status", "Error", "-max", "7"}, "orderly list", nil, map[string]string{"stage": "prod", "status": "Error", "max": "7"}},
		{[]string{"-max", "7", "list", "-late", "5m"}, "orderly list", nil, map[string]string{"max": "7", "late": "5m0s"}},
		{[]string{"list", "-status", "Waiting"}, "orderly list", nil, map[string]string{"status": "Waiting"}},
		{[]string{"alerts", "-kind", "UndoFailed", "-since", "72h", "-o", "json"}, "orderly alerts", nil, map[string]string{"kind": "UndoFailed", "since": "72h0m0s", "output": "json"}},
		{[]string{"redrive", "X", "-action", "retry", "-stage", "qa"}, "orderly redrive", []string{"X"}, map[string]string{"action": "retry", "stage": "qa"}},
		{[]string{"move", "X", "-version", "2"}, "orderly move", []string{"X"}, map[string]string{"version": "2"}},
		{[]string{"send-event", "X", "review"}, "orderly send-event", []string{"X", "review"}, map[string]string{"data": "{}", "data-file": ""}},
		{[]string{"send-event", "X", "-data", `{"decision":"approve"}`, "review", "-stage", "qa"}, "orderly send-event", []string{"X", "review"},
			map[string]string{"data": `{"decision":"approve"}`, "stage": "qa"}},
		{[]string{"watch", "X", "-every", "2s", "-timeout", "1m"}, "orderly watch", []string{"X"}, map[string]string{"every": "2s", "timeout": "1m0s"}},
	}
	for _, tt := range tests {
		var errOut bytes.Buffer
		cmd, err := execute(context.Background(), tt.args, io.Discard, &errOut)
		if cmd == nil || cmd.CommandPath() != tt.path {
			t.Errorf("%q: ran %v, want %s", tt.args, cmd, tt.path)
			continue
		}
		if exitCode(err) != 1 || !strings.Contains(explain(err).Error(), "no AWS credentials found") {
			t.Errorf("%q: %v (exit %d), want it parsed and stopped at the credentials", tt.args, err, exitCode(err))
		}
		if got := cmd.Flags().Args(); strings.Join(got, " ") != strings.Join(tt.pos, " ") {
			t.Errorf("%q: arguments %q, want %q", tt.args, got, tt.pos)
		}
		for name, want := range tt.flags {
			if got := cmd.Flag(name).Value.String(); got != want {
				t.Errorf("%q: --%s %s, want %s", tt.args, name, got, want)
			}
		}
	}
}

// Without AWS credentials, a command that needs them says in one line
// what to set, and exits 1; so does a profile that does not exist, and a
// missing region.
func TestMissingCredentialsSayWhatToSet(t *testing.T) {
	const noCreds = `orderly: no AWS credentials found: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or for a local run: eval "$(bash localstack/emulators.sh env)"` + "\n"
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{"none", nil, []string{"list"}, noCreds},
		{"none, JSON asked for", nil, []string{"--stage", "prod", "show", "X", "-o", "json"}, noCreds},
		{"none, for the console", nil, []string{"console", "--addr", "127.0.0.1:0"}, noCreds},
		{"a profile that does not exist", map[string]string{"AWS_PROFILE": "nope"}, []string{"dlq", "list"},
			`orderly: AWS profile "nope" not found: set AWS_PROFILE to a profile of your AWS configuration, or for a local run: eval "$(bash localstack/emulators.sh env)"` + "\n"},
		{"no region", map[string]string{"AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test", "AWS_REGION": "", "AWS_DEFAULT_REGION": ""}, []string{"versions"},
			`orderly: no AWS region: set AWS_REGION (or a region in your AWS profile), or for a local run: eval "$(bash localstack/emulators.sh env)"` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			noAWS(t)
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			stdout, stderr, code := cli(t, tt.args...)
			if code != 1 || stdout != "" || stderr != tt.want {
				t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and\n%s", tt.args, code, stdout, stderr, tt.want)
			}
		})
	}
}

// show prints what each redrive of an order in Error would do, or why it
// is refused, so an operator reads the refusal before trying.
func TestShowPrintsTheRedriveChoices(t *testing.T) {
	v := api.OrderView{OrderID: "O", Status: order.StatusError, Redrive: []api.RedriveView{
		{Action: order.RedriveRetry, Refused: `the undo of charge-payment may have been done: redrive with "compensate" to resume undoing instead`},
		{Action: order.RedriveCompensate, Default: true, What: "The undo of charge-payment runs again"},
	}}
	var out strings.Builder
	writeOrder(&out, v)
	for _, want := range []string{
		`redrive --action retry: refused: the undo of charge-payment may have been done: redrive with "compensate"`,
		"redrive --action compensate (the default): The undo of charge-payment runs again",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("show prints\n%s\nwithout %q", out.String(), want)
		}
	}
}

// show says what a waiting step waits for, since when and until when;
// what it waits for is left out when the CLI's build lacks the order's
// workflow version.
func TestShowPrintsWhatAStepWaitsFor(t *testing.T) {
	since := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	until := since.Add(time.Hour)
	for _, tt := range []struct {
		name string
		wait api.WaitView
		want string
	}{
		{"a timer", api.WaitView{For: order.WaitTimer, Since: since, Until: until},
			"  waiting: cool-off waits for timer since 2026-03-01T12:00:00Z until 2026-03-01T13:00:00Z\n"},
		{"an event", api.WaitView{For: order.WaitEvent, Event: "review", Since: since, Until: until},
			"  waiting: cool-off waits for event review since 2026-03-01T12:00:00Z until 2026-03-01T13:00:00Z (orderly send-event O review --data JSON)\n"},
		{"a version this build lacks", api.WaitView{Since: since, Until: until},
			"  waiting: cool-off waits since 2026-03-01T12:00:00Z until 2026-03-01T13:00:00Z\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := api.OrderView{OrderID: "O", Status: order.StatusWaiting, Steps: []api.StepView{
				{Step: "cool-off", State: "Waiting", Attempt: 1, CompleteBy: &until, Waiting: &tt.wait}, {Step: "charge-payment", State: "NotStarted"}}}
			var out strings.Builder
			writeOrder(&out, v)
			if !strings.Contains(out.String(), tt.want) {
				t.Errorf("show prints\n%s\nwithout %q", out.String(), tt.want)
			}
		})
	}
}

// list --status takes each status an index holds: Error, and every
// status of an order that has not ended (ops.InStatus).
func TestListTakesEveryStatusTheIndexesHold(t *testing.T) {
	want := []string{string(order.StatusError)}
	for _, s := range order.Statuses {
		if !s.Terminal() {
			want = append(want, string(s))
		}
	}
	if got := slices.Sorted(slices.Values(listedStatuses)); !slices.Equal(got, slices.Sorted(slices.Values(want))) {
		t.Errorf("list --status takes %v, want %v", listedStatuses, want)
	}
}

func TestExitCode(t *testing.T) {
	for _, tt := range []struct {
		err  error
		want int
	}{
		{usagef("x"), 2},
		{fmt.Errorf("x: %w", usagef("y")), 2},
		{fmt.Errorf("x: %w", errNotCompared), 2},
		{fmt.Errorf("x: %w", errCannotStart), 2},
		{fmt.Errorf("x: %w", errCannotMove), 1},
		{fmt.Errorf("x: %w", errInvalidDefinitions), 1},
		{fmt.Errorf("x: %w", errNonConformant), 1},
		{&awsConfigError{msg: noCredentials}, 1},
		{fmt.Errorf("order o: %w", order.ErrNotFound), 1},
	} {
		if got := exitCode(tt.err); got != tt.want {
			t.Errorf("exitCode(%v) = %d, want %d", tt.err, got, tt.want)
		}
	}
}
