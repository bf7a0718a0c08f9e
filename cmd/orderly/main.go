// Command orderly is the operator's tool: it reads and changes a stage's
// orders (a local run or a deployed stack) with the caller's usual AWS
// configuration (profile, region, endpoint variables), through the same
// packages and fenced transitions as the functions.
//
//	orderly [-stage NAME] [-o text|json] list [-late 5m | -status Error|Pending|Processing|Compensating|Cancelling] [-max 100]
//	orderly show ID
//	orderly history ID
//	orderly watch ID [-every 1s] [-timeout 10m]
//	orderly cancel ID
//	orderly redrive ID [-action retry|compensate]
//	orderly dlq list
//	orderly dlq show QUEUE [-max 10]
//	orderly dlq redrive QUEUE [-max N] [-dry-run]
//	orderly alerts [-since 24h] [-kind UndoFailed] [-max 100]
//	orderly versions
//	orderly move ID -version V
//	orderly console [-addr 127.0.0.1:8082]
//	orderly workflow validate FILE...
//	orderly workflow diff [-json] OLD NEW
//	orderly conformance --workflow FILE --url BASE [--step NAME] [--header K=V]... [--input FILE] [--openapi]
package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/local/localrun"
	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

const usage = `orderly: operate a stage's orders.

Usage:
  orderly [-stage NAME] [-o text|json] COMMAND [ARGS]

Commands:
  list [-late 5m]            orders in flight (from the due index, no Scan); with -late, those whose deadline passed that long ago
  list -status STATUS        orders in Error, with the record that stopped them; or
                             those Pending, Processing, Compensating or Cancelling
  show ID                    the order and each of its records (steps and undos)
  history ID                 every transition of the order, in order, with who made it
  watch ID                   print the order each time it changes, until it is terminal
  cancel ID                  cancel the order for its client (Pending or Processing only)
  redrive ID                 resume an order in Error where it stopped
  dlq list                   the stage's dead-letter queues and their depth
  dlq show QUEUE             print a dead-letter queue's messages, leaving them there
  dlq redrive QUEUE          move a dead-letter queue's messages back to their queue
  alerts [-since 24h]        the alerts sent to operators, newest first, with the
                             order, the stuck step or undo and the reason
  move ID -version V         move an order parked under a missing workflow version onto
                             version V of this build, when its steps fit V
  versions                   the orders not ended per workflow version, and which
                             versions this build has: remove a version once none uses it
  console [-addr HOST:PORT]  serve the web console for the stage (default 127.0.0.1:8082)
  workflow validate FILE...  check workflow definition files (workflows/NAME/vVERSION.json):
                             "FILE: valid" for each, or one line per problem and exit 1
  workflow diff OLD NEW      what orders in flight under definition OLD would do if moved to NEW:
                             exit 0 when all can move, 1 when some cannot, 2 for an invalid file
  conformance --workflow FILE --url BASE
                             check a team's services against the remote-service contract,
                             calling them as the agents do: one line per rule per step, exit 1
                             when one fails (--step NAME, --header K=V, --input FILE, --openapi)

Every command takes -h. The stage's AWS endpoints come from the usual
variables and profile: for 'make run', eval "$(bash localstack/emulators.sh env)".
`

type app struct {
	stage  *ops.Stage
	out    io.Writer
	asJSON bool
}

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "orderly:", strings.TrimSuffix(err.Error(), ": "+flag.ErrHelp.Error()))
		os.Exit(exitCode(err))
	}
}

// exitCode is the status for run's error: 2 for a usage error or a
// definition `workflow diff` could not compare, else 1.
func exitCode(err error) int {
	if errors.Is(err, flag.ErrHelp) || errors.Is(err, errNotCompared) {
		return 2
	}
	return 1
}

func run(args []string, out io.Writer) error {
	global := flag.NewFlagSet("orderly", flag.ContinueOnError)
	global.Usage = func() { fmt.Fprint(global.Output(), usage); global.PrintDefaults() }
	stage := global.String("stage", cmp.Or(os.Getenv("ORDERLY_STAGE"), "local"), "the stage: resources are named orderly-<stage>-…")
	format := global.String("o", "text", "output: text or json")
	if err := global.Parse(args); err != nil {
		return err
	}
	if *format != "text" && *format != "json" {
		return fmt.Errorf("-o %q: want text or json", *format)
	}
	if global.NArg() == 0 {
		global.Usage()
		return flag.ErrHelp
	}
	if global.Arg(0) == "workflow" {
		// Definitions are files: no stage, no AWS.
		return workflow(global.Args()[1:], out, *format == "json")
	}
	if global.Arg(0) == "conformance" {
		// A service and a definition file: no stage, no AWS.
		return conformanceCmd(global.Args()[1:], out, *format == "json")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	awsCfg, err := config.AWS(ctx)
	if err != nil {
		return err
	}
	// The stage's workflows, named as the functions are told them
	// (ORDERLY_WORKFLOWS; every one under workflows/ when unset).
	names, def := config.FromOS().Workflows()
	wfs, err := definition.Deployed(order.DefaultTiming, names, def)
	if err != nil {
		return fmt.Errorf("%s: %w", config.EnvWorkflows, err)
	}
	a := &app{stage: ops.Open(*stage, dynamodb.NewFromConfig(awsCfg), sqs.NewFromConfig(awsCfg), wfs), out: out, asJSON: *format == "json"}
	cmd, rest := global.Arg(0), global.Args()[1:]
	switch cmd {
	case "list":
		return a.list(ctx, rest)
	case "show":
		return a.show(ctx, rest)
	case "history":
		return a.history(ctx, rest)
	case "watch":
		return a.watch(ctx, rest)
	case "cancel":
		return a.cancel(ctx, rest)
	case "redrive":
		return a.redrive(ctx, rest)
	case "dlq":
		return a.dlq(ctx, rest)
	case "alerts":
		return a.alerts(ctx, rest)
	case "versions":
		return a.versions(ctx, rest)
	case "move":
		return a.move(ctx, rest)
	case "console":
		return a.console(ctx, rest)
	}
	global.Usage()
	return fmt.Errorf("unknown command %q: %w", cmd, flag.ErrHelp)
}

// flags is a command's flag set, whose usage starts with its synopsis.
func flags(name, synopsis string) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.Usage = func() { fmt.Fprintf(fs.Output(), "Usage: orderly %s\n\n", synopsis); fs.PrintDefaults() }
	return fs
}

// command parses a command's flags and returns its one ID argument.
func command(name, synopsis string, args []string, define func(*flag.FlagSet)) (string, error) {
	fs := flags(name, synopsis)
	if define != nil {
		define(fs)
	}
	// Flags may follow the argument too (flag stops at the first
	// argument): parse what follows each argument again.
	var positional []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return "", err
		}
		if fs.NArg() == 0 {
			break
		}
		positional, rest = append(positional, fs.Arg(0)), fs.Args()[1:]
	}
	if len(positional) != 1 {
		fs.Usage()
		return "", fmt.Errorf("%s takes one argument: %w", name, flag.ErrHelp)
	}
	return positional[0], nil
}

func (a *app) list(ctx context.Context, args []string) error {
	fs := flags("list", "list [-late 5m | -status STATUS] [-max 100]: orders in flight, stuck past a deadline, or in one status")
	late := fs.Duration("late", 0, "only orders whose deadline passed at least this long ago")
	status := fs.String("status", "", "Error (the orders an operator must act on), Pending, Processing, Compensating or Cancelling (default: every order in flight)")
	maxN := fs.Int("max", 100, "list at most this many")
	if err := fs.Parse(args); err != nil {
		return err
	}
	var ls []ops.Listed
	var err error
	switch {
	case *status == "":
		ls, err = a.stage.InFlight(ctx, *late, *maxN)
	case *late > 0:
		return fmt.Errorf("-late lists the orders in flight, whatever their status: leave out -status: %w", flag.ErrHelp)
	default:
		ls, err = a.stage.InStatus(ctx, order.Status(*status), *maxN)
	}
	if errors.Is(err, ops.ErrNotListed) {
		return fmt.Errorf("-status %s: %v: %w", *status, err, flag.ErrHelp)
	}
	if err != nil {
		return err
	}
	return a.print(ls, func(w io.Writer) {
		tw := newTable(w, "ORDER\tSTATUS\tVERSION\tRECORD\tSTATE\tATTEMPT\tFAILURES\tCOMPLETE BY\tLATE\tLAST ERROR")
		for _, l := range ls {
			step := order.RecordLabel(l.Step, l.Undo)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", l.OrderID, l.Status, l.Version, step, l.State, l.Attempt, l.Failures,
				l.CompleteBy.UTC().Format(time.RFC3339), l.Late.Round(time.Second), clip(l.LastError, 50))
		}
		tw.Flush()
	})
}

func (a *app) show(ctx context.Context, args []string) error {
	id, err := command("show", "show ID: the order and each of its records", args, nil)
	if err != nil {
		return err
	}
	v, err := a.stage.Show(ctx, id)
	if err != nil {
		return err
	}
	return a.print(v, func(w io.Writer) { writeOrder(w, v) })
}

func (a *app) history(ctx context.Context, args []string) error {
	id, err := command("history", "history ID: every transition of the order, in order", args, nil)
	if err != nil {
		return err
	}
	ts, err := a.stage.History(ctx, id)
	if err != nil {
		return err
	}
	return a.print(api.HistoryView{OrderID: id, History: ts}, func(w io.Writer) { writeHistory(w, ts) })
}

func (a *app) watch(ctx context.Context, args []string) error {
	var every, timeout time.Duration
	id, err := command("watch", "watch ID: print the order each time it changes, until it is terminal", args, func(fs *flag.FlagSet) {
		fs.DurationVar(&every, "every", time.Second, "how often to read the order")
		fs.DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	last := time.Time{}
	for {
		v, err := a.stage.Show(ctx, id)
		if err != nil {
			return err
		}
		if v.UpdatedAt.After(last) {
			last = v.UpdatedAt
			if err := a.print(v, func(w io.Writer) { writeOrder(w, v); fmt.Fprintln(w) }); err != nil {
				return err
			}
		}
		if v.Status.Terminal() {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("order %s still %s: %w", id, v.Status, ctx.Err())
		case <-time.After(every):
		}
	}
}

func (a *app) cancel(ctx context.Context, args []string) error {
	id, err := command("cancel", "cancel ID: cancel the order for its client; a step in flight finishes or times out, then the work done is undone", args, nil)
	if err != nil {
		return err
	}
	o, err := a.stage.Cancel(ctx, id)
	if err != nil {
		return err
	}
	return a.print(map[string]any{"orderId": o.ID, "status": o.Status}, func(w io.Writer) { fmt.Fprintf(w, "order %s: %s\n", o.ID, o.Status) })
}

func (a *app) redrive(ctx context.Context, args []string) error {
	var action string
	id, err := command("redrive", "redrive ID [-action retry|compensate]: resume an order in Error where it stopped", args, func(fs *flag.FlagSet) {
		fs.StringVar(&action, "action", "", "retry (run the failed step again) or compensate (undo the work done); default: what the stuck record calls for")
	})
	if err != nil {
		return err
	}
	o, err := a.stage.Redrive(ctx, id, action)
	if err != nil {
		return err
	}
	return a.print(map[string]any{"orderId": o.ID, "status": o.Status}, func(w io.Writer) { fmt.Fprintf(w, "order %s: %s\n", o.ID, o.Status) })
}

func (a *app) dlq(ctx context.Context, args []string) error {
	sub := ""
	if len(args) > 0 {
		sub, args = args[0], args[1:]
	}
	switch sub {
	case "list":
		qs, err := a.stage.DeadLetters(ctx)
		if err != nil {
			return err
		}
		return a.print(qs, func(w io.Writer) {
			tw := newTable(w, "QUEUE\tMESSAGES\tIN FLIGHT\tMOVES BACK TO")
			for _, q := range qs {
				fmt.Fprintf(tw, "%s\t%d\t%d\t%s\n", q.Name, q.Messages, q.InFlight, cmp.Or(q.Source, "(failure records)"))
			}
			tw.Flush()
		})
	case "show":
		var maxN int
		queue, err := command("dlq show", "dlq show QUEUE [-max 10]: print a dead-letter queue's messages, leaving them there", args, func(fs *flag.FlagSet) {
			fs.IntVar(&maxN, "max", 10, "print at most this many")
		})
		if err != nil {
			return err
		}
		letters, err := a.stage.PeekDeadLetters(ctx, queue, maxN)
		if err != nil {
			return err
		}
		return a.print(letters, func(w io.Writer) {
			for _, l := range letters {
				fmt.Fprintf(w, "%s  sent %s  received %d times\n  %s\n", l.ID, l.Sent.Format(time.RFC3339), l.Receives, clip(l.Body, 2000))
			}
			if len(letters) == 0 {
				fmt.Fprintln(w, "no messages")
			}
		})
	case "redrive":
		var maxN int
		var dryRun bool
		queue, err := command("dlq redrive", "dlq redrive QUEUE [-max N] [-dry-run]: move a dead-letter queue's messages back to their queue", args, func(fs *flag.FlagSet) {
			fs.IntVar(&maxN, "max", 1000, "move at most this many")
			fs.BoolVar(&dryRun, "dry-run", false, "count what would move, move nothing")
		})
		if err != nil {
			return err
		}
		m, err := a.stage.RedriveDeadLetters(ctx, queue, maxN, dryRun)
		if err != nil {
			return err
		}
		return a.print(m, func(w io.Writer) {
			verb := "moved"
			if m.DryRun {
				verb = "would move"
			}
			fmt.Fprintf(w, "%s %d messages from %s to %s\n", verb, m.Moved, m.Queue, m.Source)
		})
	}
	fmt.Fprint(os.Stderr, "Usage: orderly dlq list | orderly dlq show QUEUE [-max 10] | orderly dlq redrive QUEUE [-max N] [-dry-run]\n")
	return fmt.Errorf("dlq %q: want list, show or redrive: %w", sub, flag.ErrHelp)
}

// print writes v as JSON with -o json, else as text.
func (a *app) print(v any, text func(io.Writer)) error {
	if a.asJSON {
		enc := json.NewEncoder(a.out)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(a.out)
	return nil
}

func writeOrder(w io.Writer, v api.OrderView) {
	fmt.Fprintf(w, "order %s  %s  customer %s  updated %s\n", v.OrderID, v.Status, v.CustomerID, v.UpdatedAt.UTC().Format(time.RFC3339))
	if v.LastError != "" {
		fmt.Fprintf(w, "  last error: %s\n", v.LastError)
	}
	tw := newTable(w, "  #\tSTEP\tSTATE\tATTEMPT\tFAILURES\tCOMPLETE BY\tREFERENCE\tLAST ERROR")
	for i, s := range v.Steps {
		step := order.RecordLabel(s.Step, s.Undo)
		by := ""
		if s.CompleteBy != nil {
			by = s.CompleteBy.UTC().Format(time.RFC3339)
		}
		fmt.Fprintf(tw, "  %d\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", i, step, s.State, s.Attempt, s.FailureCount, by, s.Reference, clip(s.LastError, 60))
	}
	tw.Flush()
	// What each redrive would do, or why it is refused, before anyone tries.
	for _, r := range v.Redrive {
		what, def := r.What, ""
		if r.Refused != "" {
			what = "refused: " + r.Refused
		}
		if r.Default {
			def = " (the default)"
		}
		fmt.Fprintf(w, "  redrive -action %s%s: %s\n", r.Action, def, what)
	}
}

func writeHistory(w io.Writer, ts []order.HistoryEntry) {
	tw := newTable(w, "TIME\tRECORD\tEVENT\tFROM\tTO\tATTEMPT\tBY\tREASON")
	for _, t := range ts {
		rec := "order"
		if t.Record >= 0 {
			rec = fmt.Sprintf("%d %s", t.Record, t.Step)
			if t.Undo {
				rec = fmt.Sprintf("%d undo %s", t.Record, t.Step)
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", t.At.UTC().Format("15:04:05.000"), rec, t.Event, t.From, t.To, t.Attempt, t.By, clip(t.Reason, 60))
	}
	tw.Flush()
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return strings.ToValidUTF8(s[:n-1], "") + "…"
	}
	return s
}

func (a *app) alerts(ctx context.Context, args []string) error {
	fs := flags("alerts", "alerts [-since 24h] [-kind KIND] [-max 100]: the alerts sent to operators, newest first")
	since := fs.Duration("since", 24*time.Hour, "how far back to look")
	kind := fs.String("kind", "", "only alerts of this kind: StepFailed, StepTimedOut, StepUnclaimed, StepAbandoned, UndoFailed, UndoTimedOut")
	maxN := fs.Int("max", 100, "list at most this many")
	if err := fs.Parse(args); err != nil {
		return err
	}
	alerts, err := a.stage.Alerts(ctx, time.Now().Add(-*since), order.AlertKind(*kind), *maxN)
	if err != nil {
		return err
	}
	return a.print(alerts, func(w io.Writer) {
		tw := newTable(w, "SENT\tKIND\tORDER\tRECORD\tATTEMPT\tFAILURES\tREASON")
		for _, al := range alerts {
			step := order.RecordLabel(al.Step, al.Undo)
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d\t%d\t%s\n", al.At.UTC().Format(time.RFC3339), al.Kind, al.OrderID, step,
				al.Attempt, al.FailureCount, clip(al.Reason, 60))
		}
		tw.Flush()
	})
}

func (a *app) move(ctx context.Context, args []string) error {
	var version string
	id, err := command("move", "move ID -version V: move an order parked under a workflow version this build lacks onto version V", args, func(fs *flag.FlagSet) {
		fs.StringVar(&version, "version", "", "the workflow version to move the order onto (see orderly versions)")
	})
	if err != nil {
		return err
	}
	if version == "" {
		return fmt.Errorf("move: -version is required: %w", flag.ErrHelp)
	}
	o, err := a.stage.Move(ctx, id, version)
	if err != nil {
		return err
	}
	return a.print(o, func(w io.Writer) {
		fmt.Fprintf(w, "order %s: %s, now under workflow version %s\n", o.ID, o.Status, o.Version)
	})
}

func (a *app) versions(ctx context.Context, args []string) error {
	fs := flags("versions", "versions: the orders in flight and in Error per workflow version (from the indexes, no Scan)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	use, err := a.stage.Versions(ctx)
	if err != nil {
		return err
	}
	return a.print(use, func(w io.Writer) {
		tw := newTable(w, "WORKFLOW\tVERSION\tIN FLIGHT\tIN ERROR\tIN THIS BUILD\tREMOVABLE")
		for _, u := range use {
			removable := "no"
			switch {
			case u.Latest:
				removable = "no: new orders get it"
			case u.InFlight == 0 && u.InError == 0:
				removable = "yes: no order uses it"
			}
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%t\t%s\n", u.Workflow, u.Version, u.InFlight, u.InError, u.Known, removable)
		}
		tw.Flush()
	})
}

func (a *app) console(ctx context.Context, args []string) error {
	fs := flags("console", "console [-addr 127.0.0.1:8082] [-host NAME[:PORT],...]: serve the web console for the stage")
	addr := fs.String("addr", "127.0.0.1:8082", "where to listen, on loopback only: the console acts with your AWS credentials")
	hosts := fs.String("host", "", "names the console answers under besides loopback with its port (an SSH tunnel's, a proxy's), comma-separated; any other Host is refused (421)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	ln, err := localrun.ListenLoopback(*addr)
	if err != nil {
		return fmt.Errorf("console: %w (make run serves the local stage's console on 127.0.0.1:8082 already; -addr picks another loopback address)", err)
	}
	srv := &http.Server{Handler: console.New(a.stage.Name, a.stage, config.Logger("console")).WithHosts(strings.Split(*hosts, ",")...), ReadHeaderTimeout: 5 * time.Second}
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	fmt.Fprintf(a.out, "orderly console for stage %s: http://%s/ (Ctrl-C stops it)\n", a.stage.Name, ln.Addr())
	if err := srv.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("console: %w", err)
	}
	return nil
}

// newTable returns a writer of aligned columns whose first line is
// header (tab-separated); Flush writes the table.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

// errInvalidDefinitions ends `workflow validate` when a file is invalid; its
// problems are already printed, one a line.
var errInvalidDefinitions = errors.New("invalid workflow definitions")

// workflow runs `orderly workflow SUBCOMMAND`.
func workflow(args []string, out io.Writer, asJSON bool) error {
	const synopsis = "workflow validate FILE... | workflow diff [-json] OLD NEW"
	fs := flags("workflow", synopsis)
	if err := fs.Parse(args); err != nil {
		return err
	}
	switch fs.Arg(0) {
	case "validate":
		return validateFiles(fs, fs.Args()[1:], out)
	case "diff":
		return workflowDiff(fs.Args()[1:], out, asJSON)
	}
	fs.Usage()
	return fmt.Errorf("workflow: want validate or diff: %w", flag.ErrHelp)
}

func validateFiles(fs *flag.FlagSet, files []string, out io.Writer) error {
	if len(files) == 0 {
		fs.Usage()
		return fmt.Errorf("workflow validate takes one or more files: %w", flag.ErrHelp)
	}
	invalid := 0
	for _, file := range files {
		_, err := readDefinition(file)
		if err != nil {
			invalid++
			fmt.Fprintln(out, err)
			continue
		}
		fmt.Fprintf(out, "%s: valid\n", file)
	}
	if invalid > 0 {
		return fmt.Errorf("%d of %d files: %w", invalid, len(files), errInvalidDefinitions)
	}
	return nil
}

// readDefinition reads and checks one definition file; its error is
// Problems, naming the file.
func readDefinition(file string) (definition.Definition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		rule := err.Error()
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			rule = pathErr.Err.Error() // the file is named already
		}
		return definition.Definition{}, definition.Problems{{Source: file, Rule: "cannot read: " + rule}}
	}
	return validateFile(file, data)
}

// errNotCompared ends `workflow diff` when OLD or NEW is not a valid
// definition (exit 2, like a usage error): its problems are printed.
var errNotCompared = errors.New("workflow definitions not compared")

// errCannotMove ends `workflow diff` when an order at some position of OLD
// cannot move to NEW safely (exit 1): the diff says which.
var errCannotMove = errors.New("some orders in flight cannot move")

// workflowDiff runs `orderly workflow diff OLD NEW`: what orders in flight
// under OLD would do under NEW (definition.Compare), for a stage's timing.
func workflowDiff(args []string, out io.Writer, asJSON bool) error {
	env := config.FromOS()
	stage := env.Timing()
	if err := env.Err(); err != nil {
		return fmt.Errorf("workflow diff: the stage's timing: %w: %w", err, flag.ErrHelp)
	}
	var maxAllowance time.Duration
	fs := flags("workflow diff", "workflow diff [-json] [-allowance 30s] [-max-allowance 2m] [-failure-threshold 3] [-max-heartbeats 10] OLD NEW:\n"+
		"what orders in flight under definition OLD would do if moved to NEW (orderly move), for each place they can be at.\n"+
		"Exit 0 when every one can move, 1 when some cannot, 2 for a usage error or an invalid file.\n"+
		"The stage's timing applies where a step sets none: the flags, else "+config.EnvAllowance+", "+config.EnvMaxAllowance+", "+
		config.EnvFailureThreshold+" and "+config.EnvMaxHeartbeats+", else the defaults")
	fs.DurationVar(&stage.Allowance, "allowance", stage.Allowance, "the stage's step allowance")
	fs.DurationVar(&maxAllowance, "max-allowance", 0, "the stage's maximum allowance (default "+config.EnvMaxAllowance+", else 4× the allowance)")
	fs.IntVar(&stage.FailureThreshold, "failure-threshold", stage.FailureThreshold, "the stage's failure threshold")
	fs.IntVar(&stage.MaxHeartbeats, "max-heartbeats", stage.MaxHeartbeats, "the stage's heartbeats per attempt")
	fs.BoolVar(&asJSON, "json", asJSON, "print JSON")
	var files []string
	for rest := args; ; {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		files, rest = append(files, fs.Arg(0)), fs.Args()[1:]
	}
	if len(files) != 2 {
		fs.Usage()
		return fmt.Errorf("workflow diff takes two files, OLD and NEW: %w", flag.ErrHelp)
	}
	switch {
	case maxAllowance > 0:
		stage.MaxAllowance = maxAllowance
	case os.Getenv(config.EnvMaxAllowance) == "":
		// As the functions: a maximum not given keeps the default ratio.
		stage.MaxAllowance = stage.Allowance * (order.DefaultTiming.MaxAllowance / order.DefaultTiming.Allowance)
	}
	if err := stage.Validate(); err != nil {
		return fmt.Errorf("workflow diff: the stage's timing: %w: %w", err, flag.ErrHelp)
	}
	var defs []definition.Definition
	var ps definition.Problems
	for _, file := range files {
		def, err := readDefinition(file)
		if err == nil {
			// The stage's timing must fit the steps' own, as at deploy.
			_, err = def.Workflow(stage)
		}
		var fileProblems definition.Problems
		if errors.As(err, &fileProblems) {
			ps = append(ps, fileProblems...)
		} else if err != nil {
			return err
		}
		defs = append(defs, def)
	}
	var d definition.Diff
	if len(ps) == 0 {
		var err error
		if d, err = definition.Compare(defs[0], defs[1], stage); err != nil && !errors.As(err, &ps) {
			return err
		}
	}
	if len(ps) > 0 {
		fmt.Fprintln(out, ps)
		return fmt.Errorf("%d problems: %w", len(ps), errNotCompared)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(d); err != nil {
			return err
		}
	} else {
		fmt.Fprint(out, d.Text())
	}
	if !d.Moves {
		return fmt.Errorf("version %s -> %s: %w", d.From, d.To, errCannotMove)
	}
	return nil
}

// validateFile checks one definition, and that its place names it
// (NAME/vVERSION.json), as cdk synth and the functions check under
// workflows/: wherever it is, so a copy made for a new version whose
// "version" was left as it was is caught before it is moved there. Every
// problem at once: a file that decodes gets its place checked too, for
// each field not already wrong.
func validateFile(file string, data []byte) (definition.Definition, error) {
	def, err := definition.Parse(file, data)
	var ps definition.Problems
	if err != nil && !errors.As(err, &ps) {
		return def, err
	}
	if slices.ContainsFunc(ps, func(p definition.Problem) bool { return p.Field == "" }) {
		return def, ps // not a definition at all: it names nothing to place
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return def, fmt.Errorf("%s: %w", file, err)
	}
	rel := filepath.Base(filepath.Dir(abs)) + "/" + filepath.Base(abs)
	for _, p := range def.CheckPlace(rel) {
		if !slices.ContainsFunc(ps, func(q definition.Problem) bool { return q.Field == p.Field }) {
			ps = append(ps, p)
		}
	}
	if len(ps) > 0 {
		return def, ps
	}
	return def, nil
}
