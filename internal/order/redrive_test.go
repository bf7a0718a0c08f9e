package order_test

import (
	"errors"
	"testing"

	"orderly/internal/order"
)

func TestParseRedrive(t *testing.T) {
	tests := []struct {
		body string
		want string
		ok   bool
	}{
		{``, "", true},
		{`{}`, "", true},
		{`{"action":"retry"}`, order.RedriveRetry, true},
		{`{"action":"compensate"}`, order.RedriveCompensate, true},
		{`{"action":"rewind"}`, "", false},
		{`{"Action":"retry"}`, "", false},
		{`{"action":"retry","action":"compensate"}`, "", false},
		{`{"action":"retry","force":true}`, "", false},
		{`{"action":1}`, "", false},
		{`{"action":"retry"} {}`, "", false},
		{`[]`, "", false},
		{`{"action":`, "", false},
		{"{\"action\":\"retry\xff\"}", "", false},
	}
	for _, tt := range tests {
		r, err := order.ParseRedrive([]byte(tt.body))
		if tt.ok != (err == nil) || (tt.ok && r.Action != tt.want) {
			t.Errorf("ParseRedrive(%q) = %+v, %v; want action %q, ok %t", tt.body, r, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, order.ErrInvalid) {
			t.Errorf("ParseRedrive(%q) error %v does not wrap ErrInvalid", tt.body, err)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for body, ok := range map[string]bool{``: true, ` `: true, `{}`: true, `{"reason":"x"}`: false, `[]`: false, `{`: false} {
		if err := order.ParseEmpty([]byte(body)); (err == nil) != ok {
			t.Errorf("ParseEmpty(%q) = %v, want ok %t", body, err, ok)
		}
	}
}
