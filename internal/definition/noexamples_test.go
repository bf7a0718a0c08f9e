//go:build noexamples

package definition_test

import (
	"errors"
	"strings"
	"testing"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// A function built without the examples (make build, -tags noexamples)
// refuses a stage that names one, saying which and how to build it in;
// the shipped workflows still run.
func TestNoExamplesRefusesAnExample(t *testing.T) {
	_, examples, err := definition.Embedded()
	if err != nil || examples != nil {
		t.Fatalf("Embedded: examples %d, %v, want none", len(examples), err)
	}
	tests := []struct {
		names []string
		want  []string // in the error; none: no error
	}{
		{names: nil},
		{names: []string{"order"}},
		{names: []string{"order", "checkout"}, want: []string{`workflow "checkout"`, "noexamples", "EXAMPLES=1"}},
	}
	for _, tt := range tests {
		_, err := definition.Deployed(order.DefaultTiming, tt.names, "order", "")
		switch {
		case tt.want == nil && err != nil:
			t.Errorf("Deployed(%v) = %v, want no error", tt.names, err)
		case tt.want != nil && !errors.Is(err, order.ErrInvalid):
			t.Errorf("Deployed(%v) = %v, want order.ErrInvalid", tt.names, err)
		}
		for _, w := range tt.want {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("Deployed(%v) = %v, want it to say %q", tt.names, err, w)
			}
		}
	}
}
