package loadgen

import (
	"context"
	"errors"
	"fmt"
	"time"

	"orderly/internal/order"
)

// Sequential is what one client measured submitting an order, waiting
// for it to be terminal, then submitting the next. Latency runs from
// sending an order to reading it terminal, read every FinePoll.
type Sequential struct {
	Orders           int                  `json:"orders"`
	Submitted        int                  `json:"submitted"`
	SubmitFailed     int                  `json:"submitFailed"`
	FirstSubmitError string               `json:"firstSubmitError,omitempty"`
	Terminal         int                  `json:"terminal"`
	Latency          Latency              `json:"latency"`
	Outcomes         map[order.Status]int `json:"outcomes"`
	NotProcessed     int                  `json:"notProcessed"`
	PollErrors       int                  `json:"pollErrors"`
	FirstPollError   string               `json:"firstPollError,omitempty"`
	// Stuck names the order that was not terminal within OrderTimeout,
	// which ended the phase, and its last status.
	Stuck string `json:"stuck,omitempty"`
}

var (
	errTooManyReads = errors.New("too many failed reads")
	errNotTerminal  = errors.New("not terminal in time")
)

// runSequential submits cfg.Sequential orders one after the other, each
// once the one before is terminal. finished is false when the phase
// stopped early (an order not terminal in time, too many failures, an
// interrupt).
func runSequential(ctx context.Context, c *Client, cfg Config, phase, keys string) (s Sequential, problems []string, finished bool) {
	s = Sequential{Orders: cfg.Sequential, Outcomes: map[order.Status]int{}}
	var submits, polls tally
	var latencies []time.Duration
	finished = true
	tried := 0
	for i := range cfg.Sequential {
		if ctx.Err() != nil {
			break
		}
		tried++
		sentAt := time.Now()
		id, err := c.Submit(ctx, fmt.Sprintf("%s-%d", keys, i))
		if err != nil {
			if ctx.Err() == nil && submits.add(err) > cfg.MaxFailures {
				finished = false
				break
			}
			continue
		}
		s.Submitted++
		seen, doneAt, err := awaitTerminal(ctx, c, id, sentAt.Add(cfg.OrderTimeout), cfg, &polls)
		if err != nil {
			finished = false
			if errors.Is(err, errNotTerminal) {
				last := "unread"
				if seen.Status != "" {
					last = string(seen.Status)
				}
				s.Stuck = fmt.Sprintf("%s (last status %s)", id, last)
				problems = append(problems, fmt.Sprintf("%s: order %s not terminal within %s of its submission; stopped", phase, s.Stuck, cfg.OrderTimeout))
			}
			break
		}
		s.Terminal++
		s.Outcomes[seen.Status]++
		latencies = append(latencies, doneAt.Sub(sentAt))
	}
	s.Latency = Summarize(latencies)
	s.SubmitFailed, s.FirstSubmitError = submits.n, submits.first
	s.PollErrors, s.FirstPollError = polls.n, polls.first
	if submits.n > 0 {
		msg := fmt.Sprintf("%s: %d of %d submissions failed", phase, submits.n, tried)
		if submits.n > cfg.MaxFailures {
			msg += fmt.Sprintf(" (more than %d: stopped)", cfg.MaxFailures)
		}
		problems = append(problems, msg+"; first: "+submits.first)
	}
	if polls.n > 0 {
		msg := fmt.Sprintf("%s: %d reads of GET /orders/{id} failed", phase, polls.n)
		if polls.n > cfg.MaxFailures {
			msg += fmt.Sprintf(" (more than %d: stopped)", cfg.MaxFailures)
		}
		problems = append(problems, msg+"; first: "+polls.first)
	}
	var others map[order.Status]int
	if s.NotProcessed, others = notProcessed(s.Outcomes); s.NotProcessed > 0 {
		problems = append(problems, fmt.Sprintf("%s: %d of %d orders ended other than Processed: %s", phase, s.NotProcessed, s.Terminal, counted(others)))
	}
	if ctx.Err() != nil {
		problems = append(problems, fmt.Sprintf("%s: interrupted after %d of %d orders", phase, s.Terminal, cfg.Sequential))
		finished = false
	}
	return s, problems, finished
}

// awaitTerminal reads order id every cfg.FinePoll until it is terminal
// and returns what it read last and when. Its error wraps errNotTerminal
// when the order is not terminal by deadline.
func awaitTerminal(ctx context.Context, c *Client, id string, deadline time.Time, cfg Config, polls *tally) (Seen, time.Time, error) {
	var last Seen
	for {
		seen, err := c.Order(ctx, id)
		now := time.Now()
		switch {
		case err != nil && ctx.Err() != nil:
			return last, now, ctx.Err()
		case err != nil:
			if polls.add(err) > cfg.MaxFailures {
				return last, now, errTooManyReads
			}
		case seen.Status.Terminal():
			return seen, now, nil
		default:
			last = seen
		}
		if now.After(deadline) {
			return last, now, fmt.Errorf("order %s: %w", id, errNotTerminal)
		}
		select {
		case <-time.After(cfg.FinePoll):
		case <-ctx.Done():
			return last, now, ctx.Err()
		}
	}
}
