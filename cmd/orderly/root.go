package main

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"orderly/internal/operator/ops"
)

// envStage names the stage when --stage does not.
const envStage = "ORDERLY_STAGE"

const rootHelp = `orderly operates a stage's orders: a local run (make run) or a deployed
stack, with your usual AWS configuration (profile, region, endpoint
variables), through the same fenced transitions as the functions. For
make run's stage: eval "$(bash localstack/emulators.sh env)".

Flags go before or after the command and its arguments:
  orderly --stage prod show ID -o json
A long flag is written --name; the single-dash -name of earlier versions
is still accepted.

Exit status:
  0  done
  1  the operation failed: an AWS error, an order not found, a change
     refused; workflow validate, services validate: a file is invalid;
     workflow diff: some orders in flight cannot move; conformance: a
     rule failed
  2  usage error: an unknown command or flag, a flag's bad value, the
     wrong number of arguments; workflow diff: an invalid file;
     conformance: a run that cannot start`

// Command groups, as the root's help lists them.
const (
	groupOrders      = "orders"
	groupDefinitions = "definitions"
)

// app is what every command shares: the global flags and where output goes.
type app struct {
	stage  string
	output format
	out    io.Writer
	// caller, when set, is who the operator is (tests, or whoami's
	// first answer from STS); callerMu guards it for the console's
	// handlers.
	caller   string
	callerMu sync.Mutex
	// opened, when set, is the stage open returns: a test's stage on the
	// emulators, running workflows this binary does not ship.
	opened *ops.Stage
}

// format is --output's value: text (tables, for people) or json (for
// scripts).
type format string

func (f *format) String() string { return string(*f) }
func (f *format) Type() string   { return "text|json" }

func (f *format) Set(v string) error {
	if v != "text" && v != "json" {
		return errors.New("want text or json")
	}
	*f = format(v)
	return nil
}

func (a *app) asJSON() bool { return a.output == "json" }

// newRoot returns the command tree, writing output and help to out and
// cobra's own messages to errOut.
func newRoot(out, errOut io.Writer) *cobra.Command {
	a := &app{stage: cmp.Or(os.Getenv(envStage), "local"), output: "text", out: out}
	root := &cobra.Command{
		Use:   "orderly",
		Short: "Operate a stage's orders",
		Long:  rootHelp,
		Args:  commandArgs,
		RunE:  func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		// run prints the error, once, and says where usage is.
		SilenceErrors: true,
		SilenceUsage:  true,
	}
	root.SetOut(out)
	root.SetErr(errOut)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.PersistentFlags().StringVar(&a.stage, "stage", a.stage, "the stage: its resources are named orderly-STAGE-… ($"+envStage+" when set)")
	root.PersistentFlags().VarP(&a.output, "output", "o", "output: text (a table) or json")
	complete(root, "output", "text", "json")

	root.AddGroup(&cobra.Group{ID: groupOrders, Title: "A stage's orders and queues (with your AWS credentials):"},
		&cobra.Group{ID: groupDefinitions, Title: "Workflow definitions and services (offline: no deployed stage, no AWS):"})
	for _, c := range []*cobra.Command{
		a.listCmd(), a.showCmd(), a.historyCmd(), a.watchCmd(), a.cancelCmd(), a.redriveCmd(), a.sendEventCmd(), a.moveCmd(),
		a.versionsCmd(), a.alertsCmd(), a.searchCmd(), a.countsCmd(), a.bulkCmd(), a.pauseCmd(), a.resumeCmd(), a.pausesCmd(), a.dlqCmd(), a.consoleCmd(),
	} {
		c.GroupID = groupOrders
		root.AddCommand(c)
	}
	for _, c := range []*cobra.Command{a.workflowCmd(), a.servicesCmd(), a.conformanceCmd()} {
		c.GroupID = groupDefinitions
		root.AddCommand(c)
	}
	root.AddCommand(a.versionCmd())
	root.SetHelpCommand(helpCmd())
	root.InitDefaultCompletionCmd()
	strict(root)
	// A command that groups others runs only to print its help or refuse
	// what follows it: its usage is its commands, not a line of its own.
	root.SetUsageTemplate(strings.Replace(root.UsageTemplate(), "{{if .Runnable}}", "{{if and .Runnable (not .HasAvailableSubCommands)}}", 1))
	return root
}

// strict makes every wrong argument a usage error, cobra's own commands'
// too (completion's): a command that only groups others is run (else
// cobra prints its help and exits 0 whatever follows it) and refuses an
// unknown command.
func strict(c *cobra.Command) {
	if c.HasSubCommands() && !c.Runnable() {
		c.Args, c.RunE = commandArgs, needsCommand
	}
	if c.HasSubCommands() {
		c.SuggestionsMinimumDistance = 2
	}
	if c.Args != nil {
		c.Args = usageArgs(c.Args)
	}
	for _, sub := range c.Commands() {
		strict(sub)
	}
}

// usageArgs makes an Args validator's error a usage error (exit 2).
func usageArgs(valid cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := valid(cmd, args); err != nil {
			return usageError{err}
		}
		return nil
	}
}

// commandArgs is the Args of a command that groups others: any argument
// is a command it does not have.
func commandArgs(cmd *cobra.Command, args []string) error {
	if len(args) == 0 {
		return nil
	}
	msg := fmt.Sprintf("unknown command %q for %q", args[0], cmd.CommandPath())
	if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return errors.New(msg)
}

// needsCommand runs a command that groups others, given none.
func needsCommand(cmd *cobra.Command, _ []string) error {
	var names []string
	for _, c := range cmd.Commands() {
		if c.IsAvailableCommand() {
			names = append(names, c.Name())
		}
	}
	return usagef("%s needs a command: %s", cmd.CommandPath(), strings.Join(names, ", "))
}

// helpCmd is `orderly help [command]`: the command's help on standard
// output, exit 0; a command that does not exist is a usage error.
func helpCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "help [command]",
		Short: "Help about any command",
		Long:  "Help prints the help of any command: orderly help dlq redrive.",
		ValidArgsFunction: func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
			cmd, _, err := c.Root().Find(args)
			if err != nil {
				return nil, cobra.ShellCompDirectiveNoFileComp
			}
			var names []cobra.Completion
			for _, sub := range cmd.Commands() {
				if sub.IsAvailableCommand() && strings.HasPrefix(sub.Name(), toComplete) {
					names = append(names, cobra.CompletionWithDesc(sub.Name(), sub.Short))
				}
			}
			return names, cobra.ShellCompDirectiveNoFileComp
		},
		RunE: func(c *cobra.Command, args []string) error {
			cmd, rest, err := c.Root().Find(args)
			if err != nil || len(rest) > 0 {
				return usagef("no help for %q: no such command (orderly help lists them)", strings.Join(args, " "))
			}
			return cmd.Help()
		},
	}
}

// print writes v as JSON with -o json, else as text. A nil list is
// written [], so that a script reads an empty list as one.
func (a *app) print(v any, text func(io.Writer)) error {
	if !a.asJSON() {
		text(a.out)
		return nil
	}
	if rv := reflect.ValueOf(v); rv.Kind() == reflect.Slice && rv.IsNil() {
		v = reflect.MakeSlice(rv.Type(), 0, 0).Interface()
	}
	return writeJSON(a.out, v)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// newTable returns a writer of aligned columns whose first line is
// header (tab-separated); Flush writes the table.
func newTable(w io.Writer, header string) *tabwriter.Writer {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, header)
	return tw
}

func clip(s string, n int) string {
	s = strings.ReplaceAll(s, "\n", " ")
	if len(s) > n {
		return strings.ToValidUTF8(s[:n-1], "") + "…"
	}
	return s
}
