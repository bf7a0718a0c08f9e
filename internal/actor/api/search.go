package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/order"
)

// OrderSummary is one order as GET /orders lists it.
type OrderSummary struct {
	OrderID string       `json:"orderId"`
	Status  order.Status `json:"status"`
	// Caller is the principal that submitted it: shown on the operators'
	// route only.
	Caller     string     `json:"caller,omitempty"`
	CustomerID string     `json:"customerId,omitempty"`
	Workflow   string     `json:"workflow"`
	Version    string     `json:"version"`
	CreatedAt  time.Time  `json:"createdAt"`
	EndedAt    *time.Time `json:"endedAt,omitempty"`
}

// SearchView is the body of GET /orders and GET /ops/orders: a page of
// orders, newest first, and, when more may follow, the cursor of the next
// page and its link. A page may hold fewer orders than the limit while
// more follow (each page reads a bounded part of the index): go on while
// there is a cursor.
type SearchView struct {
	Orders     []OrderSummary    `json:"orders"`
	NextCursor string            `json:"nextCursor,omitempty"`
	Links      map[string]string `json:"links,omitempty"`
}

// search lists the orders a query matches: the caller's own on GET
// /orders, anyone's on the operators' GET /ops/orders. The query is the
// request's parameters (ParseQuery); the cursor is a page token
// sealed for this very query, so that it can neither be read, altered,
// nor carried to another query (or from the operators' route to a
// client's).
func (s *Service) search(ctx context.Context, req events.APIGatewayProxyRequest, operator bool) (events.APIGatewayProxyResponse, error) {
	caller, err := PrincipalOf(req.RequestContext.Identity)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	params, err := queryParams(req)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	q, err := ParseQuery(params)
	if err != nil {
		return events.APIGatewayProxyResponse{}, err
	}
	if !operator {
		q.Caller = caller.ID
	}
	route := ResourceOrders
	if operator {
		route = ResourceOperatorOrders
	}
	pages, err := s.pages(ctx)
	if err != nil {
		// The reason is the operators', in the log; the client retries.
		s.log.ErrorContext(ctx, "search without the page token key", "error", err)
		return events.APIGatewayProxyResponse{}, fmt.Errorf("search cannot seal its cursors now; retry later: %w", errUnavailable)
	}
	// A cursor holds the route with the query: one of the operators'
	// route never continues a client's search, nor the other way round.
	sealedFor := route + " " + q.Key()
	badCursor := fmt.Errorf("query parameter %s: not a cursor of this search (send back the nextCursor of the page before, "+
		"with the same other parameters): %w", ParamCursor, order.ErrInvalid)
	var position []byte
	if cursor, ok := params[ParamCursor]; ok {
		if position, err = pages.Open(sealedFor, cursor); err != nil {
			return events.APIGatewayProxyResponse{}, badCursor
		}
	}
	page, err := s.store.Search(ctx, q, position)
	if errors.Is(err, order.ErrInvalid) {
		// Sealed by this stage, yet not a position of its table.
		return events.APIGatewayProxyResponse{}, badCursor
	}
	if err != nil {
		return events.APIGatewayProxyResponse{}, fmt.Errorf("search orders: %w", err)
	}
	view := SearchView{Orders: make([]OrderSummary, 0, len(page.Orders))}
	for _, o := range page.Orders {
		view.Orders = append(view.Orders, summaryOf(o, operator))
	}
	if page.Next != nil {
		view.NextCursor = pages.Seal(sealedFor, page.Next)
		next := url.Values{}
		for name, v := range params {
			next.Set(name, v)
		}
		next.Set(ParamCursor, view.NextCursor)
		view.Links = map[string]string{"next": route + "?" + next.Encode()}
	}
	return jsonResponse(http.StatusOK, view), nil
}

// summaryOf is how a search lists o: with its caller on the operators'
// route only.
func summaryOf(o order.Summary, operator bool) OrderSummary {
	sum := OrderSummary{OrderID: o.ID, Status: o.Status, CustomerID: o.CustomerID, Workflow: o.Workflow, Version: o.Version, CreatedAt: o.CreatedAt}
	if operator {
		sum.Caller = o.Caller
	}
	if !o.EndedAt.IsZero() {
		sum.EndedAt = &o.EndedAt
	}
	return sum
}

// queryParams are a request's query string parameters, each sent once: a
// parameter sent twice is ambiguous, and refused rather than guessed. API
// Gateway puts every value in the multi-value map and the last in the
// other; a direct invocation may send either.
func queryParams(req events.APIGatewayProxyRequest) (map[string]string, error) {
	params := map[string]string{}
	for name, values := range req.MultiValueQueryStringParameters {
		if len(values) != 1 {
			return nil, fmt.Errorf("query parameter %s: sent %d times; send it once: %w", excerpt(name), len(values), order.ErrInvalid)
		}
		params[name] = values[0]
	}
	for name, v := range req.QueryStringParameters {
		if multi, ok := params[name]; ok && multi != v {
			return nil, fmt.Errorf("query parameter %s: two values; send it once: %w", excerpt(name), order.ErrInvalid)
		}
		params[name] = v
	}
	return params, nil
}
