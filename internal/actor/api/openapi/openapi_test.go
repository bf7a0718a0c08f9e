package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"

	"orderly/internal/actor/api"
	"orderly/internal/actor/api/openapi"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// Every route the API serves is described, with the error shape, and the
// document is JSON an OpenAPI 3.1 reader takes (every $ref resolves).
func TestDocumentDescribesEveryRoute(t *testing.T) {
	var doc struct {
		OpenAPI    string                    `json:"openapi"`
		Paths      map[string]map[string]any `json:"paths"`
		Components struct {
			Schemas map[string]any `json:"schemas"`
		} `json:"components"`
	}
	raw := openapi.JSON(definition.MustShipped(order.DefaultTiming))
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v, version %q", err, doc.OpenAPI)
	}
	routes := []struct{ method, resource string }{
		{"post", api.ResourceOrders}, {"get", api.ResourceOrders}, {"get", api.ResourceOperatorOrders}, {"get", api.ResourceOrder}, {"get", api.ResourceOperatorOrder},
		{"post", api.ResourceCancel}, {"post", api.ResourceRedrive}, {"get", api.ResourceHistory}, {"get", api.ResourceOperatorHistory},
		// ResourceWorkflowOrders, once per workflow the stage runs.
		{"post", "/workflows/order/orders"},
	}
	for _, r := range routes {
		if doc.Paths[r.resource][r.method] == nil {
			t.Errorf("%s %s is not described", strings.ToUpper(r.method), r.resource)
		}
	}
	described := 0
	for _, item := range doc.Paths {
		described += len(item)
	}
	if described != len(routes) {
		t.Errorf("%d routes described, the API has %d", described, len(routes))
	}
	for _, part := range strings.Split(string(raw), `"$ref": "#/components/schemas/`)[1:] {
		name := part[:strings.Index(part, `"`)]
		if doc.Components.Schemas[name] == nil {
			t.Errorf("$ref to %s, which is not defined", name)
		}
	}
}
