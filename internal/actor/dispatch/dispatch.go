// Package dispatch sends the request of a step that was just claimed to
// its agent. Submission, the Scheduler's stream handler and its reply
// handler all claim steps and send their requests this way. When the send
// fails the claim is released at once, so the stream re-announces the step
// and no attempt or allowance is spent on a request no agent ever saw.
package dispatch

import (
	"context"
	"log/slog"
	"time"

	"go.opentelemetry.io/otel/trace"

	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// Sender sends step requests to agents.
type Sender interface {
	SendRequest(ctx context.Context, agent string, req order.StepRequest) error
}

// Releaser gives a claim back when its request could not be sent: it
// persists order.Release.
type Releaser interface {
	Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error)
}

// ReleasesBeforeBackoff is how many times a step's claim is released and
// re-announced at once. A send that keeps failing (a deleted queue, a
// broken permission) would otherwise loop through the stream for ever;
// after that the Supervisor's re-announcements take over, which back off,
// alert operators and finally give the order up.
const ReleasesBeforeBackoff = 3

// Dispatcher sends claimed steps' requests.
type Dispatcher struct {
	sender      Sender
	releaser    Releaser
	claimWithin time.Duration
	now         func() time.Time
	log         *slog.Logger
	metrics     *metrics.Recorder
}

// New returns a dispatcher. claimWithin is how long a released step may
// wait for a Scheduler before the Supervisor re-announces it.
func New(s Sender, r Releaser, claimWithin time.Duration, now func() time.Time, log *slog.Logger, m *metrics.Recorder) *Dispatcher {
	return &Dispatcher{sender: s, releaser: r, claimWithin: claimWithin, now: now, log: log, metrics: m}
}

// Send sends the request of step st of order o, which the caller has just
// claimed. When the request does not go out the step is safe all the same:
// released to Pending (a Scheduler claims it again through the stream),
// or, if even that write failed, left Processing until its CompleteBy,
// when the Supervisor retries it. Either way the caller has nothing to do.
func (d *Dispatcher) Send(ctx context.Context, o order.Order, st order.StepState) {
	log := d.log.With("order_id", st.OrderID, "step", st.Step, "attempt", st.Attempt)
	// The request carries this span's traceparent: the agent's span is
	// its child.
	sendCtx, span := tracing.Start(ctx, "dispatch.request", tracing.OfState(st), trace.WithSpanKind(trace.SpanKindProducer))
	err := d.sender.SendRequest(sendCtx, st.Agent, order.NewRequest(o, st))
	tracing.End(span, err)
	if err == nil {
		log.InfoContext(ctx, "step claimed and requested", "agent", st.Agent, "complete_by", st.CompleteBy)
		return
	}
	now := d.now()
	// The error is logged; the step keeps a reason clients may read (an
	// AWS error can name the account and its roles).
	reason := order.NotSent(st.Agent)
	announce := st.Releases+1 < ReleasesBeforeBackoff
	if _, _, rerr := d.releaser.Apply(ctx, order.Release(st, now.Add(d.claimWithin), reason, announce, now)); rerr != nil {
		log.ErrorContext(ctx, "request not sent and claim not released; the Supervisor retries the step after complete_by",
			"complete_by", st.CompleteBy, "error", err, "release_error", rerr)
		return
	}
	log.WarnContext(ctx, "request not sent; claim released for a Scheduler to claim again", "error", err)
	d.metrics.Count(metrics.ClaimsReleased, 1, "order_id", st.OrderID, "step", st.Step)
}
