package main

import (
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/definition"
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

// ORDERLY_CALLBACK_WAIT replaces every callback step's wait and its
// maximum, as the fulfilment test does in Go, and leaves every other
// step, workflow and the default workflow alone.
func TestCallbackWaitsShortened(t *testing.T) {
	timing := order.DefaultTiming
	v, err := definition.Deployed(timing, []string{order.LegacyWorkflow, "fulfilment"}, order.LegacyWorkflow, "")
	if err != nil {
		t.Fatal(err)
	}
	got := shortenCallbackWaits(v, 7*time.Second)
	if got.Default() != v.Default() || len(got.Workflows()) != len(v.Workflows()) {
		t.Fatalf("default %q and %d versions, want %q and %d", got.Default(), len(got.Workflows()), v.Default(), len(v.Workflows()))
	}
	callbacks := 0
	for i, w := range got.Workflows() {
		was := v.Workflows()[i]
		for j, st := range w.Steps {
			switch {
			case st.Callback != nil:
				callbacks++
				if *st.Callback != (order.CallbackWait{Timeout: 7 * time.Second, MaxTimeout: 7 * time.Second}) {
					t.Errorf("%s step %s waits %+v, want 7s and at most 7s", w.Name, st.Name, *st.Callback)
				}
				if was.Steps[j].Callback.Timeout < time.Hour {
					t.Errorf("%s step %s: the definition's own wait changed to %v", w.Name, st.Name, was.Steps[j].Callback.Timeout)
				}
			case !reflect.DeepEqual(st, was.Steps[j]):
				t.Errorf("%s step %s changed: %+v, was %+v", w.Name, st.Name, st, was.Steps[j])
			}
		}
	}
	if callbacks != 2 {
		t.Errorf("%d callback steps shortened, want the fulfilment example's 2", callbacks)
	}
}
