package openapi_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/actor/api/openapi"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
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
	raw := openapi.JSON(ordertest.Built(order.DefaultTiming))
	if err := json.Unmarshal(raw, &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("document: %v, version %q", err, doc.OpenAPI)
	}
	routes := []struct{ method, resource string }{
		{"post", api.ResourceOrders}, {"get", api.ResourceOrders}, {"get", api.ResourceOperatorOrders}, {"get", api.ResourceOrder}, {"get", api.ResourceOperatorOrder},
		{"post", api.ResourceCancel}, {"post", api.ResourceRedrive}, {"get", api.ResourceHistory}, {"get", api.ResourceOperatorHistory},
		{"post", api.ResourceEvent}, {"post", api.ResourceOperatorEvent}, {"post", api.ResourceCallbacks}, {"post", api.ResourceCallbacksIAM},
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

// The document describes each view's records exactly as the API writes
// them: a client's with only the fields a client reads, an operator's with
// every one.
func TestDocumentDescribesTheViewsAsWritten(t *testing.T) {
	var doc struct {
		Components struct {
			Schemas map[string]struct {
				Properties struct {
					Steps struct {
						Items struct {
							Properties map[string]any `json:"properties"`
						} `json:"items"`
					} `json:"steps"`
				} `json:"properties"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openapi.JSON(ordertest.Built(order.DefaultTiming)), &doc); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	wf := order.Workflow{Steps: []order.StepDef{{Name: "ship", ResultShownToClient: true}, {Name: "cool-off", Wait: &order.Wait{For: time.Hour}},
		{Name: "review", Wait: &order.Wait{Event: "review", Timeout: time.Hour}},
		{Name: "charge", Agent: "payment", Poll: &order.PollWait{Timeout: time.Hour, Every: time.Minute}}}}
	o := order.Order{ID: order.NewID(), Status: order.StatusError, CreatedAt: now, UpdatedAt: now}
	cooling := order.StepState{Step: "cool-off", ProcessState: order.Waiting, Attempt: 1, Since: now, CompleteBy: now.Add(time.Hour), UpdatedAt: now}
	reviewing, charging := cooling, cooling
	reviewing.Step = "review"
	charging.Step, charging.DueAt = "charge", now.Add(time.Minute)
	steps := []order.StepState{{Step: "ship", Agent: "shipping", ProcessState: order.Error, Attempt: 2, FailureCount: 1, CompleteBy: now,
		LockedBy: "s1", LastError: "refused", Reference: "shp_1", Result: json.RawMessage(`{"id":"shp_1"}`), UpdatedAt: now, Undo: true}}
	waits := order.Order{ID: order.NewID(), Status: order.StatusWaiting, CreatedAt: now, UpdatedAt: now}
	for _, tt := range []struct {
		schema string
		views  []any
	}{
		{"Order", []any{api.NewClientView(o, []order.StepState{{Step: "ship", ProcessState: order.Processed, Reference: "shp_1",
			Result: json.RawMessage(`{"id":"shp_1"}`), UpdatedAt: now, Undo: false}, {Step: "ship", Undo: true, UpdatedAt: now}, cooling, reviewing, charging}, wf)}},
		{"OperatorOrder", []any{api.NewOrderView(o, steps, wf), api.NewOrderView(waits, []order.StepState{cooling, reviewing, charging}, wf)}},
	} {
		seen, seenWait := map[string]bool{}, map[string]bool{}
		for _, view := range tt.views {
			raw, _ := json.Marshal(view)
			var written struct{ Steps []map[string]any }
			if err := json.Unmarshal(raw, &written); err != nil {
				t.Fatal(err)
			}
			for _, st := range written.Steps {
				for k := range st {
					seen[k] = true
				}
				waiting, _ := st["waiting"].(map[string]any)
				for k := range waiting {
					seenWait[k] = true
				}
			}
		}
		described := doc.Components.Schemas[tt.schema].Properties.Steps.Items.Properties
		for k := range seen {
			if described[k] == nil {
				t.Errorf("%s: a record's %q is written but not described", tt.schema, k)
			}
		}
		for k := range described {
			if !seen[k] {
				t.Errorf("%s: a record's %q is described but never written", tt.schema, k)
			}
		}
		// And a wait's own fields.
		waiting, _ := described["waiting"].(map[string]any)
		describedWait, _ := waiting["properties"].(map[string]any)
		for k := range seenWait {
			if describedWait[k] == nil {
				t.Errorf("%s: a wait's %q is written but not described", tt.schema, k)
			}
		}
		for k := range describedWait {
			if !seenWait[k] {
				t.Errorf("%s: a wait's %q is described but never written", tt.schema, k)
			}
		}
	}
}
