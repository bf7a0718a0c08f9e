// Package sealkey turns a stage's secret into the cipher that seals one
// kind of token (page tokens, callback tokens), and reads that secret only
// when it is first needed. Each kind derives its own key, so a token of
// one kind never opens as another.
package sealkey

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hkdf"
	"crypto/sha256"
	"fmt"
	"sync"
)

// MinBytes is the shortest secret a cipher is derived from.
const MinBytes = 32

// AEAD is AES-256-GCM under a key derived from secret (HKDF-SHA256) for
// the purpose info, so any secret string of MinBytes or more serves.
func AEAD(secret []byte, info string) (cipher.AEAD, error) {
	if len(secret) < MinBytes {
		return nil, fmt.Errorf("%d bytes, want at least %d", len(secret), MinBytes)
	}
	derived, err := hkdf.Key(sha256.New, secret, nil, info, 32)
	if err != nil {
		return nil, err
	}
	block, err := aes.NewCipher(derived)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// Lazy returns what build makes of the secret load reads, reading it
// when first asked and keeping what build made once it has it; a failed
// read or build is tried again when next asked. So a secret that cannot
// be read (Secrets Manager unreachable, the secret not there yet) fails
// only what needs it, only until it can be read. It is safe for
// concurrent use.
func Lazy[T any](load func(context.Context) ([]byte, error), build func([]byte) (T, error)) func(context.Context) (T, error) {
	var mu sync.Mutex
	var made *T
	return func(ctx context.Context) (T, error) {
		mu.Lock()
		defer mu.Unlock()
		if made != nil {
			return *made, nil
		}
		var zero T
		secret, err := load(ctx)
		if err != nil {
			return zero, err
		}
		v, err := build(secret)
		if err != nil {
			return zero, err
		}
		made = &v
		return v, nil
	}
}
