package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// expiresAt reads an item's TTL attribute: 0 when it has none.
func expiresAt(t *testing.T, item map[string]types.AttributeValue) int64 {
	t.Helper()
	n, ok := item[resources.AttrExpiresAt].(*types.AttributeValueMemberN)
	if !ok {
		return 0
	}
	v, err := strconv.ParseInt(n.Value, 10, 64)
	if err != nil {
		t.Fatalf("%s = %q", resources.AttrExpiresAt, n.Value)
	}
	return v
}

func orderItem(t *testing.T, e running, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := e.Clients().DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(e.Stack.Catalog.Orders.Name),
		Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil || out.Item == nil {
		t.Fatalf("order item %s: %v", id, err)
	}
	return out.Item
}

// historyTTLs lists the TTL of every history item of an order.
func historyTTLs(t *testing.T, e running, id string) []int64 {
	t.Helper()
	out, err := e.Clients().DynamoDB.Query(context.Background(), &dynamodb.QueryInput{TableName: aws.String(e.Stack.Catalog.History.Name),
		KeyConditionExpression:    aws.String("#id = :id"),
		ExpressionAttributeNames:  map[string]string{"#id": resources.AttrOrderID},
		ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true)})
	if err != nil {
		t.Fatal(err)
	}
	var ttls []int64
	for _, it := range out.Items {
		ttls = append(ttls, expiresAt(t, it))
	}
	return ttls
}

// Ended orders and their history expire through DynamoDB TTL after the
// retention; an order in Error never does while it is unresolved; reads
// treat an expired order as gone (DynamoDB deletes it within days), and
// its Idempotency-Key makes a new order.
func TestRetention(t *testing.T) {
	t.Parallel()
	const retention = 3 * time.Second
	e := start(t, func(c *engine.Config) { c.Retention = retention })
	// A history item expires no earlier than its order (its TTL is its
	// change's time + retention + a day, restamped at the end if that
	// would come before the order's), and never while the order runs.
	kept := func(ttls []int64, orderExpires int64) bool {
		for _, ttl := range ttls {
			if ttl < orderExpires {
				return false
			}
		}
		return len(ttls) > 0
	}
	secs := int64(retention / time.Second)

	// An order that ends: its item expires a retention after its end, its
	// history a margin later.
	done := submitKeyed(t, e, "retention-1", lines("BOOK-1"))
	v := await(t, e, done, 20*time.Second)
	ended := v.UpdatedAt.Unix()
	if got := expiresAt(t, orderItem(t, e, done)); got != ended+secs {
		t.Errorf("a Processed order expires at %d, want its end %d + %s", got, ended, retention)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		ttls := historyTTLs(t, e, done)
		return kept(ttls, ended+secs), testenv.Describe(ttls)
	})

	// An order in Error: no TTL on it, and its history pinned.
	stuck := submit(t, e, lines("TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT-1"))
	if v := await(t, e, stuck, 20*time.Second); v.Status != order.StatusError {
		t.Fatalf("order %s is %s, want Error", stuck, v.Status)
	}
	if got := expiresAt(t, orderItem(t, e, stuck)); got != 0 {
		t.Errorf("an order in Error expires at %d", got)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		ttls := historyTTLs(t, e, stuck)
		for _, ttl := range ttls {
			if ttl != 0 {
				return false, testenv.Describe(ttls)
			}
		}
		return len(ttls) > 0, testenv.Describe(ttls)
	})
	// Past the retention, the ended order reads as gone; the one in Error
	// is there.
	time.Sleep(retention + time.Second)
	if resp, err := http.Get(e.URL() + "/orders/" + done); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an expired order: %v, %v; want 404", resp.Status, err)
	}
	if v := status(t, e, stuck); v.Status != order.StatusError {
		t.Errorf("the order in Error is %s after the retention", v.Status)
	}
	// Its key, replayed, makes a new order, not a replay of the expired one.
	again := submitKeyed(t, e, "retention-1", lines("BOOK-1"))
	v = await(t, e, again, 20*time.Second)
	if again != done || v.Status != order.StatusProcessed || v.CreatedAt.Unix() <= ended {
		t.Errorf("the key replayed after expiry: order %s %s created %s; want %s made anew", again, v.Status, v.CreatedAt, done)
	}
	// Its history is its own: the expired order's, kept a margin longer,
	// is not shown with it.
	for _, tr := range history(t, e, again).History {
		if tr.At.Before(v.CreatedAt) {
			t.Errorf("the new order's history shows the expired one's %+v", tr)
		}
	}

	// Resolved, the order in Error expires like any other, its history
	// restamped.
	if code, body := post(t, e, "/orders/"+stuck+"/redrive", ``); code != http.StatusAccepted {
		t.Fatalf("redrive: %d %v", code, body)
	}
	v = await(t, e, stuck, 20*time.Second)
	if got, end := expiresAt(t, orderItem(t, e, stuck)), v.UpdatedAt.Unix(); v.Status != order.StatusFailed || got != end+secs {
		t.Errorf("the redriven order is %s, expiring at %d; want Failed, expiring at %d", v.Status, got, end+secs)
	}
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		ttls := historyTTLs(t, e, stuck)
		return kept(ttls, v.UpdatedAt.Unix()+secs), testenv.Describe(ttls)
	})
}

func submitKeyed(t *testing.T, e running, key string, sub ordertest.Submission) string {
	t.Helper()
	body, _ := json.Marshal(sub)
	req, _ := http.NewRequest(http.MethodPost, e.URL()+"/orders", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct{ OrderID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || (resp.StatusCode != http.StatusAccepted && resp.StatusCode != http.StatusOK) {
		t.Fatalf("submit: %d, %v", resp.StatusCode, err)
	}
	return out.OrderID
}
