package loadgen

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"orderly/internal/order"
)

// Burst is what the burst measured. Seconds runs from the first
// submission to the last order becoming terminal; Latency, from each
// order's submission to its becoming terminal.
type Burst struct {
	Orders  int `json:"orders"`
	Clients int `json:"clients"`
	// Submitted orders were accepted (202); SubmitFailed were refused or
	// never answered, the first of them quoted in FirstSubmitError;
	// NotSent were never tried (the burst stopped first).
	Submitted          int     `json:"submitted"`
	SubmitFailed       int     `json:"submitFailed"`
	FirstSubmitError   string  `json:"firstSubmitError,omitempty"`
	NotSent            int     `json:"notSent"`
	SubmitSeconds      float64 `json:"submitSeconds"`
	SubmittedPerSecond float64 `json:"submittedPerSecond"`
	Terminal           int     `json:"terminal"`
	Seconds            float64 `json:"seconds"`
	OrdersPerSecond    float64 `json:"ordersPerSecond"`
	Latency            Latency `json:"latency"`
	// Outcomes counts the terminal orders by status; NotProcessed, those
	// that ended otherwise than Processed (a healthy run has none).
	Outcomes     map[order.Status]int `json:"outcomes"`
	NotProcessed int                  `json:"notProcessed"`
	// NotTerminal orders were still moving when the burst stopped,
	// counted by the status last read ("unread" if none was).
	NotTerminal         int            `json:"notTerminal"`
	NotTerminalByStatus map[string]int `json:"notTerminalByStatus,omitempty"`
	PollErrors          int            `json:"pollErrors"`
	FirstPollError      string         `json:"firstPollError,omitempty"`
	// ObservedTimes counts orders whose terminal time is when a poller saw
	// them, because their updatedAt did not fall between their submission
	// and that read (the API's clock is not this one's).
	ObservedTimes int  `json:"observedTimes"`
	TimedOut      bool `json:"timedOut"`
}

// placed is one order of the burst. Only one goroutine at a time touches
// it: its submitting client, then the poller that took it off the queue.
type placed struct {
	id       string
	sentAt   time.Time
	ackedAt  time.Time
	seen     Seen
	read     bool
	doneAt   time.Time // zero until terminal
	observed bool
}

// runBurst submits cfg.Orders orders from cfg.Clients clients at once,
// then has cfg.Pollers pollers cycle through the orders not yet terminal
// until none is left or cfg.Timeout has passed since the first
// submission. finished is false when the burst stopped early.
func runBurst(ctx context.Context, c *Client, cfg Config, keys string) (b Burst, problems []string, finished bool) {
	b = Burst{Orders: cfg.Orders, Clients: cfg.Clients, Outcomes: map[order.Status]int{}}
	start := time.Now()
	bounded, cancel := context.WithDeadline(ctx, start.Add(cfg.Timeout))
	defer cancel()

	orders := make([]placed, cfg.Orders)
	var submits tally
	submitting, stopSubmitting := context.WithCancel(bounded)
	defer stopSubmitting()
	next := make(chan int)
	var wg sync.WaitGroup
	for range cfg.Clients {
		wg.Go(func() {
			for i := range next {
				p := &orders[i]
				p.sentAt = time.Now()
				id, err := c.Submit(submitting, fmt.Sprintf("%s-%d", keys, i))
				if err != nil {
					// A request cut short by the stop is not a failure
					// of the API's.
					if submitting.Err() == nil && submits.add(err) > cfg.MaxFailures {
						stopSubmitting()
					}
					continue
				}
				p.id, p.ackedAt = id, time.Now()
			}
		})
	}
	sent := 0
feed:
	for i := range orders {
		select {
		case next <- i:
			sent++
		case <-submitting.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()

	var accepted []int
	var lastAck time.Time
	for i, p := range orders {
		if p.id != "" {
			accepted = append(accepted, i)
			lastAck = later(lastAck, p.ackedAt)
		}
	}
	b.Submitted, b.SubmitFailed, b.FirstSubmitError = len(accepted), submits.n, submits.first
	b.NotSent = b.Orders - b.Submitted - b.SubmitFailed
	if b.Submitted > 0 {
		b.SubmitSeconds = lastAck.Sub(start).Seconds()
		b.SubmittedPerSecond = float64(b.Submitted) / b.SubmitSeconds
	}
	tooManySubmits := submits.n > cfg.MaxFailures
	if submits.n > 0 {
		msg := fmt.Sprintf("burst: %d of %d submissions failed", submits.n, sent)
		if tooManySubmits {
			msg += fmt.Sprintf(" (more than %d: stopped submitting)", cfg.MaxFailures)
		}
		problems = append(problems, msg+"; first: "+submits.first)
	}
	if tooManySubmits {
		return b, problems, false // the API refuses orders: nothing to wait for
	}
	cfg.Log.Info("burst submitted", "submitted", b.Submitted, "seconds", b.SubmitSeconds)

	polls := pollAll(bounded, c, cfg, orders, accepted)
	var latencies []time.Duration
	var last time.Time
	stuck := map[string]int{}
	for _, i := range accepted {
		p := orders[i]
		if p.doneAt.IsZero() {
			status := "unread"
			if p.read {
				status = string(p.seen.Status)
			}
			stuck[status]++
			continue
		}
		b.Terminal++
		b.Outcomes[p.seen.Status]++
		if p.observed {
			b.ObservedTimes++
		}
		latencies = append(latencies, p.doneAt.Sub(p.sentAt))
		last = later(last, p.doneAt)
	}
	b.Latency = Summarize(latencies)
	if b.Terminal > 0 {
		b.Seconds = last.Sub(start).Seconds()
		b.OrdersPerSecond = float64(b.Terminal) / b.Seconds
	}
	b.PollErrors, b.FirstPollError = polls.n, polls.first
	if polls.n > 0 {
		msg := fmt.Sprintf("burst: %d reads of GET /orders/{id} failed", polls.n)
		if polls.n > cfg.MaxFailures {
			msg += fmt.Sprintf(" (more than %d: stopped reading)", cfg.MaxFailures)
		}
		problems = append(problems, msg+"; first: "+polls.first)
	}
	if b.NotTerminal = b.Submitted - b.Terminal; b.NotTerminal > 0 {
		b.NotTerminalByStatus = stuck
		b.TimedOut = bounded.Err() == context.DeadlineExceeded && ctx.Err() == nil
		why := "when the run was interrupted"
		if b.TimedOut {
			why = fmt.Sprintf("within %s of the first submission", cfg.Timeout)
		} else if polls.n > cfg.MaxFailures {
			why = "when reading stopped"
		}
		problems = append(problems, fmt.Sprintf("burst: %d of %d orders not terminal %s: %s", b.NotTerminal, b.Submitted, why, counted(stuck)))
	}
	if b.NotSent > 0 && !tooManySubmits {
		problems = append(problems, fmt.Sprintf("burst: %d of %d orders not submitted before the burst stopped", b.NotSent, b.Orders))
	}
	var others map[order.Status]int
	if b.NotProcessed, others = notProcessed(b.Outcomes); b.NotProcessed > 0 {
		problems = append(problems, fmt.Sprintf("burst: %d of %d orders ended other than Processed: %s", b.NotProcessed, b.Terminal, counted(others)))
	}
	return b, problems, b.NotTerminal == 0 && b.NotSent == 0
}

// pollAll reads the accepted orders until each is terminal, ctx ends or
// more than cfg.MaxFailures reads failed. The orders wait in one queue:
// each poller takes the next, reads it, and puts it back at the end if it
// is not terminal, one read per cfg.PollEvery.
func pollAll(ctx context.Context, c *Client, cfg Config, orders []placed, accepted []int) *tally {
	var polls tally
	if len(accepted) == 0 {
		return &polls
	}
	queue := make(chan int, len(accepted)) // each order is in it at most once: puts never block
	for _, i := range accepted {
		queue <- i
	}
	var remaining atomic.Int64
	remaining.Store(int64(len(accepted)))
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	for range cfg.Pollers {
		wg.Go(func() {
			tick := time.NewTicker(cfg.PollEvery)
			defer tick.Stop()
			for {
				var i int
				select {
				case <-tick.C:
				case <-ctx.Done():
					return
				}
				select {
				case i = <-queue:
				case <-ctx.Done():
					return
				}
				p := &orders[i]
				seen, err := c.Order(ctx, p.id)
				now := time.Now()
				switch {
				case err != nil && ctx.Err() != nil:
					return
				case err != nil:
					if polls.add(err) > cfg.MaxFailures {
						stop()
						return
					}
				case seen.Status.Terminal():
					p.seen, p.read = seen, true
					p.doneAt, p.observed = terminalAt(p.sentAt, now, seen.UpdatedAt)
					if remaining.Add(-1) == 0 {
						stop()
					}
					continue
				default:
					p.seen, p.read = seen, true
				}
				queue <- i
			}
		})
	}
	wg.Go(func() { // progress, for a burst that takes minutes
		tick := time.NewTicker(10 * time.Second)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				cfg.Log.Info("burst waiting for orders to be terminal", "not_terminal", remaining.Load())
			case <-ctx.Done():
				return
			}
		}
	})
	wg.Wait()
	return &polls
}

// terminalAt is when an order became terminal: its updatedAt, the write
// that made it so, when that lies between its submission and the read
// that saw it (on `make run` the engine's clock is this one's), and
// otherwise the read's time. Reads of a burst come seconds apart, so
// the read's time alone would add up to a whole cycle of the pollers.
func terminalAt(sentAt, readAt, updatedAt time.Time) (at time.Time, observed bool) {
	// The engine keeps milliseconds: an order made terminal within the
	// millisecond of its submission may show a time just before it.
	if updatedAt.IsZero() || updatedAt.Before(sentAt.Add(-time.Millisecond)) || updatedAt.After(readAt) {
		return readAt, true
	}
	return later(updatedAt, sentAt), false
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}
