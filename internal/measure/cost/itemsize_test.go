package cost_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/measure/cost"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// TestTypicalOrderIsOneWriteUnit stores orders of growing size, takes each
// through every step the way the Scheduler does, and measures the stored
// item: an order of up to typicalLines lines must stay within 1 KB at its
// largest, so every write of its life costs one write unit.
func TestTypicalOrderIsOneWriteUnit(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	const typicalLines = 5
	ctx := context.Background()
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	stack, clients := testenv.Provision(t, testenv.AWS(t), resources.New(testenv.Stage(t), wf.Agents()))
	store := dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name)

	largest := func(lines int) int {
		now := time.Now()
		o := order.Order{ID: order.NewID(), CustomerID: "customer-00042", Status: order.StatusPending,
			IdempotencyKey: "checkout-2025-03-14-00042", KeyNonce: order.NewKeyNonce(), Caller: "AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a", RequestHash: "5f1c0b7e9a3d2c4b8e6f1a0d9c7b5e3f5f1c0b7e9a3d2c4b8e6f1a0d9c7b5e3f",
			CreatedAt: now, UpdatedAt: now}
		var ls []order.Line
		for i := range lines {
			ls = append(ls, order.Line{SKU: fmt.Sprintf("SKU-%06d", i), Quantity: 2})
		}
		o = o.WithInput(order.LegacyInput(o.CustomerID, ls, ""))
		steps := wf.NewStates(o.ID, "submit/2025/03/14/[$LATEST]4b1d8c/QX7PB2LA", now)
		if _, err := store.CreateOrder(ctx, o, steps); err != nil {
			t.Fatal(err)
		}
		size := itemSize(t, clients.DynamoDB, stack.Catalog.Orders.Name, o.ID)
		claimed := steps[0]
		for _, def := range wf.Steps {
			// As the Scheduler decides it: the next step claimed, or the
			// order ended.
			c := wf.Completion(claimed, "ref_k7q2m9x4t3vbn8c5wz6hjp2rfd", nil, "scheduler/2025/03/14/[$LATEST]9e2f/PL4K8XQZ", now)
			_, st, err := store.Apply(ctx, c.Transition(now))
			if err != nil {
				t.Fatalf("complete %s: %v", def.Name, err)
			}
			claimed = st
			size = max(size, itemSize(t, clients.DynamoDB, stack.Catalog.Orders.Name, o.ID))
		}
		return size
	}
	for _, lines := range []int{1, typicalLines} {
		if size := largest(lines); size > 1024 {
			t.Errorf("an order of %d lines grows to %d bytes, want at most 1024 (one write unit per write)", lines, size)
		} else {
			t.Logf("an order of %d lines is at most %d bytes", lines, size)
		}
	}
}

func itemSize(t *testing.T, db *dynamodb.Client, table, id string) int {
	t.Helper()
	out, err := db.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(table), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil {
		t.Fatal(err)
	}
	return cost.ItemSize(out.Item)
}
