// Package callbacktoken seals the token an asynchronous service presents
// when it calls orderly back to complete a waiting step. The token binds
// the order, the record, the step and the attempt, and expires with the
// step's longest wait; only the stage's own key makes and reads it, so it
// proves who sent a callback and what it is for. It is not single use by
// itself: the order's state makes it so, since a callback's write is
// fenced on the attempt and on the record still waiting.
package callbacktoken

import (
	"context"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"time"

	"orderly/internal/sealkey"
)

// MinKeyBytes is the shortest key a Sealer takes.
const MinKeyBytes = sealkey.MinBytes

// MaxNameBytes bounds a claim's order id and step name, so that a token
// always fits in an HTTP header (at most 762 characters with both at the
// bound; 143 for a 26-character order id and a 40-character step name).
const MaxNameBytes = 256

// version leads every token, so that a later format can tell its own.
const version byte = 1

// encoding is strict and Open also refuses any text that is not the
// canonical encoding of its bytes: otherwise a token with altered padding
// bits or a line break in it would open as the original.
var encoding = base64.RawURLEncoding.Strict()

var (
	// ErrInvalid marks a token that was altered, cut short, sealed with
	// another key or in another format, or is not a token at all. Open
	// does not say which, so that a caller learns nothing by trying.
	ErrInvalid = errors.New("not a callback token of this stage")
	// ErrExpired marks a genuine token opened after its claim's expiry.
	ErrExpired = errors.New("callback token expired")
)

// A Claim is what a token binds.
type Claim struct {
	OrderID string
	// Record is the index of the order's step record the callback
	// completes.
	Record int
	Step   string
	// Attempt tells a callback for an earlier attempt of the step from
	// one for the attempt now waiting.
	Attempt int
	// ExpiresAt is the end of the step's longest wait. Open returns it in
	// UTC, to the nanosecond.
	ExpiresAt time.Time
}

// check says what makes c unfit to seal, if anything.
func (c Claim) check() error {
	switch {
	case c.OrderID == "":
		return errors.New("no order id")
	case len(c.OrderID) > MaxNameBytes:
		return fmt.Errorf("order id is %d bytes, at most %d", len(c.OrderID), MaxNameBytes)
	case c.Step == "":
		return errors.New("no step name")
	case len(c.Step) > MaxNameBytes:
		return fmt.Errorf("step name is %d bytes, at most %d", len(c.Step), MaxNameBytes)
	case c.Record < 0:
		return fmt.Errorf("record %d is negative", c.Record)
	case c.Attempt < 1:
		return fmt.Errorf("attempt %d is not positive", c.Attempt)
	case c.ExpiresAt.IsZero():
		// A token that never expires would outlive every wait.
		return errors.New("no expiry")
	case c.ExpiresAt.Before(time.Unix(0, 0)) || c.ExpiresAt.After(time.Unix(0, math.MaxInt64)):
		return fmt.Errorf("expiry %s is outside the years 1970 to 2262", c.ExpiresAt.UTC().Format(time.RFC3339))
	}
	return nil
}

// A Sealer seals and opens callback tokens with one key. It is safe for
// concurrent use.
type Sealer struct{ aead cipher.AEAD }

// New returns a Sealer with key, which must be at least MinKeyBytes of
// secret randomness and is the same for every instance of a stage. The
// cipher's key is derived from it (HKDF-SHA256) with an info string of
// its own, so a key shared with page tokens by mistake still seals
// neither's tokens for the other.
func New(key []byte) (*Sealer, error) {
	aead, err := sealkey.AEAD(key, "orderly callback token v1")
	if err != nil {
		return nil, fmt.Errorf("callback token key: %w", err)
	}
	return &Sealer{aead: aead}, nil
}

// Seal returns the token of c, or an error naming what makes c unfit (an
// empty or over-long name, a negative record, an attempt below 1, no
// expiry).
func (s *Sealer) Seal(c Claim) (Token, error) {
	if err := c.check(); err != nil {
		return Token{}, fmt.Errorf("seal callback token of order %.64q step %.64q: %w", c.OrderID, c.Step, err)
	}
	nonce := make([]byte, s.aead.NonceSize())
	rand.Read(nonce) // never fails (crypto/rand)
	out := append([]byte{version}, nonce...)
	out = s.aead.Seal(out, nonce, encode(c), []byte{version})
	value := encoding.EncodeToString(out)
	return Token{value: &value}, nil
}

// Open returns the claim token holds if this key sealed it and now is not
// past its expiry. A token opened after its expiry gives ErrExpired (its
// message names the expiry) with the claim, so that the caller can say
// which step's callback came too late; anything else that is not a
// genuine token gives ErrInvalid and no claim.
func (s *Sealer) Open(token string, now time.Time) (Claim, error) {
	raw, err := encoding.DecodeString(token)
	n := s.aead.NonceSize()
	if err != nil || encoding.EncodeToString(raw) != token || len(raw) < 1+n+s.aead.Overhead() || raw[0] != version {
		return Claim{}, ErrInvalid
	}
	plain, err := s.aead.Open(nil, raw[1:1+n], raw[1+n:], raw[:1])
	if err != nil {
		return Claim{}, ErrInvalid
	}
	c, ok := decode(plain)
	if !ok {
		return Claim{}, ErrInvalid
	}
	if now.After(c.ExpiresAt) {
		return c, fmt.Errorf("%w at %s", ErrExpired, c.ExpiresAt.Format(time.RFC3339Nano))
	}
	return c, nil
}

// encode writes c compactly: each name as its length and bytes, the
// record and attempt as varints, the expiry as 8 bytes of Unix
// nanoseconds.
func encode(c Claim) []byte {
	b := make([]byte, 0, len(c.OrderID)+len(c.Step)+4*binary.MaxVarintLen64+8)
	b = binary.AppendUvarint(b, uint64(len(c.OrderID)))
	b = append(b, c.OrderID...)
	b = binary.AppendUvarint(b, uint64(c.Record))
	b = binary.AppendUvarint(b, uint64(len(c.Step)))
	b = append(b, c.Step...)
	b = binary.AppendUvarint(b, uint64(c.Attempt))
	return binary.BigEndian.AppendUint64(b, uint64(c.ExpiresAt.UnixNano()))
}

// decode reads what encode wrote, strictly: a claim that Seal would
// refuse, or bytes left over, are not a claim. Only sealed bytes reach
// it, so this guards against a bug of a later format, not a forger.
func decode(b []byte) (Claim, bool) {
	var c Claim
	var ok bool
	if c.OrderID, b, ok = name(b); !ok {
		return Claim{}, false
	}
	if c.Record, b, ok = number(b); !ok {
		return Claim{}, false
	}
	if c.Step, b, ok = name(b); !ok {
		return Claim{}, false
	}
	if c.Attempt, b, ok = number(b); !ok {
		return Claim{}, false
	}
	if len(b) != 8 {
		return Claim{}, false
	}
	c.ExpiresAt = time.Unix(0, int64(binary.BigEndian.Uint64(b))).UTC()
	if c.check() != nil {
		return Claim{}, false
	}
	return c, true
}

// number reads a varint that fits an int.
func number(b []byte) (int, []byte, bool) {
	v, n := binary.Uvarint(b)
	if n <= 0 || v > math.MaxInt {
		return 0, nil, false
	}
	return int(v), b[n:], true
}

// name reads a length and that many bytes.
func name(b []byte) (string, []byte, bool) {
	size, b, ok := number(b)
	if !ok || size > len(b) {
		return "", nil, false
	}
	return string(b[:size]), b[size:], true
}

// redacted is all a Token shows of itself.
const redacted = "[callback token]"

// A Token is a sealed claim. It does not show its value when printed,
// logged or marshalled to JSON, so that it cannot leak by accident; the
// one place that sends it to the service calls Reveal. It is a struct
// holding a pointer rather than a string: fmt prints a struct's
// unexported fields without calling their methods, and would so print a
// string token held in one, but prints a pointer there as an address.
type Token struct{ value *string }

// Reveal returns the token's value, to send to the service that calls
// back. Nothing else should call it.
func (t Token) Reveal() string {
	if t.value == nil {
		return ""
	}
	return *t.value
}

// String returns a fixed redaction.
func (Token) String() string { return redacted }

// GoString returns a fixed redaction, for %#v.
func (Token) GoString() string { return redacted }

// Format writes a fixed redaction for every verb, so %q, %x and %+v
// reveal nothing either.
func (Token) Format(f fmt.State, _ rune) { _, _ = f.Write([]byte(redacted)) }

// LogValue returns a fixed redaction, for slog.
func (Token) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON writes a fixed redaction. A request body that must carry
// the token puts Reveal's string in it, so the one place that sends the
// token says so.
func (Token) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }

var (
	_ fmt.Stringer   = Token{}
	_ fmt.GoStringer = Token{}
	_ fmt.Formatter  = Token{}
	_ slog.LogValuer = Token{}
)

// A Source gives the Sealer of a stage's key.
type Source func(context.Context) (*Sealer, error)

// Fixed is the Source of a Sealer already made.
func Fixed(s *Sealer) Source {
	return func(context.Context) (*Sealer, error) { return s, nil }
}

// Loaded is a Source that reads the key with load when first asked, and
// keeps the Sealer once it has one; a failed read, or a key too short, is
// tried again when next asked. So a key that cannot be read (Secrets
// Manager unreachable, the secret not there yet) fails only what needs
// it, only until it can be read. It is safe for concurrent use.
func Loaded(load func(context.Context) ([]byte, error)) Source {
	return sealkey.Lazy(func(ctx context.Context) ([]byte, error) {
		key, err := load(ctx)
		if err != nil {
			return nil, fmt.Errorf("load callback token key: %w", err)
		}
		return key, nil
	}, New)
}
