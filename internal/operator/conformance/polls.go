package conformance

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"orderly/internal/adapter/remote"
	"orderly/internal/order"
)

// The rules of a step whose service is polled (order.StepDef.Poll, the
// Asynchronous Request-Reply pattern): its call carries Prefer:
// respond-async and may be accepted (202) with a status URL, which the
// run checks as the agents do, through the same client, until it says
// the work is done or failed.

// DefaultPollWait bounds how long a run checks one call's status URL
// when the step's poll timeout is longer (it may be hours): a check
// should end in minutes.
const DefaultPollWait = DefaultCallbackWait

// pollGap is the time between two checks when the service gives no
// Retry-After, where the step's poll.every is longer: the run checks the
// contract, not the engine's pace.
const pollGap = time.Second

// polling is how one accepted call's status URL was checked.
type polling struct {
	// statusURL is the accepted call's; it is compared, never reported
	// (it may carry the service's token).
	statusURL string
	wait      time.Duration
	checks    int
	// moved counts the checks that named a new status URL; transient
	// those answered 5xx, 408 or 429 (or not in time), checked again.
	moved, transient int
	// seeOther: the answer was where a 302 or 303 pointed.
	seeOther bool
	// done or failed is how it ended (neither: no end within wait),
	// after took; err is a failed check's fault.
	done, failed bool
	took         time.Duration
	err          error
	// last is the last check's status (0: none answered).
	last int
}

// poll checks the status URL of out, an accepted call of d, until it
// says the work is done (out becomes its answer) or failed (out fails
// as the check did), or the run's wait for it ends (out fails as
// transient: the engine would call again with the same key). A check
// answered 5xx, 408 or 429 is made again later, as the Supervisor does.
func (r *run) poll(ctx context.Context, d order.StepDef, out *outcome) {
	if d.Poll == nil || out.err != nil || !out.answer.Accepted || out.answer.StatusURL == "" {
		return
	}
	p := &polling{statusURL: out.answer.StatusURL, wait: min(d.Poll.Timeout, cmp.Or(r.cfg.PollWait, DefaultPollWait))}
	out.polling = p
	log := r.log(d.Name)
	log.mu.Lock()
	log.pollings = append(log.pollings, p)
	log.mu.Unlock()
	req := order.StepRequest{
		OrderID: r.orderID, Workflow: r.cfg.Workflow.Name, Version: r.cfg.Workflow.Version, Step: d.Name, Attempt: 1,
		IdempotencyKey: out.key, Input: r.cfg.Input, Results: r.answers, Poll: out.answer.StatusURL,
	}
	began := time.Now()
	deadline, after := began.Add(p.wait), out.answer.RetryAfter
	for {
		gap := after
		if gap <= 0 {
			gap = min(d.Poll.Every, pollGap)
		}
		gap = min(max(gap, 50*time.Millisecond), time.Until(deadline))
		select {
		case <-time.After(gap):
		case <-ctx.Done():
		}
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			out.err = fmt.Errorf("accepted (202), then its status URL said neither done nor failed within %s (%s): %w",
				p.wait, plural(p.checks, "check"), order.ErrTransient)
			return
		}
		e := &exchange{}
		checkCtx, cancel := context.WithTimeout(context.WithValue(ctx, exchangeKey{}, e), d.Allowance)
		ans, err := r.client.Call(checkCtx, d.Agent, req)
		cancel()
		p.checks++
		if e.sent {
			e.timedOut = e.status == 0 && errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
			out.checks = append(out.checks, e)
			log.mu.Lock()
			log.exchanges = append(log.exchanges, e)
			if errors.Is(err, order.ErrContract) {
				log.contract = append(log.contract, contractProblem(err))
			}
			log.mu.Unlock()
		}
		p.last = e.status
		switch {
		case err == nil && ans.Accepted:
			if ans.StatusURL != "" && ans.StatusURL != req.Poll {
				p.moved++
				req.Poll = ans.StatusURL
			}
			after = ans.RetryAfter
		case err == nil:
			p.done, p.took = true, time.Since(began)
			p.seeOther = slices.ContainsFunc(e.via, func(s int) bool { return s == http.StatusFound || s == http.StatusSeeOther })
			out.answer = ans
			return
		case remote.ClassOf(err) == remote.ClassTransient:
			p.transient++
			after, _ = order.RetryAfter(err)
		default:
			p.failed, p.took, p.err = true, time.Since(began), err
			out.err = fmt.Errorf("accepted (202), then its status URL answered %d: %w", e.status, err)
			return
		}
	}
}

// sameKeyPolled is same-key's first call of a step whose service is
// polled: the call, then, while its work goes on, the same call again
// (as the engine makes it when a wait times out), then both checked to
// their end. The first is the step's answer.
func (r *run) sameKeyPolled(ctx context.Context, d order.StepDef, key string) outcome {
	first := r.callOnce(ctx, d, key, false, nil, r.cfg.Input)
	log := r.log(d.Name)
	if first.err != nil || !first.answer.Accepted {
		log.pollFirst = &first
		return first
	}
	early := r.callOnce(ctx, d, key, false, nil, r.cfg.Input)
	r.poll(ctx, d, &first)
	switch {
	case early.err == nil && early.answer.Accepted && early.answer.StatusURL == first.polling.statusURL:
		// The same job: its status is first's.
		early.answer, early.err, early.sameJob = first.answer, first.err, true
	default:
		r.poll(ctx, d, &early)
	}
	log.pollFirst, log.pollEarly = &first, &early
	return first
}

// pollAcceptsRule: the step's calls, which carry Prefer: respond-async,
// are accepted (202) with a Location under the base URL, or answered at
// once with the answer (200, 201).
func (r *run) pollAcceptsRule(d order.StepDef, log *stepLog) {
	accepted, atOnce, total := 0, 0, 0
	for _, e := range log.exchanges {
		if !e.prefer || e.status == 0 {
			continue
		}
		total++
		switch {
		case e.status == http.StatusAccepted:
			if problem := r.statusURLProblem(e); problem != "" {
				r.report(d.Name, RulePollAccepts, Fail, "a call was accepted (202) with a Location that %s: a polled service answers 202 with "+
					"Location, the status URL, under its base URL (the check carries its credential); the engine takes such an answer as a "+
					"contract fault and undoes the work", problem)
				return
			}
			accepted++
		case e.status >= 200 && e.status < 300:
			if !hasID(e.body) {
				r.report(d.Name, RulePollAccepts, Fail, "a call was answered %d with no answer (no string \"id\"): a polled step takes 202 "+
					"with a Location (accepted) or 200/201 with its answer", e.status)
				return
			}
			atOnce++
		}
	}
	r.reportAccepted(d.Name, RulePollAccepts, "poll", " with a status URL under the base URL", "", total, accepted, atOnce)
}

// hasID reports whether body is a JSON object with a non-empty string id.
func hasID(body []byte) bool {
	var answer struct {
		ID any `json:"id"`
	}
	if err := json.Unmarshal(body, &answer); err != nil {
		return false
	}
	id, ok := answer.ID.(string)
	return ok && id != ""
}

// statusURLProblem says what makes e's Location unusable as a status
// URL, or is empty: it must resolve, against the call's URL, to a URL
// under the run's base URL (the same scheme and host, a path under the
// base's), with no user or fragment. It never quotes the URL.
func (r *run) statusURLProblem(e *exchange) string {
	raw := e.header.Get("Location")
	if raw == "" {
		return "is missing"
	}
	from, err := url.Parse(e.url)
	if err != nil {
		return "cannot be resolved"
	}
	loc, err := from.Parse(raw)
	if err != nil {
		return "does not parse"
	}
	base, _ := url.Parse(r.cfg.BaseURL) // Run checked it
	basePath := strings.TrimSuffix(base.EscapedPath(), "/")
	switch {
	case len(loc.String()) > order.MaxStatusURLBytes:
		return fmt.Sprintf("is over the %d bytes orderly keeps", order.MaxStatusURLBytes)
	case loc.Scheme != base.Scheme || !strings.EqualFold(loc.Host, base.Host):
		return fmt.Sprintf("is on %s, not under the base URL", order.Cut(loc.Host, 64))
	case loc.User != nil || loc.Fragment != "":
		return "has a user or a fragment"
	case loc.EscapedPath() != basePath && !strings.HasPrefix(loc.EscapedPath(), basePath+"/"):
		return "is on the service's host but not under the base URL's path"
	}
	return ""
}

// pollDoneRule: each accepted call's status URL ends, within the run's
// wait, in the work's answer (200, or a 302/303 to it), which passes the
// result rules, or in a failure (a 4xx the engine fails the step for).
func (r *run) pollDoneRule(d order.StepDef, log *stepLog) {
	log.mu.Lock()
	pollings := slices.Clone(log.pollings)
	log.mu.Unlock()
	if len(pollings) == 0 {
		r.report(d.Name, RulePollDone, Skip, "no call was accepted (202): no status URL to check")
		return
	}
	var done, failed, moved, transient, seeOther, checks int
	var slowest time.Duration
	for _, p := range pollings {
		checks = max(checks, p.checks)
		moved += p.moved
		transient += p.transient
		switch {
		case !p.done && !p.failed:
			last := "no check got an answer"
			if p.last != 0 {
				last = fmt.Sprintf("the last check was answered %d", p.last)
			}
			bound := " (the step's poll timeout)"
			if p.wait < d.Poll.Timeout {
				bound = fmt.Sprintf(" (the check's --poll-wait; the step waits up to %s: give a longer one to wait as long)", d.Poll.Timeout)
			}
			r.report(d.Name, RulePollDone, Fail, "an accepted call's status URL said neither done nor failed within %s%s, after %s; %s: "+
				"a status URL answers 202 while the work goes on, then 200 with the answer (or 303 to it), or a 4xx when it failed",
				p.wait, bound, plural(p.checks, "check"), last)
			return
		case p.failed && remote.ClassOf(p.err) != remote.ClassPermanent:
			class := remote.ClassOf(p.err)
			r.report(d.Name, RulePollDone, Fail, "an accepted call's status URL answered %d, which orderly takes as %s%s: %v",
				p.last, class, consequence(class), p.err)
			return
		case p.failed:
			failed++
		default:
			done++
			if p.seeOther {
				seeOther++
			}
		}
		slowest = max(slowest, p.took)
	}
	var notes []string
	if seeOther > 0 {
		notes = append(notes, fmt.Sprintf("%d by a 303 to the answer", seeOther))
	}
	if moved > 0 {
		notes = append(notes, fmt.Sprintf("%s named a new status URL", plural(moved, "check")))
	}
	if transient > 0 {
		notes = append(notes, fmt.Sprintf("%s answered 5xx, 408 or 429, checked again", plural(transient, "check")))
	}
	note := ""
	if len(notes) > 0 {
		note = "; " + strings.Join(notes, "; ")
	}
	r.report(d.Name, RulePollDone, Pass, "%s (202), each status URL ending within %s (the slowest in %s, after at most %s): %d done with an "+
		"answer (see %s), %d failed%s", plural(len(pollings), "call")+" accepted", pollings[0].wait, roughly(slowest), plural(checks, "check"),
		done, RuleResult, failed, note)
}

// pollIdempotentRule: the call made again with its Idempotency-Key
// while its work goes on (as the engine does when a wait times out) is
// the same job (202 with the same status URL) or ends in the same
// answer; and made again once done, it gives the same answer.
func (r *run) pollIdempotentRule(d order.StepDef, log *stepLog) {
	first, early := log.pollFirst, log.pollEarly
	switch {
	case first == nil || first.err != nil:
		r.report(d.Name, RulePollIdempotent, Skip, "no work to call again: the step's call failed (see %s)", RuleSameKey)
		return
	case first.polling == nil:
		r.report(d.Name, RulePollIdempotent, Skip, "the call was answered at once (id %s): %s checks its repeat", first.answer.Reference, RuleSameKey)
		return
	case early == nil:
		r.report(d.Name, RulePollIdempotent, Skip, "the call was not made again")
		return
	case early.err != nil:
		r.report(d.Name, RulePollIdempotent, Fail, "the call was accepted and ended with id %s; made again with its Idempotency-Key while its "+
			"work went on (as orderly does when a wait times out): %s: the service must answer the same job (202 with its status URL) or "+
			"its answer", first.answer.Reference, describe(*early))
		return
	case early.answer.Reference != first.answer.Reference:
		r.report(d.Name, RulePollIdempotent, Fail, "the call was accepted and ended with id %s; made again with its Idempotency-Key while its "+
			"work went on, it ended with id %s: the service did the work twice", first.answer.Reference, early.answer.Reference)
		return
	}
	again := log.again
	if again != nil && again.err == nil && again.answer.Reference != first.answer.Reference {
		r.report(d.Name, RulePollIdempotent, Fail, "the call ended with id %s; made again with its Idempotency-Key once done, with id %s: "+
			"the service did the work twice", first.answer.Reference, again.answer.Reference)
		return
	}
	how := "accepted again with another status URL, which ended in the same answer"
	switch {
	case early.sameJob:
		how = "accepted again with the same status URL (the same job)"
	case early.polling == nil:
		how = "answered at once with the same answer"
	}
	r.report(d.Name, RulePollIdempotent, Pass, "the call was accepted and ended with id %s; made again with its Idempotency-Key while its work "+
		"went on: %s", first.answer.Reference, how)
}
