// Package pagetoken seals a search's position into an opaque page token
// that only the stage's own key makes and reads: AES-256-GCM over the
// position, with the query it continues as the authenticated data. A
// caller can neither read a token (a shard's position may name an order
// of another caller, which the search passed over), nor alter one (to
// read past its own orders, or to crash a reader with a malformed one),
// nor use one with another query.
package pagetoken

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"

	"orderly/internal/sealkey"
)

// MinKeyBytes is the shortest key a Sealer takes.
const MinKeyBytes = sealkey.MinBytes

// version leads every token, so that a later format can tell its own.
const version byte = 2

// ErrInvalid marks a token that was altered, belongs to another query or
// key, or is not a token at all.
var ErrInvalid = errors.New("not a page token of this query")

// A Sealer seals and opens page tokens with one key. It is safe for
// concurrent use.
type Sealer struct{ aead cipher.AEAD }

// New returns a Sealer with key, which must be at least MinKeyBytes of
// secret randomness and is the same for every instance of a stage. The
// cipher's key is derived from it (HKDF-SHA256), so any secret string of
// that length serves.
func New(key []byte) (*Sealer, error) {
	aead, err := sealkey.AEAD(key, "orderly page token v2")
	if err != nil {
		return nil, fmt.Errorf("page token key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns the token of position in the query whose canonical form is
// query.
func (s *Sealer) Seal(query string, position []byte) string {
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	out := append([]byte{version}, nonce...)
	out = s.aead.Seal(out, nonce, position, s.data(query))
	return base64.RawURLEncoding.EncodeToString(out)
}

// Open returns the position token holds, if it was sealed with this key
// for this query; otherwise ErrInvalid.
func (s *Sealer) Open(query, token string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	n := s.aead.NonceSize()
	if err != nil || len(raw) < 1+n+s.aead.Overhead() || raw[0] != version {
		return nil, ErrInvalid
	}
	position, err := s.aead.Open(nil, raw[1:1+n], raw[1+n:], s.data(query))
	if err != nil {
		return nil, ErrInvalid
	}
	return position, nil
}

// data is the authenticated data of a token of query: the version and
// the query.
func (s *Sealer) data(query string) []byte { return append([]byte{version}, query...) }

// A Source gives the Sealer of a stage's key.
type Source func(context.Context) (*Sealer, error)

// Fixed is the Source of a Sealer already made.
func Fixed(s *Sealer) Source {
	return func(context.Context) (*Sealer, error) { return s, nil }
}

// Loaded is a Source that reads the key with load when first asked, and
// keeps the Sealer once it has one; a failed read is tried again when
// next asked. So a key that cannot be read (Secrets Manager unreachable,
// the secret not there yet) fails only what needs it, only until it can
// be read. It is safe for concurrent use.
func Loaded(load func(context.Context) ([]byte, error)) Source {
	return sealkey.Lazy(load, New)
}
