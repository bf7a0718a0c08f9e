package main

import (
	"slices"
	"strings"
	"testing"

	"orderly/internal/order"
)

func TestStatusEvents(t *testing.T) {
	tests := []struct {
		list    string
		want    []order.Status
		wantErr string
	}{
		{"", nil, ""},
		{"Processed", []order.Status{order.StatusProcessed}, ""},
		{"Processed, Failed,Cancelled,Error", []order.Status{order.StatusProcessed, order.StatusFailed, order.StatusCancelled, order.StatusError}, ""},
		{"Processed,Done", nil, `"Done" is not an order status`},
		{"processed", nil, `"processed" is not an order status`},
	}
	for _, tt := range tests {
		t.Run(tt.list, func(t *testing.T) {
			got, err := statusEvents(tt.list)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), "ORDERLY_STATUS_EVENTS") {
					t.Fatalf("statusEvents(%q) = %v, %v; want an error naming ORDERLY_STATUS_EVENTS and %s", tt.list, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !slices.Equal(got, tt.want) {
				t.Errorf("statusEvents(%q) = %v, %v; want %v", tt.list, got, err, tt.want)
			}
		})
	}
}
