package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// batchGetLimit is BatchGetItem's most keys per request.
const batchGetLimit = 100

// Cursor is where a DueSteps page ended; nil when there is nothing more.
type Cursor map[string]types.AttributeValue

// DuePage returns the active steps of up to limit orders of one due-index
// shard whose DueAt is at or before now, starting after cursor: expired
// Processing steps, unclaimed Pending steps, failed steps whose alert is
// not sent yet, and steps whose DueAt merely lags their deadline. It
// Queries the sparse, keys-only index (never a Scan) and reads the orders
// themselves with strongly consistent BatchGetItem calls, because the
// index is eventually consistent; callers still fence every write on the
// attempt. Items that do not decode are returned apart, so that one of
// them does not hold up the orders after it. The page's cursor continues
// the same query.
func (s *Store) DuePage(ctx context.Context, shard int, now time.Time, limit int, after order.Cursor) (order.DuePage, error) {
	from, _ := after.(Cursor)
	page, err := s.duePage(ctx, shard, now, limit, from)
	if err != nil {
		return order.DuePage{}, err
	}
	out := order.DuePage{Steps: page.Steps, Unreadable: page.Unreadable}
	if len(page.Next) > 0 {
		out.Next = page.Next
	}
	return out, nil
}

func (s *Store) duePage(ctx context.Context, shard int, now time.Time, limit int, after Cursor) (activePage, error) {
	kc := expression.Key(attrDueShard).Equal(expression.Value(fmt.Sprint(shard))).
		And(expression.Key(attrDueAt).LessThanEqual(expression.Value(millis(now))))
	page, err := s.activeIn(ctx, dueIndexName, kc, limit, after)
	if err != nil {
		return activePage{}, fmt.Errorf("due shard %d: %w", shard, err)
	}
	return page, nil
}

// DueSteps is DuePage's steps and cursor: listings skip the items they
// cannot read (the Supervisor reports them).
func (s *Store) DueSteps(ctx context.Context, shard int, now time.Time, limit int, after Cursor) ([]order.StepState, Cursor, error) {
	page, err := s.duePage(ctx, shard, now, limit, after)
	return page.Steps, page.Next, err
}

// InError returns the stuck records of up to limit orders in Error, of
// one shard of the sparse error index, oldest change first, starting
// after cursor. The orders are read with strongly consistent reads.
func (s *Store) InError(ctx context.Context, shard int, limit int, after Cursor) ([]order.StepState, Cursor, error) {
	kc := expression.Key(attrInError).Equal(expression.Value(fmt.Sprint(shard)))
	page, err := s.activeIn(ctx, resources.ErrorIndexName, kc, limit, after)
	if err != nil {
		return nil, nil, fmt.Errorf("error shard %d: %w", shard, err)
	}
	return page.Steps, page.Next, nil
}

// activeIn queries a keys-only index and returns the active record of
// each order found, read back from the table, and apart the items that do
// not decode.
// activePage is one page of activeIn.
type activePage struct {
	Steps      []order.StepState
	Unreadable []order.Unreadable
	Next       Cursor
}

func (s *Store) activeIn(ctx context.Context, index string, kc expression.KeyConditionBuilder, limit int, after Cursor) (activePage, error) {
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return activePage{}, fmt.Errorf("build %s query: %w", index, err)
	}
	page, err := s.client.Query(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.table),
		IndexName:                 aws.String(index),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ExclusiveStartKey:         after,
		Limit:                     aws.Int32(int32(min(max(limit, 1), 1000))),
	})
	if err != nil {
		return activePage{}, fmt.Errorf("query %s: %w", index, err)
	}
	keys := make([]map[string]types.AttributeValue, 0, len(page.Items))
	for _, it := range page.Items {
		keys = append(keys, map[string]types.AttributeValue{attrOrderID: it[attrOrderID]})
	}

	out := activePage{Next: page.LastEvaluatedKey}
	for start := 0; start < len(keys); start += batchGetLimit {
		items, err := s.batchGet(ctx, types.KeysAndAttributes{Keys: keys[start:min(start+batchGetLimit, len(keys))], ConsistentRead: aws.Bool(true)})
		if err != nil {
			return activePage{}, err
		}
		for _, item := range items {
			rec, err := unmarshal(item)
			if err != nil {
				out.Unreadable = append(out.Unreadable, unreadable(item, err))
				continue
			}
			if st, ok := rec.active(); ok {
				out.Steps = append(out.Steps, st)
			}
		}
	}
	return out, nil
}

// batchGet reads the items of read.Keys (at most batchGetLimit) as read
// says (consistent or not, a projection), asking again for any keys
// DynamoDB left unprocessed.
func (s *Store) batchGet(ctx context.Context, read types.KeysAndAttributes) ([]map[string]types.AttributeValue, error) {
	var items []map[string]types.AttributeValue
	keys := read.Keys
	request := map[string]types.KeysAndAttributes{s.table: read}
	for attempt := 0; len(request) > 0; attempt++ {
		if attempt > 0 {
			select {
			case <-ctx.Done():
				return nil, ctx.Err()
			case <-time.After(time.Duration(min(attempt, 10)) * 50 * time.Millisecond):
			}
		}
		out, err := s.client.BatchGetItem(ctx, &dynamodb.BatchGetItemInput{RequestItems: request})
		if err != nil {
			return nil, fmt.Errorf("batch get %d orders: %w", len(keys), err)
		}
		items = append(items, out.Responses[s.table]...)
		request = out.UnprocessedKeys
	}
	return items, nil
}

func unmarshal(item map[string]types.AttributeValue) (orderRecord, error) {
	var rec orderRecord
	if err := attributevalue.UnmarshalMap(item, &rec); err != nil {
		return orderRecord{}, fmt.Errorf("unmarshal order item: %w", err)
	}
	return rec, nil
}
