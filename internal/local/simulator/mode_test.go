package simulator

import (
	"testing"
	"time"

	"orderly/internal/order"
)

func TestModeFor(t *testing.T) {
	tests := []struct {
		service string
		skus    []string
		want    mode
	}{
		{"payment", []string{"WIDGET-1"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-PERMANENT"}, mode{name: "PERMANENT", behaviour: permanent, calls: -1}},
		{"payment", []string{"TEST-PAYMENT-PERMANENT-1"}, mode{name: "PERMANENT-1", behaviour: permanent, calls: 1}},
		{"payment", []string{"TEST-PAYMENT-UNKNOWN"}, mode{name: "UNKNOWN", behaviour: unknown, calls: -1}},
		{"payment", []string{"TEST-PAYMENT-UNKNOWN-1"}, mode{name: "normal"}},
		// An undo's value leaves the work alone.
		{"payment", []string{"TEST-PAYMENT-UNDO-PERMANENT"}, mode{name: "normal"}},
		{"inventory", []string{"TEST-INVENTORY-TRANSIENT-3"}, mode{name: "TRANSIENT-3", behaviour: transient, calls: 3}},
		{"shipping", []string{"TEST-SHIPPING-HANG"}, mode{name: "HANG", behaviour: hang, calls: -1}},
		{"shipping", []string{"TEST-SHIPPING-HANG-2"}, mode{name: "HANG-2", behaviour: hang, calls: 2}},
		{"payment", []string{"TEST-PAYMENT-SLOW-1500"}, mode{name: "SLOW-1500", behaviour: slow, delay: 1500 * time.Millisecond}},
		{"payment", []string{"TEST-PAYMENT-SLOW-60001"}, mode{name: "SLOW-60001", behaviour: slow, delay: time.Minute}},
		{"payment", []string{"TEST-PAYMENT-SLOW-99999999999999999999"}, mode{name: "SLOW-99999999999999999999", behaviour: slow, delay: time.Minute}},
		// Another service's value leaves this one alone.
		{"payment", []string{"TEST-INVENTORY-PERMANENT"}, mode{name: "normal"}},
		// Unknown shapes are ordinary SKUs.
		{"payment", []string{"TEST-PAYMENT-EXPLODE"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-TRANSIENT"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-TRANSIENT-"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-TRANSIENT-x"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-TRANSIENT-+2"}, mode{name: "normal"}},
		{"payment", []string{"TEST-PAYMENT-SLOW--5"}, mode{name: "normal"}},
		{"payment", []string{"test-payment-permanent"}, mode{name: "normal"}},
		// The first recognised value wins.
		{"payment", []string{"TEST-PAYMENT-BOGUS", "TEST-PAYMENT-TRANSIENT-1", "TEST-PAYMENT-PERMANENT"},
			mode{name: "TRANSIENT-1", behaviour: transient, calls: 1}},
	}
	for _, tt := range tests {
		var lines []order.Line
		for _, sku := range tt.skus {
			lines = append(lines, order.Line{SKU: sku, Quantity: 1})
		}
		if got := modeFor(tt.service, lines, false); got != tt.want {
			t.Errorf("modeFor(%s, %v) = %+v, want %+v", tt.service, tt.skus, got, tt.want)
		}
	}
}

func TestModeForUndo(t *testing.T) {
	tests := []struct {
		skus []string
		want mode
	}{
		{[]string{"TEST-PAYMENT-PERMANENT"}, mode{name: "normal"}},
		{[]string{"TEST-PAYMENT-UNDO-PERMANENT"}, mode{name: "PERMANENT", behaviour: permanent, calls: -1}},
		{[]string{"TEST-PAYMENT-PERMANENT", "TEST-PAYMENT-UNDO-TRANSIENT-2"}, mode{name: "TRANSIENT-2", behaviour: transient, calls: 2}},
		{[]string{"TEST-PAYMENT-UNDO-HANG-1"}, mode{name: "HANG-1", behaviour: hang, calls: 1}},
		{[]string{"TEST-SHIPPING-UNDO-PERMANENT"}, mode{name: "normal"}},
	}
	for _, tt := range tests {
		var lines []order.Line
		for _, sku := range tt.skus {
			lines = append(lines, order.Line{SKU: sku, Quantity: 1})
		}
		if got := modeFor("payment", lines, true); got != tt.want {
			t.Errorf("modeFor(payment, %v, undo) = %+v, want %+v", tt.skus, got, tt.want)
		}
	}
}

func TestModeAffects(t *testing.T) {
	tests := []struct {
		sku  string
		want []bool // for calls 1, 2, 3
	}{
		{"WIDGET", []bool{false, false, false}},
		{"TEST-PAYMENT-TRANSIENT-0", []bool{false, false, false}},
		{"TEST-PAYMENT-TRANSIENT-2", []bool{true, true, false}},
		{"TEST-PAYMENT-HANG-1", []bool{true, false, false}},
		{"TEST-PAYMENT-HANG", []bool{true, true, true}},
		{"TEST-PAYMENT-PERMANENT", []bool{true, true, true}},
		{"TEST-PAYMENT-PERMANENT-1", []bool{true, false, false}},
		{"TEST-PAYMENT-UNKNOWN", []bool{true, true, true}},
		{"TEST-PAYMENT-SLOW-10", []bool{true, true, true}},
	}
	for _, tt := range tests {
		m := modeFor("payment", []order.Line{{SKU: tt.sku, Quantity: 1}}, false)
		for i, want := range tt.want {
			if got := m.affects(i + 1); got != want {
				t.Errorf("%s: affects(call %d) = %t, want %t", tt.sku, i+1, got, want)
			}
		}
	}
}
