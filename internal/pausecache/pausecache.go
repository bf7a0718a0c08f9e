// Package pausecache keeps, in one function instance, the pauses it read
// a few seconds ago (see order.Pause): an agent checks its service's
// pause before each call, and the submission its workflow's before each
// order, so a busy instance reads each pause once per Fresh, not once per
// request.
package pausecache

import (
	"context"
	"sync"
	"time"

	"orderly/internal/order"
)

// Fresh is how long a pause read is trusted: a pause or a resume reaches
// every instance within it.
const Fresh = 5 * time.Second

// Tries is how often a pause is read before a failure is given up on and
// the last pause read goes: a fresh instance whose one read failed would
// take a paused service for one that is not, for Fresh.
const Tries = 3

// Reader reads one pause.
type Reader interface {
	PauseOf(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error)
}

// Cache is the pauses one instance read.
type Cache struct {
	reader Reader
	now    func() time.Time

	mu   sync.Mutex
	read map[string]entry // by order.PauseKey
}

type entry struct {
	pause order.Pause
	at    time.Time
}

// New returns a cache over reader; now is its clock (time.Now when nil).
func New(reader Reader, now func() time.Time) *Cache {
	if now == nil {
		now = time.Now
	}
	return &Cache{reader: reader, now: now, read: map[string]entry{}}
}

// Pause returns the pause of kind and name as read within Fresh, reading
// it again when older. A read that fails is tried again (Tries in all);
// one that still fails returns the last pause read
// (none before the first) with the error, for the caller to log: a table
// read fails rarely, and going by the last read is better than holding
// every request, or refusing every order, for a missing grant.
func (c *Cache) Pause(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	key := order.PauseKey(kind, name)
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	e, ok := c.read[key]
	if ok && now.Sub(e.at) < Fresh {
		return e.pause, nil
	}
	p, err := c.readTrying(ctx, kind, name)
	if err != nil {
		if !ok {
			// Nothing read yet (a fresh instance): no pause is assumed
			// for this request alone, and the next one reads again, so
			// a paused service is called as little as can be.
			return order.Pause{Kind: kind, Name: name}, err
		}
		c.read[key] = entry{pause: e.pause, at: now}
		return e.pause, err
	}
	c.read[key] = entry{pause: p, at: now}
	return p, nil
}

// readTrying reads a pause, up to Tries times while the read fails, a
// moment apart.
func (c *Cache) readTrying(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	for try := 1; ; try++ {
		p, err := c.reader.PauseOf(ctx, kind, name)
		if err == nil || try == Tries {
			return p, err
		}
		select {
		case <-ctx.Done():
			return p, err
		case <-time.After(time.Duration(try) * 20 * time.Millisecond):
		}
	}
}
