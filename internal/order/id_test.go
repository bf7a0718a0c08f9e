package order_test

import (
	"strings"
	"testing"

	"orderly/internal/order"
)

func TestIDForKey(t *testing.T) {
	keys := []string{"a", "b", "0b6a3c0e-4f1e-4c8e-9a43-0d8c5b7e2f11", strings.Repeat("k", order.MaxIdempotencyKeyLen)}
	seen := map[string]string{}
	for _, key := range keys {
		got := order.IDForKey(key)
		if again := order.IDForKey(key); again != got {
			t.Errorf("IDForKey(%q) = %q then %q, want the same id every time", key, got, again)
		}
		if !order.ValidID(got) {
			t.Errorf("ValidID(IDForKey(%q) = %q) = false, want true", key, got)
		}
		if other, dup := seen[got]; dup {
			t.Errorf("IDForKey(%q) = IDForKey(%q) = %q, want different keys to give different ids", key, other, got)
		}
		seen[got] = key
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
	good := order.IDForKey("some key")
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
