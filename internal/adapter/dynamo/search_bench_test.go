package dynamo_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// readUnits counts the read requests a client makes and the read units
// DynamoDB says they consumed (it asks for them on every Query and
// BatchGetItem).
type readUnits struct {
	mu       sync.Mutex
	requests int
	units    float64
}

func (r *readUnits) middleware(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("readUnits", func(ctx context.Context, in middleware.InitializeInput,
		next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
		switch p := in.Parameters.(type) {
		case *dynamodb.QueryInput:
			p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		case *dynamodb.BatchGetItemInput:
			p.ReturnConsumedCapacity = types.ReturnConsumedCapacityTotal
		}
		out, md, err := next.HandleInitialize(ctx, in)
		var used []types.ConsumedCapacity
		switch o := out.Result.(type) {
		case *dynamodb.QueryOutput:
			if o.ConsumedCapacity != nil {
				used = append(used, *o.ConsumedCapacity)
			}
		case *dynamodb.BatchGetItemOutput:
			used = o.ConsumedCapacity
		}
		r.mu.Lock()
		defer r.mu.Unlock()
		if len(used) > 0 || err == nil {
			r.requests++
		}
		for _, c := range used {
			r.units += aws.ToFloat64(c.CapacityUnits)
		}
		return out, md, err
	}), middleware.After)
}

// BenchmarkSearchPage measures a page of a search over 2,000 orders of
// 10 customers, all running, and reports the read requests and read
// units (eventually consistent) each page costs: the Queries of the 16
// shards and the BatchGetItem of the listed orders' statuses.
func BenchmarkSearchPage(b *testing.B) {
	cfg := testenv.AWS(b)
	catalog := resources.New(testenv.Stage(b), benchWorkflow.Agents())
	catalog.Orders.Stream = false
	stack, clients := testenv.Provision(b, cfg, catalog)
	writer := dynamo.NewStore(clients.DynamoDB, stack.Catalog.Orders.Name)
	ctx := context.Background()
	start := time.Now().Add(-time.Hour)
	for i := range 2000 {
		at := start.Add(time.Duration(i) * time.Second)
		id := order.NewID()
		o := order.Order{ID: id, Status: order.StatusPending, Caller: testenv.Caller, RequestHash: "bench", KeyNonce: order.NewKeyNonce(),
			CreatedAt: at, UpdatedAt: at}.WithInput(order.LegacyInput(fmt.Sprintf("c-%d", i%10), []order.Line{{SKU: "BOOK-1", Quantity: 1}}, ""))
		if _, err := writer.CreateOrder(ctx, o, benchWorkflow.NewStates(id, "", at)); err != nil {
			b.Fatal(err)
		}
	}
	var units readUnits
	counted := cfg.Copy()
	counted.APIOptions = append(counted.APIOptions, units.middleware)
	store := dynamo.NewStore(dynamodb.NewFromConfig(counted), stack.Catalog.Orders.Name)
	for _, bm := range []struct {
		name string
		q    order.Query
	}{
		{"newest 20", order.Query{Limit: 20}},
		{"newest 100", order.Query{Limit: 100}},
		{"one customer's 20", order.Query{CustomerID: "c-3", Limit: 20}},
		{"one customer's last 10 minutes", order.Query{CustomerID: "c-3", CreatedFrom: start.Add(25 * time.Minute), Limit: 20}},
		{"no match", order.Query{CustomerID: "c-none", Limit: 20}},
	} {
		b.Run(bm.name, func(b *testing.B) {
			units.mu.Lock()
			units.requests, units.units = 0, 0
			units.mu.Unlock()
			for b.Loop() {
				if _, err := store.Search(ctx, bm.q, nil); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(units.requests)/float64(b.N), "requests/op")
			b.ReportMetric(units.units/float64(b.N), "RRU/op")
		})
	}
}
