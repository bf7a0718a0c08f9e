package order_test

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"

	"orderly/internal/order"
)

// Each call's body holds only what its step carries: the order's input
// when it carries "order", and the results it names, never the other kept
// results the request brings along (every one the order has).
func TestBodyHoldsOnlyWhatTheCallCarries(t *testing.T) {
	req := order.StepRequest{OrderID: "O1", Step: "ship", Attempt: 1,
		Input: json.RawMessage(`{"customerId":"c1","address":"here"}`),
		Results: map[string]json.RawMessage{
			"fraud":   json.RawMessage(`{"id":"f1","score":0.2}`),
			"reserve": json.RawMessage(`{"id":"r1"}`),
			"charge":  json.RawMessage(`{"id":"ch1"}`),
		}}
	tests := []struct {
		name        string
		def         order.StepDef
		undo        bool
		wantFields  []string
		wantResults []string
	}{
		{"the order and one result", order.StepDef{Carries: []string{"order", "reserve"}}, false,
			[]string{"address", "customerId", "orderId", "results"}, []string{"reserve"}},
		{"a result without the order", order.StepDef{Carries: []string{"charge"}}, false,
			[]string{"orderId", "results"}, []string{"charge"}},
		{"the order alone", order.StepDef{Carries: []string{"order"}}, false,
			[]string{"address", "customerId", "orderId"}, nil},
		{"an undo carries its own list", order.StepDef{Carries: []string{"order", "reserve"}, UndoCarries: []string{"charge"}}, true,
			[]string{"orderId", "results"}, []string{"charge"}},
		{"an undo's result the order lacks is left out", order.StepDef{UndoCarries: []string{"order", "ship"}}, true,
			[]string{"address", "customerId", "orderId"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := req
			r.Undo = tt.undo
			raw, err := r.Body(tt.def)
			if err != nil {
				t.Fatal(err)
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(raw, &body); err != nil {
				t.Fatal(err)
			}
			var results map[string]json.RawMessage
			if rs, ok := body[order.BodyResults]; ok {
				if err := json.Unmarshal(rs, &results); err != nil {
					t.Fatal(err)
				}
			}
			if got := slices.Sorted(maps.Keys(body)); !slices.Equal(got, tt.wantFields) {
				t.Errorf("body %s has fields %q, want %q", raw, got, tt.wantFields)
			}
			if got := slices.Sorted(maps.Keys(results)); !slices.Equal(got, tt.wantResults) {
				t.Errorf("body %s has results %q, want %q", raw, got, tt.wantResults)
			}
			for name, res := range results {
				if string(res) != string(req.Results[name]) {
					t.Errorf("results.%s = %s, want %s", name, res, req.Results[name])
				}
			}
		})
	}
}
