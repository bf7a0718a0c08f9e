package metrics

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

// emf is the part of an EMF record CloudWatch reads.
type emf struct {
	AWS struct {
		Timestamp         int64 `json:"Timestamp"`
		CloudWatchMetrics []struct {
			Namespace  string     `json:"Namespace"`
			Dimensions [][]string `json:"Dimensions"`
			Metrics    []struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			} `json:"Metrics"`
		} `json:"CloudWatchMetrics"`
	} `json:"_aws"`
}

func TestCountWritesEMF(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 123_000_000, time.UTC)
	tests := []struct {
		name       string
		metric     string
		n          int
		properties []any
		// wantTop lists top-level fields and their JSON values.
		wantTop map[string]any
		// absent lists top-level fields that must not appear.
		absent []string
	}{
		{
			name:    "no properties",
			metric:  StepsClaimed,
			n:       1,
			wantTop: map[string]any{"Service": "scheduler", StepsClaimed: 1.0},
		},
		{
			name:       "properties become top-level fields",
			metric:     RemoteCalls,
			n:          3,
			properties: []any{"order_id", "ORDER1", "step", "charge-payment", "attempt", 2},
			wantTop: map[string]any{"Service": "scheduler", RemoteCalls: 3.0,
				"order_id": "ORDER1", "step": "charge-payment", "attempt": 2.0},
		},
		{
			name:       "dangling key and non-string key are dropped",
			metric:     PoisonMessages,
			n:          1,
			properties: []any{"source", "payment", 7, "seven", "message_id"},
			wantTop:    map[string]any{"Service": "scheduler", PoisonMessages: 1.0, "source": "payment"},
			absent:     []string{"message_id", "7", "seven"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := New(&buf, "scheduler")
			r.now = func() time.Time { return at }

			r.Count(tt.metric, tt.n, tt.properties...)

			out := buf.String()
			if !strings.HasSuffix(out, "\n") || strings.Count(out, "\n") != 1 {
				t.Fatalf("Count() wrote %q, want exactly one newline-terminated line", out)
			}
			var rec emf
			if err := json.Unmarshal([]byte(out), &rec); err != nil {
				t.Fatalf("Count() wrote %q: not JSON: %v", out, err)
			}
			if got, want := rec.AWS.Timestamp, at.UnixMilli(); got != want {
				t.Errorf("_aws.Timestamp = %d, want %d", got, want)
			}
			if len(rec.AWS.CloudWatchMetrics) != 1 {
				t.Fatalf("_aws.CloudWatchMetrics = %+v, want one directive", rec.AWS.CloudWatchMetrics)
			}
			d := rec.AWS.CloudWatchMetrics[0]
			if d.Namespace != "orderly" {
				t.Errorf("Namespace = %q, want %q", d.Namespace, "orderly")
			}
			if got := fmt.Sprint(d.Dimensions); got != "[[Service]]" {
				t.Errorf("Dimensions = %s, want [[Service]]", got)
			}
			if len(d.Metrics) != 1 || d.Metrics[0].Name != tt.metric || d.Metrics[0].Unit != "Count" {
				t.Errorf("Metrics = %+v, want [{Name:%s Unit:Count}]", d.Metrics, tt.metric)
			}

			var top map[string]any
			if err := json.Unmarshal([]byte(out), &top); err != nil {
				t.Fatal(err)
			}
			for k, want := range tt.wantTop {
				if got, ok := top[k]; !ok || got != want {
					t.Errorf("top-level %q = %v (present: %t), want %v", k, got, ok, want)
				}
			}
			for _, k := range tt.absent {
				if got, ok := top[k]; ok {
					t.Errorf("top-level %q = %v, want it absent", k, got)
				}
			}
		})
	}
}

func TestCountUsesClockByDefault(t *testing.T) {
	var buf bytes.Buffer
	before := time.Now().UnixMilli()
	New(&buf, "agent").Count(RemoteCalls, 1)
	after := time.Now().UnixMilli()
	var rec emf
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("Count() wrote %q: not JSON: %v", buf.String(), err)
	}
	if got := rec.AWS.Timestamp; got < before || got > after {
		t.Errorf("_aws.Timestamp = %d, want within [%d, %d]", got, before, after)
	}
}

func TestCountConcurrent(t *testing.T) {
	// bytes.Buffer is not safe for concurrent use, so the race detector
	// and the line check below both catch unserialised writes.
	var buf bytes.Buffer
	r := New(&buf, "agent")
	const goroutines, each = 20, 50
	var wg sync.WaitGroup
	for g := range goroutines {
		wg.Go(func() {
			for i := range each {
				r.Count(RemoteCalls, 1, "goroutine", g, "i", i, "order_id", strings.Repeat("X", 200))
			}
		})
	}
	wg.Wait()

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	if len(lines) != goroutines*each {
		t.Fatalf("Count() wrote %d lines, want %d", len(lines), goroutines*each)
	}
	seen := map[string]bool{}
	for i, line := range lines {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("line %d = %q: not JSON: %v", i, line, err)
		}
		seen[fmt.Sprint(rec["goroutine"], "/", rec["i"])] = true
	}
	if len(seen) != goroutines*each {
		t.Errorf("distinct records = %d, want %d", len(seen), goroutines*each)
	}
}

func TestDiscard(t *testing.T) {
	r := Discard()
	r.Count(OrdersSubmitted, 1, "order_id", "X") // must not panic
}

func TestDurationWritesMillisecondsWithItsDimension(t *testing.T) {
	at := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name      string
		dimension string
		value     string
		wantDims  []string
	}{
		{"with a dimension", DimStatus, "Processed", []string{"Service", DimStatus}},
		{"the Service dimension only", "", "", []string{"Service"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			r := New(&buf, "recorder")
			r.now = func() time.Time { return at }
			r.Duration(OrderLatency, 1500*time.Microsecond, tt.dimension, tt.value, "order_id", "O1")
			var rec emf
			var top map[string]any
			if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal(buf.Bytes(), &top)
			m := rec.AWS.CloudWatchMetrics[0]
			if m.Metrics[0].Name != OrderLatency || m.Metrics[0].Unit != "Milliseconds" || fmt.Sprint(m.Dimensions) != fmt.Sprint([][]string{tt.wantDims}) {
				t.Errorf("metric %+v", m)
			}
			if top[OrderLatency] != 1.5 || top["order_id"] != "O1" || (tt.dimension != "" && top[tt.dimension] != tt.value) {
				t.Errorf("record %v", top)
			}
		})
	}
}

func TestCountByWritesItsDimension(t *testing.T) {
	var buf bytes.Buffer
	New(&buf, "payment-agent").CountBy(ConfigurationFaults, 1, DimStatus, "403", "order_id", "O1")
	var rec emf
	var top map[string]any
	if err := json.Unmarshal(buf.Bytes(), &rec); err != nil {
		t.Fatalf("CountBy() wrote %q: not JSON: %v", buf.String(), err)
	}
	json.Unmarshal(buf.Bytes(), &top)
	m := rec.AWS.CloudWatchMetrics[0]
	if m.Metrics[0].Name != ConfigurationFaults || m.Metrics[0].Unit != "Count" || fmt.Sprint(m.Dimensions) != "[[Service Status]]" {
		t.Errorf("metric %+v, want %s counted with dimensions [[Service Status]]", m, ConfigurationFaults)
	}
	if top[ConfigurationFaults] != 1.0 || top["Service"] != "payment-agent" || top[DimStatus] != "403" || top["order_id"] != "O1" {
		t.Errorf("record %v, want the count, the service, status 403 and the order", top)
	}
}
