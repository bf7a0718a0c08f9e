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
		{"a failed read, tried Tries times, keeps the last", pausecache.Fresh, &on, errors.New("throttled"), false, 2 + pausecache.Tries, true},
		{"the failed read is cached too", time.Second, nil, nil, false, 2 + pausecache.Tries, false},
		{"then read again", pausecache.Fresh, nil, nil, true, 3 + pausecache.Tries, false},
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
	// Nothing was read of it yet, so the next request reads again, at
	// once, and sees the pause.
	r.err, r.pause = nil, on
	before := r.reads
	if p, err := c.Pause(ctx, order.PauseWorkflow, "order"); !p.On() || err != nil || r.reads != before+1 {
		t.Errorf("after a first read that failed: %+v, %v, %d reads; want it read again and on", p, err, r.reads-before)
	}
}

// A read that fails is tried again at once, up to Tries reads, before the
// cache goes by the last pause read: one failed read in a fresh instance
// would otherwise take a paused service for one that is not, and its
// requests would call it for Fresh (the chaos soak saw a fresh runtime
// call shipping nine times while it was paused).
func TestCacheTriesAFailedReadAgain(t *testing.T) {
	now := time.Date(2026, 11, 28, 12, 0, 0, 0, time.UTC)
	on := order.Pause{Since: now, Until: now.Add(time.Hour), By: "ops"}
	tests := []struct {
		name      string
		fails     int
		wantOn    bool
		wantReads int
		wantErr   bool
	}{
		{"read at the first try", 0, true, 1, false},
		{"read at the second try", 1, true, 2, false},
		{"read at the last try", pausecache.Tries - 1, true, pausecache.Tries, false},
		{"every try fails: no pause known yet", pausecache.Tries, false, pausecache.Tries, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &flaky{reader: reader{pause: on}, fails: tt.fails}
			c := pausecache.New(r, func() time.Time { return now })
			p, err := c.Pause(context.Background(), order.PauseService, "shipping")
			if p.On() != tt.wantOn || r.reads != tt.wantReads || (err != nil) != tt.wantErr {
				t.Errorf("on %t, %d reads, error %v; want on %t, %d reads, an error %t", p.On(), r.reads, err, tt.wantOn, tt.wantReads, tt.wantErr)
			}
		})
	}
}

// flaky fails its first reads.
type flaky struct {
	reader
	fails int
}

func (f *flaky) PauseOf(ctx context.Context, kind order.PauseKind, name string) (order.Pause, error) {
	if f.fails > 0 {
		f.fails--
		f.reads++
		return order.Pause{}, errors.New("throttled")
	}
	return f.reader.PauseOf(ctx, kind, name)
}
