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

// IDForKey derives the order id from an Idempotency-Key as the caller (the
// authenticated principal) sent it for a customer, so that every
// submission with the same key targets the same order item and DynamoDB's
// attribute_not_exists condition does the de-duplication. Keys are scoped:
// another caller, or the same caller for another customer, using the same
// key gets an order of its own.
//
// Orders of workflows other than LegacyWorkflow are scoped to their
// workflow too; the shipped workflow's keep the derivation of orders
// submitted before there were several workflows, so that a replay from
// then still finds its order.
func IDForKey(caller, workflow, customerID, key string) string {
	scope := customerID
	if WorkflowOf(workflow) != LegacyWorkflow {
		scope = "workflow " + workflow + "\x00" + customerID
	}
	h := sha256.New()
	for _, part := range []string{"orderly/idempotency-key/v2", caller, scope, key} {
		h.Write([]byte(part))
		h.Write([]byte{0}) // parts cannot run into each other
	}
	return base32.StdEncoding.EncodeToString(h.Sum(nil))[:26]
}

// ValidID reports whether s has the shape of an order id.
func ValidID(s string) bool { return idPattern.MatchString(s) }
