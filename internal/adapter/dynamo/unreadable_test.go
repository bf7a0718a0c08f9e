package dynamo

import (
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A fingerprint names a version of an item: the same content is the same
// version however it is held, the report mark is not content, and any
// change is another version.
func TestFingerprint(t *testing.T) {
	item := func(steps types.AttributeValue, extra ...string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{
			attrOrderID: &types.AttributeValueMemberS{Value: "QMVF4LBCLJ4PRZERCUY25DASBK"},
			attrSteps:   steps,
			attrDueAt:   &types.AttributeValueMemberN{Value: "1741944414741"},
			"Tags":      &types.AttributeValueMemberSS{Value: []string{"a", "b"}},
		}
		for i := 0; i+1 < len(extra); i += 2 {
			m[extra[i]] = &types.AttributeValueMemberS{Value: extra[i+1]}
		}
		return m
	}
	broken := &types.AttributeValueMemberS{Value: "not a list"}
	base := fingerprint(item(broken))
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		same bool
	}{
		{"the same content", item(broken), true},
		{"the report mark is left out", item(broken, attrUnreadable, base), true},
		{"a set in another order", func() map[string]types.AttributeValue {
			m := item(broken)
			m["Tags"] = &types.AttributeValueMemberSS{Value: []string{"b", "a"}}
			return m
		}(), true},
		{"another value", item(&types.AttributeValueMemberS{Value: "still not a list"}), false},
		{"another type", item(&types.AttributeValueMemberN{Value: "1"}), false},
		{"one attribute more", item(broken, "Status", "Processing"), false},
		{"an empty attribute more", item(broken, "X", ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fingerprint(tt.item); (got == base) != tt.same {
				t.Errorf("fingerprint = %s, base %s: want the same %t", got, base, tt.same)
			}
		})
	}
	if u := unreadable(item(broken, attrUnreadable, base), errors.New("bad")); !u.Reported || u.OrderID != "QMVF4LBCLJ4PRZERCUY25DASBK" {
		t.Errorf("unreadable = %+v, want order QMVF4LBCLJ4PRZERCUY25DASBK reported", u)
	}
	if u := unreadable(item(broken, attrUnreadable, "an older version"), errors.New("bad")); u.Reported {
		t.Errorf("unreadable = %+v, want a new version not reported", u)
	}
}
