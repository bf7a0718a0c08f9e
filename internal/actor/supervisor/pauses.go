package supervisor

import (
	"context"
	"time"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// readPauses reads, once a run, which services and workflows are paused:
// the services' names (their steps' deadlines move on as held) and the
// run's report of pauses on and overrun. Each run counts them as metrics
// (PausesOn, PausesOverrun), so the stage's alarm on an overrun pause
// fires while it lasts and clears at its resume. A read that fails
// leaves the run as if nothing were paused: the agents still hold a
// paused service's requests, which the queues show.
func (s *Service) readPauses(ctx context.Context, now time.Time) (map[string]bool, Report) {
	var r Report
	if s.pauses == nil {
		return nil, r
	}
	pauses, err := s.pauses.PausesOf(ctx, s.workflows.Agents(), s.workflows.Names())
	if err != nil {
		s.log.WarnContext(ctx, "pauses not read; the queues tell which requests are held", "error", err)
		return nil, r
	}
	paused := map[string]bool{}
	for _, p := range pauses {
		if !p.On() {
			continue
		}
		r.Paused++
		if p.Kind == order.PauseService {
			paused[p.Name] = true
		}
		if p.Overrun(now) {
			r.Overrun++
			s.log.WarnContext(ctx, "pause on past its stated end: resume it, or pause again with a new end",
				"kind", p.Kind, "name", p.Name, "by", p.By, "since", p.Since, "until", p.Until, "over_by", now.Sub(p.Until).Round(time.Second))
		}
	}
	s.metrics.Count(metrics.PausesOn, r.Paused)
	s.metrics.Count(metrics.PausesOverrun, r.Overrun)
	return paused, r
}
