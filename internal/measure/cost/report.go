package cost

import (
	"orderly/internal/prices"

	"cmp"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"orderly/internal/order"
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
	for _, r := range results {
		if len(r.Windows) > 1 {
			printElsewhere(w, r, p, httpAPI)
		}
	}
	for _, r := range results {
		if len(r.Windows) == 1 && r.Windows[0].Hold.Ends == EndsByPoll {
			fmt.Fprintf(w, "\n%s: a day of checks every %s costs $%.2f per million orders ($%.2f per million checks)\n",
				r.Scenario, PollEvery, DayOfPolling(p, r.Windows[0]), PerMillionChecks(p, r.Windows[0]))
			continue
		}
		if len(r.Windows) == 1 {
			fmt.Fprintf(w, "\n%s: a day of waiting costs $%.4f per million orders (%s)\n", r.Scenario, DayOfWaiting(p, r, r.Windows[0]), waitedFor(p, r, r.Windows[0]))
		}
	}

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
	if r.Usage.PauseReads > 0 {
		fmt.Fprintf(tw, "  reads of pauses (per run and instance every 5 s, not per order)\t%d (%.1f RRU)\t\n", r.Usage.PauseReads, r.Usage.PauseReadUnits)
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
	printWindows(w, r, p)
	fmt.Fprintln(w, strings.Repeat("-", 72))
}

// invocations are the Lambda invocations of per-order usage at one
// message per batch: the API's, the agents' and the Scheduler's for each
// message, the Scheduler's and the recorder's for each stream record.
func invocations(u PerOrder) float64 {
	return u.APIRequests + u.RequestMessages + u.ReplyMessages + u.StreamInvocations + u.StreamRecords
}

// printWindows prints what the scenario's orders cost while they waited.
func printWindows(w io.Writer, r Result, p prices.Prices) {
	for _, win := range r.Windows {
		u := win.PerOrder(r.Orders)
		requests := 0.0
		for _, c := range u.Calls {
			requests += c
		}
		fmt.Fprintf(w, "  while every order waited in %s (%s), the clock moved %s in %d steps with the Supervisor running: %.0f runs, %d due-index queries (%.1f RRU, fixed per run), %d entries returned\n",
			win.Hold.Step, win.Hold.Ends, win.Moved, win.Steps, win.SupervisorRuns, win.Usage.IndexQueries, win.Usage.IndexQueryReads, win.Usage.IndexQueryItems)
		fmt.Fprintf(w, "    per order: %.2f Lambda invocations, %.2f AWS requests, %.2f + %.2f write units, %.2f read units, %.2f SQS messages; %.0f bytes stored (item, index entries, history)\n",
			invocations(u), requests, u.TableWrites, u.IndexWrites, u.Reads, u.RequestMessages+u.ReplyMessages, win.StoredBytes)
		if win.Hold.Ends == EndsByPoll {
			c := win.PerCheck()
			fmt.Fprintf(w, "    %d checks of the status URL: per check %.2f Lambda invocations, %.2f + %.2f write units, %.2f read units, %.2f SQS messages, $%.2f per million checks\n",
				win.Checks, invocations(c), c.TableWrites, c.IndexWrites, c.Reads, c.RequestMessages+c.ReplyMessages, PerMillionChecks(p, win))
			fmt.Fprintf(w, "    a day of it, checked every %s: $%.4f per million orders\n", PollEvery, DayOfPolling(p, win))
			continue
		}
		fmt.Fprintf(w, "    a day of it: $%.4f per million orders\n", DayOfWaiting(p, r, win))
	}
}

// PerMillionChecks is what a million checks of a polled step's status
// URL cost, as the window measured them (the Supervisor's write and
// message, the agent's invocation and call, the reply and its write).
func PerMillionChecks(p prices.Prices, win Window) float64 {
	return Price(p, win.PerCheck(), LowLoad, DeployedMemory, false).Total
}

// DayOfPolling is what a day of a polled step's wait costs per million
// orders, checked every PollEvery: that many checks, and a day's storage.
func DayOfPolling(p prices.Prices, win Window) float64 {
	day := 24 * time.Hour
	return PerMillionChecks(p, win)*float64(day/PollEvery) + StorageDollars(p, win.StoredBytes, day)
}

// DayOfWaiting is what a day of the window's wait costs per million
// orders: its requests (none, when orderly keeps its promise) scaled to
// a day, and a day's storage of what each order keeps.
func DayOfWaiting(p prices.Prices, r Result, win Window) float64 {
	day := 24 * time.Hour
	requests := Price(p, win.PerOrder(r.Orders), LowLoad, DeployedMemory, false).Total
	if win.Moved > 0 {
		requests *= float64(day) / float64(win.Moved)
	}
	return requests + StorageDollars(p, win.StoredBytes, day)
}

// waitedFor says what a day of waiting is made of.
func waitedFor(p prices.Prices, r Result, win Window) string {
	return fmt.Sprintf("%.0f bytes stored per order at $%.2f per GB-month; while waiting %.2f Lambda invocations per order, and %d due-index entries returned to the Supervisor over %.0f runs",
		win.StoredBytes, p.DollarsPerGBMonth.DynamoDBStorage, invocations(win.PerOrder(r.Orders)), win.Usage.IndexQueryItems, win.SupervisorRuns)
}

// printElsewhere prints the scenario's workflow per million orders on
// orderly (measured), Step Functions Standard and Lambda durable
// functions.
func printElsewhere(w io.Writer, r Result, p prices.Prices, httpAPI bool) {
	var waited time.Duration
	storage := 0.0
	for _, win := range r.Windows {
		waited += win.Hold.For
		storage += StorageDollars(p, win.StoredBytes, win.Hold.For)
	}
	k := StepKinds(r.Definition)
	fmt.Fprintf(w, "\nSteps that wait: workflow %s (%d steps; calls %d, calls called back %d, events %d, timers %d; %s of waiting), per million orders:\n",
		r.Definition.Name, len(r.Definition.Steps), k["service"], k[order.WaitCallback], k[order.WaitEvent], k[order.WaitTimer], waited)
	ew := ElsewhereEstimate(p, r.Definition, waited, DeployedMemory)
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\titem\tper order\tunit\t$ per million orders\t")
	for _, load := range []Load{HighLoad, LowLoad} {
		e := Price(p, r.PerOrder, load, DeployedMemory, httpAPI)
		fmt.Fprintf(tw, "orderly\tmeasured, at %s\t\t\t%.2f\t\n", load.Name, e.Total)
	}
	fmt.Fprintf(tw, "orderly\tstorage while waiting\t\t\t%.4f\t\n", storage)
	for _, l := range ew.StandardLines {
		fmt.Fprintf(tw, "Standard\t%s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
	}
	fmt.Fprintf(tw, "Standard\ttotal\t\t\t%.2f\t\n", ew.Standard)
	for _, l := range ew.DurableLines {
		fmt.Fprintf(tw, "durable\t%s\t%.4g\t%s\t%.2f\t\n", l.Item, l.Quantity, l.Unit, l.Dollars)
	}
	fmt.Fprintf(tw, "durable\ttotal\t\t\t%.2f\t\n", ew.Durable)
	tw.Flush()
	fmt.Fprintf(w, "  Assumed for Lambda durable functions: %s.\n", p.Assumptions.Durable.Note)
	fmt.Fprintln(w, "  Events and callbacks reach all three through API Gateway; on the other two a function completes the wait (SendTaskSuccess, or the durable callback's success).")
}
