// Package dynamo is the DynamoDB adapter: the orders table, which is also
// the state store of the Scheduler Agent Supervisor pattern. An order and
// the state of all its steps are one item, so submission is one
// conditional PutItem and every state transition one conditional
// UpdateItem, fenced by the step's attempt: racing Schedulers and
// Supervisors cannot both win, and stale replies change nothing.
package dynamo

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// Client is the part of the DynamoDB API the store uses.
type Client interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
	BatchGetItem(ctx context.Context, in *dynamodb.BatchGetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.BatchGetItemOutput, error)
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	PutItem(ctx context.Context, in *dynamodb.PutItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Store reads and writes orders and their step states.
type Store struct {
	client Client
	table  string
	shards int
	// actor, when set, is stamped on every write (the item's By), so the
	// order's history says who made each change.
	actor string
	// retention is how long an ended order is kept (its TTL).
	retention time.Duration
	// searchRead and searchBudget, when set, are how many index items
	// one Query of a search evaluates, and one page in each shard (see
	// WithSearchRead).
	searchRead, searchBudget int
	now                      func() time.Time
}

// Retain returns a store whose writes that end an order set it to expire
// after d (resources.DefaultRetention unless told).
func (s *Store) Retain(d time.Duration) *Store {
	c := *s
	if d > 0 {
		c.retention = d
	}
	return &c
}

// expiresAt is the TTL of an order ended at now: Unix seconds.
func (s *Store) expiresAt(now time.Time) expression.ValueBuilder {
	return expression.Value(now.Add(s.retention).Unix())
}

// expiredItem reports whether an item's TTL has passed: DynamoDB deletes such
// items within days, and every read treats them as gone already.
func expiredItem(item map[string]types.AttributeValue, now time.Time) bool {
	n, ok := item[attrExpiresAt].(*types.AttributeValueMemberN)
	if !ok {
		return false
	}
	at, err := strconv.ParseInt(n.Value, 10, 64)
	return err == nil && at <= now.Unix()
}

// As returns a store whose writes are stamped as made by actor: "submit",
// "scheduler <id>", "supervisor", "agent <name>", "client cancel",
// "client event", "operator redrive", "operator event".
func (s *Store) As(actor string) *Store {
	c := *s
	c.actor = actor
	return &c
}

// WithSearchRead returns the store with searches that evaluate at most
// perQuery index items per Query (by default four times the page's
// limit, and 16 more) and perPage in each shard for one page (by default
// 1,000): smaller reads cost more requests and read less past a page; a
// smaller budget bounds a page's cost lower and ends more pages short.
func (s *Store) WithSearchRead(perQuery, perPage int) *Store {
	c := *s
	c.searchRead, c.searchBudget = perQuery, perPage
	return &c
}

// NewStore returns a store over the orders table.
func NewStore(client Client, table string) *Store {
	return &Store{client: client, table: table, shards: resources.DueShards, retention: resources.DefaultRetention, now: time.Now}
}

// Shards is the number of due-index partitions the Supervisor must query.
func (s *Store) Shards() int { return s.shards }

// CreateOrder writes the order and the states of its steps as one item,
// with one conditional PutItem, its key nonce included. When an order with that id is already there
// (an Idempotency-Key replay) nothing is written, and it returns the stored
// order with an error wrapping order.ErrExists; the failed condition hands
// back the stored item, so telling a replay from a conflict needs no read.
func (s *Store) CreateOrder(ctx context.Context, o order.Order, steps []order.StepState) (order.Order, error) {
	if o.KeyNonce == "" {
		// Its remote keys would be the guessable ones of orders from
		// before nonces; the nonce goes in with this write or never.
		return order.Order{}, fmt.Errorf("create order %s: the order has no key nonce (order.NewKeyNonce)", o.ID)
	}
	rec := newOrderRecord(o, steps, s.shards)
	rec.By = s.actor
	item, err := attributevalue.MarshalMap(rec)
	if err != nil {
		return order.Order{}, fmt.Errorf("marshal order %s: %w", o.ID, err)
	}
	// An expired order (TTL passed, not deleted yet) is gone: its key may
	// be used again.
	cond, err := expression.NewBuilder().
		WithCondition(expression.AttributeNotExists(expression.Name(attrOrderID)).
			Or(expression.Name(attrExpiresAt).LessThanEqual(expression.Value(s.now().Unix())))).Build()
	if err != nil {
		return order.Order{}, fmt.Errorf("build create condition: %w", err)
	}
	_, err = s.client.PutItem(ctx, &dynamodb.PutItemInput{
		TableName: aws.String(s.table), Item: item,
		ConditionExpression:                 cond.Condition(),
		ExpressionAttributeNames:            cond.Names(),
		ExpressionAttributeValues:           cond.Values(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		existing, _, derr := decode(ccf.Item)
		if ccf.Item == nil { // an endpoint that does not hand the item back
			existing, _, derr = s.GetOrder(ctx, o.ID)
		}
		if derr != nil {
			return order.Order{}, fmt.Errorf("create order %s: read the stored order: %w", o.ID, derr)
		}
		return existing, fmt.Errorf("create order %s: %w", o.ID, order.ErrExists)
	}
	if err != nil {
		return order.Order{}, fmt.Errorf("create order %s: %w", o.ID, err)
	}
	return o, nil
}

// GetOrder returns an order with the states of its steps in workflow
// order, as of one moment. The read is strongly consistent: an operator
// looking at a failed order must see the latest state.
func (s *Store) GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error) {
	rec, err := s.read(ctx, id)
	if err != nil {
		return order.Order{}, nil, err
	}
	o, steps := rec.order()
	return o, steps, nil
}

// read reads an order's item, strongly consistent; an expired one is
// order.ErrNotFound, as if TTL had removed it already.
func (s *Store) read(ctx context.Context, id string) (orderRecord, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.table), Key: orderKey(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return orderRecord{}, fmt.Errorf("get order %s: %w", id, err)
	}
	if out.Item == nil || expiredItem(out.Item, s.now()) {
		return orderRecord{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
	}
	rec, err := unmarshal(out.Item)
	if err != nil {
		return orderRecord{}, fmt.Errorf("order %s: %w", id, err)
	}
	return rec, nil
}

// Order returns the order alone.
func (s *Store) Order(ctx context.Context, id string) (order.Order, error) {
	o, _, err := s.GetOrder(ctx, id)
	return o, err
}

// Found returns the order as stored, for the domain's guards (see
// order.Found): its records, with the order's own attributes they carry
// (the cancel, the park, the pending alert, the Supervisor's next look).
func (s *Store) Found(ctx context.Context, id string) (order.Found, error) {
	rec, err := s.read(ctx, id)
	if err != nil {
		return order.Found{}, err
	}
	return rec.found(), nil
}

// GetStep returns one step's current state.
func (s *Store) GetStep(ctx context.Context, orderID, step string) (order.StepState, error) {
	_, steps, err := s.GetOrder(ctx, orderID)
	if err != nil {
		return order.StepState{}, err
	}
	for _, st := range steps {
		if st.Step == step {
			return st, nil
		}
	}
	return order.StepState{}, fmt.Errorf("step %s of order %s: %w", step, orderID, order.ErrNotFound)
}

func decode(item map[string]types.AttributeValue) (order.Order, []order.StepState, error) {
	rec, err := unmarshal(item)
	if err != nil {
		return order.Order{}, nil, err
	}
	o, steps := rec.order()
	return o, steps, nil
}

func orderKey(orderID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrOrderID: &types.AttributeValueMemberS{Value: orderID}}
}

// update makes one conditional UpdateItem and returns the item as written.
// A failed condition returns an *order.StaleWrite (order.ErrStale) with
// the order as it was.
func (s *Store) update(ctx context.Context, orderID string, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (orderRecord, error) {
	if s.actor != "" {
		upd = upd.Set(expression.Name(attrBy), expression.Value(s.actor))
	}
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return orderRecord{}, fmt.Errorf("build update: %w", err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.table),
		Key:                       orderKey(orderID),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              types.ReturnValueAllNew,
		// The item as it was comes back with a failed condition, at no
		// extra capacity, so a caller can tell why it failed.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		old, _ := unmarshal(ccf.Item) // an unreadable item is simply stale
		return orderRecord{}, &order.StaleWrite{Found: old.found()}
	}
	if err != nil {
		return orderRecord{}, err
	}
	return unmarshal(out.Attributes)
}

// msValue is a time as the epoch milliseconds the item stores.
func msValue(t time.Time) expression.OperandBuilder { return expression.Value(millis(t)) }
