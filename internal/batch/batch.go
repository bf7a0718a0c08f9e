// Package batch works a DynamoDB stream batch the way orderly's stream
// consumers (the Scheduler and the recorder) need it: the records of one
// order in their order, different orders in parallel, and, when a record
// fails, the earliest failed record reported, so that Lambda retries the
// batch from it.
package batch

import (
	"sync"

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
	var wg sync.WaitGroup
	sem := make(chan struct{}, max(parallel, 1))
	for _, key := range keys {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			for _, i := range groups[key] {
				if handle(records[i]) != nil {
					failed[i] = true
					return
				}
			}
		})
	}
	wg.Wait()
	for i, f := range failed {
		if f {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: records[i].Change.SequenceNumber},
			}}
		}
	}
	return events.DynamoDBEventResponse{}
}
