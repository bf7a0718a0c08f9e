package api_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/pagetoken"
	"orderly/internal/testkit/testenv"
)

// searchAs sends GET resource?query as API Gateway would, and returns the
// response and, for a 200, its page.
func searchAs(t *testing.T, w *testenv.World, caller, resource string, query url.Values) (events.APIGatewayProxyResponse, api.SearchView) {
	t.Helper()
	single := map[string]string{}
	for k, v := range query {
		single[k] = v[len(v)-1]
	}
	resp, err := w.API.Handle(context.Background(), events.APIGatewayProxyRequest{
		HTTPMethod: http.MethodGet, Resource: resource, Path: resource,
		QueryStringParameters: single, MultiValueQueryStringParameters: query, RequestContext: testenv.As(caller),
	})
	if err != nil {
		t.Fatalf("GET %s?%s: %v", resource, query.Encode(), err)
	}
	var page api.SearchView
	if resp.StatusCode == http.StatusOK {
		if err := json.Unmarshal([]byte(resp.Body), &page); err != nil {
			t.Fatalf("GET %s: body %s: %v", resource, resp.Body, err)
		}
	}
	return resp, page
}

// everyPage follows a search's cursors to its end and returns the ids it
// listed, in order.
func everyPage(t *testing.T, w *testenv.World, caller, resource string, query url.Values) []string {
	t.Helper()
	var ids []string
	for pages := 0; ; pages++ {
		resp, page := searchAs(t, w, caller, resource, query)
		if resp.StatusCode != http.StatusOK || pages > 50 {
			t.Fatalf("GET %s?%s: %d %s (page %d)", resource, query.Encode(), resp.StatusCode, resp.Body, pages)
		}
		for _, o := range page.Orders {
			ids = append(ids, o.OrderID)
		}
		if page.NextCursor == "" {
			return ids
		}
		next, err := url.Parse(page.Links["next"])
		if err != nil || next.Query().Get("cursor") != page.NextCursor {
			t.Fatalf("links.next %q does not carry nextCursor", page.Links["next"])
		}
		query = next.Query()
	}
}

// A client finds its own orders and only them; an operator finds anyone's;
// a cursor pages through without a gap or a repeat, and works for its own
// search alone.
func TestSearchFindsTheCallersOwnOrders(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	const other = "AROAOTHERCLIENT000001:session"
	var mine, theirs, all []string
	for i := range 5 {
		id := orderID(t, post(t, w, validBody, nil))
		mine, all = append(mine, id), append(all, id)
		w.Clock.Advance(time.Second) // distinct, ordered creation times
		if i < 3 {
			id := orderID(t, postAs(t, w, other, strings.Replace(validBody, "c-42", "c-7", 1), nil))
			theirs, all = append(theirs, id), append(all, id)
			w.Clock.Advance(time.Second)
		}
	}
	slices.Reverse(mine)
	slices.Reverse(theirs)
	slices.Reverse(all)

	// Page by page, two at a time: every order of the caller, newest first.
	two := url.Values{"limit": {"2"}}
	if got := everyPage(t, w, testenv.Caller, api.ResourceOrders, two); !slices.Equal(got, mine) {
		t.Errorf("the client's search listed %q, want its own %q", got, mine)
	}
	if got := everyPage(t, w, other, api.ResourceOrders, two); !slices.Equal(got, theirs) {
		t.Errorf("the other client's search listed %q, want its own %q", got, theirs)
	}
	// Another caller's customer finds nothing of theirs.
	if got := everyPage(t, w, testenv.Caller, api.ResourceOrders, url.Values{"customer": {"c-7"}}); len(got) != 0 {
		t.Errorf("a search for another caller's customer listed %q", got)
	}
	if got := everyPage(t, w, "AROAOPERATOR000000001:alice", api.ResourceOperatorOrders, two); !slices.Equal(got, all) {
		t.Errorf("the operator's search listed %q, want every order %q", got, all)
	}
	resp, page := searchAs(t, w, "AROAOPERATOR000000001:alice", api.ResourceOperatorOrders, url.Values{"customer": {"c-7"}, "limit": {"1"}})
	if resp.StatusCode != http.StatusOK || len(page.Orders) != 1 || page.Orders[0].Caller != other || page.Orders[0].CustomerID != "c-7" {
		t.Fatalf("the operator's search for c-7: %d %s, want one order of %s with its caller", resp.StatusCode, resp.Body, other)
	}

	// A cursor continues its own search only: not the other client's, nor
	// the operators', nor the same one with another limit.
	_, first := searchAs(t, w, testenv.Caller, api.ResourceOrders, two)
	for _, tt := range []struct {
		name, caller, resource string
		query                  url.Values
	}{
		{"another client", other, api.ResourceOrders, url.Values{"limit": {"2"}}},
		{"the operators' route", "AROAOPERATOR000000001:alice", api.ResourceOperatorOrders, url.Values{"limit": {"2"}}},
		{"another limit", testenv.Caller, api.ResourceOrders, url.Values{"limit": {"3"}}},
	} {
		tt.query.Set("cursor", first.NextCursor)
		if resp, _ := searchAs(t, w, tt.caller, tt.resource, tt.query); resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, "query parameter cursor") {
			t.Errorf("%s used the client's cursor: %d %s, want 400 naming cursor", tt.name, resp.StatusCode, resp.Body)
		}
	}
}

// Bad input is a 400 naming the parameter, on either route.
func TestSearchRefusesBadParameters(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	for _, tt := range []struct {
		name  string
		query url.Values
		names string
	}{
		{"an unknown status", url.Values{"status": {"Lost"}}, "query parameter status"},
		{"a time that does not parse", url.Values{"created_from": {"yesterday"}}, "query parameter created_from"},
		{"a range ending before it starts", url.Values{"ended_from": {"2026-11-27T00:00:00Z"}, "ended_to": {"2026-11-26T00:00:00Z"}}, "query parameter ended_to"},
		{"a limit above the maximum", url.Values{"limit": {"101"}}, "query parameter limit"},
		{"a limit of zero", url.Values{"limit": {"0"}}, "query parameter limit"},
		{"an unknown parameter", url.Values{"caller": {"AROAOTHERCLIENT000001:session"}}, "query parameter caller"},
		{"a parameter sent twice", url.Values{"customer": {"c-42", "c-7"}}, "query parameter customer: sent 2 times"},
		{"a cursor that is not one", url.Values{"cursor": {"bm90IGEgY3Vyc29y"}}, "query parameter cursor"},
		{"an empty customer", url.Values{"customer": {""}}, "query parameter customer"},
	} {
		for _, resource := range []string{api.ResourceOrders, api.ResourceOperatorOrders} {
			resp, _ := searchAs(t, w, testenv.Caller, resource, tt.query)
			if resp.StatusCode != http.StatusBadRequest || !strings.Contains(resp.Body, tt.names) || !strings.Contains(resp.Body, `"invalid_request"`) ||
				strings.Contains(resp.Body, "invalid input") {
				t.Errorf("%s on %s: %d %s, want 400 naming %q", tt.name, resource, resp.StatusCode, resp.Body, tt.names)
			}
		}
	}
}

// A page token key that cannot be read fails searches alone, with a 503
// that shows nothing of why (the log has it), and only until it can be
// read: orders are still taken.
func TestSearchWithoutItsKeyIsUnavailableAndSubmitsStillWork(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	readable := false
	w.API = w.NewAPI(t, func(c *api.Config) {
		c.PageTokens = pagetoken.Loaded(func(context.Context) ([]byte, error) {
			if !readable {
				return nil, errors.New("read secret orderly-test-page-token-key: Secrets Manager answered AccessDeniedException")
			}
			return []byte("a page token key of 32 bytes or more"), nil
		})
	})
	id := orderID(t, post(t, w, validBody, nil))
	resp, _ := searchAs(t, w, testenv.Caller, api.ResourceOrders, nil)
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.Body, `"unavailable"`) ||
		strings.Contains(resp.Body, "AccessDenied") || strings.Contains(resp.Body, "page-token-key") {
		t.Fatalf("a search without the key: %d %s, want 503 unavailable saying nothing of the secret", resp.StatusCode, resp.Body)
	}
	readable = true
	if got := everyPage(t, w, testenv.Caller, api.ResourceOrders, nil); !slices.Equal(got, []string{id}) {
		t.Errorf("once the key is read, the search lists %q, want [%s]", got, id)
	}
}
