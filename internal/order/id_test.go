package order_test

import (
	"strings"
	"testing"

	"orderly/internal/order"
)

func TestIDForKey(t *testing.T) {
	// Every triple is a different scope, so every id must differ; the
	// last two would collide if the parts were simply concatenated.
	scopes := [][3]string{
		{"AROA1", "c-1", "a"}, {"AROA1", "c-1", "b"}, {"AROA1", "c-1", "0b6a3c0e-4f1e-4c8e-9a43-0d8c5b7e2f11"},
		{"AROA1", "c-1", strings.Repeat("k", order.MaxIdempotencyKeyLen)},
		{"AROA2", "c-1", "a"}, {"AROA1", "c-2", "a"},
		{"AROA1", "c-1a", "b"}, {"AROA1", "c-1", "ab"},
	}
	seen := map[string][3]string{}
	for _, sc := range scopes {
		got := order.IDForKey(sc[0], "", sc[1], sc[2])
		if again := order.IDForKey(sc[0], "", sc[1], sc[2]); again != got {
			t.Errorf("IDForKey(%q) = %q then %q, want the same id every time", sc, got, again)
		}
		if !order.ValidID(got) {
			t.Errorf("ValidID(IDForKey(%q) = %q) = false, want true", sc, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("IDForKey(%q) = IDForKey(%q) = %q, want every scope its own id", sc, other, got)
		}
		seen[got] = sc
	}
}

func TestNewID(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		id := order.NewID()
		if !order.ValidID(id) {
			t.Fatalf("ValidID(NewID() = %q) = false, want true", id)
		}
		if seen[id] {
			t.Fatalf("NewID() returned %q twice", id)
		}
		seen[id] = true
	}
}

func TestValidID(t *testing.T) {
	good := order.IDForKey("caller", "", "c-1", "some key")
	tests := []struct {
		name string
		id   string
		want bool
	}{
		{"derived id", good, true},
		{"all letters", strings.Repeat("A", 26), true},
		{"lowercase", strings.ToLower(good), false},
		{"one lowercase letter", "a" + good[1:], false},
		{"too short", good[:25], false},
		{"too long", good + "A", false},
		{"empty", "", false},
		{"path traversal", "../x", false},
		{"path traversal at full length", "../" + good[3:], false},
		{"digit outside base32", "0" + good[1:], false},
		{"digit 1 outside base32", "1" + good[1:], false},
		{"padding", good[:25] + "=", false},
		{"trailing newline", good[:25] + "\n", false},
		{"valid id then newline", good + "\n", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := order.ValidID(tt.id); got != tt.want {
				t.Errorf("ValidID(%q) = %t, want %t", tt.id, got, tt.want)
			}
		})
	}
}

// Keys are scoped to their workflow too; the shipped workflow's orders
// keep the ids they had before there were several workflows.
func TestIDForKeyIsScopedToTheWorkflow(t *testing.T) {
	shipped := order.IDForKey("caller", "order", "c-1", "k")
	if legacy := order.IDForKey("caller", "", "c-1", "k"); legacy != shipped {
		t.Errorf("the order workflow's id %s, want the legacy one %s", shipped, legacy)
	}
	if other := order.IDForKey("caller", "checkout", "c-1", "k"); other == shipped {
		t.Error("the same key for another workflow made the same order id")
	}
}
