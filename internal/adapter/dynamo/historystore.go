package dynamo

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// HistoryClient is the part of the DynamoDB API the history uses.
type HistoryClient interface {
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// History is the history table: one item per change of an order, keyed by
// the order and the change's stream sequence number, holding what the
// change did. A change recorded twice (a stream record delivered again)
// writes the same item again.
type History struct {
	client HistoryClient
	table  string
	// workflows are the versions the stage runs: a Waiting status event
	// names what its step waits for from its definition.
	workflows order.Versions
}

// NewHistory returns the history over a table.
func NewHistory(client HistoryClient, table string) *History {
	return &History{client: client, table: table}
}

// historyItem is one change.
type historyItem struct {
	OrderID string               `dynamodbav:"OrderID"`
	Seq     string               `dynamodbav:"Seq"`
	Entries []order.HistoryEntry `dynamodbav:"E"`
	// The alert index's keys and the alert, only on the item of a change
	// that recorded an alert sent.
	AlertDay string       `dynamodbav:"AlertDay,omitempty"`
	AlertAt  int64        `dynamodbav:"AlertAt,omitempty"`
	Alert    *order.Alert `dynamodbav:"Alert,omitempty"`
	// ExpiresAt is the item's TTL (Unix seconds); none while its order is
	// in Error.
	ExpiresAt int64 `dynamodbav:"ExpiresAt,omitempty"`
}

// seqWidth pads sequence numbers (decimal strings of up to 40 digits in
// DynamoDB Streams) so that they sort as numbers.
const seqWidth = 40

// Record stores the transitions of the change with stream sequence number
// seq and, when the change recorded an alert sent, the alert, in the alert
// index under the day it was sent.
//
// expires is the item's TTL: zero for none (an order in Error keeps its
// history until it is resolved).
func (h *History) Record(ctx context.Context, orderID, seq string, ts []order.HistoryEntry, sent *order.Alert, expires time.Time) error {
	hi := historyItem{OrderID: orderID, Seq: pad(seq), Entries: ts}
	if !expires.IsZero() {
		hi.ExpiresAt = expires.Unix()
	}
	if sent != nil {
		hi.AlertDay, hi.AlertAt, hi.Alert = alertDay(sent.At), sent.At.UnixMilli(), sent
	}
	item, err := attributevalue.MarshalMap(hi)
	if err != nil {
		return fmt.Errorf("marshal history of order %s: %w", orderID, err)
	}
	if _, err := h.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.table), Item: item}); err != nil {
		return fmt.Errorf("record history of order %s: %w", orderID, err)
	}
	return nil
}

// List returns every transition of an order since it was submitted, in
// order. The read is strongly consistent. Transitions before since belong
// to an expired order whose Idempotency-Key made this one (same id): its
// history outlives it by resources.HistoryMargin.
func (h *History) List(ctx context.Context, orderID string, since time.Time) ([]order.HistoryEntry, error) {
	var (
		out  []order.HistoryEntry
		next map[string]types.AttributeValue
	)
	for {
		page, err := h.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(h.table),
			KeyConditionExpression:    aws.String("#id = :id"),
			ExpressionAttributeNames:  map[string]string{"#id": resources.AttrOrderID},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: orderID}},
			ConsistentRead:            aws.Bool(true),
			ExclusiveStartKey:         next,
		})
		if err != nil {
			return nil, fmt.Errorf("read history of order %s: %w", orderID, err)
		}
		for _, it := range page.Items {
			if expiredItem(it, time.Now()) {
				continue
			}
			var hi historyItem
			if err := attributevalue.UnmarshalMap(it, &hi); err != nil {
				return nil, fmt.Errorf("history of order %s: %w", orderID, err)
			}
			for _, t := range hi.Entries {
				if !t.At.Before(since) {
					out = append(out, t)
				}
			}
		}
		if next = page.LastEvaluatedKey; len(next) == 0 {
			return out, nil
		}
	}
}

// alertDay is the alert index's partition of a time: its UTC day.
func alertDay(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// Alerts returns up to limit alerts sent since the given time, newest
// first, from the alert index: one Query per day, no Scan. The index is
// eventually consistent: an alert sent a moment ago may not be listed yet.
func (h *History) Alerts(ctx context.Context, since, now time.Time, limit int) ([]order.Alert, error) {
	var out []order.Alert
	for day := now.UTC().Truncate(24 * time.Hour); !day.Before(since.UTC().Truncate(24 * time.Hour)); day = day.AddDate(0, 0, -1) {
		var next map[string]types.AttributeValue
		for len(out) < limit {
			page, err := h.client.Query(ctx, &dynamodb.QueryInput{
				TableName:              aws.String(h.table),
				IndexName:              aws.String(resources.AlertIndexName),
				KeyConditionExpression: aws.String("#day = :day AND #at >= :since"),
				ExpressionAttributeNames: map[string]string{
					"#day": resources.AttrAlertDay, "#at": resources.AttrAlertAt},
				ExpressionAttributeValues: map[string]types.AttributeValue{
					":day":   &types.AttributeValueMemberS{Value: alertDay(day)},
					":since": &types.AttributeValueMemberN{Value: strconv.FormatInt(since.UnixMilli(), 10)}},
				ScanIndexForward:  aws.Bool(false),
				Limit:             aws.Int32(int32(min(max(limit-len(out), 1), 1000))),
				ExclusiveStartKey: next,
			})
			if err != nil {
				return nil, fmt.Errorf("read the alerts of %s: %w", alertDay(day), err)
			}
			for _, it := range page.Items {
				if expiredItem(it, now) {
					continue
				}
				var hi historyItem
				if err := attributevalue.UnmarshalMap(it, &hi); err != nil {
					return nil, fmt.Errorf("alert of order %s: %w", hi.OrderID, err)
				}
				if hi.Alert != nil {
					out = append(out, *hi.Alert)
				}
			}
			if next = page.LastEvaluatedKey; len(next) == 0 {
				break
			}
		}
	}
	return out, nil
}

// Pin takes the TTL off every item of an order's history: the order went
// into Error, and its history stays until the order is resolved.
func (h *History) Pin(ctx context.Context, orderID string) error {
	return h.stamp(ctx, orderID, "pin", func(cur int64) (string, map[string]types.AttributeValue, bool) {
		return "REMOVE #exp", nil, cur != 0
	})
}

// Restamp makes every item of an ended order's history that would expire
// before notBefore (the order's own expiry), or never, expire at expires:
// those pinned while it was in Error, and those of an order that ran
// longer than resources.HistoryMargin. Items that expire late enough
// already are left alone, so an order that ran a normal course costs one
// Query here.
func (h *History) Restamp(ctx context.Context, orderID string, notBefore, expires time.Time) error {
	floor, at := notBefore.Unix(), expires.Unix()
	return h.stamp(ctx, orderID, "restamp", func(cur int64) (string, map[string]types.AttributeValue, bool) {
		return "SET #exp = :exp", map[string]types.AttributeValue{":exp": &types.AttributeValueMemberN{Value: strconv.FormatInt(at, 10)}}, cur < floor
	})
}

// stamp updates the TTL of those items of an order's history that need
// it, as change says for each item's current TTL (0 for none).
func (h *History) stamp(ctx context.Context, orderID, what string, change func(cur int64) (string, map[string]types.AttributeValue, bool)) error {
	var next map[string]types.AttributeValue
	for {
		page, err := h.client.Query(ctx, &dynamodb.QueryInput{
			TableName:                 aws.String(h.table),
			KeyConditionExpression:    aws.String("#id = :id"),
			ProjectionExpression:      aws.String("#id, #seq, #exp"),
			ExpressionAttributeNames:  map[string]string{"#id": resources.AttrOrderID, "#seq": resources.AttrSeq, "#exp": resources.AttrExpiresAt},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: orderID}},
			ExclusiveStartKey:         next,
		})
		if err != nil {
			return fmt.Errorf("%s the history of order %s: %w", what, orderID, err)
		}
		for _, it := range page.Items {
			var cur int64
			if n, ok := it[resources.AttrExpiresAt].(*types.AttributeValueMemberN); ok {
				cur, _ = strconv.ParseInt(n.Value, 10, 64)
			}
			expr, values, needed := change(cur)
			if !needed {
				continue
			}
			if _, err := h.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName:                 aws.String(h.table),
				Key:                       map[string]types.AttributeValue{resources.AttrOrderID: it[resources.AttrOrderID], resources.AttrSeq: it[resources.AttrSeq]},
				UpdateExpression:          aws.String(expr),
				ExpressionAttributeNames:  map[string]string{"#exp": resources.AttrExpiresAt},
				ExpressionAttributeValues: values,
			}); err != nil {
				return fmt.Errorf("%s the history of order %s: %w", what, orderID, err)
			}
		}
		if next = page.LastEvaluatedKey; len(next) == 0 {
			return nil
		}
	}
}

func pad(seq string) string {
	if len(seq) >= seqWidth {
		return seq
	}
	return strings.Repeat("0", seqWidth-len(seq)) + seq
}

// Knowing returns the history reading changes of orders that run
// workflows: a Waiting status event then says what its step waits for
// (order.WaitingFor's For and Event), not only since and until when.
func (h *History) Knowing(workflows order.Versions) *History {
	h.workflows = workflows
	return h
}

// ChangeOf is the package's ChangeOf, for a recorder that reads the
// stream through its history store, knowing its workflows.
func (h *History) ChangeOf(rec events.DynamoDBEventRecord) (order.Written, error) {
	return changeOf(rec, h.workflows)
}
