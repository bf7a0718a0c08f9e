package order

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base32"
	"regexp"
)

// IDs are 26 characters of base32 (A-Z, 2-7), the shape crypto/rand.Text
// produces, so random and key-derived ids look alike.
var idPattern = regexp.MustCompile(`^[A-Z2-7]{26}$`)

// NewID returns a random order id.
func NewID() string { return rand.Text() }

// IDForKey derives the order id from an Idempotency-Key, so that every
// submission with the same key targets the same order item and DynamoDB's
// attribute_not_exists condition does the de-duplication.
func IDForKey(key string) string {
	sum := sha256.Sum256([]byte("orderly/idempotency-key/" + key))
	return base32.StdEncoding.EncodeToString(sum[:])[:26]
}

// ValidID reports whether s has the shape of an order id.
func ValidID(s string) bool { return idPattern.MatchString(s) }
