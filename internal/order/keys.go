package order

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"log/slog"
)

// Secret is a value that must never be shown: not to clients, not in logs.
// It prints as [redacted] through fmt, slog and encoding/json; only code
// that means to use it converts it to a string.
type Secret string

const redacted = "[redacted]"

func (Secret) String() string               { return redacted }
func (Secret) GoString() string             { return redacted }
func (Secret) LogValue() slog.Value         { return slog.StringValue(redacted) }
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
func (Secret) MarshalText() ([]byte, error) { return []byte(redacted), nil }

// NewKeyNonce returns a new order's key nonce: 130 random bits (26 base32
// characters), the secret its remote idempotency keys are derived from.
func NewKeyNonce() Secret { return Secret(rand.Text()) }

// remoteKeyLen is how much of the HMAC a remote key keeps: 32 base32
// characters, 160 bits.
const remoteKeyLen = 32

var keyEncoding = base32.StdEncoding.WithPadding(base32.NoPadding)

// RemoteKey returns the Idempotency-Key the remote services get for the
// work of a step of the order, and for its undo: the same for every
// attempt, so a service recognises a retry of work it did. A remote
// service undoes work given nothing but its key, so the key must not be
// guessable from what clients see: it is an HMAC of the order id and the
// step under the order's key nonce, which only the order item holds. A
// new order made with an Idempotency-Key used before (after its first
// order expired) has the same id but a new nonce, so its work is new
// work to the services, not a replay.
//
// An order stored without a nonce (by a version before nonces, in flight
// during the deploy) keeps the keys its earlier attempts used.
func (o Order) RemoteKey(step string) string {
	if o.KeyNonce == "" {
		return IdempotencyKeyFor(o.ID, step)
	}
	mac := hmac.New(sha256.New, []byte(o.KeyNonce))
	mac.Write([]byte(o.ID + "/" + step))
	return keyEncoding.EncodeToString(mac.Sum(nil))[:remoteKeyLen]
}

// IdempotencyKeyFor is the remote key of a step of an order stored
// without a key nonce: the order id and the step, which anyone who knows
// the order id can work out. Only orders written before key nonces use
// it (see Order.RemoteKey).
func IdempotencyKeyFor(orderID, step string) string { return orderID + "/" + step }
