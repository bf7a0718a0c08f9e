package batch_test

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/batch"
)

func record(order string, seq int) events.DynamoDBEventRecord {
	return events.DynamoDBEventRecord{EventID: fmt.Sprint(seq), Change: events.DynamoDBStreamRecord{
		SequenceNumber: fmt.Sprint(seq),
		Keys:           map[string]events.DynamoDBAttributeValue{"OrderID": events.NewStringAttribute(order)},
	}}
}

// Records of one order are handled in order and stop at the first failure;
// other orders go on; the earliest failed record is reported.
func TestByOrder(t *testing.T) {
	recs := []events.DynamoDBEventRecord{record("A", 1), record("B", 2), record("A", 3), record("B", 4), record("C", 5), record("B", 6)}
	var mu sync.Mutex
	var seen []string
	resp := batch.ByOrder(recs, 2, func(r events.DynamoDBEventRecord) error {
		mu.Lock()
		defer mu.Unlock()
		seen = append(seen, r.Change.SequenceNumber)
		if r.Change.SequenceNumber == "4" || r.Change.SequenceNumber == "5" {
			return errors.New("fails")
		}
		return nil
	})
	if len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "4" {
		t.Errorf("failures %+v, want the earliest failed record, 4", resp.BatchItemFailures)
	}
	handled := map[string]bool{}
	for _, s := range seen {
		handled[s] = true
	}
	if handled["6"] || !handled["1"] || !handled["3"] || !handled["5"] {
		t.Errorf("handled %v: want B's record after its failure left for the retry, the others handled", seen)
	}
}

// Each calls fn once per item, never more than parallel at once, and at
// least one at a time however parallel is set.
func TestEachBoundsItsParallelism(t *testing.T) {
	for _, parallel := range []int{-1, 0, 1, 3, 50} {
		var (
			mu            sync.Mutex
			running, most int
			seen          = map[int]int{}
		)
		items := make([]int, 40)
		for i := range items {
			items[i] = i
		}
		batch.Each(items, parallel, func(i int) {
			mu.Lock()
			running++
			most = max(most, running)
			seen[i]++
			mu.Unlock()
			time.Sleep(time.Millisecond)
			mu.Lock()
			running--
			mu.Unlock()
		})
		if want := min(max(parallel, 1), len(items)); most > want {
			t.Errorf("parallel %d: %d at once, want at most %d", parallel, most, want)
		}
		if len(seen) != len(items) {
			t.Errorf("parallel %d: %d items worked, want %d", parallel, len(seen), len(items))
		}
		for i, n := range seen {
			if n != 1 {
				t.Errorf("parallel %d: item %d worked %d times", parallel, i, n)
			}
		}
	}
}

// Messages reports exactly the messages whose handle failed.
func TestMessagesReportsTheFailedOnes(t *testing.T) {
	var msgs []events.SQSMessage
	for i := range 25 {
		msgs = append(msgs, events.SQSMessage{MessageId: fmt.Sprint(i)})
	}
	resp := batch.Messages(msgs, 4, func(m events.SQSMessage) error {
		if m.MessageId == "3" || m.MessageId == "17" {
			return errors.New("no")
		}
		return nil
	})
	got := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		got[f.ItemIdentifier] = true
	}
	if len(resp.BatchItemFailures) != 2 || !got["3"] || !got["17"] {
		t.Errorf("failures %+v, want messages 3 and 17", resp.BatchItemFailures)
	}
}
