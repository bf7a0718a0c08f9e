// Package dynamo is the DynamoDB adapter: the orders table and the state
// store of the Scheduler Agent Supervisor pattern. Every state transition is
// one conditional write (or one transaction when the order item changes
// with it), so racing Schedulers and Supervisors cannot both win.
package dynamo

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
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
	Query(ctx context.Context, in *dynamodb.QueryInput, optFns ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error)
	UpdateItem(ctx context.Context, in *dynamodb.UpdateItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error)
	TransactWriteItems(ctx context.Context, in *dynamodb.TransactWriteItemsInput, optFns ...func(*dynamodb.Options)) (*dynamodb.TransactWriteItemsOutput, error)
}

var _ Client = (*dynamodb.Client)(nil)

// Store reads and writes orders and step states.
type Store struct {
	client      Client
	ordersTable string
	stateTable  string
	shards      int
}

// NewStore returns a store over the two tables.
func NewStore(client Client, ordersTable, stateTable string) *Store {
	return &Store{client: client, ordersTable: ordersTable, stateTable: stateTable, shards: resources.DueShards}
}

// Shards is the number of due-index partitions the Supervisor must query.
func (s *Store) Shards() int { return s.shards }

// CreateOrder writes the order and all its step states in one transaction.
// It returns order.ErrExists when an order with that id is already there
// (an Idempotency-Key replay); nothing is written then.
func (s *Store) CreateOrder(ctx context.Context, o order.Order, steps []order.StepState) error {
	notExists := expression.AttributeNotExists(expression.Name(attrOrderID))
	cond, err := expression.NewBuilder().WithCondition(notExists).Build()
	if err != nil {
		return fmt.Errorf("build create condition: %w", err)
	}
	put := func(table string, record any) (types.TransactWriteItem, error) {
		item, err := attributevalue.MarshalMap(record)
		if err != nil {
			return types.TransactWriteItem{}, fmt.Errorf("marshal %s item: %w", table, err)
		}
		return types.TransactWriteItem{Put: &types.Put{
			TableName: aws.String(table), Item: item,
			ConditionExpression:      cond.Condition(),
			ExpressionAttributeNames: cond.Names(),
		}}, nil
	}
	items := make([]types.TransactWriteItem, 0, 1+len(steps))
	orderPut, err := put(s.ordersTable, newOrderRecord(o))
	if err != nil {
		return err
	}
	items = append(items, orderPut)
	for _, st := range steps {
		statePut, err := put(s.stateTable, newStateRecord(st, s.shards))
		if err != nil {
			return err
		}
		items = append(items, statePut)
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if conditionFailed(err, 0) {
		return fmt.Errorf("create order %s: %w", o.ID, order.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create order %s: %w", o.ID, err)
	}
	return nil
}

// GetOrder returns an order with the states of its steps in workflow order.
// Reads are strongly consistent: an operator looking at a failed order must
// see the latest state.
func (s *Store) GetOrder(ctx context.Context, id string) (order.Order, []order.StepState, error) {
	o, err := s.Order(ctx, id)
	if err != nil {
		return order.Order{}, nil, err
	}
	steps, err := s.Steps(ctx, id)
	if err != nil {
		return order.Order{}, nil, err
	}
	return o, steps, nil
}

// Order returns the order item alone.
func (s *Store) Order(ctx context.Context, id string) (order.Order, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.ordersTable), Key: orderKey(id), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return order.Order{}, fmt.Errorf("get order %s: %w", id, err)
	}
	if out.Item == nil {
		return order.Order{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
	}
	var rec orderRecord
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return order.Order{}, fmt.Errorf("unmarshal order %s: %w", id, err)
	}
	return rec.order(), nil
}

// Steps returns the states of an order's steps in workflow order.
func (s *Store) Steps(ctx context.Context, orderID string) ([]order.StepState, error) {
	kc, err := expression.NewBuilder().
		WithKeyCondition(expression.Key(attrOrderID).Equal(expression.Value(orderID))).Build()
	if err != nil {
		return nil, fmt.Errorf("build steps query: %w", err)
	}
	steps, err := s.queryStates(ctx, &dynamodb.QueryInput{
		TableName: aws.String(s.stateTable), ConsistentRead: aws.Bool(true),
		KeyConditionExpression:    kc.KeyCondition(),
		ExpressionAttributeNames:  kc.Names(),
		ExpressionAttributeValues: kc.Values(),
	}, 0)
	if err != nil {
		return nil, fmt.Errorf("steps of order %s: %w", orderID, err)
	}
	slices.SortFunc(steps, func(a, b order.StepState) int { return cmp.Compare(a.Index, b.Index) })
	return steps, nil
}

// queryStates runs a state-table query page by page and decodes the
// items; limit > 0 stops after that many.
func (s *Store) queryStates(ctx context.Context, in *dynamodb.QueryInput, limit int) ([]order.StepState, error) {
	pages := dynamodb.NewQueryPaginator(s.client, in)
	var steps []order.StepState
	for pages.HasMorePages() && (limit <= 0 || len(steps) < limit) {
		page, err := pages.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		var recs []stateRecord
		if err := attributevalue.UnmarshalListOfMaps(page.Items, &recs); err != nil {
			return nil, fmt.Errorf("unmarshal: %w", err)
		}
		for _, r := range recs {
			steps = append(steps, r.step())
		}
	}
	if limit > 0 && len(steps) > limit {
		steps = steps[:limit]
	}
	return steps, nil
}

// ClaimStep is the Scheduler's exclusive claim: one conditional UpdateItem
// that succeeds only while the step is Pending and unlocked. It locks the
// step to owner, sets the deadline, marks it Processing and increments the
// attempt. A lost race returns order.ErrStale.
func (s *Store) ClaimStep(ctx context.Context, orderID, step, owner string, completeBy, now time.Time) (order.StepState, error) {
	cond := expression.Name("ProcessState").Equal(expression.Value(order.Pending)).
		And(expression.AttributeNotExists(expression.Name("LockedBy")))
	upd := expression.Set(expression.Name("ProcessState"), expression.Value(order.Processing)).
		Set(expression.Name("LockedBy"), expression.Value(owner)).
		Set(expression.Name(attrCompleteBy), expression.Value(millis(completeBy))).
		Set(expression.Name("Attempt"), expression.Name("Attempt").Plus(expression.Value(1))).
		Set(expression.Name(attrDueShard), expression.Value(shardOf(orderID, step, s.shards))).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	return s.updateStep(ctx, orderID, step, cond, upd)
}

// RetryStep is the Supervisor's reset of a timed-out step: one conditional
// write that succeeds only if the step is still Processing on the same
// attempt and its deadline has passed. It unlocks the step, counts the
// failure and makes it Pending again, to be claimed by claimBy.
func (s *Store) RetryStep(ctx context.Context, st order.StepState, claimBy time.Time, reason string, now time.Time) (order.StepState, error) {
	upd := expression.Set(expression.Name("ProcessState"), expression.Value(order.Pending)).
		Remove(expression.Name("LockedBy")).
		Set(expression.Name(attrCompleteBy), expression.Value(millis(claimBy))).
		Set(expression.Name("FailureCount"), expression.Name("FailureCount").Plus(expression.Value(1))).
		Set(expression.Name("LastError"), expression.Value(reason)).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	return s.updateStep(ctx, st.OrderID, st.Step, expiredOnAttempt(order.Processing, st.Attempt, now), upd)
}

// NudgeStep re-announces a Pending step that nobody claimed by its
// deadline. The write itself produces a stream record, which invokes a
// Scheduler again.
func (s *Store) NudgeStep(ctx context.Context, st order.StepState, claimBy time.Time, now time.Time) (order.StepState, error) {
	cond := expiredOnAttempt(order.Pending, st.Attempt, now).
		And(expression.AttributeNotExists(expression.Name("LockedBy")))
	upd := expression.Set(expression.Name(attrCompleteBy), expression.Value(millis(claimBy))).
		Set(expression.Name("Nudges"), expression.Name("Nudges").Plus(expression.Value(1))).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	return s.updateStep(ctx, st.OrderID, st.Step, cond, upd)
}

// ClearAlert records that operators were alerted about a failed step, which
// takes it out of the due index.
func (s *Store) ClearAlert(ctx context.Context, st order.StepState, now time.Time) error {
	cond := expression.Name("ProcessState").Equal(expression.Value(order.Error)).
		And(expression.Name("Attempt").Equal(expression.Value(st.Attempt))).
		And(expression.Name("AlertPending").Equal(expression.Value(true)))
	upd := expression.Remove(expression.Name("AlertPending")).
		Remove(expression.Name(attrDueShard)).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	_, err := s.updateStep(ctx, st.OrderID, st.Step, cond, upd)
	return err
}

func expiredOnAttempt(state order.ProcessState, attempt int, now time.Time) expression.ConditionBuilder {
	return expression.Name("ProcessState").Equal(expression.Value(state)).
		And(expression.Name("Attempt").Equal(expression.Value(attempt))).
		And(expression.Name(attrCompleteBy).LessThan(expression.Value(millis(now))))
}

func (s *Store) updateStep(ctx context.Context, orderID, step string, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (order.StepState, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return order.StepState{}, fmt.Errorf("build update of step %s of order %s: %w", step, orderID, err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 aws.String(s.stateTable),
		Key:                       stepKey(orderID, step),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return order.StepState{}, fmt.Errorf("update step %s of order %s: %w", step, orderID, order.ErrStale)
	}
	if err != nil {
		return order.StepState{}, fmt.Errorf("update step %s of order %s: %w", step, orderID, err)
	}
	var rec stateRecord
	if err := attributevalue.UnmarshalMap(out.Attributes, &rec); err != nil {
		return order.StepState{}, fmt.Errorf("unmarshal step %s of order %s: %w", step, orderID, err)
	}
	return rec.step(), nil
}

func stepKey(orderID, step string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{
		attrOrderID: &types.AttributeValueMemberS{Value: orderID},
		attrStep:    &types.AttributeValueMemberS{Value: step},
	}
}

func orderKey(orderID string) map[string]types.AttributeValue {
	return map[string]types.AttributeValue{attrOrderID: &types.AttributeValueMemberS{Value: orderID}}
}

// conditionFailed reports whether err is a cancelled transaction whose item
// at index failed its condition check.
func conditionFailed(err error, index int) bool {
	var tce *types.TransactionCanceledException
	if !errors.As(err, &tce) || index >= len(tce.CancellationReasons) {
		return false
	}
	return aws.ToString(tce.CancellationReasons[index].Code) == "ConditionalCheckFailed"
}
