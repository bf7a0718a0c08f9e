package order_test

import (
	"errors"
	"strings"
	"testing"

	"orderly/internal/order"
)

// A callback's body says one outcome, with a result only when it
// succeeded and an error only when it failed; anything else is named.
func TestParseCallback(t *testing.T) {
	tests := []struct {
		name, body string
		fields     []string // the fields named; none: it parses
		tooLarge   bool
	}{
		{"succeeded", `{"outcome":"succeeded","result":{"id":"ch_1","amount":3}}`, nil, false},
		{"failed", `{"outcome":"failed","error":"card declined"}`, nil, false},
		{"failed without a reason", `{"outcome":"failed"}`, nil, false},
		{"working", `{"outcome":"working"}`, nil, false},
		{"succeeded without a result", `{"outcome":"succeeded"}`, []string{"result"}, false},
		{"a result that is not an object", `{"outcome":"succeeded","result":"ch_1"}`, []string{"result"}, false},
		{"a result with a failure", `{"outcome":"failed","result":{"id":"x"}}`, []string{"result"}, false},
		{"an error with a success", `{"outcome":"succeeded","result":{"id":"x"},"error":"no"}`, []string{"error"}, false},
		{"an unknown outcome", `{"outcome":"done"}`, []string{"outcome"}, false},
		{"no outcome", `{}`, []string{"outcome"}, false},
		{"an unknown field", `{"outcome":"working","token":"t"}`, []string{"body"}, false},
		{"two objects", `{"outcome":"working"}{"outcome":"working"}`, []string{"body"}, false},
		{"not JSON", `working`, []string{"body"}, false},
		{"an error too long", `{"outcome":"failed","error":"` + strings.Repeat("x", order.MaxReasonBytes+1) + `"}`, []string{"error"}, false},
		{"a body too large", `{"outcome":"succeeded","result":{"id":"` + strings.Repeat("x", order.MaxInputBytes) + `"}}`, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := order.ParseCallback([]byte(tt.body))
			if tt.tooLarge {
				if !errors.Is(err, order.ErrTooLarge) {
					t.Errorf("err %v, want ErrTooLarge", err)
				}
				return
			}
			var verr *order.ValidationError
			if len(tt.fields) == 0 {
				if err != nil {
					t.Errorf("err %v, want none", err)
				}
				return
			}
			if !errors.As(err, &verr) || !errors.Is(err, order.ErrInvalid) {
				t.Fatalf("err %v, want a ValidationError", err)
			}
			var got []string
			for _, f := range verr.Fields {
				got = append(got, f.Field)
			}
			if strings.Join(got, ",") != strings.Join(tt.fields, ",") {
				t.Errorf("fields %v (%v), want %v", got, verr, tt.fields)
			}
		})
	}
}
