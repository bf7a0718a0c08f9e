package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/actor/api"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

// listedStatuses are the statuses `list --status` takes: those an index
// holds (ops.ErrNotListed).
var listedStatuses = []string{string(order.StatusError), string(order.StatusPending), string(order.StatusProcessing),
	string(order.StatusWaiting), string(order.StatusCompensating), string(order.StatusCancelling)}

// alertKinds are the kinds `alerts --kind` completes.
var alertKinds = []string{string(order.AlertStepFailed), string(order.AlertStepTimedOut), string(order.AlertStepUnclaimed),
	string(order.AlertStepAbandoned), string(order.AlertUndoFailed), string(order.AlertUndoTimedOut),
	string(order.AlertVersionUnknown), string(order.AlertItemUnreadable)}

// complete offers values for a flag in the shells' completion.
func complete(cmd *cobra.Command, flag string, values ...string) {
	cmd.RegisterFlagCompletionFunc(flag, cobra.FixedCompletions(values, cobra.ShellCompDirectiveNoFileComp))
}

func (a *app) listCmd() *cobra.Command {
	var late time.Duration
	var status string
	var maxN int
	cmd := &cobra.Command{
		Use:                   "list [--late 5m | --status STATUS] [--max 100]",
		DisableFlagsInUseLine: true,
		Short:                 "Orders in flight, those stuck past their deadline, or those in one status",
		Long: `List the orders in flight, from the due index (no Scan): each one's status,
workflow version, running step or undo, attempt, deadline and how late it is.

With --late, only those whose deadline passed at least that long ago: the
stuck ones. With --status Error, the orders an operator must act on, with the
record that stopped each; or those Pending, Processing, Waiting (a step
waits: COMPLETE BY is when its wait ends), Compensating or Cancelling. An
order that ended is looked up by id: orderly show ID.`,
		Example: "  orderly list --status Error\n  orderly list --late 5m -o json",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if status != "" && late > 0 {
				return usagef("--late lists the orders in flight, whatever their status: leave out --status")
			}
			if status != "" && !slices.Contains(listedStatuses, status) {
				return usagef("--status %s: %v", status, ops.ErrNotListed)
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			var ls []ops.Listed
			if status == "" {
				ls, err = stage.InFlight(cmd.Context(), late, maxN)
			} else {
				ls, err = stage.InStatus(cmd.Context(), order.Status(status), maxN)
			}
			if errors.Is(err, ops.ErrNotListed) {
				return usagef("--status %s: %w", status, err)
			}
			if err != nil {
				return err
			}
			return a.print(ls, func(w io.Writer) {
				tw := newTable(w, "ORDER\tSTATUS\tVERSION\tRECORD\tSTATE\tATTEMPT\tFAILURES\tCOMPLETE BY\tLATE\tLAST ERROR")
				for _, l := range ls {
					step := order.RecordLabel(l.Step, l.Undo)
					completeBy, late := "-", "-" // no deadline: in Error, or not yet claimed
					if !l.CompleteBy.IsZero() {
						completeBy, late = l.CompleteBy.UTC().Format(time.RFC3339), l.Late.Round(time.Second).String()
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s\t%s\t%s\n", l.OrderID, l.Status, l.Version, step, l.State, l.Attempt, l.Failures,
						completeBy, late, clip(l.LastError, 50))
				}
				tw.Flush()
			})
		},
	}
	cmd.Flags().DurationVar(&late, "late", 0, "only orders whose deadline passed at least this long ago")
	cmd.Flags().StringVar(&status, "status", "", "Error (the orders an operator must act on), Pending, Processing, Waiting, Compensating or Cancelling (default: every order in flight)")
	cmd.Flags().IntVar(&maxN, "max", 100, "list at most this many")
	complete(cmd, "status", listedStatuses...)
	return cmd
}

func (a *app) showCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "show ID",
		Short: "The order and each of its records (steps and undos)",
		Long: `Show the order and each of its records: state, attempt, failures, deadline,
the service's reference and the last error. For a Waiting order, what its step
waits for, since when and until when. For an order in Error, what each
redrive would do, or why it is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			v, err := stage.Show(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.print(v, func(w io.Writer) { writeOrder(w, v) })
		},
	}
}

func (a *app) historyCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "history ID",
		Short: "Every transition of the order, in order, with who made it",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			id := args[0]
			status, ts, err := stage.History(cmd.Context(), id)
			if err != nil {
				return err
			}
			return a.print(api.HistoryView{OrderID: id, Status: status, History: ts}, func(w io.Writer) { writeHistory(w, ts) })
		},
	}
}

func (a *app) watchCmd() *cobra.Command {
	var every, timeout time.Duration
	cmd := &cobra.Command{
		Use:                   "watch ID [--every 1s] [--timeout 10m]",
		DisableFlagsInUseLine: true,
		Short:                 "Print the order each time it changes, until it is terminal",
		Long: `Watch the order: print it each time it changes, until it ends (Processed,
Failed, Cancelled). With -o json, one JSON object per change.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
			defer cancel()
			id, last := args[0], time.Time{}
			for {
				v, err := stage.Show(ctx, id)
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
		},
	}
	cmd.Flags().DurationVar(&every, "every", time.Second, "how often to read the order")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

func (a *app) cancelCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "cancel ID",
		Short: "Cancel the order for its client (Pending, Processing or Waiting only)",
		Long: `Cancel the order on its client's behalf, as the client's own
POST /orders/{id}/cancel would: a step in flight finishes or times out, a
step's wait stops at once, then the work done is undone.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			o, err := stage.Cancel(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return a.printStatus(o)
		},
	}
}

func (a *app) redriveCmd() *cobra.Command {
	var action string
	cmd := &cobra.Command{
		Use:                   "redrive ID [--action retry|compensate]",
		DisableFlagsInUseLine: true,
		Short:                 "Resume an order in Error where it stopped",
		Long: `Resume an order in Error where it stopped. Without --action, what the stuck
record calls for; orderly show ID says what each action would do, or why it
is refused.`,
		Example: "  orderly redrive ID --action retry",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			o, err := stage.Redrive(cmd.Context(), args[0], action)
			if err != nil {
				return err
			}
			return a.printStatus(o)
		},
	}
	cmd.Flags().StringVar(&action, "action", "", "retry (run the failed step again) or compensate (undo the work done); default: what the stuck record calls for")
	complete(cmd, "action", order.RedriveRetry, order.RedriveCompensate)
	return cmd
}

func (a *app) sendEventCmd() *cobra.Command {
	var data, file string
	cmd := &cobra.Command{
		Use:                   "send-event ID NAME [--data JSON | --data-file FILE]",
		DisableFlagsInUseLine: true,
		Short:                 "Send the event a Waiting order's step waits for (an approval)",
		Long: `Send the event NAME to the order as an operator, as
POST /ops/orders/{id}/events/{name} would: the step that waits for it takes
the data, a JSON object, as its result and the order goes on. orderly show ID
says what a Waiting order's step waits for. The data is checked before
anything is sent, then against the step's schema; an event the order does not
wait for, or whose wait is over, is refused and nothing is written. The
history names the operator's event.`,
		Example: "  orderly send-event ID review --data '{\"decision\":\"approve\"}'\n  orderly send-event ID review --data-file decision.json",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			body, err := eventData(cmd, data, file)
			if err != nil {
				return err
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			o, err := stage.SendEvent(cmd.Context(), args[0], args[1], body)
			if err != nil {
				return err
			}
			return a.printStatus(o)
		},
	}
	cmd.Flags().StringVar(&data, "data", "{}", "the event's data, a JSON object")
	cmd.Flags().StringVar(&file, "data-file", "", "read the event's data from this file (- for standard input)")
	return cmd
}

// eventData is send-event's data, from --data or --data-file, checked as
// the API checks an event's body: a bad one is a usage error naming the
// problem, before anything is asked of AWS.
func eventData(cmd *cobra.Command, data, file string) (json.RawMessage, error) {
	body, flag := []byte(data), "--data"
	if file != "" {
		if cmd.Flags().Changed("data") {
			return nil, usagef("--data and --data-file: give one")
		}
		var err error
		flag = "--data-file " + file
		if file == "-" {
			body, err = io.ReadAll(io.LimitReader(cmd.InOrStdin(), order.MaxInputBytes+1))
		} else {
			body, err = os.ReadFile(file)
		}
		if err != nil {
			return nil, usagef("%s: %w", flag, err)
		}
	}
	parsed, err := order.ParseEventData(body)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return parsed, nil
}

// printStatus prints an order's status after a change.
func (a *app) printStatus(o order.Order) error {
	return a.print(map[string]any{"orderId": o.ID, "status": o.Status}, func(w io.Writer) { fmt.Fprintf(w, "order %s: %s\n", o.ID, o.Status) })
}

func (a *app) moveCmd() *cobra.Command {
	var version string
	cmd := &cobra.Command{
		Use:                   "move ID --version V",
		DisableFlagsInUseLine: true,
		Short:                 "Move an order parked under a missing workflow version onto version V",
		Long: `Move an order parked under a workflow version this build lacks onto version
V of this build, when its steps fit V (orderly workflow diff says which do).`,
		Example: "  orderly move ID --version 1",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if version == "" {
				return usagef("move: --version is required")
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			o, err := stage.Move(cmd.Context(), args[0], version)
			if err != nil {
				return err
			}
			return a.print(o, func(w io.Writer) {
				fmt.Fprintf(w, "order %s: %s, now under workflow version %s\n", o.ID, o.Status, o.Version)
			})
		},
	}
	cmd.Flags().StringVar(&version, "version", "", "the workflow version to move the order onto (see orderly versions)")
	return cmd
}

func (a *app) versionsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "versions",
		Short: "The orders not ended per workflow version: remove a version once none uses it",
		Long: `Count the orders in flight and in Error per workflow version (from the
indexes, no Scan), with the versions this build has: a version may be removed
from the code once no order uses it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			use, err := stage.Versions(cmd.Context())
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
		},
	}
}

func (a *app) alertsCmd() *cobra.Command {
	var since time.Duration
	var kind string
	var maxN int
	cmd := &cobra.Command{
		Use:                   "alerts [--since 24h] [--kind KIND] [--max 100]",
		DisableFlagsInUseLine: true,
		Short:                 "The alerts sent to operators, newest first",
		Long: `List the alerts sent to operators, newest first, from the history's alert
index (no Scan): the order, the stuck step or undo and the reason. --kind
keeps one kind before --max counts.`,
		Example: "  orderly alerts --since 72h --kind UndoFailed",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			alerts, err := stage.Alerts(cmd.Context(), time.Now().Add(-since), order.AlertKind(kind), maxN)
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
		},
	}
	cmd.Flags().DurationVar(&since, "since", 24*time.Hour, "how far back to look")
	cmd.Flags().StringVar(&kind, "kind", "", "only alerts of this kind: StepFailed, StepTimedOut, StepUnclaimed, StepAbandoned, UndoFailed, UndoTimedOut, VersionUnknown, ItemUnreadable")
	cmd.Flags().IntVar(&maxN, "max", 100, "list at most this many")
	complete(cmd, "kind", alertKinds...)
	return cmd
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
	for _, s := range v.Steps {
		if wt := s.Waiting; wt != nil {
			fmt.Fprintf(w, "  waiting: %s waits", order.RecordLabel(s.Step, s.Undo))
			if wt.For != "" {
				fmt.Fprintf(w, " for %s", wt.For)
			}
			if wt.Event != "" {
				fmt.Fprintf(w, " %s", wt.Event)
			}
			if !wt.Since.IsZero() {
				fmt.Fprintf(w, " since %s", wt.Since.UTC().Format(time.RFC3339))
			}
			fmt.Fprintf(w, " until %s", wt.Until.UTC().Format(time.RFC3339))
			if !wt.NextCheck.IsZero() {
				fmt.Fprintf(w, ", its status checked next at %s", wt.NextCheck.UTC().Format(time.RFC3339))
			}
			// What moves it on, before anyone looks it up.
			if wt.Event != "" {
				fmt.Fprintf(w, " (orderly send-event %s %s --data JSON)", v.OrderID, wt.Event)
			}
			fmt.Fprintln(w)
		}
	}
	if p := v.HeldBy; p != nil {
		fmt.Fprintf(w, "  held: %s (orderly resume %s %s)\n", p.Held(), p.Kind, p.Name)
	}
	// What each redrive would do, or why it is refused, before anyone tries.
	for _, r := range v.Redrive {
		what, def := r.What, ""
		if r.Refused != "" {
			what = "refused: " + r.Refused
		}
		if r.Default {
			def = " (the default)"
		}
		fmt.Fprintf(w, "  redrive --action %s%s: %s\n", r.Action, def, what)
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
