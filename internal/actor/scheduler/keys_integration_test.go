package scheduler_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/actor/api"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/remote"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// shipped is the shipped workflow, whose steps name the calls the client makes.
var shipped = ordertest.Built(order.DefaultTiming)

// submitWithKey posts an order with an Idempotency-Key through the API
// handler and returns its id.
func submitWithKey(t *testing.T, w *testenv.World, key string) string {
	t.Helper()
	body, _ := json.Marshal(someOrder)
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders", Body: string(body),
		Headers:        map[string]string{"Content-Type": "application/json", "Idempotency-Key": key},
		RequestContext: testenv.As(testenv.Caller),
	})
	if err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: status %d, error %v, body %s", resp.StatusCode, err, resp.Body)
	}
	var out struct{ OrderID string }
	if err := json.Unmarshal([]byte(resp.Body), &out); err != nil {
		t.Fatalf("submit response: %v", err)
	}
	return out.OrderID
}

// oneRequest takes the one request an agent's queue holds.
func oneRequest(t *testing.T, w *testenv.World, agent string) order.StepRequest {
	t.Helper()
	reqs := w.Requests(t, agent)
	if len(reqs) != 1 {
		t.Fatalf("got %d %s requests, want 1: %s", len(reqs), agent, testenv.Describe(reqs))
	}
	return reqs[0]
}

// simulated serves a fresh remote-service simulator and returns it with a
// client of it, as an agent calls it.
func simulated(t *testing.T) (*simulator.Server, *remote.Client) {
	t.Helper()
	sim, err := simulator.New()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(func() {
		sim.Close()
		ts.Close()
	})
	return sim, remote.NewClient(ts.URL, ts.Client(), shipped)
}

// deleteItem removes an order's item directly, as DynamoDB's TTL does once
// the order's ExpiresAt has passed (within days; the engine treats it as
// gone from then on): afterwards nothing of the order is left to find.
func deleteItem(t *testing.T, w *testenv.World, id string) {
	t.Helper()
	_, err := w.Clients.DynamoDB.DeleteItem(context.Background(), &dynamodb.DeleteItemInput{
		TableName: aws.String(w.Stack.Catalog.Orders.Name),
		Key:       map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatalf("delete order %s as its TTL would: %v", id, err)
	}
}

// A remote service's undo needs nothing but the key of the work, so a key
// anyone holding the order id could work out would let them undo it. Keys
// of new orders come from a secret the order item alone holds: they do
// not contain the order id and differ from the old derivation, they are
// the same for every attempt of a step, and an undo uses its step's key.
func TestRemoteKeysAreUnguessable(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	first := oneRequest(t, w, ordertest.AgentInventory)
	if err := order.ValidateIdempotencyKey(first.IdempotencyKey); err != nil {
		t.Errorf("key %q is not a valid Idempotency-Key: %v", first.IdempotencyKey, err)
	}
	if first.IdempotencyKey == order.IdempotencyKeyFor(id, first.Step) || strings.Contains(first.IdempotencyKey, id) {
		t.Fatalf("got key %q for order %s: it can be worked out from the order id", first.IdempotencyKey, id)
	}

	// Attempt 2 of the same step: the same key.
	timeOut(t, w, id)
	mustHandleStream(t, s, w.StreamEvent(t, id))
	if again := oneRequest(t, w, ordertest.AgentInventory); again.Attempt != 2 || again.IdempotencyKey != first.IdempotencyKey {
		t.Errorf("attempt %d has key %q, want attempt 2 with the step's key %q", again.Attempt, again.IdempotencyKey, first.IdempotencyKey)
	}

	// The next step has a key of its own.
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 2, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
	pay := oneRequest(t, w, ordertest.AgentPayment)
	if pay.IdempotencyKey == first.IdempotencyKey || pay.IdempotencyKey == order.IdempotencyKeyFor(id, pay.Step) {
		t.Errorf("payment key %q: want one of its own, not %q nor the old derivation", pay.IdempotencyKey, first.IdempotencyKey)
	}

	// Payment is refused: the reservation is undone with its own key.
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "card declined"})
	undo := oneRequest(t, w, ordertest.AgentInventory)
	if !undo.Undo || undo.IdempotencyKey != first.IdempotencyKey {
		t.Errorf("got %s with key %q, want the undo of the reservation with its key %q", testenv.Describe(undo), undo.IdempotencyKey, first.IdempotencyKey)
	}
}

// Orders written before keys had a secret (in flight during the deploy)
// keep the keys their earlier attempts used: the remote services must
// recognise a retry of work they did, and undo it.
func TestOrdersWithoutANonceKeepTheirKeys(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	w.Requests(t, ordertest.AgentInventory)
	// The item as the previous version wrote it: no nonce.
	_, err := w.Clients.DynamoDB.UpdateItem(context.Background(), &dynamodb.UpdateItemInput{
		TableName:        aws.String(w.Stack.Catalog.Orders.Name),
		Key:              map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}},
		UpdateExpression: aws.String("REMOVE " + keyNonceAttr),
	})
	if err != nil {
		t.Fatalf("remove the nonce: %v", err)
	}
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
	if pay := oneRequest(t, w, ordertest.AgentPayment); pay.IdempotencyKey != order.IdempotencyKeyFor(id, ordertest.StepChargePayment) {
		t.Errorf("payment key %q, want the old derivation %q", pay.IdempotencyKey, order.IdempotencyKeyFor(id, ordertest.StepChargePayment))
	}
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "card declined"})
	if undo := oneRequest(t, w, ordertest.AgentInventory); !undo.Undo || undo.IdempotencyKey != order.IdempotencyKeyFor(id, ordertest.StepReserveInventory) {
		t.Errorf("got %s with key %q, want the undo of the reservation with the old key %q", testenv.Describe(undo), undo.IdempotencyKey,
			order.IdempotencyKeyFor(id, ordertest.StepReserveInventory))
	}
}

// An Idempotency-Key used again after its order expired names the same
// order id, but the order is a new one: the remote services must do its
// work afresh, not replay the expired order's (which would leave it
// Processed with nothing done) nor refuse it.
func TestAKeyReusedAfterExpiryGetsNewRemoteKeys(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	sim, client := simulated(t)
	ctx := context.Background()
	const key = "checkout-2025-03-14-0042"

	id := submitWithKey(t, w, key)
	before := oneRequest(t, w, ordertest.AgentInventory)
	ref, err := client.Call(ctx, ordertest.AgentInventory, before)
	if err != nil {
		t.Fatalf("first order's reservation: %v", err)
	}

	deleteItem(t, w, id)
	again := submitWithKey(t, w, key)
	if again != id {
		t.Fatalf("the key names order %s now, %s before: the premise of this test is gone", again, id)
	}
	after := oneRequest(t, w, ordertest.AgentInventory)
	if after.IdempotencyKey == before.IdempotencyKey {
		t.Fatalf("the new order's reservation has the expired order's key %q", after.IdempotencyKey)
	}
	newRef, err := client.Call(ctx, ordertest.AgentInventory, after)
	if err != nil {
		t.Fatalf("new order's reservation: %v", err)
	}
	if newRef.Reference == ref.Reference || sim.Calls(ordertest.AgentInventory, after.IdempotencyKey) != 1 {
		t.Errorf("got reference %q (the expired order's was %q), %d calls with the new key; want new work under a new key",
			newRef.Reference, ref.Reference, sim.Calls(ordertest.AgentInventory, after.IdempotencyKey))
	}
}

// keyNonceAttr is the order item's attribute holding the secret of its
// remote keys.
const keyNonceAttr = "Nonce"

// The nonce is written by the submission's one PutItem, with the order,
// never by a second write; and nothing clients or operators are shown of
// the order (its views, histories and status events) carries it.
func TestKeyNonceIsWrittenWithTheOrderAndNeverShown(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	var writes []string
	counting := dynamodb.NewFromConfig(testenv.AWS(t), func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
			return st.Initialize.Add(middleware.InitializeMiddlewareFunc("count-writes", func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				if op := awsmiddleware.GetOperationName(ctx); op != "GetItem" && op != "Query" && op != "BatchGetItem" {
					writes = append(writes, op)
				}
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
		})
	})
	w.API = w.NewAPI(t, func(c *api.Config) { c.Store = dynamo.NewStore(counting, w.Stack.Catalog.Orders.Name).As("submit") })
	id := submitWithKey(t, w, "checkout-7f3a")
	if len(writes) != 1 || writes[0] != "PutItem" {
		t.Errorf("the submission made the writes %v, want one PutItem", writes)
	}
	item, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(w.Stack.Catalog.Orders.Name), ConsistentRead: aws.Bool(true),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}},
	})
	if err != nil {
		t.Fatal(err)
	}
	n, ok := item.Item[keyNonceAttr].(*types.AttributeValueMemberS)
	if !ok || len(n.Value) < 26 {
		t.Fatalf("the order item's %s is %#v, want a nonce of at least 26 base32 characters", keyNonceAttr, item.Item[keyNonceAttr])
	}

	// The order goes on and ends: every change is recorded and shown.
	o := watch(t, w, id)
	s := w.Scheduler("s1")
	oneRequest(t, w, ordertest.AgentInventory)
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded, Reference: "res-1"})
	o.record(t)
	oneRequest(t, w, ordertest.AgentPayment)
	mustApplyReplies(t, s, order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "card declined"})
	o.record(t)
	for where, body := range o.shown(t) {
		if strings.Contains(body, n.Value) {
			t.Errorf("%s shows the key nonce: %s", where, body)
		}
	}
}
