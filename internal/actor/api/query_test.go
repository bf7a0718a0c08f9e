package api_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

func TestParseQuery(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		params  map[string]string
		want    order.Query
		badName string // the parameter the error names
	}{
		{"nothing: the newest orders", nil, order.Query{Limit: order.DefaultSearchLimit}, ""},
		{"one customer's orders of a day", map[string]string{"customer": "c-1", "created_from": "2026-11-26T00:00:00Z", "created_to": "2026-11-27T00:00:00Z"},
			order.Query{CustomerID: "c-1", CreatedFrom: day, CreatedTo: day.Add(24 * time.Hour), Limit: order.DefaultSearchLimit}, ""},
		{"every filter", map[string]string{"status": "Failed", "workflow": "order", "version": "2", "ended_from": "2026-11-26T01:00:00+01:00", "limit": "100"},
			order.Query{Status: order.StatusFailed, Workflow: "order", Version: "2", EndedFrom: day, Limit: 100}, ""},
		{"the running orders whose step waits", map[string]string{"status": "Waiting"}, order.Query{Status: order.StatusWaiting, Limit: order.DefaultSearchLimit}, ""},
		{"an unknown status", map[string]string{"status": "Done"}, order.Query{}, "status"},
		{"a time that does not parse", map[string]string{"created_from": "yesterday"}, order.Query{}, "created_from"},
		{"a range that ends before it starts", map[string]string{"ended_from": "2026-11-27T00:00:00Z", "ended_to": "2026-11-26T00:00:00Z"}, order.Query{}, "ended_to"},
		// Times count to the millisecond, as the indexes hold them.
		{"a range within one millisecond", map[string]string{"created_from": "2026-01-01T00:00:00.0001Z", "created_to": "2026-01-01T00:00:00.0002Z"}, order.Query{}, "created_to"},
		{"times to the millisecond", map[string]string{"created_from": "2026-11-26T00:00:00.0009Z", "created_to": "2026-11-27T00:00:00.0011Z"},
			order.Query{CreatedFrom: day, CreatedTo: day.Add(24*time.Hour + time.Millisecond), Limit: order.DefaultSearchLimit}, ""},
		{"a limit over the maximum", map[string]string{"limit": "101"}, order.Query{}, "limit"},
		{"a limit of zero", map[string]string{"limit": "0"}, order.Query{}, "limit"},
		{"a limit that is not a number", map[string]string{"limit": "ten"}, order.Query{}, "limit"},
		{"an empty customer", map[string]string{"customer": ""}, order.Query{}, "customer"},
		{"an overlong workflow", map[string]string{"workflow": strings.Repeat("w", order.MaxFilterBytes+1)}, order.Query{}, "workflow"},
		{"an unknown parameter", map[string]string{"sort": "oldest"}, order.Query{}, "sort"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := api.ParseQuery(tt.params)
			if tt.badName != "" {
				if !errors.Is(err, order.ErrInvalid) || !strings.Contains(err.Error(), "query parameter "+tt.badName+":") {
					t.Fatalf("error %v, want ErrInvalid naming %s", err, tt.badName)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}
