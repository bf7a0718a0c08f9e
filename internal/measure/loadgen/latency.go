package loadgen

import (
	"slices"
	"time"
)

// Latency summarises a set of latencies in milliseconds, by nearest rank:
// P90 of 100 latencies is the 90th smallest, so every value reported is
// one that was measured.
type Latency struct {
	Count int     `json:"count"`
	P50   float64 `json:"p50Ms"`
	P90   float64 `json:"p90Ms"`
	P99   float64 `json:"p99Ms"`
	Max   float64 `json:"maxMs"`
}

// Summarize returns the percentiles of ds, which it does not change.
func Summarize(ds []time.Duration) Latency {
	if len(ds) == 0 {
		return Latency{}
	}
	sorted := slices.Clone(ds)
	slices.Sort(sorted)
	return Latency{
		Count: len(sorted),
		P50:   millis(nearestRank(sorted, 50)),
		P90:   millis(nearestRank(sorted, 90)),
		P99:   millis(nearestRank(sorted, 99)),
		Max:   millis(sorted[len(sorted)-1]),
	}
}

// nearestRank returns the p-th percentile of sorted (not empty): the
// smallest value with at least p% of the values at or below it.
func nearestRank(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 × n), from 1
	return sorted[max(rank, 1)-1]
}

func millis(d time.Duration) float64 {
	return float64(d.Microseconds()) / 1000
}

// MaxSlowdown is issue 20's bound on ageing: after a burst, sequential
// orders may take at most 1.5 times as long (p50) as before it.
const MaxSlowdown = 1.5

// Slowdown compares the sequential latency after the burst with the
// latency before it.
type Slowdown struct {
	BeforeP50 float64 `json:"beforeP50Ms"`
	AfterP50  float64 `json:"afterP50Ms"`
	// Ratio is AfterP50 / BeforeP50.
	Ratio float64 `json:"ratio"`
	Limit float64 `json:"limit"`
	OK    bool    `json:"ok"`
}

// compareAges returns the slowdown from before to after, or false when
// either has no latency to compare.
func compareAges(before, after Latency, limit float64) (Slowdown, bool) {
	if before.Count == 0 || after.Count == 0 || before.P50 <= 0 {
		return Slowdown{}, false
	}
	ratio := after.P50 / before.P50
	return Slowdown{BeforeP50: before.P50, AfterP50: after.P50, Ratio: ratio, Limit: limit, OK: ratio <= limit}, true
}
