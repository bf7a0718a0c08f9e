package main

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

func (a *app) searchCmd() *cobra.Command {
	var maxN int
	var filters queryFlags
	cmd := &cobra.Command{
		Use:                   "search [--customer ID] [--status STATUS] [--workflow NAME] [--version V] [--created-from T] [--created-to T] [--ended-from T] [--ended-to T] [--max 100]",
		DisableFlagsInUseLine: true,
		Short:                 "Find orders by customer, status, workflow, version, and when they were created or ended",
		Long: `Find orders, newest first, from the orders table's search indexes (no
Scan), ended ones included until retention removes them. Every filter given
must hold. A time is RFC 3339 (2026-11-26T00:00:00Z), a day (2026-11-26,
midnight UTC), or a duration back from now (48h); a range's start is
inclusive, its end exclusive.`,
		Example: `  # customer c-1's orders submitted yesterday (UTC)
  orderly search --customer c-1 --created-from 2026-11-26 --created-to 2026-11-27
  # the orders that failed in the last 6 hours
  orderly search --status Failed --ended-from 6h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := filters.query(cmd, time.Now())
			if err != nil {
				return err
			}
			if maxN < 1 {
				return usagef("--max %d: want 1 or more", maxN)
			}
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			found, more, err := stage.Search(cmd.Context(), q, maxN)
			if err != nil {
				return err
			}
			if more {
				// On stderr, so that -o json stays one document.
				fmt.Fprintf(cmd.ErrOrStderr(), "orderly: the first %d listed; more orders may match: raise --max or narrow the search\n", maxN)
			}
			return a.print(found, func(w io.Writer) {
				tw := newTable(w, "ORDER\tSTATUS\tCUSTOMER\tWORKFLOW\tVERSION\tCREATED\tENDED")
				for _, o := range found {
					ended := ""
					if !o.EndedAt.IsZero() {
						ended = o.EndedAt.UTC().Format(time.RFC3339)
					}
					fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", o.ID, o.Status, o.CustomerID, o.Workflow, o.Version,
						o.CreatedAt.UTC().Format(time.RFC3339), ended)
				}
				tw.Flush()
			})
		},
	}
	filters.add(cmd, true)
	cmd.Flags().IntVar(&maxN, "max", 100, "list at most this many")
	return cmd
}

// queryFlags are the filters of a search (search, counts): a flag for
// each query parameter.
type queryFlags struct {
	text map[string]*string
}

// add gives cmd the filter flags, --status only withStatus.
func (f *queryFlags) add(cmd *cobra.Command, withStatus bool) {
	f.text = map[string]*string{}
	for flag, param := range flagParams {
		if flag == "status" && !withStatus {
			continue
		}
		f.text[flag] = cmd.Flags().String(flag, "", searchHelp[param])
	}
	if withStatus {
		statuses := make([]string, len(order.Statuses))
		for i, s := range order.Statuses {
			statuses[i] = string(s)
		}
		complete(cmd, "status", statuses...)
	}
}

// query is the query the flags given to cmd make, a time given as a
// duration back from now; a bad value is a usage error naming its flag.
func (f *queryFlags) query(cmd *cobra.Command, now time.Time) (order.Query, error) {
	params := map[string]string{}
	for name, v := range f.text {
		if !cmd.Flags().Changed(name) {
			continue
		}
		value, err := timeParam(name, *v, now)
		if err != nil {
			return order.Query{}, usageError{err}
		}
		params[flagParams[name]] = value
	}
	q, err := api.ParseQuery(params)
	if err != nil {
		return order.Query{}, usageError{flagNamed(err)}
	}
	return q, nil
}

// flagParams are search's flags and the query parameters they set.
var flagParams = map[string]string{
	"status": api.ParamStatus, "customer": api.ParamCustomer, "workflow": api.ParamWorkflow, "version": api.ParamVersion,
	"created-from": api.ParamCreatedFrom, "created-to": api.ParamCreatedTo, "ended-from": api.ParamEndedFrom, "ended-to": api.ParamEndedTo,
}

var searchHelp = map[string]string{
	api.ParamStatus:      "only orders in this status (Pending, Processing, Processed, Compensating, Failed, Cancelling, Cancelled, Error)",
	api.ParamCustomer:    "only this customer's orders (the input's customerId)",
	api.ParamWorkflow:    "only orders of this workflow",
	api.ParamVersion:     "only orders of this workflow version",
	api.ParamCreatedFrom: "only orders submitted at or after this time",
	api.ParamCreatedTo:   "only orders submitted before this time",
	api.ParamEndedFrom:   "only orders that ended (or went into Error) at or after this time",
	api.ParamEndedTo:     "only orders that ended (or went into Error) before this time",
}

// timeParam is a search flag's value as the query parameter takes it: a
// time flag's day or duration back from now as RFC 3339; others as they
// are.
func timeParam(flag, v string, now time.Time) (string, error) {
	switch flag {
	case "created-from", "created-to", "ended-from", "ended-to":
	default:
		return v, nil
	}
	if day, err := time.Parse(time.DateOnly, v); err == nil {
		return day.Format(time.RFC3339), nil
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return "", fmt.Errorf("--%s %s: a duration back from now is positive", flag, v)
		}
		return now.Add(-d).UTC().Format(time.RFC3339Nano), nil
	}
	if _, err := time.Parse(time.RFC3339Nano, v); err != nil {
		return "", fmt.Errorf("--%s %q: want RFC 3339 (2026-11-26T00:00:00Z), a day (2026-11-26) or a duration back from now (48h)", flag, v)
	}
	return v, nil
}

// flagNamed is a query's error in the CLI's words: it names the flag, not
// the query parameter.
func flagNamed(err error) error {
	msg := err.Error()
	for flag, param := range flagParams {
		msg = strings.Replace(msg, "query parameter "+param+":", "--"+flag+":", 1)
	}
	return errors.New(msg)
}
