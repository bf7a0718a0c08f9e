package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
)

// A pause is one item of the orders table, under order.PauseKey: a key no
// order has. It carries none of the attributes the table's indexes are
// keyed on, so no index (due, error, search) ever holds it, and the
// Scheduler's stream filter never passes it. The recorder reads its
// changes from the stream into the pause's history.
type pauseItem struct {
	Key          string            `dynamodbav:"OrderID"`
	Kind         order.PauseKind   `dynamodbav:"PauseKind"`
	Name         string            `dynamodbav:"PauseName"`
	By           string            `dynamodbav:"By,omitempty"`
	Reason       string            `dynamodbav:"Reason,omitempty"`
	Since        time.Time         `dynamodbav:"Since,omitempty"`
	Until        time.Time         `dynamodbav:"Until,omitempty"`
	Submissions  order.Submissions `dynamodbav:"Submissions,omitempty"`
	Resumed      time.Time         `dynamodbav:"Resumed,omitempty"`
	ResumedBy    string            `dynamodbav:"ResumedBy,omitempty"`
	ResumeReason string            `dynamodbav:"ResumeReason,omitempty"`
	// Changed is when the item was last written: its history entry's time.
	Changed time.Time `dynamodbav:"Changed,omitempty"`
}

func (p pauseItem) pause() order.Pause {
	return order.Pause{Kind: p.Kind, Name: p.Name, By: p.By, Reason: p.Reason, Since: p.Since, Until: p.Until,
		Submissions: p.Submissions, Resumed: p.Resumed, ResumedBy: p.ResumedBy, ResumeReason: p.ResumeReason}
}

// PauseItem reads a pause's item (an image of the stream, or a read).
func PauseItem(item map[string]types.AttributeValue) (order.Pause, error) {
	var p pauseItem
	if err := attributevalue.UnmarshalMap(item, &p); err != nil {
		return order.Pause{}, fmt.Errorf("pause item: %w", err)
	}
	return p.pause(), nil
}

// Pause stores a pause with one UpdateItem: a pause that is on already
// keeps its Since and takes the new end, reason and who. It returns the
// pause as stored.
func (s *Store) Pause(ctx context.Context, p order.Pause) (order.Pause, error) {
	upd := expression.Set(expression.Name("PauseKind"), expression.Value(p.Kind)).
		Set(expression.Name("PauseName"), expression.Value(p.Name)).
		Set(expression.Name("By"), expression.Value(p.By)).
		Set(expression.Name("Reason"), expression.Value(p.Reason)).
		Set(expression.Name("Until"), expression.Value(p.Until.UTC())).
		Set(expression.Name("Since"), expression.IfNotExists(expression.Name("Since"), expression.Value(p.Since.UTC()))).
		Set(expression.Name("Changed"), expression.Value(s.now().UTC())).
		Remove(expression.Name("Resumed")).Remove(expression.Name("ResumedBy")).Remove(expression.Name("ResumeReason"))
	if p.Submissions != "" {
		upd = upd.Set(expression.Name("Submissions"), expression.Value(p.Submissions))
	} else {
		upd = upd.Remove(expression.Name("Submissions"))
	}
	out, err := s.updatePause(ctx, p.Kind, p.Name, nil, upd, types.ReturnValueAllNew)
	if err != nil {
		return order.Pause{}, fmt.Errorf("pause %s: %w", p.Subject(), err)
	}
	return out, nil
}

// Resume ends a pause with one conditional UpdateItem and returns the
// pause it ended; order.ErrNotPaused when none was on.
func (s *Store) Resume(ctx context.Context, kind order.PauseKind, name, by, reason string) (order.Pause, error) {
	since := expression.Name("Since")
	now := s.now().UTC()
	upd := expression.Set(expression.Name("Resumed"), expression.Value(now)).
		Set(expression.Name("Changed"), expression.Value(now)).
		Set(expression.Name("ResumedBy"), expression.Value(by)).
		Remove(since)
	if reason != "" {
		upd = upd.Set(expression.Name("ResumeReason"), expression.Value(reason))
	} else {
		upd = upd.Remove(expression.Name("ResumeReason"))
	}
	cond := expression.AttributeExists(since)
	out, err := s.updatePause(ctx, kind, name, &cond, upd, types.ReturnValueAllOld)
	var failed *types.ConditionalCheckFailedException
	if errors.As(err, &failed) {
		return order.Pause{}, fmt.Errorf("resume %s %s: %w", kind, name, order.ErrNotPaused)
	}
	if err != nil {
		return order.Pause{}, fmt.Errorf("resume %s %s: %w", kind, name, err)
	}
	return out, nil
}

func (s *Store) updatePause(ctx context.Context, kind order.PauseKind, name string, cond *expression.ConditionBuilder, upd expression.UpdateBuilder, values types.ReturnValue) (order.Pause, error) {
	b := expression.NewBuilder().WithUpdate(upd)
	if cond != nil {
		b = b.WithCondition(*cond)
	}
	expr, err := b.Build()
	if err != nil {
		return order.Pause{}, fmt.Errorf("build update: %w", err)
	}
	out, err := s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: orderKey(order.PauseKey(kind, name)),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
		ReturnValues: values,
	})
	if err != nil {
		return order.Pause{}, err
	}
	return PauseItem(out.Attributes)
}

// PauseOf reads one pause (eventually consistent: an agent that reads it
// a moment late calls once more). A service or workflow never paused has
// a Pause that is not On.
func (s *Store) PauseOf(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	out, err := s.client.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(s.table), Key: orderKey(order.PauseKey(kind, name))})
	if err != nil {
		return order.Pause{}, fmt.Errorf("read pause of %s %s: %w", kind, name, err)
	}
	if out.Item == nil {
		return order.Pause{Kind: kind, Name: name}, nil
	}
	return PauseItem(out.Item)
}

// PausesOf reads the pauses of the named services and workflows, with
// BatchGetItem: one pause each, in the order asked, not On when none was
// ever made.
func (s *Store) PausesOf(ctx context.Context, services, workflows []string) ([]order.Pause, error) {
	var want []order.Pause
	for _, n := range services {
		want = append(want, order.Pause{Kind: order.PauseService, Name: n})
	}
	for _, n := range workflows {
		want = append(want, order.Pause{Kind: order.PauseWorkflow, Name: n})
	}
	found := map[string]order.Pause{}
	for start := 0; start < len(want); start += batchGetLimit {
		var keys []map[string]types.AttributeValue
		for _, p := range want[start:min(start+batchGetLimit, len(want))] {
			keys = append(keys, orderKey(order.PauseKey(p.Kind, p.Name)))
		}
		items, err := s.batchGet(ctx, types.KeysAndAttributes{Keys: keys})
		if err != nil {
			return nil, fmt.Errorf("read pauses: %w", err)
		}
		for _, item := range items {
			p, err := PauseItem(item)
			if err != nil {
				return nil, err
			}
			found[order.PauseKey(p.Kind, p.Name)] = p
		}
	}
	for i, p := range want {
		if f, ok := found[order.PauseKey(p.Kind, p.Name)]; ok {
			want[i] = f
		}
	}
	return want, nil
}
