package cost

import (
	"orderly/internal/prices"

	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"orderly/internal/resources"
)

// DeployedMemory is the functions' memory as the stack deploys them.
var DeployedMemory = Memory{
	Submit: resources.SubmitMemoryMB, Scheduler: resources.SchedulerMemoryMB, Agent: resources.AgentMemoryMB,
	Recorder: resources.RecorderMemoryMB,
}

// Report prints every scenario's requests and costs, Step Functions'
// arithmetic, and ends with the one summary line scripts read, for the
// first scenario (the happy path).
func Report(w io.Writer, results []Result, p prices.Prices, steps int, httpAPI bool) error {
	if len(results) == 0 {
		return fmt.Errorf("no results to report")
	}
	fmt.Fprintf(w, "orderly cost per order, measured on the emulators; prices: %s, %s (%s)\n", p.Region, p.Date, p.Source)
	fmt.Fprintf(w, "assumed: %s remote call %.0f ms; handler ms %v\n\n", p.Assumptions.Note, p.Assumptions.RemoteCallMillis, p.Assumptions.HandlerMillis)
	for _, r := range results {
		printScenario(w, r, p, httpAPI)
	}
	sf := StepFunctionsEstimate(p, steps, DeployedMemory)
	fmt.Fprintf(w, "Step Functions, the same %d-step workflow (task states invoke one Lambda each):\n", steps)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\titem\tper order\tunit\t$ per million orders\t")
	for _, l := range sf.StandardLines {
		fmt.Fprintf(tw, "Standard\t%s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
	}
	fmt.Fprintf(tw, "Standard\ttotal\t\t\t%.2f\t\n", sf.Standard)
	for _, l := range sf.ExpressLines {
		fmt.Fprintf(tw, "Express\t%s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
	}
	fmt.Fprintf(tw, "Express\ttotal\t\t\t%.2f\t\n", sf.Express)
	tw.Flush()
	fmt.Fprintln(w, "  Express is at-least-once and limited to 5 minutes per execution.")

	happy := results[0].PerOrder
	high := Price(p, happy, HighLoad, DeployedMemory, httpAPI)
	low := Price(p, happy, LowLoad, DeployedMemory, httpAPI)
	fmt.Fprintf(w, "\ncost per million orders: $%.2f at high load, $%.2f at one message per batch (Step Functions Standard $%.2f)\n",
		high.Total, low.Total, sf.Standard)
	return nil
}

func printScenario(w io.Writer, r Result, p prices.Prices, httpAPI bool) {
	u := r.PerOrder
	fmt.Fprintf(w, "== %s: %d orders in %.1fs\n", r.Scenario, r.Orders, r.Elapsed.Seconds())
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "  requests per order\t")
	ops := make([]Op, 0, len(u.Calls))
	for op := range u.Calls {
		ops = append(ops, op)
	}
	slices.SortFunc(ops, func(a, b Op) int { return cmp.Compare(a.String(), b.String()) })
	for _, op := range ops {
		fmt.Fprintf(tw, "    %s\t%.2f\t\n", op, u.Calls[op])
	}
	fmt.Fprintf(tw, "  DynamoDB write units (table + index)\t%.2f + %.2f\t\n", u.TableWrites, u.IndexWrites)
	failures := 0.0
	for _, c := range u.ConditionFailures {
		failures += c
	}
	fmt.Fprintf(tw, "  of those, writes whose condition failed (duplicates, lost races)\t%.2f (%.2f WRU)\t\n", failures, u.ConditionFailureWrites)
	fmt.Fprintf(tw, "  DynamoDB read units\t%.2f\t\n", u.Reads)
	fmt.Fprintf(tw, "  SQS messages (requests + replies)\t%.2f + %.2f\t\n", u.RequestMessages, u.ReplyMessages)
	fmt.Fprintf(tw, "  stream records invoking the Scheduler\t%.2f\t\n", u.StreamInvocations)
	fmt.Fprintf(tw, "  function log bytes (INFO)\t%.0f\t\n", u.LogBytes)
	if r.Usage.IndexQueries > 0 {
		fmt.Fprintf(tw, "  Supervisor due-index queries (fixed per run, not per order)\t%d (%.1f RRU)\t\n", r.Usage.IndexQueries, r.Usage.IndexQueryReads)
	}
	tw.Flush()
	for _, load := range []Load{HighLoad, LowLoad} {
		e := Price(p, u, load, DeployedMemory, httpAPI)
		tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintf(tw, "  at %s\tper order\tunit\t$ per million orders\t\n", load.Name)
		for _, l := range e.Lines {
			fmt.Fprintf(tw, "    %s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
		}
		fmt.Fprintf(tw, "    total\t\t\t%.2f\t\n", e.Total)
		for _, l := range e.Observability {
			fmt.Fprintf(tw, "    + %s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
		}
		tw.Flush()
	}
	fmt.Fprintln(w, strings.Repeat("-", 72))
}
