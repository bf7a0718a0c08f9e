package simulator

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"orderly/internal/order"
)

// DefaultCallbackDelay is how long a simulated service that calls back
// works before each callback, unless WithCallbackDelay says otherwise.
const DefaultCallbackDelay = 2 * time.Second

// WithCallbackDelay makes a service that calls back wait d before its
// first callback, and d again between two callbacks of one call. Tests
// shorten it; make run keeps the default.
func WithCallbackDelay(d time.Duration) Option {
	return func(s *Server) {
		if d > 0 {
			s.callbackDelay = d
		}
	}
}

// callbackRequest is the call's "callback" object (docs/remote-services.md,
// Services that call back): where to call back, the token that proves
// who calls, and when it stops working. The token prints as [redacted]:
// it is sent in the callback's Authorization header and nowhere else.
type callbackRequest struct {
	URL       string       `json:"url"`
	Token     order.Secret `json:"token"`
	ExpiresAt string       `json:"expiresAt"`
}

// problem names what is wrong with a call's callback object, or is empty.
func (c callbackRequest) problem() string {
	u, err := url.Parse(c.URL)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		return "callback.url must be an http or https URL"
	case c.Token == "":
		return "callback.token is required"
	}
	if _, err := time.Parse(time.RFC3339, c.ExpiresAt); err != nil {
		return "callback.expiresAt must be an RFC 3339 time"
	}
	return ""
}

// callbackMode is how a service calls back for one order, chosen by its
// lines' TEST-<SERVICE>-CALLBACK-<KIND> values. Unlike the other test
// values these add up: an order with LATE and TWICE lines has both.
type callbackMode struct {
	// late sends the first accepted call's callbacks only after its
	// token expired: answered 410, while the step's wait ended and its
	// call is made again, whose callbacks come in time.
	late bool
	// twice sends each success twice: the duplicate is answered as the
	// first was.
	twice bool
	// working sends "working" before the success.
	working bool
	// outOfOrder sends "working" after the success.
	outOfOrder bool
	// failed sends "failed" and does no work.
	failed bool
}

// callbackKinds names each kind as its test value does.
var callbackKinds = []struct {
	name string
	set  func(*callbackMode) *bool
}{
	{"LATE", func(m *callbackMode) *bool { return &m.late }},
	{"TWICE", func(m *callbackMode) *bool { return &m.twice }},
	{"WORKING", func(m *callbackMode) *bool { return &m.working }},
	{"OUT-OF-ORDER", func(m *callbackMode) *bool { return &m.outOfOrder }},
	{"FAILED", func(m *callbackMode) *bool { return &m.failed }},
}

// callbackModeFor returns the callback mode the order's lines ask of
// service.
func callbackModeFor(service string, lines []order.Line) callbackMode {
	prefix := "TEST-" + strings.ToUpper(service) + "-CALLBACK-"
	var m callbackMode
	for _, l := range lines {
		rest, ok := strings.CutPrefix(l.SKU, prefix)
		if !ok {
			continue
		}
		for _, k := range callbackKinds {
			if rest == k.name {
				*k.set(&m) = true
			}
		}
	}
	return m
}

// String names the mode for the log: "callback" and each kind set.
func (m callbackMode) String() string {
	name := "callback"
	for _, k := range callbackKinds {
		if *k.set(&m) {
			name += "-" + strings.ToLower(k.name)
		}
	}
	return name
}

// outcomes is what the mode sends for one accepted call, in order.
func (m callbackMode) outcomes() []string {
	var out []string
	if m.working {
		out = append(out, order.CallbackOutcomeWorking)
	}
	switch {
	case m.failed:
		out = append(out, order.CallbackOutcomeFailed)
	case m.twice:
		out = append(out, order.CallbackOutcomeSucceeded, order.CallbackOutcomeSucceeded)
	default:
		out = append(out, order.CallbackOutcomeSucceeded)
	}
	if m.outOfOrder {
		out = append(out, order.CallbackOutcomeWorking)
	}
	return out
}

// CallbackSent is one callback a simulated service sent: its outcome and
// the status orderly answered (0 when no answer came), for the call
// numbered Accepted among the key's accepted calls (from 1).
type CallbackSent struct {
	Accepted int
	Outcome  string
	Status   int
}

// Callbacks returns the callbacks service sent for the work of the
// idempotency key, in the order they were answered.
func (s *Server) Callbacks(service, key string) []CallbackSent {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.keys[callKey{service, key}]; ok {
		return append([]CallbackSent(nil), st.callbacks...)
	}
	return nil
}

// Reference returns the reference of the work service did under the
// idempotency key, or "" when it did none (a call refused, or called back
// failed).
func (s *Server) Reference(service, key string) string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.keys[callKey{service, key}]; ok {
		return st.reference
	}
	return ""
}

// acceptedBody answers a call the service will call back for.
type acceptedBody struct {
	ID     string `json:"id,omitempty"`
	Status string `json:"status"`
}

// acceptWork takes on the work of a call that carries a callback object:
// it does the work as doWork does (or, with FAILED, none), answers 202,
// and calls back later with the work's answer as the result. A call made
// again with the key (its wait ended) is accepted again and called back
// with its own, newer token.
func (s *Server) acceptWork(ck callKey, svc service, req requestBody) reply {
	m := callbackModeFor(svc.name, req.Lines)
	var result any
	var reference string
	if !m.failed {
		done := s.doWork(ck, svc, req.OrderID, req.CustomerID)
		if done.status != http.StatusCreated && done.status != http.StatusOK {
			return done
		}
		result = done.body
		s.mu.Lock()
		reference = s.keys[ck].reference
		s.mu.Unlock()
	}
	s.mu.Lock()
	st := s.keys[ck]
	st.accepted++
	accepted := st.accepted
	s.mu.Unlock()

	start := s.callbackDelay
	if m.late && accepted == 1 {
		// After the token's expiry (to the second), whatever the step's
		// timeout: the answer is 410 however the wait went meanwhile.
		expires, _ := time.Parse(time.RFC3339, req.Callback.ExpiresAt) // problem() checked it
		start += time.Until(expires) + time.Second
	}
	cb := *req.Callback
	s.sending.Add(1)
	go func() {
		defer s.sending.Done()
		for i, outcome := range m.outcomes() {
			body := map[string]any{"outcome": outcome}
			switch outcome {
			case order.CallbackOutcomeSucceeded:
				body["result"] = result
			case order.CallbackOutcomeFailed:
				body["error"] = svc.refusal
			}
			wait := start
			if i > 0 {
				wait = s.callbackDelay
			}
			if !s.sleep(wait) {
				return // closed: the callbacks not sent are dropped
			}
			status := s.sendCallback(cb, body)
			s.mu.Lock()
			st.callbacks = append(st.callbacks, CallbackSent{Accepted: accepted, Outcome: outcome, Status: status})
			s.mu.Unlock()
			s.log.LogAttrs(s.life, slog.LevelInfo, "callback sent",
				slog.String("remote_service", svc.name), slog.String("key", ck.key), slog.String("order_id", req.OrderID),
				slog.Int("accepted", accepted), slog.String("outcome", outcome), slog.Int("status", status))
		}
	}()
	return reply{status: http.StatusAccepted, body: acceptedBody{ID: reference, Status: "accepted"}}
}

// sleep waits d, false when the simulator closed first.
func (s *Server) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-s.life.Done():
		return false
	}
}

// A callback that gets no answer (orderly is down: the connection is
// refused), a 5xx or a 429 is tried again, as a real service retries a
// callback: at least callbackTries times, and on while its token is
// valid (after that orderly could only answer 410), each try
// callbackBackoff after the last, doubling up to callbackBackoffMax.
const (
	callbackTries      = 3
	callbackBackoff    = 500 * time.Millisecond
	callbackBackoffMax = 2 * time.Second
)

// CallbackTally counts what the services' callbacks met: how many were
// sent, how many had to be tried again because orderly did not answer
// (it was down: the connection refused) or answered 5xx or 429, and how
// many of those got through in the end.
type CallbackTally struct {
	Callbacks int `json:"callbacks"`
	// Retried counts the callbacks tried more than once; TriesFailed the
	// tries that got no answer, a 5xx or a 429.
	Retried     int `json:"retried"`
	TriesFailed int `json:"triesFailed"`
	// RetriedDelivered counts the retried callbacks orderly answered in
	// the end (with any status below 500 but 429); Undelivered the
	// callbacks given up on.
	RetriedDelivered int `json:"retriedDelivered"`
	Undelivered      int `json:"undelivered"`
}

// CallbackTally returns what the callbacks sent so far met.
func (s *Server) CallbackTally() CallbackTally {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tally
}

// sendCallback POSTs body to the callback's URL with its token, and
// returns orderly's status (0 when none came). The token goes in the
// Authorization header only: never in the log, nor in what is returned.
func (s *Server) sendCallback(cb callbackRequest, body map[string]any) int {
	raw, _ := json.Marshal(body)                         // maps of strings and answers made here cannot fail
	expires, _ := time.Parse(time.RFC3339, cb.ExpiresAt) // problem() checked it
	status, tries, failed := 0, 0, 0
	defer func() {
		delivered := tries > failed
		s.mu.Lock()
		defer s.mu.Unlock()
		s.tally.Callbacks++
		s.tally.TriesFailed += failed
		if tries > 1 {
			s.tally.Retried++
			if delivered {
				s.tally.RetriedDelivered++
			}
		}
		if !delivered {
			s.tally.Undelivered++
		}
	}()
	backoff := callbackBackoff
	for try := 0; try < callbackTries || time.Now().Before(expires); try++ {
		if try > 0 {
			if !s.sleep(backoff) {
				return status
			}
			backoff = min(2*backoff, callbackBackoffMax)
		}
		tries++
		req, err := http.NewRequestWithContext(s.life, http.MethodPost, cb.URL, bytes.NewReader(raw))
		if err != nil {
			failed++
			return 0 // problem() checked the URL
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Orderly-Callback "+string(cb.Token))
		resp, err := s.callbackClient.Do(req)
		if err != nil {
			// The error names the URL, never the header.
			s.log.LogAttrs(s.life, slog.LevelWarn, "callback not delivered", slog.Int("try", try+1), slog.String("error", err.Error()))
			failed++
			continue
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		resp.Body.Close()
		status = resp.StatusCode
		if status < 500 && status != http.StatusTooManyRequests {
			return status
		}
		failed++
	}
	return status
}

// newCallbackClient is the client callbacks are sent with: bounded, and
// following no redirect (the token is for the URL it came with).
func newCallbackClient() *http.Client {
	return &http.Client{
		Timeout:       10 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}
