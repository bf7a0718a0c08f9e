package conformance

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"orderly/internal/actor/control"
	"orderly/internal/adapter/remote"
	"orderly/internal/callbacktoken"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// DefaultCallbackWait bounds how long a run waits for one call's
// callback when the step's own timeout is longer (it may be hours): a
// check should end in minutes.
const DefaultCallbackWait = 30 * time.Second

// callbackGrace is how long the other of two calls at once with one key
// waits for its own callback once one of them got its own: a service may
// call back only once for the one piece of work, as orderly takes only
// its newest attempt's callback.
const callbackGrace = 2 * time.Second

// callbackPath is the receiver's route, as the stage API's POST /callbacks.
const callbackPath = "/callbacks"

// callbackScheme is the Authorization scheme of a callback, as orderly's
// route takes it.
const callbackScheme = "Orderly-Callback"

// receiver is the run's POST /callbacks: it opens a callback's token
// with the run's throwaway key, finds the call it was sealed for, and
// answers as orderly's route would (200 taken, or a duplicate of the one
// taken; 400 a body orderly cannot take; 401 a token that does not open;
// 409 a second, different callback or one for no call; 410 one after the
// wait ended), so that a service's retry logic meets real answers.
type receiver struct {
	srv    *http.Server
	url    string
	sealer *callbacktoken.Sealer
	wf     order.Workflow
	// checks are the result schemas' checks of the steps that call back.
	checks map[string]order.InputCheck

	mu    sync.Mutex
	calls map[callKey]*pending
	// changed is closed, and replaced, whenever a call's callback state
	// changes: settle waits on it.
	changed chan struct{}
	// stray are the receiver's refusals of callbacks it could tie to no
	// call (a token that does not open), as the rules report them.
	stray []string
}

// callKey is what a token's claim names of its call (not its expiry,
// which the client sets).
type callKey struct {
	orderID string
	record  int
	step    string
	attempt int
}

func keyOf(c callbacktoken.Claim) callKey { return callKey{c.OrderID, c.Record, c.Step, c.Attempt} }

// pending is one call of a step that calls back, and what its service
// called back.
type pending struct {
	claim callbacktoken.Claim
	log   *stepLog
	wait  time.Duration
	// accepted is when the call was answered 202; deadline is when its
	// wait ends, which a "working" callback moves on up to limit.
	accepted, deadline, limit time.Time
	// ended: the call was settled; a callback now is too late (410).
	ended bool
	// atOnce is the reference of a call answered with its answer;
	// refused, a call that failed: a callback for either is not awaited.
	atOnce  string
	refused bool
	// taken is the success or failure callback taken, with its answer
	// and when it came after the 202 (or the call, when it came first).
	taken  *order.Callback
	answer order.Answer
	took   time.Duration
	// superseded: one of two calls at once with one key whose service
	// called back only for the other.
	superseded bool
	working    int
	duplicates int
	// conflicts are second, different callbacks (answered 409).
	conflicts int
	// refusals are what else the receiver answered its callbacks.
	refusals []string
	// leaks are callbacks whose body carried their token.
	leaks int
}

// callbackAddr is where the receiver listens, and the host of its URL:
// listen (HOST:PORT, the address the services reach this machine at), or
// 127.0.0.1 on a free port.
func callbackAddr(listen string) (addr, host string, err error) {
	if listen == "" {
		return "127.0.0.1:0", "127.0.0.1", nil
	}
	h, _, err := net.SplitHostPort(listen)
	if err != nil {
		return "", "", fmt.Errorf("--callback-listen %q: want HOST:PORT: %w", listen, err)
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		return "", "", fmt.Errorf("--callback-listen %q: give the address the service reaches this machine at (a host name or IP, "+
			"not a wildcard): it is the callback URL the calls carry", listen)
	}
	return listen, h, nil
}

// startReceiver listens on listen (see callbackAddr) with a key made for
// the run and never written anywhere.
func startReceiver(wf order.Workflow, listen string) (*receiver, error) {
	addr, host, err := callbackAddr(listen)
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--callback-listen %s: %w", addr, err)
	}
	key := make([]byte, callbacktoken.MinKeyBytes)
	rand.Read(key) // never fails (crypto/rand)
	sealer, err := callbacktoken.New(key)
	clear(key)
	if err != nil {
		ln.Close()
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	rc := &receiver{
		url: "http://" + net.JoinHostPort(host, port) + callbackPath, sealer: sealer, wf: wf, checks: map[string]order.InputCheck{},
		calls: map[callKey]*pending{}, changed: make(chan struct{}),
	}
	for _, d := range wf.Steps {
		if d.Callback == nil || len(d.ResultSchema) == 0 {
			continue
		}
		s, err := definition.CompileSchema(d.ResultSchema)
		if err != nil {
			ln.Close()
			return nil, fmt.Errorf("step %s: result schema: %w", d.Name, err)
		}
		rc.checks[d.Name] = func(doc []byte) []order.FieldError {
			var out []order.FieldError
			for _, p := range s.Check(doc) {
				out = append(out, order.FieldError{Field: cmp.Or(p.Field, "(the result itself)"), Problem: p.Problem})
			}
			return out
		}
	}
	rc.srv = &http.Server{Handler: rc, ReadHeaderTimeout: 10 * time.Second}
	go rc.srv.Serve(ln)
	return rc, nil
}

func (rc *receiver) close() {
	if rc != nil {
		rc.srv.Close()
	}
}

// callbacks is what the client's calls carry.
func (rc *receiver) callbacks() remote.Callbacks {
	return remote.Callbacks{URL: rc.url, Tokens: callbacktoken.Fixed(rc.sealer)}
}

// notify wakes every settle; rc.mu is held.
func (rc *receiver) notify() {
	close(rc.changed)
	rc.changed = make(chan struct{})
}

// register awaits the callback of the call claim names, before it is
// made: a service may call back before it answers.
func (rc *receiver) register(claim callbacktoken.Claim, d order.StepDef, wait time.Duration, log *stepLog) *pending {
	p := &pending{claim: claim, log: log, wait: wait}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.calls[keyOf(claim)] = p
	p.start(time.Now(), d)
	return p
}

// start begins the call's wait at now: the step's timeout, moved on by
// "working" to its maximum, neither beyond the run's bound.
func (p *pending) start(now time.Time, d order.StepDef) {
	p.accepted = now
	p.deadline = now.Add(min(d.Callback.Timeout, p.wait))
	p.limit = now.Add(min(max(d.Callback.MaxTimeout, d.Callback.Timeout), p.wait))
}

// answered records how the call itself ended: accepted, its wait starts
// now; answered at once or refused, no callback is awaited.
func (rc *receiver) answered(p *pending, d order.StepDef, out outcome) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	switch {
	case out.err == nil && out.answer.Accepted:
		if p.taken == nil {
			p.start(time.Now(), d)
		}
		return
	case out.err == nil:
		p.atOnce = out.answer.Reference
	default:
		p.refused = true
	}
	p.ended = true
	rc.notify()
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != callbackPath {
		rc.refuse(w, nil, nil, http.StatusNotFound, "no_route", "callbacks go to the URL the call carried")
		return
	}
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		rc.refuse(w, nil, nil, http.StatusMethodNotAllowed, "method_not_allowed", "a callback is a POST")
		return
	}
	values := req.Header.Values("Authorization")
	scheme, token, _ := strings.Cut(strings.TrimSpace(strings.Join(values, "")), " ")
	token = strings.TrimSpace(token)
	if len(values) != 1 || !strings.EqualFold(scheme, callbackScheme) || token == "" {
		rc.refuse(w, nil, nil, http.StatusUnauthorized, "invalid_token",
			"a callback needs one Authorization header, "+callbackScheme+" and the token its call carried")
		return
	}
	claim, err := rc.sealer.Open(token, time.Now())
	switch {
	case errors.Is(err, callbacktoken.ErrExpired):
		rc.refuse(w, rc.call(claim), nil, http.StatusGone, "too_late", "the callback's token expired with the wait it was made for")
		return
	case err != nil:
		rc.refuse(w, nil, nil, http.StatusUnauthorized, "invalid_token",
			"the Authorization header holds no callback token of this check (wrong, altered or another's)")
		return
	}
	p := rc.call(claim)
	scrub := remote.NewScrubber(token)
	body, err := io.ReadAll(io.LimitReader(req.Body, order.MaxInputBytes+1))
	if err != nil {
		rc.refuse(w, p, scrub, http.StatusBadRequest, "invalid_request", "the body could not be read")
		return
	}
	if p == nil {
		rc.refuse(w, nil, scrub, http.StatusConflict, "invalid_state", "no call of this check awaits a callback of that token's attempt")
		return
	}
	if scrub.Scrub(string(body)) != string(body) {
		rc.mu.Lock()
		p.leaks++
		rc.mu.Unlock()
	}
	cb, err := order.ParseCallback(body)
	if errors.Is(err, order.ErrTooLarge) {
		rc.refuse(w, p, scrub, http.StatusRequestEntityTooLarge, "too_large", err.Error())
		return
	}
	if err != nil {
		rc.invalid(w, p, scrub, err)
		return
	}
	def, _ := rc.wf.Step(claim.Step)
	var answer order.Answer
	if cb.Outcome == order.CallbackOutcomeSucceeded {
		if answer, err = control.CheckCallbackResult(rc.wf, def, cb.Result, rc.checks[def.Name]); err != nil {
			p.log.mu.Lock()
			p.log.contract = append(p.log.contract, "a callback's "+scrub.Scrub(err.Error()))
			p.log.mu.Unlock()
			rc.invalid(w, p, scrub, err)
			return
		}
	}
	rc.take(w, p, def, cb, answer)
}

// take decides cb, a callback p awaits, as orderly's route does.
func (rc *receiver) take(w http.ResponseWriter, p *pending, d order.StepDef, cb order.Callback, answer order.Answer) {
	rc.mu.Lock()
	now := time.Now()
	var status int
	var code, why string
	switch {
	case p.taken != nil || p.atOnce != "":
		same := cb.Outcome == order.CallbackOutcomeWorking ||
			(p.taken != nil && cb.Outcome == p.taken.Outcome && (cb.Outcome != order.CallbackOutcomeSucceeded || answer.Reference == p.answer.Reference)) ||
			(p.atOnce != "" && cb.Outcome == order.CallbackOutcomeSucceeded && answer.Reference == p.atOnce)
		if same {
			p.duplicates++
			status = http.StatusOK
			break
		}
		p.conflicts++
		status, code, why = http.StatusConflict, "invalid_state", "the call took another callback already: this one, different, changes nothing"
	case p.refused:
		status, code, why = http.StatusConflict, "invalid_state", "the call was refused: no callback is awaited"
	case p.ended || now.After(p.deadline):
		status, code, why = http.StatusGone, "too_late", fmt.Sprintf("the wait for this callback ended at %s", p.deadline.UTC().Format(time.RFC3339))
	case cb.Outcome == order.CallbackOutcomeWorking:
		p.working++
		if until := now.Add(d.Callback.Timeout); until.After(p.deadline) {
			p.deadline = until
		}
		if p.deadline.After(p.limit) {
			p.deadline = p.limit
		}
		status = http.StatusOK
	default:
		p.taken, p.answer, p.took = &cb, answer, now.Sub(p.accepted)
		status = http.StatusOK
	}
	if status != http.StatusOK {
		p.refusals = append(p.refusals, fmt.Sprintf("%d (%s)", status, why))
	}
	deadline := p.deadline
	rc.notify()
	rc.mu.Unlock()
	if status != http.StatusOK {
		writeJSON(w, status, map[string]any{"error": code, "message": why})
		return
	}
	reply := map[string]any{"orderId": p.claim.OrderID, "step": p.claim.Step, "attempt": p.claim.Attempt}
	if cb.Outcome == order.CallbackOutcomeWorking {
		reply["completeBy"] = deadline.UTC().Format(time.RFC3339Nano)
	}
	writeJSON(w, http.StatusOK, reply)
}

// call is the call claim was sealed for, if the run made it.
func (rc *receiver) call(claim callbacktoken.Claim) *pending {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.calls[keyOf(claim)]
}

// invalid answers 400 for err, a body orderly cannot take, naming its
// fields as orderly's route does.
func (rc *receiver) invalid(w http.ResponseWriter, p *pending, scrub *remote.Scrubber, err error) {
	var verr *order.ValidationError
	if !errors.As(err, &verr) {
		rc.refuse(w, p, scrub, http.StatusBadRequest, "invalid_request", err.Error())
		return
	}
	rc.note(p, scrub, fmt.Sprintf("400 (%s)", err))
	writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_request", "message": "the request has invalid fields", "fields": verr.Fields})
}

// refuse answers a callback the receiver does not take, and notes it
// for the rules (for p, or the run's when it names no call).
func (rc *receiver) refuse(w http.ResponseWriter, p *pending, scrub *remote.Scrubber, status int, code, why string) {
	note := fmt.Sprintf("%d (%s)", status, why)
	rc.note(p, scrub, note)
	if status == http.StatusUnauthorized {
		w.Header().Set("WWW-Authenticate", callbackScheme)
	}
	writeJSON(w, status, map[string]any{"error": code, "message": why})
}

func (rc *receiver) note(p *pending, scrub *remote.Scrubber, note string) {
	note = order.Cut(scrub.Scrub(note), 200)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if p == nil {
		rc.stray = append(rc.stray, note)
	} else {
		p.refusals = append(p.refusals, note)
	}
}

func writeJSON(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// settle waits for the callbacks of the calls of outs that were
// accepted, and makes each such outcome what its callback said: a
// success's answer, a failure (permanent), or no callback within the
// wait (transient: orderly would call again with the same key). Of
// several calls at once with one key, once one is called back the others
// wait callbackGrace more, and those not called back by then take its
// outcome (superseded).
func (r *run) settle(ctx context.Context, outs ...*outcome) {
	var ps []*pending
	for _, o := range outs {
		if o.pending != nil && o.err == nil && o.answer.Accepted {
			ps = append(ps, o.pending)
		}
	}
	if len(ps) == 0 {
		return
	}
	rc := r.receiver
	var graceEnd time.Time
	for {
		rc.mu.Lock()
		changed, now := rc.changed, time.Now()
		var next time.Time
		open, taken := 0, false
		for _, p := range ps {
			switch {
			case p.taken != nil:
				taken = true
			case now.Before(p.deadline):
				open++
				if next.IsZero() || p.deadline.Before(next) {
					next = p.deadline
				}
			}
		}
		if taken && len(ps) > 1 && graceEnd.IsZero() {
			graceEnd = now.Add(callbackGrace)
		}
		if !graceEnd.IsZero() && graceEnd.Before(next) {
			next = graceEnd
		}
		if open == 0 || (!graceEnd.IsZero() && !now.Before(graceEnd)) || ctx.Err() != nil {
			for _, p := range ps {
				p.ended = true
				p.superseded = p.taken == nil && taken
			}
			rc.notify()
			rc.mu.Unlock()
			break
		}
		rc.mu.Unlock()
		timer := time.NewTimer(time.Until(next))
		select {
		case <-changed:
		case <-timer.C:
		case <-ctx.Done():
		}
		timer.Stop()
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	// first is the call called back, whose outcome a superseded one
	// takes, once it is its callback's.
	var first *outcome
	var superseded []*outcome
	for _, o := range outs {
		p := o.pending
		if p == nil || o.err != nil || !o.answer.Accepted {
			continue
		}
		o.calledBack = true
		switch {
		case p.taken != nil && p.taken.Outcome == order.CallbackOutcomeSucceeded:
			o.answer = order.Answer{Reference: p.answer.Reference, Body: p.answer.Body}
		case p.taken != nil:
			reason := order.Cut(remote.NewScrubber(o.token).Scrub(p.taken.Error), 200)
			o.err = fmt.Errorf("accepted (202), then called back %q: %q: %w", p.taken.Outcome, reason, order.ErrPermanent)
		case p.superseded:
			superseded = append(superseded, o)
			continue
		case ctx.Err() != nil:
			o.err = fmt.Errorf("accepted (202), then the run ended waiting for its callback: %w: %w", ctx.Err(), order.ErrTransient)
		default:
			o.err = fmt.Errorf("accepted (202), then no callback was taken within %s: %w", p.wait, order.ErrTransient)
		}
		if p.taken != nil && first == nil {
			first = o
		}
	}
	for _, o := range superseded {
		o.answer, o.err, o.superseded = first.answer, first.err, true
	}
}

// callbacksOf are the step's calls the service accepted, but those
// another call's callback superseded.
func (rc *receiver) callbacksOf(log *stepLog) []*pending {
	var out []*pending
	for _, p := range log.pendings {
		if !p.refused && p.atOnce == "" && !p.superseded {
			out = append(out, p)
		}
	}
	return out
}

// callbackAcceptsRule: the step's calls are answered 202 (accepted), or
// 200/201 with the answer (the work done at once).
func (r *run) callbackAcceptsRule(d order.StepDef, log *stepLog) {
	accepted, atOnce, total := 0, 0, 0
	for _, e := range log.exchanges {
		if e.token == "" || e.status == 0 {
			continue
		}
		total++
		switch {
		case e.status == http.StatusAccepted:
			accepted++
		case e.status >= 200 && e.status < 300:
			var answer struct {
				ID any `json:"id"`
			}
			_ = json.Unmarshal(e.body, &answer)
			if id, ok := answer.ID.(string); !ok || id == "" {
				r.report(d.Name, RuleCallbackAccepts, Fail, "a call was answered %d with no answer (no string \"id\"): a step that calls back "+
					"takes 202 (accepted: the service calls back) or 200/201 with its answer; the engine takes a 2xx without an id as "+
					"transient and calls again until the window ends", e.status)
				return
			}
			atOnce++
		}
	}
	r.reportAccepted(d.Name, RuleCallbackAccepts, "callback", "", ", which finishes the step at once", total, accepted, atOnce)
}

// reportAccepted reports rule, whether the calls of an asynchronous step
// are accepted or answered at once, from how many got an answer (total),
// were accepted (202) and were answered at once (200/201). kind names
// the rules that follow an accepted call ("callback", "poll"); carried
// says what an accepted call carried, and atOnce what an answer at once
// does, when there are both.
func (r *run) reportAccepted(step, rule, kind, carried, finishes string, total, accepted, atOnce int) {
	switch {
	case total == 0:
		r.report(step, rule, Fail, "no call of the step got an answer (see %s)", RuleSameKey)
	case accepted == 0 && atOnce == 0:
		r.report(step, rule, Fail, "no call was accepted (202) or answered with its answer (200/201): see %s", RuleSameKey)
	case accepted == 0:
		r.report(step, rule, Pass, "every call that succeeded was answered at once (%s with the answer, 200/201): the step never waits, "+
			"and the %s rules have nothing more to check", plural(atOnce, "answer"), kind)
	case atOnce > 0:
		r.report(step, rule, Pass, "%s (202)%s; %s at once with the answer (200/201)%s",
			plural(accepted, "call")+" accepted", carried, plural(atOnce, "call")+" answered", finishes)
	default:
		r.report(step, rule, Pass, "%s (202)%s", plural(accepted, "call")+" accepted", carried)
	}
}

// callbackArrivesRule: every call accepted is called back within its
// wait, with its token, a body orderly takes, and a valid answer.
func (r *run) callbackArrivesRule(d order.StepDef, log *stepLog) {
	rc := r.receiver
	rc.mu.Lock()
	defer rc.mu.Unlock()
	calls := rc.callbacksOf(log)
	if len(calls) == 0 {
		r.report(d.Name, RuleCallbackArrives, Skip, "no call was accepted (202): nothing to call back")
		return
	}
	var missing, succeeded, failed, working, duplicates int
	var slowest time.Duration
	var refusals []string
	for _, p := range calls {
		refusals = append(refusals, p.refusals...)
		working += p.working
		duplicates += p.duplicates
		switch {
		case p.taken == nil:
			missing++
		case p.taken.Outcome == order.CallbackOutcomeSucceeded:
			succeeded++
		default:
			failed++
		}
		if p.taken != nil {
			slowest = max(slowest, p.took)
		}
	}
	wait := calls[0].wait
	if missing > 0 {
		bound := ""
		if wait < d.Callback.Timeout {
			bound = fmt.Sprintf(" (the check's --callback-wait; the step waits up to %s: give a longer one to wait as long)", d.Callback.Timeout)
		} else {
			bound = " (the step's callback timeout)"
		}
		seen := ""
		if all := slices.Concat(refusals, rc.stray); len(all) > 0 {
			seen = "; the callbacks that came were answered " + counted(all)
		}
		r.report(d.Name, RuleCallbackArrives, Fail, "%d of %s (202) got no callback taken within %s%s%s: the service must call POST {url} with "+
			"Authorization: %s <token> and a body orderly takes (docs/remote-services.md, Services that call back)",
			missing, plural(len(calls), "call")+" accepted", wait, bound, seen, callbackScheme)
		return
	}
	var notes []string
	if working > 0 {
		notes = append(notes, fmt.Sprintf("%s moved the wait on", plural(working, `"working" callback`)))
	}
	if duplicates > 0 {
		notes = append(notes, fmt.Sprintf("%s answered 200 as the first", plural(duplicates, "duplicate")))
	}
	if len(refusals) > 0 {
		notes = append(notes, "callbacks also answered "+counted(refusals))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	r.report(d.Name, RuleCallbackArrives, Pass, "%s (202), each called back with its token within %s (the slowest in %s): %d succeeded "+
		"with a valid answer, %d failed%s", plural(len(calls), "call")+" accepted", wait, roughly(slowest), succeeded, failed, note)
}

// counted lists notes with how often each came.
func counted(notes []string) string {
	var out []string
	seen := map[string]int{}
	for _, n := range notes {
		if seen[n]++; seen[n] == 1 {
			out = append(out, n)
		}
	}
	for i, n := range out {
		if seen[n] > 1 {
			out[i] = fmt.Sprintf("%s ×%d", n, seen[n])
		}
	}
	return listed(out, 4)
}

// callbackIdempotentRule: the call again with its Idempotency-Key (and
// a new token, as orderly calls again after a callback it never got) is
// the same work: answered with its answer, or called back with the same
// id; and no call is called back twice with different outcomes.
func (r *run) callbackIdempotentRule(d order.StepDef, log *stepLog) {
	rc := r.receiver
	rc.mu.Lock()
	conflicts := 0
	for _, p := range log.pendings {
		conflicts += p.conflicts
	}
	rc.mu.Unlock()
	first, again := log.first, log.again
	switch {
	case conflicts > 0:
		r.report(d.Name, RuleCallbackIdempotent, Fail, "%s after the one taken, different from it (answered 409): a call is called back "+
			"once; a repeat of its callback must say the same", plural(conflicts, "callback")+" came")
	case first == nil || first.err != nil:
		r.report(d.Name, RuleCallbackIdempotent, Skip, "no work to call again: the step's call failed (see %s)", RuleSameKey)
	case !first.calledBack:
		r.report(d.Name, RuleCallbackIdempotent, Skip, "the call was answered at once (id %s): %s checks its repeat", first.answer.Reference, RuleSameKey)
	case again == nil:
		r.report(d.Name, RuleCallbackIdempotent, Skip, "the call was not made again")
	case again.err != nil:
		r.report(d.Name, RuleCallbackIdempotent, Fail, "the call was called back (id %s); made again with its Idempotency-Key and a new token "+
			"(as orderly does when a callback never came): %s: the service must answer the same work again", first.answer.Reference, describe(*again))
	case again.answer.Reference != first.answer.Reference:
		r.report(d.Name, RuleCallbackIdempotent, Fail, "the call was called back with id %s; made again with its Idempotency-Key, with id %s: "+
			"the service did the work twice", first.answer.Reference, again.answer.Reference)
	case again.calledBack:
		r.report(d.Name, RuleCallbackIdempotent, Pass, "the call was called back (id %s); made again with its Idempotency-Key and a new token, "+
			"accepted and called back with the same id", first.answer.Reference)
	default:
		r.report(d.Name, RuleCallbackIdempotent, Pass, "the call was called back (id %s); made again with its Idempotency-Key and a new token, "+
			"answered at once with the same id", first.answer.Reference)
	}
}

// callbackTokenKeptRule: no answer to a call that carried a token, and
// no callback, carries the token back (in any form Scrubber knows).
func (r *run) callbackTokenKeptRule(d order.StepDef, log *stepLog) {
	answers := 0
	for _, e := range log.exchanges {
		if e.token == "" || e.status == 0 {
			continue
		}
		answers++
		scrub := remote.NewScrubber(e.token)
		var header strings.Builder
		e.header.Write(&header)
		if scrub.Scrub(string(e.body)) != string(e.body) || scrub.Scrub(header.String()) != header.String() {
			r.report(d.Name, RuleCallbackTokenKept, Fail, "a %d answer's body or headers carry the callback token its call carried (or an encoding "+
				"of it): the token is a bearer secret for the attempt; send it only in the callback's Authorization header, and never log it", e.status)
			return
		}
	}
	rc := r.receiver
	rc.mu.Lock()
	leaks, callbacks := 0, 0
	for _, p := range log.pendings {
		leaks += p.leaks
		if p.taken != nil {
			callbacks += 1 + p.duplicates
		}
		callbacks += p.working
	}
	rc.mu.Unlock()
	switch {
	case leaks > 0:
		r.report(d.Name, RuleCallbackTokenKept, Fail, "%s carried their own token in the callback's body: the token goes in the Authorization "+
			"header only, and never in a body, a log or an error", plural(leaks, "callback"))
	case answers == 0:
		r.report(d.Name, RuleCallbackTokenKept, Skip, "no answer to a call that carried a token")
	default:
		r.report(d.Name, RuleCallbackTokenKept, Pass, "%s and %s, none carrying the token", plural(answers, "answer"), plural(callbacks, "callback"))
	}
}
