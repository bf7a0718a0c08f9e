package main

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/operator/ops"
)

func (a *app) countsCmd() *cobra.Command {
	var maxRead int
	var filters queryFlags
	cmd := &cobra.Command{
		Use:                   "counts [--customer ID] [--workflow NAME] [--version V] [--created-from T] [--created-to T] [--ended-from T] [--ended-to T] [--max-read 200000]",
		DisableFlagsInUseLine: true,
		Short:                 "Count orders by status over a time window (the last 24 hours unless told)",
		Long: `Count the orders by status, every status, over a window of when they were
created (or ended, with --ended-from or --ended-to): the orders submitted in
the last 24 hours unless a time flag says otherwise. The filters are
search's, --status aside. It reads the orders table's search indexes (no
Scan), and the current status of each order still running.

A count evaluates at most --max-read index items, newest first: past them it
stops and says it is partial, with the time it got down to; its counts are
exact from that time on. A time is RFC 3339 (2026-11-26T00:00:00Z), a day
(2026-11-26, midnight UTC), or a duration back from now (48h); a range's
start is inclusive, its end exclusive.`,
		Example: `  # every order of the last 24 hours, by status
  orderly counts
  # customer c-1's orders submitted yesterday (UTC)
  orderly counts --customer c-1 --created-from 2026-11-26 --created-to 2026-11-27
  # the orders that ended in the last hour, for a script
  orderly counts --ended-from 1h -o json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			now := time.Now()
			q, err := filters.query(cmd, now)
			if err != nil {
				return err
			}
			q, _ = q.Bounded(now)
			if maxRead < 1 {
				return usagef("--max-read %d: want 1 or more", maxRead)
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			c, err := stage.Count(cmd.Context(), q, maxRead)
			if err != nil {
				return err
			}
			return a.print(c, func(w io.Writer) {
				fmt.Fprintf(w, "Orders %s:\n", c.Span())
				tw := newTable(w, "STATUS\tORDERS")
				for _, sc := range c.InOrder() {
					fmt.Fprintf(tw, "%s\t%d\n", sc.Status, sc.N)
				}
				fmt.Fprintf(tw, "total\t%d\n", c.Total)
				tw.Flush()
				if c.Partial {
					fmt.Fprintf(w, "Partial: the count stopped after %d index items (--max-read), at %s: older orders of the window are not counted.\n",
						c.Evaluated, c.Through.Format(time.RFC3339Nano))
				}
			})
		},
	}
	filters.add(cmd, false)
	cmd.Flags().IntVar(&maxRead, "max-read", ops.DefaultCountBudget, "evaluate at most this many index items (about 100 to 200 bytes each)")
	return cmd
}
