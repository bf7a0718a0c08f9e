package order_test

import (
	"testing"

	"orderly/internal/order"
)

func TestOrderOwnedBy(t *testing.T) {
	alice := order.Principal{ID: "AROAQXJ4SHAREDROLE001:alice@example.com", Legacy: "AROAQXJ4SHAREDROLE001"}
	tests := []struct {
		name   string
		caller string // the stored order's Caller
		p      order.Principal
		want   bool
	}{
		{"its own order", alice.ID, alice, true},
		{"another session of the same role", "AROAQXJ4SHAREDROLE001:bob@example.com", alice, false},
		{"the same session name under another role", "AROAQXJ4OTHERROLE0001:alice@example.com", alice, false},
		// Submitted before callers were told apart by session: the order
		// names the role alone, and stays every session's of that role.
		{"a role's order from before sessions counted", "AROAQXJ4SHAREDROLE001", alice, true},
		{"another role's order from before", "AROAQXJ4OTHERROLE0001", alice, false},
		{"an IAM user, whose legacy and full principal are one", "AIDAQXJ4USER00000001", order.Principal{ID: "AIDAQXJ4USER00000001"}, true},
		{"no principal owns nothing", "", order.Principal{}, false},
		{"an empty legacy matches no order without a caller", "", order.Principal{ID: "cognito:eu-west-1:1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := order.Order{ID: "QMVF4LBCLJ4PRZERCUY25DASBK", Caller: tt.caller}
			if got := o.OwnedBy(tt.p); got != tt.want {
				t.Errorf("order of %q OwnedBy(%+v) = %t, want %t", tt.caller, tt.p, got, tt.want)
			}
		})
	}
}
