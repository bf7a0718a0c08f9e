package scheduler_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// claimLog is a hand-written scheduler.Store that records claims in the
// order they happen and fails the claims of chosen orders.
type claimLog struct {
	mu     sync.Mutex
	claims []string // orderID/sequence
	failOn map[string]bool
	// failOnce fails an order's next claim only: a transient fault.
	failOnce map[string]bool
	// inFlight and most count claims under way, so the test sees claims
	// of different orders in flight together.
	inFlight, most int
}

func (s *claimLog) Apply(_ context.Context, t order.Transition) (order.Order, order.StepState, error) {
	if t.Name != order.Claim(t.Record, "", t.At, t.At).Name {
		return order.Order{}, order.StepState{}, errors.New("not expected")
	}
	seen := t.Record
	s.mu.Lock()
	s.inFlight++
	s.most = max(s.most, s.inFlight)
	s.mu.Unlock()
	time.Sleep(20 * time.Millisecond)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inFlight--
	s.claims = append(s.claims, seen.OrderID+"/"+seen.LastError)
	if s.failOn[seen.OrderID] {
		return order.Order{}, order.StepState{}, errors.New("throttled")
	}
	if s.failOnce[seen.OrderID] {
		delete(s.failOnce, seen.OrderID)
		return order.Order{}, order.StepState{}, errors.New("throttled once")
	}
	return order.Order{ID: seen.OrderID}, t.Applied(seen), nil
}

// UnclaimedStep reads images as the DynamoDB adapter does.
// GetOrder is never needed: no step of the tests' workflows starts on the
// order's data.
func (s *claimLog) GetOrder(context.Context, string) (order.Order, []order.StepState, error) {
	return order.Order{}, nil, errors.New("claimLog reads no orders")
}

func (s *claimLog) UnclaimedStep(image map[string]events.DynamoDBAttributeValue) (order.StepState, bool, error) {
	return dynamo.UnclaimedStep(image)
}

type nowhere struct{}

func (nowhere) Send(context.Context, order.Order, order.StepState) {}
func (nowhere) Notify(context.Context, order.StepState) error      { return nil }

// streamBatch builds a stream batch from the fixture's record, one record
// per (order, tag); the tag rides in the step's LastError so the test can
// tell the records of one order apart.
func streamBatch(t *testing.T, records ...[2]string) events.DynamoDBEvent {
	t.Helper()
	raw, err := os.ReadFile("../../../events/dynamodb-stream-step-unclaimed.json")
	if err != nil {
		t.Fatal(err)
	}
	const fixtureID, fixtureReason = "QMVF4LBCLJ4PRZERCUY25DASBK", "attempt 1 timed out: no reply by 2025-03-14T09:26:53.118Z"
	var ev events.DynamoDBEvent
	for i, r := range records {
		rec := bytes.ReplaceAll(raw, []byte(fixtureID), []byte(r[0]))
		rec = bytes.ReplaceAll(rec, []byte(fixtureReason), []byte(r[1]))
		var one events.DynamoDBEvent
		if err := json.Unmarshal(rec, &one); err != nil {
			t.Fatal(err)
		}
		one.Records[0].Change.SequenceNumber = string(rune('a' + i))
		ev.Records = append(ev.Records, one.Records[0])
	}
	return ev
}

func TestHandleStreamKeepsEachOrdersRecordsInOrder(t *testing.T) {
	a, b, c := order.IDForKey("caller", "", "c-1", "a"), order.IDForKey("caller", "", "c-1", "b"), order.IDForKey("caller", "", "c-1", "c")
	tests := []struct {
		name       string
		records    [][2]string
		failOn     map[string]bool
		failOnce   map[string]bool
		wantFailed []string // sequence numbers reported
		// wantOrder lists, per order, the tags its claims must come in.
		wantOrder map[string][]string
	}{
		{
			name:      "all claimed, each order's records in order",
			records:   [][2]string{{a, "1"}, {b, "1"}, {a, "2"}, {c, "1"}, {a, "3"}},
			wantOrder: map[string][]string{a: {"1", "2", "3"}, b: {"1"}, c: {"1"}},
		},
		{
			name:       "a failing order stops at its first record, tried 3 times; the earliest failure is reported",
			records:    [][2]string{{a, "1"}, {b, "1"}, {b, "2"}, {c, "1"}},
			failOn:     map[string]bool{b: true, c: true},
			wantFailed: []string{"b"},
			wantOrder:  map[string][]string{a: {"1"}, b: {"1", "1", "1"}, c: {"1", "1", "1"}},
		},
		{
			name:      "a claim that fails once is retried inline: no batch failure",
			records:   [][2]string{{a, "1"}, {b, "1"}, {b, "2"}},
			failOnce:  map[string]bool{b: true},
			wantOrder: map[string][]string{a: {"1"}, b: {"1", "1", "2"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			store := &claimLog{failOn: tt.failOn, failOnce: tt.failOnce}
			s := scheduler.New(scheduler.Config{InstanceID: "s1", Store: store, Dispatcher: nowhere{}, Notifier: nowhere{},
				Workflows: ordertest.OrderWorkflows(order.DefaultTiming), Now: time.Now,
				Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
			resp, err := s.HandleStream(context.Background(), streamBatch(t, tt.records...))
			if err != nil {
				t.Fatal(err)
			}
			var failed []string
			for _, f := range resp.BatchItemFailures {
				failed = append(failed, f.ItemIdentifier)
			}
			if !slices.Equal(failed, tt.wantFailed) {
				t.Errorf("got batch item failures %v, want %v", failed, tt.wantFailed)
			}
			got := map[string][]string{}
			for _, c := range store.claims {
				id, tag := c[:26], c[27:]
				got[id] = append(got[id], tag)
			}
			for id, want := range tt.wantOrder {
				if !slices.Equal(got[id], want) {
					t.Errorf("order %s: claims %v, want %v in that order", id, got[id], want)
				}
			}
			if store.most < 2 {
				t.Errorf("at most %d claims were in flight together, want different orders worked in parallel", store.most)
			}
		})
	}
}

// A record without a key and with an image that is no order is skipped, as
// a poison record, and its batch-mates are claimed.
func TestHandleStreamSkipsUnreadableRecords(t *testing.T) {
	a := order.IDForKey("caller", "", "c-1", "a")
	ev := streamBatch(t, [2]string{a, "1"})
	poison := events.DynamoDBEventRecord{EventID: "poison", EventName: "MODIFY", Change: events.DynamoDBStreamRecord{
		SequenceNumber: "p",
		NewImage:       map[string]events.DynamoDBAttributeValue{"Steps": events.NewStringAttribute("not a list")},
	}}
	ev.Records = append([]events.DynamoDBEventRecord{poison}, ev.Records...)
	store := &claimLog{}
	s := scheduler.New(scheduler.Config{InstanceID: "s1", Store: store, Dispatcher: nowhere{}, Notifier: nowhere{},
		Workflows: ordertest.OrderWorkflows(order.DefaultTiming), Now: time.Now,
		Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Metrics: metrics.Discard()})
	resp, err := s.HandleStream(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream() = %+v, %v; want the poison record skipped without failing the batch", resp, err)
	}
	if len(store.claims) != 1 || store.claims[0] != a+"/1" {
		t.Errorf("claims %v, want only order a's", store.claims)
	}
}
