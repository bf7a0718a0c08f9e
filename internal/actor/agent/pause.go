package agent

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// pauseFresh is how long an agent trusts the pause it read: a pause or a
// resume reaches every agent instance within it, and a busy agent reads
// its pause once per instance per pauseFresh, not per request.
const pauseFresh = 5 * time.Second

// pausedHold is about how long a request waits in the queue while its
// service is paused, before the agent looks again: short enough that a
// resume is felt within a minute, long enough that a paused service's
// requests cost one delivery a minute each.
const pausedHold = time.Minute

// pauseCheck caches the service's pause.
type pauseCheck struct {
	pauses Pauses

	mu   sync.Mutex
	last order.Pause
	read time.Time // when last was read; zero before the first read
}

// paused reports whether an operator paused the agent's service. A pause
// that cannot be read is taken as it was last read (and as none before
// any was read): the agent's table reads fail rarely, and holding every
// request on a read error would hold them for a missing grant, silently.
func (s *Service) paused(ctx context.Context, log *slog.Logger) (order.Pause, bool) {
	if s.pause == nil {
		return order.Pause{}, false
	}
	c := s.pause
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Now()
	if s.now != nil {
		now = s.now()
	}
	if c.read.IsZero() || now.Sub(c.read) >= pauseFresh {
		p, err := c.pauses.PauseOf(ctx, order.PauseService, s.name)
		if err != nil {
			log.WarnContext(ctx, "pause not read; going by the last read", "error", err, "paused", c.last.On())
		} else {
			c.last = p
		}
		c.read = now
	}
	return c.last, c.last.On()
}

// holdPaused puts a request of a paused service back in its queue for
// about pausedHold (jittered, so held requests do not all come back at
// once). As with an open circuit, its attempt is untouched and the
// Supervisor, seeing the held request, moves its deadline on without
// counting a failure; unlike it, nothing counts against the service.
func (s *Service) holdPaused(ctx context.Context, log *slog.Logger, req order.StepRequest, p order.Pause) error {
	delay := pausedHold/2 + time.Duration(s.rand()*float64(pausedHold/2))
	if err := s.holder.HoldRequest(ctx, s.name, req, delay); err != nil {
		log.ErrorContext(ctx, "service paused and request not held; it will be redelivered", "error", err)
		return err
	}
	log.InfoContext(ctx, "service paused: request held in its queue", "delay", delay, "paused_by", p.By, "paused_until", p.Until)
	s.metrics.Count(metrics.RequestsPaused, 1, "order_id", req.OrderID, "step", req.Step)
	return nil
}
