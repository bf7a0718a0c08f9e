package soak

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"time"

	"orderly/internal/order"
	"orderly/internal/simulator"
)

// Report is a soak's accounting.
type Report struct {
	Run    RunFacts       `json:"run"`
	Faults map[string]int `json:"faultsInjected"`
	// CrashedAt counts the injected crashes by where they fell (see
	// faults.Point): between claim and send, between remote success and
	// reply, between an Error write and its alert, ...
	CrashedAt map[string]int `json:"crashedAt"`
	Outcomes  map[string]int `json:"outcomes"` // by final status
	ByKind    map[Kind]int   `json:"ordersByKind"`
	// Lost: acknowledged orders not terminal within the bound, or missing.
	Lost int `json:"lost"`
	// DuplicateEffects: remote work done more than once for one key.
	DuplicateEffects int `json:"duplicateEffects"`
	// WrongOutcomes: an outcome the evidence contradicts: a PERMANENT
	// order Processed, a permanent failure of an order without one, or an
	// order in Error whose failed step's remote work was done (the ledger
	// has it).
	WrongOutcomes int      `json:"wrongOutcomes"`
	Wrong         []string `json:"wrong,omitempty"`
	// GivenUp counts orders without a PERMANENT value that ended in Error
	// after their attempts timed out with no remote work done: every
	// attempt was lost to crashes (a claim whose request was never sent,
	// a request taken by a runtime that was then killed) or held past its
	// deferrals. That is the documented policy (Error and a StepTimedOut
	// alert after FAILURE_THRESHOLD timeouts), not a wrong outcome, but
	// the soak reports it.
	GivenUp []string `json:"givenUp,omitempty"`
	// ErrorsAlerted counts orders in Error with at least one alert;
	// DuplicateAlerts counts alerts beyond the first per order and step.
	ErrorsAlerted   int            `json:"errorsAlerted"`
	ErrorsUnalerted int            `json:"errorsUnalerted"`
	Alerts          map[string]int `json:"alerts"` // by kind
	DuplicateAlerts int            `json:"duplicateAlerts"`
	// Terminal time, submission to the last write, in seconds.
	P50Seconds float64     `json:"p50Seconds"`
	P99Seconds float64     `json:"p99Seconds"`
	MaxSeconds float64     `json:"maxSeconds"`
	Poison     PoisonFacts `json:"poison"`
}

// RunFacts describes the run.
type RunFacts struct {
	Orders        int     `json:"orders"`
	Acknowledged  int     `json:"acknowledged"`
	Clients       int     `json:"clients"`
	Seed          uint64  `json:"seed"`
	SubmitSeconds float64 `json:"submitSeconds"`
	SettleSeconds float64 `json:"settleSeconds"`
	BoundSeconds  float64 `json:"boundSeconds"`
	Starts        int     `json:"runtimeStarts"`
	Kills         int     `json:"kill9"`
	Crashes       int     `json:"crashes"`
}

// PoisonFacts says where the malformed messages went.
type PoisonFacts struct {
	Sent               int `json:"sent"`
	InDeadLetterQueues int `json:"inDeadLetterQueues"`
}

// OK reports whether the run kept every promise.
func (r Report) OK() bool {
	return r.Lost == 0 && r.DuplicateEffects == 0 && r.WrongOutcomes == 0 && r.ErrorsUnalerted == 0 &&
		r.Run.Acknowledged == r.Run.Orders && r.Poison.InDeadLetterQueues >= r.Poison.Sent
}

func account(plan []Planned, orders []acked, final map[string]order.Order, effects []simulator.Effect, alerts []order.Alert) Report {
	r := Report{Outcomes: map[string]int{}, ByKind: map[Kind]int{}, Alerts: map[string]int{}}
	perKey := map[string]int{}
	for _, e := range effects {
		perKey[e.Service+" "+e.Key]++
	}
	stepService := map[string]string{}
	for _, d := range order.OrderWorkflow(order.DefaultTiming).Steps {
		stepService[d.Name] = d.Agent
	}
	lastAlert := map[string]order.Alert{}
	for _, a := range alerts {
		lastAlert[a.OrderID] = a
	}
	for _, n := range perKey {
		r.DuplicateEffects += n - 1
	}
	alerted := map[string]int{}
	perStep := map[string]int{}
	for _, a := range alerts {
		alerted[a.OrderID]++
		perStep[a.OrderID+" "+a.Step+" "+string(a.Kind)]++
		r.Alerts[string(a.Kind)]++
	}
	for _, n := range perStep {
		r.DuplicateAlerts += n - 1
	}
	var took []float64
	for _, a := range orders {
		r.ByKind[a.Kind]++
		o, ok := final[a.ID]
		if !ok || !terminal(o.Status) {
			r.Lost++
			r.Outcomes["not terminal"]++
			continue
		}
		r.Outcomes[string(o.Status)]++
		took = append(took, o.UpdatedAt.Sub(o.CreatedAt).Seconds())
		describe := fmt.Sprintf("%s (%s %s): %s, %s", a.ID, a.Kind, a.Service, o.Status, o.LastError)
		switch {
		case a.Kind == Permanent && o.Status == order.StatusProcessed:
			r.WrongOutcomes++
			r.Wrong = append(r.Wrong, describe)
		case a.Kind != Permanent && o.Status == order.StatusError:
			alert, alerted := lastAlert[a.ID]
			done := alerted && perKey[stepService[alert.Step]+" "+order.IdempotencyKeyFor(a.ID, alert.Step)] > 0
			if !alerted || alert.Kind != order.AlertStepTimedOut || done {
				r.WrongOutcomes++
				r.Wrong = append(r.Wrong, describe)
			} else {
				r.GivenUp = append(r.GivenUp, describe)
			}
		}
		if o.Status == order.StatusError {
			if alerted[a.ID] > 0 {
				r.ErrorsAlerted++
			} else {
				r.ErrorsUnalerted++
			}
		}
	}
	sort.Float64s(took)
	r.P50Seconds, r.P99Seconds = quantile(took, 0.5), quantile(took, 0.99)
	if len(took) > 0 {
		r.MaxSeconds = took[len(took)-1]
	}
	if len(r.Wrong) > 20 {
		r.Wrong = r.Wrong[:20]
	}
	return r
}

func quantile(sorted []float64, q float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	return sorted[min(len(sorted)-1, int(q*float64(len(sorted))))]
}

// Print writes the report as a table.
func (r Report) Print(w io.Writer) {
	row := func(k string, v any) { fmt.Fprintf(w, "| %-46s | %v |\n", k, v) }
	fmt.Fprintf(w, "| %-46s | %s |\n|%s|---|\n", "soak", "result", "---")
	row("orders submitted / acknowledged", fmt.Sprintf("%d / %d", r.Run.Orders, r.Run.Acknowledged))
	kinds := slices.Sorted(maps.Keys(r.ByKind))
	for _, k := range kinds {
		row("  of kind "+string(k), r.ByKind[k])
	}
	row("runtime kill -9 / crashes at a fault / starts", fmt.Sprintf("%d / %d / %d", r.Run.Kills, r.Run.Crashes, r.Run.Starts))
	for _, k := range slices.Sorted(maps.Keys(r.Faults)) {
		row("  fault injected: "+k, r.Faults[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.CrashedAt)) {
		row("  crash "+k, r.CrashedAt[k])
	}
	for _, k := range slices.Sorted(maps.Keys(r.Outcomes)) {
		row("outcome "+k, r.Outcomes[k])
	}
	row("lost", r.Lost)
	row("duplicate remote side effects", r.DuplicateEffects)
	row("wrong outcomes", r.WrongOutcomes)
	row("given up after lost attempts (no remote work)", len(r.GivenUp))
	row("orders in Error alerted / not alerted", fmt.Sprintf("%d / %d", r.ErrorsAlerted, r.ErrorsUnalerted))
	for _, k := range slices.Sorted(maps.Keys(r.Alerts)) {
		row("  alerts "+k, r.Alerts[k])
	}
	row("duplicate alerts", r.DuplicateAlerts)
	row("poison messages sent / in dead-letter queues", fmt.Sprintf("%d / %d", r.Poison.Sent, r.Poison.InDeadLetterQueues))
	row("time to terminal p50 / p99 / max", fmt.Sprintf("%.1f s / %.1f s / %.1f s", r.P50Seconds, r.P99Seconds, r.MaxSeconds))
	row("submitting took / settling took (bound)", fmt.Sprintf("%s / %s (%s)", secs(r.Run.SubmitSeconds), secs(r.Run.SettleSeconds), secs(r.Run.BoundSeconds)))
}

func secs(s float64) string {
	return (time.Duration(s * float64(time.Second))).Round(time.Second).String()
}
