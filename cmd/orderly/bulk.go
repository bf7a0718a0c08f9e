package main

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

const bulkHelp = `Act on every order a search matches: redrive, cancel, move or send-event,
each order through the same fenced operation as the single-order command.

Without --yes, a dry run: it prints how many orders and which ones (id,
status, step) it would act on, and changes nothing. With --yes, it acts, at
most --rate orders a second (default %g, a small share of what the stage
takes, so live traffic is not starved), with a progress bar on a terminal,
then prints what happened to each order: done, refused and why (an order
that moved on since it was planned), or failed and why.

Each outcome is written to a journal (JSON lines) as it happens; the journal's
path is printed first. The same command run again resumes: the orders the
journal records as done or refused are skipped, those that failed are tried
again. After Ctrl-C, the order being acted on is finished and journaled.

The filters are search's (every filter given must hold), and --step: only the
orders whose running or stuck record is at that step. At least one filter is
required. A filter that matches no order, or more than --max (default %d), is
refused and nothing is done; but when the journal records a run before,
which acted on every order the filter matched, it says nothing is left to do.

Exit status: 0 the plan printed or every order done or refused; 1 an order
failed, the run was interrupted, or the filter matches nothing; 2 a usage
error: no filter, a plan over --max, a bad flag.`

func (a *app) bulkCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bulk",
		Short: "Redrive, cancel, move or send an event to every order a search matches",
		Long:  fmt.Sprintf(bulkHelp, ops.DefaultBulkRate, ops.DefaultBulkMax),
		Example: `  # after an outage: every order in Error at step charge-payment
  orderly bulk redrive --status Error --step charge-payment              # dry run
  orderly bulk redrive --status Error --step charge-payment --yes        # act
  orderly bulk redrive --status Error --step charge-payment --yes        # again: resumes
  orderly bulk cancel --status Pending --customer c-1 --yes
  orderly bulk move --workflow order --version 3 --status Error --to 2 --yes
  orderly bulk send-event review --status Waiting --step review --data '{"decision":"approve"}'`,
	}
	redrive := ops.BulkAction{Kind: ops.BulkRedrive}
	redriveCmd := a.bulkActionCmd(&redrive, "redrive [FILTERS] [--action retry|compensate] [--yes]",
		"Resume every order in Error a search matches, as orderly redrive does", cobra.NoArgs)
	redriveCmd.Flags().StringVar(&redrive.Redrive, "action", "", "retry (run the failed step again) or compensate (undo the work done); default: what each stuck record calls for")
	complete(redriveCmd, "action", order.RedriveRetry, order.RedriveCompensate)

	cancel := ops.BulkAction{Kind: ops.BulkCancel}
	cancelCmd := a.bulkActionCmd(&cancel, "cancel [FILTERS] [--yes]",
		"Cancel every order a search matches, as orderly cancel does", cobra.NoArgs)

	move := ops.BulkAction{Kind: ops.BulkMove}
	moveCmd := a.bulkActionCmd(&move, "move [FILTERS] --to V [--yes]",
		"Move every order parked under a missing workflow version that a search matches onto version V", cobra.NoArgs)
	// --version is search's filter: the version moved onto is --to.
	moveCmd.Flags().StringVar(&move.Version, "to", "", "the workflow version to move the orders onto (see orderly versions)")

	send := ops.BulkAction{Kind: ops.BulkSendEvent}
	sendCmd := a.bulkActionCmd(&send, "send-event NAME [FILTERS] [--data JSON | --data-file FILE] [--yes]",
		"Send the event NAME to every Waiting order a search matches, as orderly send-event does", cobra.ExactArgs(1))
	sendCmd.Flags().String("data", "{}", "the event's data, a JSON object")
	sendCmd.Flags().String("data-file", "", "read the event's data from this file (- for standard input)")

	cmd.AddCommand(redriveCmd, cancelCmd, moveCmd, sendCmd)
	return cmd
}

// bulkActionCmd is one bulk action's command: search's filters, --step,
// the run's flags, and the dry run or run.
func (a *app) bulkActionCmd(action *ops.BulkAction, use, short string, args cobra.PositionalArgs) *cobra.Command {
	var filters queryFlags
	var step, journal string
	var maxN int
	var perSecond float64
	var yes bool
	cmd := &cobra.Command{
		Use:                   use,
		DisableFlagsInUseLine: true,
		Short:                 short,
		Long:                  short + ". orderly bulk --help says how a bulk action plans, paces and resumes.",
		Args:                  args,
		RunE: func(cmd *cobra.Command, args []string) error {
			if action.Kind == ops.BulkSendEvent {
				data, _ := cmd.Flags().GetString("data")
				file, _ := cmd.Flags().GetString("data-file")
				body, err := eventData(cmd, data, file)
				if err != nil {
					return err
				}
				action.Event, action.Data = args[0], body
			}
			if err := action.Check(); err != nil {
				return usageError{err}
			}
			q, err := filters.query(cmd, time.Now())
			if err != nil {
				return err
			}
			f := ops.BulkFilter{Query: q, Step: step}
			if f.Empty() {
				return usagef("%w: give --status, --step, --workflow, --version, --customer or a time window (--created-from ...); orderly search previews a filter", ops.ErrNoFilter)
			}
			if maxN < 1 {
				return usagef("--max %d: want 1 or more", maxN)
			}
			if perSecond <= 0 {
				return usagef("--rate %g: want more than 0 orders a second", perSecond)
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			given := givenFlags(cmd, append(slices.Collect(maps.Keys(flagParams)), "step"))
			if journal == "" {
				journal = defaultJournal(stage.Name, *action, given)
			}
			plan, err := stage.PlanBulk(cmd.Context(), f, maxN)
			if errors.Is(err, ops.ErrPlanEmpty) {
				if done := journaled(journal, stage.Name, *action, given); done > 0 {
					// A run before acted on them all: they match no more.
					fmt.Fprintf(cmd.OutOrStdout(), "nothing left to do: the filter matches no order now, and journal %s records %d orders acted on\n", journal, done)
					return nil
				}
			}
			if errors.Is(err, ops.ErrPlanTooLarge) {
				return usagef("%w (--max %d)", err, maxN)
			}
			if err != nil {
				return err
			}
			// A version or an event no planned order can take is refused
			// before anything is done, not order by order.
			if err := stage.CheckPlan(plan, *action); err != nil {
				return err
			}
			if !yes {
				return a.printPlan(*action, plan, journal)
			}
			return a.runBulk(cmd, stage, *action, plan, journal, given, perSecond)
		},
	}
	filters.add(cmd, true)
	cmd.Flags().StringVar(&step, "step", "", "only orders whose running or stuck record is at this step (or its undo)")
	cmd.Flags().IntVar(&maxN, "max", ops.DefaultBulkMax, "refuse a plan of more orders than this")
	cmd.Flags().Float64Var(&perSecond, "rate", ops.DefaultBulkRate, "act on at most this many orders a second")
	cmd.Flags().StringVar(&journal, "journal", "", "the journal file, to resume a run (default: under your cache directory, named after the stage, action and filter)")
	cmd.Flags().BoolVar(&yes, "yes", false, "act; without it, a dry run that only lists the orders")
	return cmd
}

// givenFlags is the filter flags given to cmd as typed, sorted: what names
// a run's journal, so that the same command line resumes it even when a
// time is a duration back from now.
func givenFlags(cmd *cobra.Command, names []string) string {
	var out []string
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			out = append(out, "--"+name+"="+f.Value.String())
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// journaled is how many orders the journal at path records for this
// stage, action and filter: 0 when there is no such journal (a run
// never began, or began for another action or filter).
func journaled(path, stage string, action ops.BulkAction, filter string) int {
	if _, err := os.Stat(path); err != nil {
		return 0
	}
	j, err := ops.OpenJournal(path, stage, action, filter)
	if err != nil {
		return 0
	}
	defer j.Close()
	return j.Len()
}

// defaultJournal is where a run's journal goes unless --journal says: the
// user's cache directory (.local/ when there is none), a file named after
// the stage, the action and a hash of the filter.
func defaultJournal(stage string, a ops.BulkAction, filter string) string {
	dir, err := os.UserCacheDir()
	if err != nil {
		dir = ".local"
	}
	sum := sha256.Sum256([]byte(a.String() + "\x00" + filter))
	name := fmt.Sprintf("%s-%s-%s.jsonl", stage, strings.NewReplacer(" ", "", "--", "-").Replace(a.String()), hex.EncodeToString(sum[:6]))
	return filepath.Join(dir, "orderly", "bulk", strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ':' {
			return '_'
		}
		return r
	}, name))
}

// bulkPlan is a dry run's output.
type bulkPlan struct {
	DryRun  bool          `json:"dryRun"`
	Action  string        `json:"action"`
	Count   int           `json:"count"`
	Journal string        `json:"journal"`
	Orders  []ops.Planned `json:"orders"`
}

func (a *app) printPlan(action ops.BulkAction, plan []ops.Planned, journal string) error {
	v := bulkPlan{DryRun: true, Action: action.String(), Count: len(plan), Journal: journal, Orders: plan}
	return a.print(v, func(w io.Writer) {
		fmt.Fprintf(w, "bulk %s would act on %d orders (dry run: nothing done):\n", v.Action, v.Count)
		tw := newTable(w, "ORDER\tSTATUS\tWORKFLOW\tVERSION\tSTEP")
		for _, p := range plan {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", p.OrderID, p.Status, p.Workflow, p.Version, cmp.Or(order.RecordLabel(p.Step, p.Undo), "-"))
		}
		tw.Flush()
		fmt.Fprintf(w, "Run the same command with --yes to act (journal %s).\n", journal)
	})
}

// runBulk acts on the plan, journaling each order, with a progress line
// on stderr when it is a terminal, then prints the report.
func (a *app) runBulk(cmd *cobra.Command, stage *ops.Stage, action ops.BulkAction, plan []ops.Planned, path, filter string, perSecond float64) error {
	errOut := cmd.ErrOrStderr()
	j, err := ops.OpenJournal(path, stage.Name, action, filter)
	if err != nil {
		return usagef("--journal: %w", err)
	}
	defer j.Close()
	fmt.Fprintf(errOut, "orderly: bulk %s on %d orders at %g a second; journal %s (run the same command again to resume)\n",
		action.String(), len(plan), perSecond, path)
	opts := ops.BulkOptions{Rate: perSecond}
	tty := isTerminal(errOut)
	if tty {
		opts.Progress = func(r ops.BulkReport) { fmt.Fprint(errOut, progress(r)) }
	}
	rep, runErr := stage.RunBulk(cmd.Context(), plan, action, j, opts)
	if tty {
		fmt.Fprintln(errOut)
	}
	if err := a.print(rep, func(w io.Writer) { writeReport(w, rep) }); err != nil {
		return err
	}
	if runErr != nil {
		return runErr
	}
	if rep.Failed > 0 {
		return fmt.Errorf("%d orders failed: run the same command again to try them again", rep.Failed)
	}
	return nil
}

// progressWidth is how many characters the progress bar spans.
const progressWidth = 30

// progress is the line a run on a terminal rewrites after each order: a
// bar of the orders acted on so far, then the counts.
func progress(r ops.BulkReport) string {
	acted := r.Planned - r.Left()
	filled := 0
	if r.Planned > 0 {
		filled = acted * progressWidth / r.Planned
	}
	return fmt.Sprintf("\r[%s%s] %d/%d  done %d  refused %d  failed %d  skipped %d ", strings.Repeat("#", filled), strings.Repeat(".", progressWidth-filled),
		acted, r.Planned, r.Done, r.Refused, r.Failed, r.Skipped)
}

func writeReport(w io.Writer, r ops.BulkReport) {
	fmt.Fprintf(w, "bulk %s: %d planned, %d done, %d refused, %d failed", r.Action, r.Planned, r.Done, r.Refused, r.Failed)
	if r.Skipped > 0 {
		fmt.Fprintf(w, ", %d skipped (the journal has them)", r.Skipped)
	}
	if r.Interrupted {
		fmt.Fprintf(w, ", %d left (interrupted)", r.Left())
	}
	fmt.Fprintln(w)
	if len(r.Problems) > 0 {
		tw := newTable(w, "ORDER\tOUTCOME\tREASON")
		for _, p := range r.Problems {
			fmt.Fprintf(tw, "%s\t%s\t%s\n", p.OrderID, p.Outcome, clip(p.Reason, 100))
		}
		tw.Flush()
	}
	fmt.Fprintf(w, "journal: %s\n", r.Journal)
}

// isTerminal reports whether w is a terminal (a character device), where
// a progress line that rewrites itself reads well; a file or a pipe gets
// none.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}
