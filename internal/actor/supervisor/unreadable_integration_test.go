package supervisor_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/actor/supervisor"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// counted sums the EMF counts of a metric whose source property is source.
func counted(t *testing.T, emf *testenv.JSONLines, name, source string) int {
	t.Helper()
	n := 0
	for _, rec := range emf.Records(t) {
		if v, ok := rec[name].(float64); ok && rec["source"] == source {
			n += int(v)
		}
	}
	return n
}

// putUnreadable puts an order item this build cannot decode (its Steps are
// not a list) into the due index: in the shard of order near, due just
// before it.
func putUnreadable(t *testing.T, w *testenv.World, near string) string {
	t.Helper()
	ctx := context.Background()
	table := aws.String(w.Stack.Catalog.Orders.Name)
	out, err := w.Clients.DynamoDB.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: near}}})
	if err != nil || out.Item == nil {
		t.Fatalf("read order %s: %v", near, err)
	}
	dueAt, err := strconv.ParseInt(out.Item[resources.AttrDueAt].(*types.AttributeValueMemberN).Value, 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	bad := order.NewID()
	_, err = w.Clients.DynamoDB.PutItem(ctx, &dynamodb.PutItemInput{TableName: table, Item: map[string]types.AttributeValue{
		resources.AttrOrderID:  &types.AttributeValueMemberS{Value: bad},
		resources.AttrDueShard: out.Item[resources.AttrDueShard],
		resources.AttrDueAt:    &types.AttributeValueMemberN{Value: strconv.FormatInt(dueAt-1000, 10)},
		"Status":               &types.AttributeValueMemberS{Value: string(order.StatusProcessing)},
		"Steps":                &types.AttributeValueMemberS{Value: "not a list of steps"},
		"Active":               &types.AttributeValueMemberN{Value: "0"},
	}})
	if err != nil {
		t.Fatalf("put the unreadable item: %v", err)
	}
	return bad
}

// One item the Supervisor cannot read must not stop its shard: the other
// due orders are recovered, the item is counted on every run and operators
// are alerted about it once, not on every run.
func TestAnUnreadableDueItemIsSkippedCountedAndAlertedOnce(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	id := w.Submit(t, someOrder)
	expire(t, w, id)
	bad := putUnreadable(t, w, id)

	var emf testenv.JSONLines
	sup := func(tweaks ...func(*supervisor.Config)) *supervisor.Service {
		return w.Supervisor(append(tweaks, func(c *supervisor.Config) { c.Metrics = metrics.New(&emf, "supervisor") })...)
	}
	// The alert cannot be sent at first (SNS is down): the run says so, and
	// the due order is recovered all the same.
	r, err := sup(func(c *supervisor.Config) { c.Notifier = failingNotifier{} }).Run(context.Background())
	if err == nil || r.Retried != 1 || r.Unreadable != 1 {
		t.Fatalf("first run: report %+v, error %v; want the due order retried, one unreadable item and the failed alert", r, err)
	}
	if st := w.Step(t, id, first); st.ProcessState != order.Pending || st.FailureCount != 1 {
		t.Errorf("the due order's step is %s with %d failures, want Pending with 1: recovered", st.ProcessState, st.FailureCount)
	}
	// The next run sends it.
	if r, err := sup().Run(context.Background()); err != nil || r.Unreadable != 1 || r.Alerted != 1 {
		t.Fatalf("second run: report %+v, error %v; want the unreadable item found again and alerted", r, err)
	}
	a := w.Alerts.Await(t, bad, 10*time.Second)
	if a.Kind != order.AlertItemUnreadable || a.Reason == "" {
		t.Errorf("alert %s, want %s with a reason", testenv.Describe(a), order.AlertItemUnreadable)
	}

	// A later run, by another Supervisor instance (a new invocation):
	// counted again, not alerted again.
	w.Clock.Advance(time.Minute)
	if r, err := sup().Run(context.Background()); err != nil || r.Unreadable != 1 || r.Alerted != 0 {
		t.Fatalf("third run: report %+v, error %v; want the unreadable item found again, not alerted", r, err)
	}
	if a, ok := w.Alerts.Next(bad, 3*time.Second); ok {
		t.Errorf("second alert %s, want operators alerted once", testenv.Describe(a))
	}
	if n := counted(t, &emf, metrics.PoisonMessages, "due-index"); n != 3 {
		t.Errorf("%s counted %d unreadable due items, want 3 (one per run)", metrics.PoisonMessages, n)
	}

	// Another version of the item (a failed repair): alerted again.
	putUnreadableAs(t, w, bad, "still not a list")
	if r, err := sup().Run(context.Background()); err != nil || r.Unreadable != 1 {
		t.Fatalf("fourth run: report %+v, error %v; want the unreadable item found again", r, err)
	}
	if a := w.Alerts.Await(t, bad, 10*time.Second); a.Kind != order.AlertItemUnreadable {
		t.Errorf("alert %s about the item's new version, want %s", testenv.Describe(a), order.AlertItemUnreadable)
	}
}

// putUnreadableAs changes an unreadable item's Steps, as an operator's
// failed repair would: a new version of it.
func putUnreadableAs(t *testing.T, w *testenv.World, id, steps string) {
	t.Helper()
	_, err := w.Clients.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:                 aws.String(w.Stack.Catalog.Orders.Name),
		Key:                       map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}},
		UpdateExpression:          aws.String("SET Steps = :s"),
		ExpressionAttributeValues: map[string]types.AttributeValue{":s": &types.AttributeValueMemberS{Value: steps}},
	})
	if err != nil {
		t.Fatalf("change the unreadable item: %v", err)
	}
}
