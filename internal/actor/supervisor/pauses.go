package supervisor

import (
	"context"
	"time"

	"orderly/internal/metrics"
	"orderly/internal/order"
)

// paused is what a run knows of the stage's pauses: the services paused
// (their steps' deadlines move on as held) and the workflows paused (their
// held orders stay held).
type paused struct {
	services, workflows map[string]bool
}

// readPauses reads, once a run, which services and workflows are paused,
// and the run's report of pauses on and overrun. Each run counts them as metrics
// (PausesOn, PausesOverrun), so the stage's alarm on an overrun pause
// fires while it lasts and clears at its resume. A read that fails
// leaves the run as if nothing were paused: the agents still hold a
// paused service's requests, which the queues show.
func (s *Service) readPauses(ctx context.Context, now time.Time) (paused, Report) {
	var r Report
	if s.pauses == nil {
		return paused{}, r
	}
	pauses, err := s.pauses.PausesOf(ctx, s.workflows.Agents(), s.workflows.Names())
	if err != nil {
		// Held orders stay held: released only when a read says so.
		s.log.WarnContext(ctx, "pauses not read; the queues tell which requests are held", "error", err)
		all := map[string]bool{}
		for _, n := range s.workflows.Names() {
			all[n] = true
		}
		return paused{workflows: all}, r
	}
	on := paused{services: map[string]bool{}, workflows: map[string]bool{}}
	for _, p := range pauses {
		if !p.On() {
			continue
		}
		r.Paused++
		switch p.Kind {
		case order.PauseService:
			on.services[p.Name] = true
		case order.PauseWorkflow:
			on.workflows[p.Name] = true
		}
		if p.Overrun(now) {
			r.Overrun++
			s.log.WarnContext(ctx, "pause on past its stated end: resume it, or pause again with a new end",
				"kind", p.Kind, "name", p.Name, "by", p.By, "since", p.Since, "until", p.Until, "over_by", now.Sub(p.Until).Round(time.Second))
		}
	}
	s.metrics.Count(metrics.PausesOn, r.Paused)
	s.metrics.Count(metrics.PausesOverrun, r.Overrun)
	return on, r
}
