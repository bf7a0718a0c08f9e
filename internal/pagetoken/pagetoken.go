// Package pagetoken seals a search's position into an opaque page token
// that only the stage's own key makes: an HMAC-SHA256 over the position
// and the query it continues. A caller can neither alter a token (to
// read past its own orders' positions, or to crash a reader with a
// malformed one) nor use one with another query.
package pagetoken

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
)

// MinKeyBytes is the shortest key a Sealer takes.
const MinKeyBytes = 32

// version leads every token, so that a later format can tell its own.
const version byte = 1

// ErrInvalid marks a token that was altered, belongs to another query or
// key, or is not a token at all.
var ErrInvalid = errors.New("not a page token of this query")

// A Sealer seals and opens page tokens with one key.
type Sealer struct{ key []byte }

// New returns a Sealer with key, which must be at least MinKeyBytes of
// secret randomness and is the same for every instance of a stage.
func New(key []byte) (*Sealer, error) {
	if len(key) < MinKeyBytes {
		return nil, fmt.Errorf("page token key: %d bytes, want at least %d", len(key), MinKeyBytes)
	}
	return &Sealer{key: append([]byte(nil), key...)}, nil
}

// Seal returns the token of position in the query whose canonical form is
// query.
func (s *Sealer) Seal(query string, position []byte) string {
	body := append([]byte{version}, position...)
	return base64.RawURLEncoding.EncodeToString(append(body, s.mac(query, body)...))
}

// Open returns the position token holds, if it was sealed with this key
// for this query; otherwise ErrInvalid.
func (s *Sealer) Open(query, token string) ([]byte, error) {
	raw, err := base64.RawURLEncoding.DecodeString(token)
	if err != nil || len(raw) < 1+sha256.Size || raw[0] != version {
		return nil, ErrInvalid
	}
	body, sum := raw[:len(raw)-sha256.Size], raw[len(raw)-sha256.Size:]
	if !hmac.Equal(sum, s.mac(query, body)) {
		return nil, ErrInvalid
	}
	return body[1:], nil
}

func (s *Sealer) mac(query string, body []byte) []byte {
	m := hmac.New(sha256.New, s.key)
	// The query's length first, so that no split of query and body
	// reads as another.
	fmt.Fprintf(m, "%d:%s", len(query), query)
	m.Write(body)
	return m.Sum(nil)
}
