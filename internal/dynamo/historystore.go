package dynamo

import (
	"context"
	"fmt"
	"strings"

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
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
}

// History is the history table: one item per change of an order, keyed by
// the order and the change's stream sequence number, holding what the
// change did. A change recorded twice (a stream record delivered again)
// writes the same item again.
type History struct {
	client HistoryClient
	table  string
}

// NewHistory returns the history over a table.
func NewHistory(client HistoryClient, table string) *History {
	return &History{client: client, table: table}
}

// historyItem is one change.
type historyItem struct {
	OrderID string             `dynamodbav:"OrderID"`
	Seq     string             `dynamodbav:"Seq"`
	Entries []order.Transition `dynamodbav:"E"`
}

// seqWidth pads sequence numbers (decimal strings of up to 40 digits in
// DynamoDB Streams) so that they sort as numbers.
const seqWidth = 40

// Record stores the transitions of the change with stream sequence number
// seq.
func (h *History) Record(ctx context.Context, orderID, seq string, ts []order.Transition) error {
	item, err := attributevalue.MarshalMap(historyItem{OrderID: orderID, Seq: pad(seq), Entries: ts})
	if err != nil {
		return fmt.Errorf("marshal history of order %s: %w", orderID, err)
	}
	if _, err := h.client.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(h.table), Item: item}); err != nil {
		return fmt.Errorf("record history of order %s: %w", orderID, err)
	}
	return nil
}

// List returns every transition of an order, in order. The read is
// strongly consistent.
func (h *History) List(ctx context.Context, orderID string) ([]order.Transition, error) {
	var (
		out  []order.Transition
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
			var hi historyItem
			if err := attributevalue.UnmarshalMap(it, &hi); err != nil {
				return nil, fmt.Errorf("history of order %s: %w", orderID, err)
			}
			out = append(out, hi.Entries...)
		}
		if next = page.LastEvaluatedKey; len(next) == 0 {
			return out, nil
		}
	}
}

func pad(seq string) string {
	if len(seq) >= seqWidth {
		return seq
	}
	return strings.Repeat("0", seqWidth-len(seq)) + seq
}
