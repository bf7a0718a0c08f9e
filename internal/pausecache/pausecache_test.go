package pausecache_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/pausecache"
)

type reader struct {
	pause order.Pause
	err   error
	reads int
}

func (r *reader) PauseOf(_ context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	r.reads++
	if r.err != nil {
		return order.Pause{}, r.err
	}
	p := r.pause
	p.Kind, p.Name = kind, name
	return p, nil
}

// A pause is read once per Fresh per name; a failed read keeps the last
// pause read (none before the first) and says why.
func TestCache(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	on := order.Pause{Since: now, Until: now.Add(time.Hour), By: "ops"}
	r := &reader{pause: on}
	c := pausecache.New(r, func() time.Time { return now })
	ctx := context.Background()
	steps := []struct {
		name      string
		advance   time.Duration
		set       *order.Pause
		err       error
		wantOn    bool
		wantReads int
		wantErr   bool
	}{
		{"first read", 0, nil, nil, true, 1, false},
		{"within Fresh: cached", pausecache.Fresh - time.Millisecond, &order.Pause{}, nil, true, 1, false},
		{"after Fresh: read again", time.Millisecond, nil, nil, false, 2, false},
		{"a failed read keeps the last", pausecache.Fresh, &on, errors.New("throttled"), false, 3, true},
		{"the failed read is cached too", time.Second, nil, nil, false, 3, false},
		{"then read again", pausecache.Fresh, nil, nil, true, 4, false},
	}
	for _, s := range steps {
		now = now.Add(s.advance)
		if s.set != nil {
			r.pause = *s.set
		}
		r.err = s.err
		p, err := c.Pause(ctx, order.PauseService, "payment")
		if p.On() != s.wantOn || r.reads != s.wantReads || (err != nil) != s.wantErr {
			t.Errorf("%s: on %t, %d reads, error %v; want on %t, %d reads, an error %t", s.name, p.On(), r.reads, err, s.wantOn, s.wantReads, s.wantErr)
		}
	}
	// Another name is read apart; before any read a failure is no pause.
	r.err = errors.New("throttled")
	if p, err := c.Pause(ctx, order.PauseWorkflow, "order"); p.On() || err == nil || p.Name != "order" {
		t.Errorf("a first read that fails: %+v, %v; want no pause and the error", p, err)
	}
}
