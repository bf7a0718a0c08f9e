package dynamo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"orderly/internal/order"
)

func TestShardOfSpreadsStepsEvenly(t *testing.T) {
	const shards, orders = 8, 8000
	counts := make(map[string]int)
	for i := range orders {
		id := order.IDForKey(fmt.Sprint(i))
		s := shardOf(id, order.StepChargePayment, shards)
		if again := shardOf(id, order.StepChargePayment, shards); again != s {
			t.Fatalf("shardOf(%s) gave %s then %s, want the same shard every time", id, s, again)
		}
		counts[s]++
	}
	if len(counts) != shards {
		t.Fatalf("got %d shards used, want %d: %v", len(counts), shards, counts)
	}
	for s, n := range counts {
		if want := orders / shards; n < want*85/100 || n > want*115/100 {
			t.Errorf("shard %s holds %d steps, want %d ± 15%%: %v", s, n, want, counts)
		}
	}
}

func TestStateRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_123).UTC()
	tests := []struct {
		name      string
		state     order.StepState
		wantShard bool
	}{
		{"pending is watched", order.StepState{OrderID: "A", Step: "s", ProcessState: order.Pending, CompleteBy: now, UpdatedAt: now}, true},
		{"processing is watched", order.StepState{OrderID: "A", Step: "s", ProcessState: order.Processing, LockedBy: "x", Attempt: 2, FailureCount: 1, CompleteBy: now, UpdatedAt: now}, true},
		{"error with alert pending is watched", order.StepState{OrderID: "A", Step: "s", ProcessState: order.Error, AlertPending: true, LastError: "boom", CompleteBy: now, UpdatedAt: now}, true},
		{"error after the alert is not", order.StepState{OrderID: "A", Step: "s", ProcessState: order.Error, LastError: "boom", CompleteBy: now, UpdatedAt: now}, false},
		{"processed is not", order.StepState{OrderID: "A", Step: "s", ProcessState: order.Processed, Attempt: 1, CompleteBy: now, UpdatedAt: now}, false},
		{"not started is not", order.StepState{OrderID: "A", Step: "s", Index: 2, ProcessState: order.NotStarted, UpdatedAt: now}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newStateRecord(tt.state, 8)
			if got := rec.DueShard != ""; got != tt.wantShard {
				t.Errorf("got in due index %v, want %v", got, tt.wantShard)
			}
			if got := rec.step(); !reflect.DeepEqual(got, tt.state) {
				t.Errorf("round trip:\n got %+v\nwant %+v", got, tt.state)
			}
		})
	}
}
