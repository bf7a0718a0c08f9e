package api_test

import (
	"context"
	"net/http"
	"testing"

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
		Headers: map[string]string{"Content-Type": "application/json"}, Body: benchOrderBody,
	}
	for b.Loop() {
		resp, err := w.API.Handle(ctx, req)
		if err != nil || resp.StatusCode != http.StatusAccepted {
			b.Fatalf("POST /orders: got %d %s, %v; want 202", resp.StatusCode, resp.Body, err)
		}
	}
}

// BenchmarkGetOrder measures one GET /orders/{id}: a strongly consistent
// GetItem of the order and a Query of its steps.
func BenchmarkGetOrder(b *testing.B) {
	w := testenv.NewWorld(b, order.DefaultTiming)
	ctx := context.Background()
	id := w.Submit(b, ordertest.Submission{CustomerID: "c-bench", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}})
	req := events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodGet, Resource: api.ResourceOrder, Path: "/orders/" + id,
		PathParameters: map[string]string{"id": id},
	}
	for b.Loop() {
		resp, err := w.API.Handle(ctx, req)
		if err != nil || resp.StatusCode != http.StatusOK {
			b.Fatalf("GET /orders/%s: got %d %s, %v; want 200", id, resp.StatusCode, resp.Body, err)
		}
	}
}
