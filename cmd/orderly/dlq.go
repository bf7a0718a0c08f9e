package main

import (
	"cmp"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// dlqCmd is `orderly dlq`: the stage's dead-letter queues.
func (a *app) dlqCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "The stage's dead-letter queues: list, show and move back their messages",
		Long: `The stage's dead-letter queues: list them with their depth, print a queue's
messages (leaving them there), and move a queue's messages back to the queue
they came from once their consumer's cause is fixed.`,
		Example: "  orderly dlq list\n  orderly dlq show orderly-prod-payment-requests-dlq\n  orderly dlq redrive orderly-prod-payment-requests-dlq --dry-run",
	}
	cmd.AddCommand(a.dlqListCmd(), a.dlqShowCmd(), a.dlqRedriveCmd())
	return cmd
}

func (a *app) dlqListCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "list",
		Short: "The stage's dead-letter queues, their depth and where their messages go back to",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			qs, err := stage.DeadLetters(cmd.Context())
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
		},
	}
}

func (a *app) dlqShowCmd() *cobra.Command {
	var maxN int
	cmd := &cobra.Command{
		Use:                   "show QUEUE [--max 10]",
		DisableFlagsInUseLine: true,
		Short:                 "Print a dead-letter queue's messages, leaving them there",
		Long: `Print a dead-letter queue's messages, leaving them there for a redrive: each
is hidden while the others are read, then made visible again. Reading counts
as a receive.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			letters, err := stage.PeekDeadLetters(cmd.Context(), args[0], maxN)
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
		},
	}
	cmd.Flags().IntVar(&maxN, "max", 10, "print at most this many")
	return cmd
}

func (a *app) dlqRedriveCmd() *cobra.Command {
	var maxN int
	var dryRun bool
	cmd := &cobra.Command{
		Use:                   "redrive QUEUE [--max N] [--dry-run]",
		DisableFlagsInUseLine: true,
		Short:                 "Move a dead-letter queue's messages back to their queue",
		Long: `Move up to --max messages of a dead-letter queue back to the queue they came
from: each is sent there, then deleted here, so a crash in between leaves a
duplicate, never a loss. --dry-run counts what would move and moves nothing.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			m, err := stage.RedriveDeadLetters(cmd.Context(), args[0], maxN, dryRun)
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
		},
	}
	cmd.Flags().IntVar(&maxN, "max", 1000, "move at most this many")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "count what would move, move nothing")
	return cmd
}
