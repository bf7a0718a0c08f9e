package simulator

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"orderly/internal/order"
)

// The fulfilment example's events, and who sends them.
const (
	// FulfilmentWorkflow is the example whose people and partners the
	// parties play (examples/workflows/fulfilment).
	FulfilmentWorkflow = "fulfilment"
	// EventReview is the fraud analyst's decision on a flagged order.
	EventReview = "review"
	// EventDelivered is the carrier's confirmation of delivery.
	EventDelivered = "delivered"
)

// The parties' test values, as SKUs of the order's lines.
const (
	// reviewReject makes the analyst reject the order.
	reviewReject = "TEST-REVIEW-REJECT"
	// reviewSilent makes the analyst never answer: the order waits, for
	// an operator or a client to send the event, or for its timeout.
	reviewSilent = "TEST-REVIEW-SILENT"
	// carrierSilent makes the carrier never confirm.
	carrierSilent = "TEST-CARRIER-SILENT"
)

// PartyConfig tunes the parties.
type PartyConfig struct {
	// Every is how often they look for orders waiting for them; zero is
	// every second. While none waits they look less and less often, down
	// to once every four Every, so that an idle run is not a stream of
	// searches.
	Every time.Duration
	// After is how long after an order began waiting a party acts, as a
	// person takes a while; zero acts at the first look.
	After time.Duration
	// Log receives a line per event sent; nil discards.
	Log *slog.Logger
	// Transport sends the parties' requests; nil is
	// http.DefaultTransport. A deployed stage's API takes IAM on its
	// operators' routes: give SigV4's.
	Transport http.RoundTripper
}

// Parties play the people and partners who send the fulfilment example's
// events, as a client of the API anyone could write: the fraud analyst,
// who approves a flagged order (rejects it for a line TEST-REVIEW-REJECT,
// never answers for TEST-REVIEW-SILENT), and the carrier, who confirms
// delivery with the warehouse's shipment as tracking id (never, for
// TEST-CARRIER-SILENT). They find the orders waiting for them on the
// operators' search (GET /ops/orders?status=Waiting&workflow=fulfilment),
// read each on GET /ops/orders/{id}, and send the event on POST
// /ops/orders/{id}/events/{name} once the order has waited After; an
// event the API did not take (no answer, or a 5xx) is sent again at the
// next look (SendsFailed counts them). The
// services that call back (payment, warehouse) are the simulator's own
// (Server).
type Parties struct {
	api    string
	cfg    PartyConfig
	client *http.Client
	// sent are the events sent to orders still waiting for them, so that
	// a slow order is not sent the same event at every look.
	sent map[string]bool
	// sendsFailed counts the sends that got no answer or a 5xx: each is
	// made again at a later look (SendsFailed).
	sendsFailed atomic.Int64
}

// SendsFailed returns how many of the events' sends got no answer (the
// API was down) or a 5xx, and were made again at a later look.
func (p *Parties) SendsFailed() int { return int(p.sendsFailed.Load()) }

// NewParties returns the parties of the API at apiURL, its base URL.
func NewParties(apiURL string, cfg PartyConfig) *Parties {
	if cfg.Every <= 0 {
		cfg.Every = time.Second
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return &Parties{api: strings.TrimSuffix(apiURL, "/"), cfg: cfg, client: &http.Client{Timeout: 10 * time.Second, Transport: cfg.Transport}, sent: map[string]bool{}}
}

// Run looks for waiting orders until ctx ends. A look that fails is
// logged and made again at the next: the API may be starting.
func (p *Parties) Run(ctx context.Context) error {
	every := p.cfg.Every
	t := time.NewTimer(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		found, err := p.look(ctx)
		if err != nil && ctx.Err() == nil {
			p.cfg.Log.WarnContext(ctx, "the parties could not look for waiting orders", "error", err)
		}
		if every = min(2*every, 4*p.cfg.Every); found > 0 {
			every = p.cfg.Every
		}
		t.Reset(every)
	}
}

// maxPages bounds the pages one look reads.
const maxPages = 20

// look sends every event due to an order waiting for one, and returns
// how many orders of the example wait. When ctx ends it stops after the
// request in flight, which it lets finish: cancelling it would make the
// API log a failed search at every stop.
func (p *Parties) look(ctx context.Context) (int, error) {
	stopping := ctx
	ctx = context.WithoutCancel(ctx)
	waiting := map[string]bool{}
	q := url.Values{"status": {string(order.StatusWaiting)}, "workflow": {FulfilmentWorkflow}, "limit": {"100"}}
	for range maxPages {
		var page struct {
			Orders []struct {
				OrderID string `json:"orderId"`
			} `json:"orders"`
			NextCursor string `json:"nextCursor"`
		}
		if err := p.get(ctx, "/ops/orders?"+q.Encode(), &page); err != nil {
			return len(waiting), err
		}
		for _, o := range page.Orders {
			if stopping.Err() != nil {
				return len(waiting), nil
			}
			waiting[o.OrderID] = true
			if err := p.serve(ctx, o.OrderID); err != nil {
				// One order's trouble leaves the others served.
				p.cfg.Log.WarnContext(ctx, "a party could not serve a waiting order", "order_id", o.OrderID, "error", err)
			}
		}
		if page.NextCursor == "" || stopping.Err() != nil {
			break
		}
		q.Set("cursor", page.NextCursor)
	}
	// What was sent to an order no longer waiting will not be asked again.
	for k := range p.sent {
		if id, _, _ := strings.Cut(k, " "); !waiting[id] {
			delete(p.sent, k)
		}
	}
	return len(waiting), nil
}

// waitingOrder is what the parties read of an order on the operators'
// route: its steps, and its lines, for the test values.
type waitingOrder struct {
	OrderID string `json:"orderId"`
	Steps   []struct {
		Step      string `json:"step"`
		Undo      bool   `json:"undo"`
		State     string `json:"state"`
		Reference string `json:"reference"`
		Waiting   *struct {
			For   string    `json:"for"`
			Event string    `json:"event"`
			Since time.Time `json:"since"`
		} `json:"waiting"`
	} `json:"steps"`
	Lines []order.Line `json:"lines"`
}

// serve sends the order the event it waits for, when one of the parties
// sends it and the order has waited long enough.
func (p *Parties) serve(ctx context.Context, id string) error {
	var o waitingOrder
	if err := p.get(ctx, "/ops/orders/"+url.PathEscape(id), &o); err != nil {
		return err
	}
	for i, st := range o.Steps {
		w := st.Waiting
		if st.Undo || w == nil || w.For != "event" || time.Since(w.Since) < p.cfg.After {
			continue
		}
		key := id + " " + w.Event
		if p.sent[key] {
			continue
		}
		data, ok := o.eventData(w.Event, i)
		if !ok {
			continue
		}
		status, err := p.send(ctx, id, w.Event, data)
		if err != nil || status >= 500 {
			p.sendsFailed.Add(1)
		}
		if err != nil {
			return err
		}
		// Any answer but a 5xx is final: a 202, or the order moved on.
		p.sent[key] = status < 500
		p.cfg.Log.InfoContext(ctx, "party sent an event", "order_id", id, "step", st.Step, "event", w.Event, "status", status)
	}
	return nil
}

// eventData is the data the party that sends event gives it, false when
// it sends none (an event of another party, or a test value that keeps
// it silent). at is the waiting step's place among the order's records.
func (o waitingOrder) eventData(event string, at int) (map[string]string, bool) {
	has := func(sku string) bool {
		return slices.ContainsFunc(o.Lines, func(l order.Line) bool { return l.SKU == sku })
	}
	switch {
	case event == EventReview && has(reviewSilent), event == EventDelivered && has(carrierSilent):
		return nil, false
	case event == EventReview && has(reviewReject):
		return map[string]string{"decision": "reject", "note": "rejected by the simulated fraud analyst (" + reviewReject + ")"}, true
	case event == EventReview:
		return map[string]string{"decision": "approve", "note": "approved by the simulated fraud analyst"}, true
	case event == EventDelivered:
		// The shipment the step before made is what the carrier tracks.
		tracking := "trk_" + strings.ToLower(o.OrderID)
		for j := at - 1; j >= 0; j-- {
			if !o.Steps[j].Undo && o.Steps[j].Reference != "" {
				tracking = o.Steps[j].Reference
				break
			}
		}
		return map[string]string{"trackingId": tracking}, true
	}
	return nil, false
}

// get reads path's JSON into v.
func (p *Parties) get(ctx context.Context, path string, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.api+path, nil)
	if err != nil {
		return err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 4<<20))
	if err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: status %d: %s", path, resp.StatusCode, order.Cut(string(raw), 256))
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("GET %s: %w", path, err)
	}
	return nil
}

// send posts an event to the order on the operators' route, and returns
// the API's status.
func (p *Parties) send(ctx context.Context, id, event string, data map[string]string) (int, error) {
	raw, _ := json.Marshal(data) // strings only
	path := "/ops/orders/" + url.PathEscape(id) + "/events/" + url.PathEscape(event)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, p.api+path, bytes.NewReader(raw))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	return resp.StatusCode, nil
}
