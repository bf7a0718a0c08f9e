package api_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

const benchOrderBody = `{"customerId":"c-bench","lines":[{"sku":"BOOK-1","quantity":2},{"sku":"PEN-9","quantity":1}]}`

// BenchmarkSubmit measures one POST /orders through the handler: strict
// parsing, the PutItem of the order with its three step states, and the
// SendMessage of the first step's request.
func BenchmarkSubmit(b *testing.B) {
	w := testenv.NewWorld(b, order.DefaultTiming)
	ctx := context.Background()
	req := events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodPost, Resource: api.ResourceOrders, Path: "/orders",
		Headers: map[string]string{"Content-Type": "application/json"}, Body: benchOrderBody, RequestContext: testenv.As(testenv.Caller),
	}
	for b.Loop() {
		resp, err := w.API.Handle(ctx, req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("POST /orders: got %d %s, %v; want 202", resp.StatusCode, resp.Body, err)
		}
	}
}

// BenchmarkGetOrder measures one GET /orders/{id}: a strongly consistent
// GetItem of the order's one item, its steps' states in it.
func BenchmarkGetOrder(b *testing.B) {
	w := testenv.NewWorld(b, order.DefaultTiming)
	ctx := context.Background()
	id := w.Submit(b, ordertest.Submission{CustomerID: "c-bench", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}})
	req := events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodGet, Resource: api.ResourceOrder, Path: "/orders/" + id,
		PathParameters: map[string]string{"id": id}, RequestContext: testenv.As(testenv.Caller),
	}
	for b.Loop() {
		resp, err := w.API.Handle(ctx, req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /orders/%s: got %d %s, %v; want 200", id, resp.StatusCode, resp.Body, err)
		}
	}
}

// BenchmarkSearch measures one page of GET /orders over 2,000 orders of
// 10 customers: a Query of each of the 16 shards of the created index,
// the merge, and a BatchGetItem of the running orders' statuses (all of
// them run: nothing processes them).
func BenchmarkSearch(b *testing.B) {
	w := testenv.NewWorld(b, order.DefaultTiming)
	ctx := context.Background()
	for i := range 2000 {
		w.Submit(b, ordertest.Submission{CustomerID: fmt.Sprintf("c-%d", i%10), Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
		w.Clock.Advance(time.Second)
	}
	for _, bm := range []struct {
		name  string
		query map[string]string
	}{
		{"newest 20", nil},
		{"newest 100", map[string]string{"limit": "100"}},
		{"one customer's 20", map[string]string{"customer": "c-3"}},
		// Nothing matches: every shard reads its bound, 1,000 items.
		{"no match", map[string]string{"customer": "c-none"}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			req := events.APIGatewayProxyRequest{HTTPMethod: http.MethodGet, Resource: api.ResourceOrders, Path: "/orders",
				QueryStringParameters: bm.query, RequestContext: testenv.As(testenv.Caller)}
			for b.Loop() {
				resp, err := w.API.Handle(ctx, req)
				if err != nil || resp.StatusCode != http.StatusOK {
					b.Fatalf("GET /orders: got %d %s, %v; want 200", resp.StatusCode, resp.Body, err)
				}
			}
		})
	}
}
