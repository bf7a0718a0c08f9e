package pagetoken_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"orderly/internal/pagetoken"
)

func TestSealAndOpen(t *testing.T) {
	key := bytes.Repeat([]byte{7}, pagetoken.MinKeyBytes)
	s, err := pagetoken.New(key)
	if err != nil {
		t.Fatal(err)
	}
	other, _ := pagetoken.New(bytes.Repeat([]byte{8}, pagetoken.MinKeyBytes))
	position := []byte(`{"shard":3,"after":"o-1"}`)
	token := s.Seal("status=Error", position)
	if got, err := s.Open("status=Error", token); err != nil || !bytes.Equal(got, position) {
		t.Fatalf("open: %q, %v; want the position back", got, err)
	}
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	flipped := append([]byte(nil), raw...)
	flipped[3] ^= 1
	tests := []struct {
		name, query, token string
		sealer             *pagetoken.Sealer
	}{
		{"another query", "status=Failed", token, s},
		{"another key", "status=Error", token, other},
		{"a byte altered", "status=Error", base64.RawURLEncoding.EncodeToString(flipped), s},
		{"cut short", "status=Error", token[:10], s},
		{"not base64", "status=Error", "!!" + token, s},
		{"empty", "status=Error", "", s},
		{"the position alone", "status=Error", base64.RawURLEncoding.EncodeToString(position), s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, err := tt.sealer.Open(tt.query, tt.token); !errors.Is(err, pagetoken.ErrInvalid) || got != nil {
				t.Errorf("open: %q, %v; want ErrInvalid and nothing", got, err)
			}
		})
	}
	// The position stays hidden: a shard's position may name another
	// caller's order.
	if bytes.Contains(raw, []byte("o-1")) {
		t.Errorf("token %q shows the position's order id", token)
	}
	if again := s.Seal("status=Error", position); again == token {
		t.Error("two seals of one position made one token: the nonce is not fresh")
	}
	if strings.ContainsAny(token, "+/=") {
		t.Errorf("token %q is not URL-safe", token)
	}
	if _, err := pagetoken.New(key[:16]); err == nil {
		t.Error("a 16-byte key was taken")
	}
}

// A Loaded source reads the key once it can, and keeps it.
func TestLoaded(t *testing.T) {
	key := bytes.Repeat([]byte{7}, pagetoken.MinKeyBytes)
	reads, fail := 0, true
	source := pagetoken.Loaded(func(context.Context) ([]byte, error) {
		reads++
		if fail {
			return nil, errors.New("Secrets Manager could not be reached")
		}
		return key, nil
	})
	if s, err := source(context.Background()); s != nil || err == nil {
		t.Fatalf("a key that cannot be read: %v, %v", s, err)
	}
	fail = false
	first, err := source(context.Background())
	if err != nil || first == nil {
		t.Fatalf("the key once it can be read: %v", err)
	}
	if again, _ := source(context.Background()); again != first || reads != 2 {
		t.Errorf("read the key %d times, want 2 (once failing, once for good)", reads)
	}
	short := pagetoken.Loaded(func(context.Context) ([]byte, error) { return key[:8], nil })
	if _, err := short(context.Background()); err == nil {
		t.Error("an 8-byte key was taken")
	}
}
