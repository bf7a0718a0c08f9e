package api_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
)

// Every route of the routing table answers its method, and every other
// method on its path gets 405 with an Allow header naming exactly the
// table's methods for it: as API Gateway sends it (with the resource,
// under a custom domain's base path too) and as a direct invocation (the
// path alone). The requests name no caller, so a route that answers
// refuses them (403; the callbacks' route, which takes a token instead of
// a caller, 401) before it reads or writes anything.
func TestRoutingTable(t *testing.T) {
	s, err := api.NewService(api.Config{
		PageTokens: pagetoken.Fixed(nil),
		Log:        slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	methodsOf := map[string][]string{}
	for _, r := range api.Routes() {
		methodsOf[r.Resource] = append(methodsOf[r.Resource], r.Method)
	}
	every := []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch,
		http.MethodDelete, http.MethodOptions, http.MethodConnect, http.MethodTrace}
	id := order.NewID()
	for resource, methods := range methodsOf {
		path := strings.NewReplacer("{id}", id, "{workflow}", "order").Replace(resource)
		slices.Sort(methods)
		allow := strings.Join(methods, ", ")
		for _, sent := range []struct{ name, resource, path string }{
			{"direct", "", path},
			{"gateway", resource, path},
			{"gateway under a base path", resource, "/v1" + path},
		} {
			for _, method := range every {
				resp, err := s.Handle(context.Background(), events.APIGatewayProxyRequest{
					HTTPMethod: method, Resource: sent.resource, Path: sent.path,
				})
				if err != nil {
					t.Fatalf("%s %s (%s): %v", method, sent.path, sent.name, err)
				}
				if slices.Contains(methods, method) {
					refused := http.StatusForbidden
					if resource == api.ResourceCallbacks {
						refused = http.StatusUnauthorized
					}
					if resp.StatusCode != refused || resp.Headers["Allow"] != "" {
						t.Errorf("%s %s (%s): got %d %s, want the route's %d for a request with no caller",
							method, sent.path, sent.name, resp.StatusCode, resp.Body, refused)
					}
					continue
				}
				if resp.StatusCode != http.StatusMethodNotAllowed || resp.Headers["Allow"] != allow {
					t.Errorf("%s %s (%s): got %d with Allow %q, want 405 with Allow %q",
						method, sent.path, sent.name, resp.StatusCode, resp.Headers["Allow"], allow)
				}
			}
		}
	}
	if len(methodsOf) == 0 {
		t.Fatal("the routing table is empty")
	}
}
