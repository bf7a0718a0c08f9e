package recorder_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/recorder"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/metrics"
	"orderly/internal/order"
)

type flaky struct {
	fails, calls int
	published    []order.StatusChange
}

func (f *flaky) Publish(_ context.Context, c order.StatusChange) error {
	f.calls++
	if f.calls <= f.fails {
		return errors.New("throttled")
	}
	f.published = append(f.published, c)
	return nil
}

func (f *flaky) PublishPause(context.Context, order.PauseChange) error { return nil }

func (f *flaky) Record(context.Context, string, string, []order.HistoryEntry, *order.Alert, time.Time) error {
	return nil
}

func (f *flaky) Pin(context.Context, string) error                           { return nil }
func (f *flaky) Restamp(context.Context, string, time.Time, time.Time) error { return nil }

// ChangeOf reads stream records as the DynamoDB adapter does.
func (f *flaky) ChangeOf(rec events.DynamoDBEventRecord) (order.Written, error) {
	return dynamo.ChangeOf(rec)
}

func submitted(id string) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventName: "INSERT", EventID: "e-" + id, Change: events.DynamoDBStreamRecord{
		SequenceNumber: "100",
		Keys:           map[string]events.DynamoDBAttributeValue{"OrderID": events.NewStringAttribute(id)},
		NewImage: map[string]events.DynamoDBAttributeValue{
			"OrderID": events.NewStringAttribute(id), "Status": events.NewStringAttribute("Pending"),
			"CustomerID": events.NewStringAttribute("c-1"), "Updated": events.NewNumberAttribute("1000"),
			"Steps": events.NewListAttribute(nil),
		},
	}}
}

// A failure that the next try gets past is retried inline: failing the
// record would make every later record of the batch be delivered, and
// published, again.
func TestATransientFailureIsRetriedInline(t *testing.T) {
	tests := []struct {
		fails      int
		wantFailed bool
	}{{0, false}, {2, false}, {3, true}}
	for _, tt := range tests {
		f := &flaky{fails: tt.fails}
		rec := recorder.New(f, f, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.Discard())
		resp, err := rec.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{submitted("O1")}})
		if err != nil || (len(resp.BatchItemFailures) == 1) != tt.wantFailed {
			t.Errorf("%d failures: response %+v, %v; want the record failed: %v", tt.fails, resp, err, tt.wantFailed)
		}
		if !tt.wantFailed && (len(f.published) != 1 || f.published[0].Status != order.StatusPending) {
			t.Errorf("%d failures: published %+v, want the Pending event once", tt.fails, f.published)
		}
	}
}

// An order that ends reports its latency from submission, by the status
// it ended in; a change to a status in flight reports none.
func TestAnEndedOrderReportsItsLatency(t *testing.T) {
	change := func(from, to string) events.DynamoDBEventRecord {
		r := submitted("O1")
		r.EventName = "MODIFY"
		r.Change.OldImage = map[string]events.DynamoDBAttributeValue{}
		for k, v := range r.Change.NewImage {
			r.Change.OldImage[k] = v
		}
		r.Change.OldImage["Status"] = events.NewStringAttribute(from)
		r.Change.NewImage["Status"] = events.NewStringAttribute(to)
		r.Change.NewImage["Created"] = events.NewNumberAttribute("1000")
		r.Change.NewImage["Updated"] = events.NewNumberAttribute("3500")
		return r
	}
	tests := []struct {
		from, to string
		want     bool
	}{
		{"Processing", "Processed", true},
		{"Compensating", "Failed", true},
		{"Compensating", "Error", true},
		{"Pending", "Processing", false},
	}
	for _, tt := range tests {
		var buf bytes.Buffer
		f := &flaky{}
		rec := recorder.New(f, f, slog.New(slog.NewTextHandler(io.Discard, nil)), metrics.New(&buf, "recorder"))
		if _, err := rec.HandleStream(context.Background(), events.DynamoDBEvent{Records: []events.DynamoDBEventRecord{change(tt.from, tt.to)}}); err != nil {
			t.Fatal(err)
		}
		var got []string
		for line := range strings.Lines(buf.String()) {
			var m map[string]any
			json.Unmarshal([]byte(line), &m)
			if v, ok := m[metrics.OrderLatency]; ok {
				got = append(got, fmt.Sprint(m[metrics.DimStatus], " ", v))
			}
		}
		want := []string(nil)
		if tt.want {
			want = []string{tt.to + " 2500"}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s to %s: latencies %v, want %v", tt.from, tt.to, got, want)
		}
	}
}
