package pagetoken_test

import (
	"bytes"
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
