package loadgen

import (
	"testing"
	"time"
)

func TestSummarize(t *testing.T) {
	ms := func(ns ...int) []time.Duration {
		out := make([]time.Duration, len(ns))
		for i, n := range ns {
			out[i] = time.Duration(n) * time.Millisecond
		}
		return out
	}
	upTo := func(n int) []time.Duration { // n, n-1, ..., 1 ms: unsorted
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = time.Duration(n-i) * time.Millisecond
		}
		return out
	}
	tests := []struct {
		name string
		in   []time.Duration
		want Latency
	}{
		{"none", nil, Latency{}},
		{"one", ms(7), Latency{Count: 1, P50: 7, P90: 7, P99: 7, Max: 7}},
		{"two: p50 is the smaller", ms(30, 10), Latency{Count: 2, P50: 10, P90: 30, P99: 30, Max: 30}},
		{"ten", upTo(10), Latency{Count: 10, P50: 5, P90: 9, P99: 10, Max: 10}},
		{"a hundred", upTo(100), Latency{Count: 100, P50: 50, P90: 90, P99: 99, Max: 100}},
		{"a thousand", upTo(1000), Latency{Count: 1000, P50: 500, P90: 900, P99: 990, Max: 1000}},
		{"one outlier in a hundred shows only in max", append(ms(make([]int, 99)...), time.Second), Latency{Count: 100, P50: 0, P90: 0, P99: 0, Max: 1000}},
		{"sub-millisecond", []time.Duration{1500 * time.Microsecond, 250 * time.Microsecond}, Latency{Count: 2, P50: 0.25, P90: 1.5, P99: 1.5, Max: 1.5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := append([]time.Duration(nil), tt.in...)
			if got := Summarize(tt.in); got != tt.want {
				t.Errorf("Summarize = %+v, want %+v", got, tt.want)
			}
			for i := range in {
				if tt.in[i] != in[i] {
					t.Fatalf("Summarize changed its input at %d: got %v, want %v", i, tt.in[i], in[i])
				}
			}
		})
	}
}

func TestCompareAges(t *testing.T) {
	lat := func(count int, p50 float64) Latency { return Latency{Count: count, P50: p50, Max: p50} }
	tests := []struct {
		name          string
		before, after Latency
		want          Slowdown
		wantOK        bool
	}{
		{"same", lat(100, 40), lat(100, 40), Slowdown{BeforeP50: 40, AfterP50: 40, Ratio: 1, Limit: 1.5, OK: true}, true},
		{"faster after", lat(100, 40), lat(100, 20), Slowdown{BeforeP50: 40, AfterP50: 20, Ratio: 0.5, Limit: 1.5, OK: true}, true},
		{"exactly the limit", lat(100, 40), lat(100, 60), Slowdown{BeforeP50: 40, AfterP50: 60, Ratio: 1.5, Limit: 1.5, OK: true}, true},
		{"over the limit", lat(100, 40), lat(100, 61), Slowdown{BeforeP50: 40, AfterP50: 61, Ratio: 1.525, Limit: 1.5, OK: false}, true},
		{"nothing before", Latency{}, lat(100, 40), Slowdown{}, false},
		{"nothing after", lat(100, 40), Latency{}, Slowdown{}, false},
		{"zero before", lat(100, 0), lat(100, 40), Slowdown{}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := compareAges(tt.before, tt.after, MaxSlowdown)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("compareAges = %+v, %t; want %+v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestTerminalAt(t *testing.T) {
	sent := time.Date(2026, 11, 25, 10, 0, 0, 0, time.UTC)
	read := sent.Add(3 * time.Second)
	tests := []struct {
		name         string
		updated      time.Time
		want         time.Time
		wantObserved bool
	}{
		{"the engine's write between submission and read", sent.Add(800 * time.Millisecond), sent.Add(800 * time.Millisecond), false},
		{"written as it was read", read, read, false},
		{"in the millisecond of submission, truncated", sent.Add(-500 * time.Microsecond), sent, false},
		{"before the submission: another clock", sent.Add(-2 * time.Second), read, true},
		{"after the read: another clock", read.Add(time.Second), read, true},
		{"no updatedAt", time.Time{}, read, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, observed := terminalAt(sent, read, tt.updated)
			if !got.Equal(tt.want) || observed != tt.wantObserved {
				t.Errorf("terminalAt = %v, %t; want %v, %t", got, observed, tt.want, tt.wantObserved)
			}
		})
	}
}
