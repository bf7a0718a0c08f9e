package dynamo

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"

	"orderly/internal/order"
)

func TestShardOfSpreadsOrdersEvenly(t *testing.T) {
	const shards, orders = 16, 16000
	counts := make(map[string]int)
	for i := range orders {
		id := order.IDForKey("caller", "", "c", fmt.Sprint(i))
		s := shardOf(id, shards)
		if again := shardOf(id, shards); again != s {
			t.Fatalf("shardOf(%s) gave %s then %s, want the same shard every time", id, s, again)
		}
		counts[s]++
	}
	if len(counts) != shards {
		t.Fatalf("got %d shards used, want %d: %v", len(counts), shards, counts)
	}
	for s, n := range counts {
		if want := orders / shards; n < want*85/100 || n > want*115/100 {
			t.Errorf("shard %s holds %d orders, want %d ± 15%%: %v", s, n, want, counts)
		}
	}
}

// TestOrderRecordRoundTrip checks that an order and its steps survive the
// item layout, and which orders enter the due index, with what DueAt.
func TestOrderRecordRoundTrip(t *testing.T) {
	now := time.UnixMilli(1_800_000_000_123).UTC()
	later := now.Add(30 * time.Second)
	o := order.Order{ID: order.NewID(), Workflow: "order", Version: "2",
		Status: order.StatusPending, RequestHash: "h", CreatedAt: now, UpdatedAt: now}.WithInput(order.LegacyInput("c-1", []order.Line{{SKU: "A", Quantity: 2}}, ""))
	step := func(i int, state order.ProcessState) order.StepState {
		return order.StepState{OrderID: o.ID, Workflow: o.Workflow, Version: o.Version, Step: fmt.Sprint("s", i), Index: i, Agent: "a",
			ProcessState: state, UpdatedAt: now}
	}
	processing := step(0, order.Processing)
	processing.LockedBy, processing.Attempt, processing.CompleteBy = "x", 1, later
	pending := step(1, order.Pending)
	pending.Attempt, pending.FailureCount, pending.CompleteBy, pending.LastError = 1, 1, later, "timed out"
	failed := step(1, order.Error)
	failed.AlertPending, failed.CompleteBy, failed.LastError = true, later, "boom"
	alerted := failed
	alerted.AlertPending = false
	done := step(0, order.Processed)
	done.Attempt, done.Reference = 1, "ref-1"

	tests := []struct {
		name          string
		steps         []order.StepState
		wantDue       bool
		wantUnclaimed string
	}{
		{"first step processing is watched", []order.StepState{processing, step(1, order.NotStarted)}, true, ""},
		{"pending is watched and waits for a claim", []order.StepState{done, pending}, true, "s1"},
		{"error with alert pending is watched", []order.StepState{done, failed}, true, ""},
		{"error after the alert is not", []order.StepState{done, alerted}, false, ""},
		{"processed is not", []order.StepState{done}, false, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := newOrderRecord(o, tt.steps, 16)
			if got := rec.DueShard != ""; got != tt.wantDue {
				t.Errorf("got in due index %v, want %v", got, tt.wantDue)
			}
			if tt.wantDue && rec.DueAt != millis(later) {
				t.Errorf("got DueAt %d, want the active step's CompleteBy %d", rec.DueAt, millis(later))
			}
			if rec.Unclaimed != tt.wantUnclaimed {
				t.Errorf("got Unclaimed %q, want %q", rec.Unclaimed, tt.wantUnclaimed)
			}
			item, err := attributevalue.MarshalMap(rec)
			if err != nil {
				t.Fatal(err)
			}
			gotOrder, gotSteps, err := decode(item)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(gotOrder, o) {
				t.Errorf("order round trip:\n got %+v\nwant %+v", gotOrder, o)
			}
			want := make([]order.StepState, len(tt.steps))
			for i, st := range tt.steps {
				want[i] = st
				if tt.wantDue && rec.Active != nil && *rec.Active == i {
					want[i].DueAt = later
				}
			}
			if !reflect.DeepEqual(gotSteps, want) {
				t.Errorf("steps round trip:\n got %+v\nwant %+v", gotSteps, want)
			}
		})
	}
}
