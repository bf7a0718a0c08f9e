// Package batch works the batches the functions are handed: Each is the
// one bounded-parallelism helper (the Supervisor's due steps, and under
// Messages and ByOrder); Messages works a queue batch, reporting the
// messages to deliver again; ByOrder works a DynamoDB stream batch the way
// orderly's stream consumers (the Scheduler and the recorder) need it: the
// records of one order in their order, different orders in parallel, and,
// when a record fails, the earliest failed record reported, so that Lambda
// retries the batch from it. Since that retry delivers every later record
// of the batch again (other orders' too) and holds the shard back
// meanwhile, a record's write is first retried inline (Retry).
package batch

import (
	"context"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/resources"
)

// ByOrder calls handle for every record, at most parallel orders at once.
// After a record of an order fails, that order's later records wait for
// the retry.
func ByOrder(records []events.DynamoDBEventRecord, parallel int, handle func(events.DynamoDBEventRecord) error) events.DynamoDBEventResponse {
	groups := map[string][]int{}
	var keys []string
	for i, rec := range records {
		key := rec.EventID // a record without a readable key is a group of its own
		if k, ok := rec.Change.Keys[resources.AttrOrderID]; ok && k.DataType() == events.DataTypeString {
			key = k.String()
		}
		if _, seen := groups[key]; !seen {
			keys = append(keys, key)
		}
		groups[key] = append(groups[key], i)
	}
	failed := make([]bool, len(records))
	Each(keys, parallel, func(key string) {
		for _, i := range groups[key] {
			if handle(records[i]) != nil {
				failed[i] = true
				return
			}
		}
	})
	for i, f := range failed {
		if f {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: records[i].Change.SequenceNumber},
			}}
		}
	}
	return events.DynamoDBEventResponse{}
}

// Each calls fn for every item, at most parallel at once (at least one),
// and returns when every call has.
func Each[T any](items []T, parallel int, fn func(T)) {
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(parallel, 1))
	for _, it := range items {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			fn(it)
		})
	}
	wg.Wait()
}

// Messages calls handle for every message of an SQS batch, at most
// parallel at once, and reports as batch item failures the messages whose
// handle failed: only they are delivered again (and, after the queue's
// maxReceiveCount, go to its dead-letter queue).
func Messages(records []events.SQSMessage, parallel int, handle func(events.SQSMessage) error) events.SQSEventResponse {
	var (
		mu   sync.Mutex
		resp events.SQSEventResponse
	)
	Each(records, parallel, func(msg events.SQSMessage) {
		if handle(msg) != nil {
			mu.Lock()
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: msg.MessageId})
			mu.Unlock()
		}
	})
	return resp
}

// Tries is how often Retry makes a call before it gives up.
const Tries = 3

// Retry calls fn until it succeeds, Tries times at most, with a short
// pause between tries.
func Retry(ctx context.Context, fn func() error) error {
	var err error
	for i := range Tries {
		if err = fn(); err == nil {
			return nil
		}
		if i == Tries-1 {
			break
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(time.Duration(i+1) * 50 * time.Millisecond):
		}
	}
	return err
}

// Describe returns the log attributes that identify a message an SQS
// handler received: its id, how often it was delivered, and its size. Not
// its body: a request carries the order's input (a payment token, an
// address), which no log may hold. The message itself stays in its queue,
// then its dead-letter queue, where `orderly dlq show` reads it.
func Describe(msg events.SQSMessage) []any {
	return []any{"message_id", msg.MessageId, "receive_count", msg.Attributes["ApproximateReceiveCount"], "body_bytes", len(msg.Body)}
}
