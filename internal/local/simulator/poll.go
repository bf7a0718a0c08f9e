package simulator

import (
	"crypto/sha256"
	"encoding/base32"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"orderly/internal/order"
)

// Services that are polled (the Asynchronous Request-Reply pattern,
// docs/remote-services.md, Services that are polled): a call carrying
// Prefer: respond-async is accepted with 202 and a Location, the status
// URL, which a GET answers 202 while the work goes on and 200 with the
// work's answer once it is done. The work is done by doWork, keyed like
// a call's, so it is done once however often the call is made and the
// status checked.

// preferAsync is the Prefer header's preference (RFC 7240) of the call
// of a step whose service is polled.
const preferAsync = "respond-async"

// statusPrefix starts every status URL's path: /status/<service>/<id>,
// and /status/<service>/<id>/result for the answer a 303 points to.
const statusPrefix = "/status/"

// pollRetryAfter is the Retry-After of the simulator's 202s and 503s of
// a check, in seconds.
const pollRetryAfter = "1"

// prefersAsync reports whether a call's Prefer headers ask for
// respond-async, among any other preferences.
func prefersAsync(h http.Header) bool {
	for _, v := range h.Values("Prefer") {
		for _, p := range strings.Split(v, ",") {
			name, _, _ := strings.Cut(p, ";")
			name, _, _ = strings.Cut(name, "=")
			if strings.EqualFold(strings.TrimSpace(name), preferAsync) {
				return true
			}
		}
	}
	return false
}

// pollMode is how a polled service answers its checks for one order,
// chosen by its lines' TEST-<SERVICE>-POLL-<KIND> values, which add up
// as the callback ones do.
type pollMode struct {
	// failed makes the check, once the work would be done, answer 422
	// with the service's refusal, and does no work.
	failed bool
	// seeOther makes the check of done work answer 303 to a result URL
	// that a GET answers with the work's answer.
	seeOther bool
	// moved makes the first check answer 202 with a new status URL; the
	// old one then always points to the new one.
	moved bool
	// flaky makes the first check answer 503.
	flaky bool
}

// pollKinds names each kind as its test value does.
var pollKinds = []struct {
	name string
	set  func(*pollMode) *bool
}{
	{"FAILED", func(m *pollMode) *bool { return &m.failed }},
	{"SEE-OTHER", func(m *pollMode) *bool { return &m.seeOther }},
	{"MOVED", func(m *pollMode) *bool { return &m.moved }},
	{"FLAKY", func(m *pollMode) *bool { return &m.flaky }},
}

// pollModeFor returns the poll mode the order's lines ask of service.
func pollModeFor(service string, lines []order.Line) pollMode {
	prefix := "TEST-" + strings.ToUpper(service) + "-POLL-"
	var m pollMode
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l.SKU, prefix); ok {
			for _, k := range pollKinds {
				if rest == k.name {
					*k.set(&m) = true
				}
			}
		}
	}
	return m
}

// String names the mode for the log: "poll" and each kind set.
func (m pollMode) String() string {
	name := "poll"
	for _, k := range pollKinds {
		if *k.set(&m) {
			name += "-" + strings.ToLower(k.name)
		}
	}
	return name
}

// pollJob is the work of one polled call, by its service and key: one
// per key, so the call made again (its wait timed out) is the same job.
type pollJob struct {
	ck   callKey
	svc  service
	mode pollMode
	// orderID and customerID are the call's, for doWork and the answer.
	orderID, customerID string
	// since is when the job was accepted; the work is done once the
	// callback delay has passed.
	since time.Time
	// id is the job's status URL's id; firstID the one it had before a
	// MOVED check moved it ("" when it did not).
	id, firstID string
	checks      int
}

// jobID is the id of the status URL of the work under key at the
// collection path: derived, not drawn, so a simulator restarted with its
// ledger knows the status URLs it gave (restoreJob). moved is the id a
// MOVED job moves to.
func jobID(path, key string, moved bool) string {
	seed := path + "\x00" + key
	if moved {
		seed += "\x00moved"
	}
	sum := sha256.Sum256([]byte(seed))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(sum[:15]))
}

// statusPath is a job's status URL's path for id.
func (j *pollJob) statusPath(id string) string { return statusPrefix + j.svc.name + "/" + id }

// acceptPoll answers 202 to a call that prefers to be answered
// asynchronously: the key's job, made now unless the call was made
// before (the same job's status URL again). path is the call's, which
// tells two collections of one service apart; n is the call's number.
// The Location is relative to the call's URL (up from the service's
// collection), so it holds under a proxy that mounts the simulator
// under a path.
func (s *Server) acceptPoll(ck callKey, svc service, path string, req requestBody, n int) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := jobID(path, ck.key, false)
	job, ok := s.polls[id]
	if !ok {
		if s.ledger != nil {
			// The job outlives a restart: the line holds the key's
			// request (its fingerprint), from which restoreJob makes it
			// again.
			err := s.ledger.append(Effect{Service: ck.service, Key: ck.key, OrderID: req.OrderID, Fingerprint: s.keys[ck].fingerprint,
				Call: n, At: time.Now().UTC()})
			if err != nil {
				return fail(http.StatusServiceUnavailable, "%s could not record the call: %v", svc.name, err)
			}
		}
		job = &pollJob{ck: ck, svc: svc, mode: pollModeFor(svc.name, req.Lines), orderID: req.OrderID, customerID: req.CustomerID,
			since: time.Now(), id: id}
		s.addJob(job)
	}
	up := strings.Repeat("../", strings.Count(strings.Trim(path, "/"), "/"))
	return reply{
		status: http.StatusAccepted,
		body:   acceptedBody{ID: job.id, Status: "accepted"},
		header: http.Header{"Location": {up + strings.TrimPrefix(job.statusPath(job.id), "/")}, "Retry-After": {pollRetryAfter}},
	}
}

// addJob files job under its ids; s.mu is held.
func (s *Server) addJob(job *pollJob) {
	if s.polls == nil {
		s.polls = make(map[string]*pollJob)
	}
	s.polls[job.id] = job
	if job.firstID != "" {
		s.polls[job.firstID] = job
	}
}

// restoreJob makes again the job whose status URL id names, of service
// name under key, after a restart: from the ledger's line of its call
// (acceptPoll), as a service keeps its jobs. Nil when the simulator
// never accepted such a job. s.mu is held.
func (s *Server) restoreJob(name, id, key string) *pollJob {
	st, ok := s.keys[callKey{name, key}]
	if !ok || st.fingerprint == "" {
		return nil
	}
	var req requestBody
	if json.Unmarshal([]byte(st.fingerprint), &req) != nil {
		return nil
	}
	for path, svc := range services {
		if svc.name != name {
			continue
		}
		first, moved := jobID(path, key, false), jobID(path, key, true)
		if id != first && id != moved {
			continue
		}
		job := &pollJob{ck: callKey{name, key}, svc: svc, mode: pollModeFor(name, req.Lines), orderID: req.OrderID,
			customerID: req.CustomerID, since: time.Now(), id: first}
		if id == moved {
			job.id, job.firstID = moved, first
		}
		s.addJob(job)
		return job
	}
	return nil
}

// parseStatusPath reads a status URL's path: its service, its job's id,
// and whether it is the result URL a 303 points to.
func parseStatusPath(path string) (name, id string, result, ok bool) {
	rest, ok := strings.CutPrefix(path, statusPrefix)
	if !ok {
		return "", "", false, false
	}
	parts := strings.Split(rest, "/")
	switch {
	case len(parts) == 3 && parts[2] == "result":
		result = true
	case len(parts) != 2:
		return "", "", false, false
	}
	if parts[1] == "" || !serviceNamed(parts[0]) {
		return "", "", false, false
	}
	return parts[0], parts[1], result, true
}

// serviceNamed reports whether the simulator stands in for a service
// of that name.
func serviceNamed(name string) bool {
	for _, svc := range services {
		if svc.name == name {
			return true
		}
	}
	return false
}

// serveStatus answers a GET of a status URL (see Server.check) or of
// the result URL a 303 points to.
func (s *Server) serveStatus(r *http.Request) (call, reply) {
	name, id, result, ok := parseStatusPath(r.URL.Path)
	if !ok {
		return call{}, fail(http.StatusNotFound, "no status at %s", r.URL.Path)
	}
	c := call{service: name, key: r.Header.Get("Idempotency-Key"), mode: "poll-check"}
	if result {
		c.mode = "poll-result"
	}
	if r.Method != http.MethodGet {
		rep := fail(http.StatusMethodNotAllowed, "%s %s: only GET is allowed", r.Method, r.URL.Path)
		rep.header = http.Header{"Allow": {http.MethodGet}}
		return c, rep
	}
	if refused, ok := s.authenticate(name, r); !ok {
		return c, refused
	}
	if o, down := s.down(name, time.Now()); down {
		c.mode = "outage"
		return c, o.answer(r.URL.Path)
	}
	s.mu.Lock()
	job, ok := s.polls[id]
	if !ok && c.key != "" {
		job = s.restoreJob(name, id, c.key)
	}
	if job == nil || job.svc.name != name || (c.key != "" && c.key != job.ck.key) {
		s.mu.Unlock()
		// The same answer for an id never given and one of another key:
		// a status URL tells nothing of work it is not for.
		return c, fail(http.StatusNotFound, "no such job")
	}
	c.key, c.orderID = job.ck.key, job.orderID
	if result {
		s.mu.Unlock()
		return c, s.pollResult(job)
	}
	c.mode += strings.TrimPrefix(job.mode.String(), "poll")
	rep := s.check(job, id)
	c.n, id = job.checks, job.id
	s.mu.Unlock()
	if rep.status != 0 {
		return c, rep
	}
	return c, s.finish(job, id)
}

// check answers a check of job at the status URL of id while the work
// goes on, or a zero reply when it is time to finish it (finish). s.mu
// is held.
func (s *Server) check(job *pollJob, id string) reply {
	working := func(location string) reply {
		h := http.Header{"Retry-After": {pollRetryAfter}}
		if location != "" {
			// Relative to the status URL, as ids sit side by side.
			h.Set("Location", location)
		}
		return reply{status: http.StatusAccepted, body: acceptedBody{ID: job.id, Status: "working"}, header: h}
	}
	if id != job.id {
		// The URL the job moved from points to where it is now.
		return working(job.id)
	}
	job.checks++
	st := s.keys[job.ck]
	switch {
	case job.mode.flaky && job.checks == 1:
		rep := fail(http.StatusServiceUnavailable, "%s's status is temporarily unavailable (check 1 failing)", job.svc.name)
		rep.header = http.Header{"Retry-After": {pollRetryAfter}}
		return rep
	case job.mode.moved && job.firstID == "":
		job.firstID, job.id = job.id, jobID(s.pathOf(job), job.ck.key, true)
		s.addJob(job)
		return working(job.id)
	case st.undoRef != "" && st.reference == "":
		return fail(http.StatusUnprocessableEntity, "Idempotency-Key %q was undone; no work is done for it", job.ck.key)
	case st.reference == "" && time.Since(job.since) < s.callbackDelay:
		return working("")
	case job.mode.failed:
		return fail(http.StatusUnprocessableEntity, "%s", job.svc.refusal)
	}
	return reply{}
}

// pathOf is the collection path of job's service. s.mu is held.
func (s *Server) pathOf(job *pollJob) string {
	for path, svc := range services {
		if svc == job.svc {
			return path
		}
	}
	return ""
}

// finish does job's work, once (doWork), and answers with its answer:
// 200 as a call's, or 303 to the result URL of id, the job's status
// URL's, with SEE-OTHER.
func (s *Server) finish(job *pollJob, id string) reply {
	done := s.doWork(job.ck, job.svc, job.orderID, job.customerID)
	if done.status != http.StatusCreated && done.status != http.StatusOK {
		return done
	}
	if job.mode.seeOther {
		return reply{status: http.StatusSeeOther, body: acceptedBody{ID: id, Status: "done"},
			header: http.Header{"Location": {id + "/result"}}}
	}
	return reply{status: http.StatusOK, body: done.body}
}

// pollResult answers a GET of job's result URL: the work's answer once
// it is done.
func (s *Server) pollResult(job *pollJob) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	reference := s.keys[job.ck].reference
	if reference == "" {
		return fail(http.StatusNotFound, "no result yet: the job is not done")
	}
	return reply{status: http.StatusOK, body: job.svc.answer(reference, job.customerID)}
}

// Checks returns how many checks of its status URL the polled work of
// service under the idempotency key had, those of a URL it moved from
// and of its result URL left out.
func (s *Server) Checks(service, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, job := range s.polls {
		if job.ck == (callKey{service, key}) {
			return job.checks
		}
	}
	return 0
}
