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
)

// Completion is a successful reply applied to the state store.
type Completion struct {
	OrderID string
	Step    string
	Attempt int
	// Next is the step that becomes Pending, or "" when the order is done.
	Next string
	// NextClaimBy is when a Scheduler must have claimed Next.
	NextClaimBy time.Time
}

// CompleteStep applies a success reply in one transaction: the step becomes
// Processed only if it is still Processing on the reply's attempt (so stale
// and duplicate replies change nothing), and either the next step becomes
// Pending or the order becomes Processed. A stale reply returns
// order.ErrStale.
func (s *Store) CompleteStep(ctx context.Context, c Completion, now time.Time) error {
	done := expression.Set(expression.Name("ProcessState"), expression.Value(order.Processed)).
		Remove(expression.Name("LockedBy")).
		Remove(expression.Name(attrDueShard)).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	doneItem, err := s.stateUpdate(c.OrderID, c.Step, onAttempt(order.Processing, c.Attempt), done)
	if err != nil {
		return err
	}
	items := []types.TransactWriteItem{doneItem}

	status := order.StatusProcessed
	if c.Next != "" {
		status = order.StatusProcessing
		notStarted := expression.Name("ProcessState").Equal(expression.Value(order.NotStarted))
		pending := expression.Set(expression.Name("ProcessState"), expression.Value(order.Pending)).
			Set(expression.Name(attrCompleteBy), expression.Value(millis(c.NextClaimBy))).
			Set(expression.Name(attrDueShard), expression.Value(shardOf(c.OrderID, c.Next, s.shards))).
			Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
		nextItem, err := s.stateUpdate(c.OrderID, c.Next, notStarted, pending)
		if err != nil {
			return err
		}
		items = append(items, nextItem)
	}
	orderItem, err := s.orderStatusUpdate(c.OrderID, status, "", now)
	if err != nil {
		return err
	}
	items = append(items, orderItem)

	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
	if conditionFailed(err, 0) {
		return fmt.Errorf("complete step %s of order %s on attempt %d: %w", c.Step, c.OrderID, c.Attempt, order.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("complete step %s of order %s on attempt %d: %w", c.Step, c.OrderID, c.Attempt, err)
	}
	return nil
}

// FailStep applies an agent's permanent-failure reply: the step and the
// order become Error, if the step is still Processing on that attempt. The
// step keeps AlertPending (and its place in the due index) until
// ClearAlert, so the operator alert survives a crash right after this
// write.
func (s *Store) FailStep(ctx context.Context, orderID, step string, attempt int, reason string, now time.Time) error {
	return s.fail(ctx, orderID, step, onAttempt(order.Processing, attempt), false, reason, now)
}

// FailTimedOutStep is the Supervisor's last recovery: a step that has timed
// out FailureThreshold times becomes Error together with its order. Like
// RetryStep it only succeeds on the same attempt after the deadline.
func (s *Store) FailTimedOutStep(ctx context.Context, st order.StepState, reason string, now time.Time) error {
	return s.fail(ctx, st.OrderID, st.Step, expiredOnAttempt(order.Processing, st.Attempt, now), true, reason, now)
}

func (s *Store) fail(ctx context.Context, orderID, step string, cond expression.ConditionBuilder, countFailure bool, reason string, now time.Time) error {
	upd := expression.Set(expression.Name("ProcessState"), expression.Value(order.Error)).
		Remove(expression.Name("LockedBy")).
		Set(expression.Name("AlertPending"), expression.Value(true)).
		Set(expression.Name(attrDueShard), expression.Value(shardOf(orderID, step, s.shards))).
		Set(expression.Name(attrCompleteBy), expression.Value(millis(now))).
		Set(expression.Name("LastError"), expression.Value(reason)).
		Set(expression.Name("UpdatedAt"), expression.Value(millis(now)))
	if countFailure {
		upd = upd.Set(expression.Name("FailureCount"), expression.Name("FailureCount").Plus(expression.Value(1)))
	}
	stepItem, err := s.stateUpdate(orderID, step, cond, upd)
	if err != nil {
		return err
	}
	orderItem, err := s.orderStatusUpdate(orderID, order.StatusError, fmt.Sprintf("step %s: %s", step, reason), now)
	if err != nil {
		return err
	}
	_, err = s.client.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{
		TransactItems: []types.TransactWriteItem{stepItem, orderItem},
	})
	if conditionFailed(err, 0) {
		return fmt.Errorf("fail step %s of order %s: %w", step, orderID, order.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("fail step %s of order %s: %w", step, orderID, err)
	}
	return nil
}

func onAttempt(state order.ProcessState, attempt int) expression.ConditionBuilder {
	return expression.Name("ProcessState").Equal(expression.Value(state)).
		And(expression.Name("Attempt").Equal(expression.Value(attempt)))
}

func (s *Store) stateUpdate(orderID, step string, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (types.TransactWriteItem, error) {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build update of step %s of order %s: %w", step, orderID, err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.stateTable),
		Key:                       stepKey(orderID, step),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		// On a lost condition the caller learns why without a second read.
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}}, nil
}

func (s *Store) orderStatusUpdate(orderID string, status order.Status, lastError string, now time.Time) (types.TransactWriteItem, error) {
	upd := expression.Set(expression.Name("Status"), expression.Value(status)).
		Set(expression.Name("UpdatedAt"), expression.Value(now.UTC()))
	if lastError != "" {
		upd = upd.Set(expression.Name("LastError"), expression.Value(lastError))
	}
	expr, err := expression.NewBuilder().
		WithCondition(expression.AttributeExists(expression.Name(attrOrderID))).
		WithUpdate(upd).Build()
	if err != nil {
		return types.TransactWriteItem{}, fmt.Errorf("build status update of order %s: %w", orderID, err)
	}
	return types.TransactWriteItem{Update: &types.Update{
		TableName:                 aws.String(s.ordersTable),
		Key:                       orderKey(orderID),
		ConditionExpression:       expr.Condition(),
		UpdateExpression:          expr.Update(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
	}}, nil
}

// DueSteps returns up to limit steps of one due-index shard whose deadline
// is at or before now: expired Processing steps, unclaimed Pending steps and
// failed steps whose alert is not sent yet. It is a Query on the sparse
// index, never a Scan. The index is eventually consistent, so callers
// re-check every step with a conditional write.
func (s *Store) DueSteps(ctx context.Context, shard int, now time.Time, limit int) ([]order.StepState, error) {
	kc := expression.Key(attrDueShard).Equal(expression.Value(fmt.Sprint(shard))).
		And(expression.Key(attrCompleteBy).LessThanEqual(expression.Value(millis(now))))
	expr, err := expression.NewBuilder().WithKeyCondition(kc).Build()
	if err != nil {
		return nil, fmt.Errorf("build due query: %w", err)
	}
	steps, err := s.queryStates(ctx, &dynamodb.QueryInput{
		TableName:                 aws.String(s.stateTable),
		IndexName:                 aws.String(dueIndexName),
		KeyConditionExpression:    expr.KeyCondition(),
		ExpressionAttributeNames:  expr.Names(),
		ExpressionAttributeValues: expr.Values(),
		Limit:                     aws.Int32(int32(min(limit, 1000))),
	}, limit)
	if err != nil {
		return nil, fmt.Errorf("due shard %d: %w", shard, err)
	}
	return steps, nil
}

// GetStep returns one step's current state (strongly consistent).
func (s *Store) GetStep(ctx context.Context, orderID, step string) (order.StepState, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{
		TableName: aws.String(s.stateTable), Key: stepKey(orderID, step), ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		return order.StepState{}, fmt.Errorf("get step %s of order %s: %w", step, orderID, err)
	}
	if out.Item == nil {
		return order.StepState{}, fmt.Errorf("step %s of order %s: %w", step, orderID, order.ErrNotFound)
	}
	var rec stateRecord
	if err := attributevalue.UnmarshalMap(out.Item, &rec); err != nil {
		return order.StepState{}, fmt.Errorf("unmarshal step %s of order %s: %w", step, orderID, err)
	}
	return rec.step(), nil
}
