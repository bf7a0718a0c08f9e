package agent

import (
	"context"
	"log/slog"
	"time"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// pausedHold is about how long a request waits in the queue while its
// service is paused, before the agent looks again: short enough that a
// resume is felt within a minute, long enough that a paused service's
// requests cost one delivery a minute each.
const pausedHold = time.Minute

// paused reports whether an operator paused the agent's service, as read
// within pausecache.Fresh. A pause that cannot be read is taken as it
// was last read (and as none before any was read).
func (s *Service) paused(ctx context.Context, log *slog.Logger) (order.Pause, bool) {
	if s.pause == nil {
		return order.Pause{}, false
	}
	p, err := s.pause.Pause(ctx, order.PauseService, s.name)
	if err != nil {
		log.WarnContext(ctx, "pause not read; going by the last read", "error", err, "paused", p.On())
	}
	return p, p.On()
}

// holdPaused puts a request of a paused service back in its queue for
// about pausedHold (Config.PausedHold; jittered, so held requests do not all come back at
// once). As with an open circuit, its attempt is untouched and the
// Supervisor moves its deadline on without counting a failure; unlike
// it, nothing counts against the service.
func (s *Service) holdPaused(ctx context.Context, log *slog.Logger, req order.StepRequest, p order.Pause) error {
	delay := s.pausedHold/2 + time.Duration(s.rand()*float64(s.pausedHold/2))
	if err := s.holder.HoldRequest(ctx, s.name, req, delay); err != nil {
		log.ErrorContext(ctx, "service paused and request not held; it will be redelivered", "error", err)
		return err
	}
	log.InfoContext(ctx, "service paused: request held in its queue", "delay", delay, "paused_by", p.By, "paused_until", p.Until)
	s.metrics.Count(metrics.RequestsPaused, 1, "order_id", req.OrderID, "step", req.Step)
	return nil
}
