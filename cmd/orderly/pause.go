package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/spf13/cobra"

	"orderly/internal/config"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

const pauseHelp = `Pause a service or a workflow for a maintenance window, without failing a
single order or raising an alarm.

  orderly pause service payment --for 2h --reason "PSP maintenance"
  orderly pause workflow fulfilment --for 30m --reason "stock count" --submissions refuse

A paused service is called no more: each of its requests (a step's work, an
undo, a status check) waits in its agent's queue, no failure is counted and
no deadline runs out against it. Calls already under way finish.

A paused workflow takes no new order into its steps: with --submissions hold
(the default) new orders are accepted and start at the resume; with refuse,
submissions get 503 and Retry-After (the pause's stated end), and nothing is
written. Orders already running go on.

--for says how long you expect the pause to last: it does not end the pause
(only orderly resume does), but the stage alarms when a pause outlasts it.
Pausing again while paused keeps the start and sets a new end and reason.
Each pause and resume is kept in the stage's history (orderly pauses
--history) and published as an event, with who did it (your AWS identity) and
why.`

func (a *app) pauseCmd() *cobra.Command {
	var (
		forDur      time.Duration
		reason      string
		submissions string
	)
	cmd := &cobra.Command{
		Use:                   "pause service|workflow NAME --for DURATION --reason TEXT [--submissions hold|refuse]",
		DisableFlagsInUseLine: true,
		Short:                 "Pause a service or a workflow: its orders are held, not failed",
		Long:                  pauseHelp,
		Args:                  cobra.ExactArgs(2),
		ValidArgs:             []cobra.Completion{string(order.PauseService), string(order.PauseWorkflow)},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, stage, who, err := a.openAsOperator(cmd, args[0])
			if err != nil {
				return err
			}
			p, err := stage.Pause(cmd.Context(), order.PauseRequest{Kind: kind, Name: args[1], For: forDur, Reason: reason, By: who,
				Submissions: order.Submissions(submissions)})
			if err != nil {
				return err
			}
			return a.print(p, func(w io.Writer) {
				fmt.Fprintf(w, "%s paused since %s, expected to end by %s (in %s)\n", p.Subject(),
					p.Since.UTC().Format(time.RFC3339), p.Until.UTC().Format(time.RFC3339), time.Until(p.Until).Round(time.Second))
				if p.Kind == order.PauseWorkflow {
					fmt.Fprintf(w, "new orders: %s\n", p.Submissions)
				}
				fmt.Fprintf(w, "resume with: orderly resume %s %s\n", p.Kind, p.Name)
			})
		},
	}
	cmd.Flags().DurationVar(&forDur, "for", 0, "how long you expect the pause to last (e.g. 2h); the stage alarms when it lasts longer")
	cmd.Flags().StringVar(&reason, "reason", "", "why: kept with the pause, its history and its event")
	cmd.Flags().StringVar(&submissions, "submissions", "", "a workflow's new orders: hold (accept, start at the resume; the default) or refuse (503)")
	complete(cmd, "submissions", string(order.HoldSubmissions), string(order.RefuseSubmissions))
	return cmd
}

func (a *app) resumeCmd() *cobra.Command {
	var reason string
	cmd := &cobra.Command{
		Use:                   "resume service|workflow NAME [--reason TEXT]",
		DisableFlagsInUseLine: true,
		Short:                 "End a pause: held orders go on",
		Long: `Resume a paused service or workflow. A service's held requests are called
again as they come back from their queue (within about a minute); a workflow's
held orders start within about 3 minutes (the Supervisor looks at each every 2
minutes).`,
		Args:      cobra.ExactArgs(2),
		ValidArgs: []cobra.Completion{string(order.PauseService), string(order.PauseWorkflow)},
		RunE: func(cmd *cobra.Command, args []string) error {
			kind, stage, who, err := a.openAsOperator(cmd, args[0])
			if err != nil {
				return err
			}
			ended, err := stage.Resume(cmd.Context(), kind, args[1], who, reason)
			if err != nil {
				return err
			}
			return a.print(ended, func(w io.Writer) {
				fmt.Fprintf(w, "%s resumed after %s (paused by %s: %s)\n", ended.Subject(), time.Since(ended.Since).Round(time.Second), ended.By, ended.Reason)
			})
		},
	}
	cmd.Flags().StringVar(&reason, "reason", "", "why, if worth saying: kept with the resume")
	return cmd
}

func (a *app) pausesCmd() *cobra.Command {
	var history string
	cmd := &cobra.Command{
		Use:                   "pauses [--history service|workflow:NAME]",
		DisableFlagsInUseLine: true,
		Short:                 "Which services and workflows are paused, by whom, why and until when",
		Long: `List the pause of every service and workflow of the stage: on (since, expected
end, who, why; OVERRUN when past its end) or the last resume. With --history
service:NAME or workflow:NAME, every pause, change and resume of it.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			stage, err := a.open(cmd.Context())
			if err != nil {
				return err
			}
			if history != "" {
				kind, name, err := pauseTarget(history)
				if err != nil {
					return err
				}
				es, err := stage.PauseHistory(cmd.Context(), kind, name)
				if err != nil {
					return err
				}
				return a.print(es, func(w io.Writer) { writePauseHistory(w, es) })
			}
			ps, err := stage.Pauses(cmd.Context())
			if err != nil {
				return err
			}
			return a.print(ps, func(w io.Writer) { writePauses(w, ps, time.Now()) })
		},
	}
	cmd.Flags().StringVar(&history, "history", "", "service:NAME or workflow:NAME: every pause and resume of it")
	return cmd
}

// openAsOperator reads a pause's or resume's kind, opens the stage and
// says who the operator is.
func (a *app) openAsOperator(cmd *cobra.Command, kindArg string) (order.PauseKind, *ops.Stage, string, error) {
	kind, err := pauseKind(kindArg)
	if err != nil {
		return "", nil, "", err
	}
	stage, err := a.open(cmd.Context())
	if err != nil {
		return "", nil, "", err
	}
	who, err := a.whoami(cmd.Context())
	if err != nil {
		return "", nil, "", err
	}
	return kind, stage, who, nil
}

func pauseKind(s string) (order.PauseKind, error) {
	switch k := order.PauseKind(s); k {
	case order.PauseService, order.PauseWorkflow:
		return k, nil
	}
	return "", usagef("%q: want service or workflow", s)
}

func pauseTarget(s string) (order.PauseKind, string, error) {
	for _, k := range []order.PauseKind{order.PauseService, order.PauseWorkflow} {
		if name, ok := strings.CutPrefix(s, string(k)+":"); ok && name != "" {
			return k, name, nil
		}
	}
	return "", "", usagef("--history %q: want service:NAME or workflow:NAME", s)
}

func writePauses(w io.Writer, ps []order.Pause, now time.Time) {
	tw := newTable(w, "KIND\tNAME\tSTATE\tSINCE\tUNTIL\tBY\tREASON")
	for _, p := range ps {
		switch {
		case p.On():
			state := "paused"
			if p.Overrun(now) {
				state = "paused, OVERRUN"
			}
			if p.Submissions != "" {
				state += " (" + string(p.Submissions) + ")"
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", p.Kind, p.Name, state, p.Since.UTC().Format(time.RFC3339), p.Until.UTC().Format(time.RFC3339), p.By, clip(p.Reason, 60))
		case !p.Resumed.IsZero():
			fmt.Fprintf(tw, "%s\t%s\trunning (resumed %s)\t\t\t%s\t%s\n", p.Kind, p.Name, p.Resumed.UTC().Format(time.RFC3339), p.ResumedBy, clip(p.ResumeReason, 60))
		default:
			fmt.Fprintf(tw, "%s\t%s\trunning\t\t\t\t\n", p.Kind, p.Name)
		}
	}
	tw.Flush()
}

func writePauseHistory(w io.Writer, es []order.HistoryEntry) {
	tw := newTable(w, "AT\tEVENT\tBY\tUNTIL\tREASON")
	for _, e := range es {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", e.At.UTC().Format(time.RFC3339), e.Event, e.By, e.To, e.Reason)
	}
	tw.Flush()
}

// whoami is the operator's identity, for the pause's record: the AWS
// principal (its ARN) the CLI's credentials are, from STS
// GetCallerIdentity, which needs no permission. It is asked once: the
// console asks on every pause and resume.
func (a *app) whoami(ctx context.Context) (string, error) {
	a.callerMu.Lock()
	defer a.callerMu.Unlock()
	if a.caller != "" {
		return a.caller, nil
	}
	cfg, err := config.AWS(ctx)
	if err != nil {
		return "", err
	}
	out, err := sts.NewFromConfig(cfg).GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("who you are (STS GetCallerIdentity), for the pause's record: %w", err)
	}
	a.caller = aws.ToString(out.Arn)
	return a.caller, nil
}
