package conformance_test

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/operator/conformance"
	"orderly/internal/order"
)

// pollRules are the rules of a step whose service is polled.
var pollRules = []string{conformance.RulePollAccepts, conformance.RulePollDone, conformance.RulePollIdempotent}

// polled is oneStep with its payment service polled, checked every
// 50 ms when it gives no Retry-After.
func polled() order.Workflow {
	w := oneStep()
	w.Steps[0].Poll = &order.PollWait{Timeout: time.Hour, Every: 50 * time.Millisecond}
	return w
}

// pollFake is a polled payment service: a charge is accepted (202) with
// a status URL, whose checks say "working" once, then answer the charge;
// with one defect switched on at a time.
type pollFake struct {
	atOnce     bool   // answers 201 with the charge, as a synchronous service
	noLocation bool   // accepts without a Location
	elsewhere  bool   // its Location is on another host
	never      bool   // its status says "working" for ever
	status404  bool   // its status URL answers 404
	newJob     bool   // a call again with a key while its work goes on is a new job
	retryAfter string // the Retry-After of its 202s (none without)
	badResult  bool   // its answer lacks the schema's "amount"
	seeOther   bool   // a done status answers 303 to the answer
	moved      bool   // the first check names a new status URL

	mu     sync.Mutex
	n      int
	jobs   map[string]*fakeJob // by job id
	byKey  map[string]string   // key → its job's id
	undone map[string]bool
}

type fakeJob struct {
	key, charge string
	checks      int
	moved       string
}

func (f *pollFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.jobs == nil {
		f.jobs, f.byKey, f.undone = map[string]*fakeJob{}, map[string]string{}, map[string]bool{}
	}
	key := r.Header.Get("Idempotency-Key")
	accepted := func(id string) {
		switch {
		case f.elsewhere:
			w.Header().Set("Location", "http://elsewhere.invalid/status/"+id)
		case !f.noLocation:
			w.Header().Set("Location", "/status/"+id)
		}
		if f.retryAfter != "" {
			w.Header().Set("Retry-After", f.retryAfter)
		}
		answer(w, http.StatusAccepted, map[string]any{"status": "working"})
	}
	result := func(j *fakeJob) map[string]any {
		out := map[string]any{"id": j.charge, "amount": 100}
		if f.badResult {
			delete(out, "amount")
		}
		return out
	}
	switch path := r.URL.Path; {
	case path == "/charges" && r.Method == http.MethodPost:
		var body map[string]any
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			answer(w, http.StatusBadRequest, map[string]any{"error": "body is not JSON"})
			return
		}
		if f.undone[key] {
			answer(w, http.StatusUnprocessableEntity, map[string]any{"error": "key was undone"})
			return
		}
		id, seen := f.byKey[key]
		if seen && f.jobs[id].checks > 1 && !f.newJob {
			answer(w, http.StatusOK, result(f.jobs[id]))
			return
		}
		if seen && f.jobs[id].moved != "" && !f.newJob {
			id = f.jobs[id].moved
		}
		if !seen || f.newJob {
			f.n++
			id = fmt.Sprintf("job%d", f.n)
			f.byKey[key] = id
			f.jobs[id] = &fakeJob{key: key, charge: fmt.Sprintf("ch_%d", f.n)}
		}
		if f.atOnce {
			f.jobs[id].checks = 2
			answer(w, http.StatusCreated, result(f.jobs[id]))
			return
		}
		accepted(id)
	case strings.HasPrefix(path, "/status/") && r.Method == http.MethodGet:
		id, isResult := strings.CutSuffix(strings.TrimPrefix(path, "/status/"), "/result")
		j, ok := f.jobs[id]
		if !ok || f.status404 || j.key != key {
			answer(w, http.StatusNotFound, map[string]any{"error": "no such job"})
			return
		}
		if j.moved != "" && j.moved != id {
			// The URL it moved from points to the new one.
			w.Header().Set("Location", "/status/"+j.moved)
			answer(w, http.StatusAccepted, map[string]any{"status": "working"})
			return
		}
		if isResult {
			answer(w, http.StatusOK, result(j))
			return
		}
		j.checks++
		switch {
		case f.moved && j.moved == "":
			j.moved = id + "m"
			f.jobs[j.moved] = j
			w.Header().Set("Location", "/status/"+j.moved)
			answer(w, http.StatusAccepted, map[string]any{"status": "working"})
		case j.checks < 2 || f.never:
			accepted(id)
		case f.seeOther:
			w.Header().Set("Location", "/status/"+id+"/result")
			answer(w, http.StatusSeeOther, map[string]any{"status": "done"})
		default:
			answer(w, http.StatusOK, result(j))
		}
	case path == "/refunds" && r.Method == http.MethodPost:
		f.undone[key] = true
		answer(w, http.StatusOK, map[string]any{"id": "rf_" + key})
	default:
		answer(w, http.StatusNotFound, map[string]any{"error": "no such path"})
	}
}

// Each defect of a polled service fails its rule (and the rules its
// consequences break), and a service without one passes every rule.
func TestPollRules(t *testing.T) {
	t.Parallel()
	// A defect that leaves a call without its answer fails every rule
	// that needs the work done.
	noWork := []string{conformance.RuleConcurrentKey, conformance.RuleSameKey, conformance.RuleUnknownEntity}
	tests := []struct {
		name string
		svc  *pollFake
		want []string
		// why is what a failed rule (for none, a passed poll rule) says.
		why string
		// wait is the run's --poll-wait; 0 is 3s.
		wait time.Duration
	}{
		{"conforming", &pollFake{}, nil, "status URL under the base URL", 0},
		{"answers at once", &pollFake{atOnce: true}, nil, "answered at once", 0},
		{"points to its answer", &pollFake{seeOther: true}, nil, "by a 303 to the answer", 0},
		{"moves its status URL", &pollFake{moved: true}, nil, "named a new status URL", 0},
		{"says when to check", &pollFake{retryAfter: "1"}, nil, "status URL under the base URL", 0},
		// A contract fault does not show the unknown-entity rule the
		// service refused: it is skipped.
		{"accepts without a Location", &pollFake{noLocation: true}, []string{conformance.RuleConcurrentKey, conformance.RulePollAccepts,
			conformance.RuleResult, conformance.RuleSameKey}, "Location that is missing", 0},
		{"points elsewhere", &pollFake{elsewhere: true}, []string{conformance.RuleConcurrentKey, conformance.RulePollAccepts,
			conformance.RuleResult, conformance.RuleSameKey}, "elsewhere.invalid", 0},
		{"never ends", &pollFake{never: true}, slices.Concat(noWork, []string{conformance.RulePollDone}), "neither done nor failed", 300 * time.Millisecond},
		// Nor a 404 while no call succeeded.
		{"answers 404 at its status URL", &pollFake{status404: true}, []string{conformance.RuleConcurrentKey, conformance.RulePollDone,
			conformance.RuleSameKey}, "404", 0},
		{"starts a new job for a key while one works", &pollFake{newJob: true},
			[]string{conformance.RuleConcurrentKey, conformance.RulePollIdempotent, conformance.RuleSameKey}, "did the work twice", 0},
		// The run waits as asked, and its wait ends first.
		{"says to check in two hours", &pollFake{retryAfter: "7200"},
			slices.Concat(noWork, []string{conformance.RulePollDone, conformance.RuleRetryAfter}), "poll timeout", 300 * time.Millisecond},
		{"answers against the schema", &pollFake{badResult: true}, []string{conformance.RuleConcurrentKey, conformance.RulePollDone,
			conformance.RuleResult, conformance.RuleSameKey}, "amount", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := polled()
			input, _ := conformance.ExampleInput(w)
			rs := run(t, tt.svc, conformance.Config{Workflow: w, Input: input, PollWait: cmp.Or(tt.wait, 3*time.Second)})
			slices.Sort(tt.want)
			if got := failed(rs); !slices.Equal(got, slices.Compact(tt.want)) {
				t.Errorf("failed %v, want %v:\n%s", got, tt.want, printed(rs))
			}
			if len(rs) != 15 {
				t.Errorf("%d results, want one per rule (15):\n%s", len(rs), printed(rs))
			}
			said := false
			for _, r := range rs {
				passed := len(tt.want) == 0 && slices.Contains(pollRules, r.Rule) && r.Verdict == conformance.Pass
				if (passed || r.Verdict == conformance.Fail) && strings.Contains(r.Why, tt.why) {
					said = true
				}
			}
			if !said {
				t.Errorf("no rule says %q:\n%s", tt.why, printed(rs))
			}
		})
	}
}

// The simulator's payment service, polled, passes every rule, the poll
// rules among them, as each of its poll test values has it answer.
func TestPolledServiceOfTheSimulator(t *testing.T) {
	t.Parallel()
	shipped, _ := workflows(t)
	shipped.Steps = slices.Clone(shipped.Steps)
	i, _ := shipped.Index("charge-payment")
	shipped.Steps[i].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	for _, sku := range []string{"SKU-1", "TEST-PAYMENT-POLL-SEE-OTHER", "TEST-PAYMENT-POLL-MOVED", "TEST-PAYMENT-POLL-FLAKY"} {
		t.Run(sku, func(t *testing.T) {
			t.Parallel()
			sim, err := simulator.New(simulator.WithCallbackDelay(20 * time.Millisecond))
			if err != nil {
				t.Fatal(err)
			}
			defer sim.Close()
			input := json.RawMessage(fmt.Sprintf(`{"customerId":"c-42","lines":[{"sku":%q,"quantity":2}]}`, sku))
			rs := run(t, sim, conformance.Config{Workflow: shipped, Input: input, UnknownInput: unknownToTheSimulator(t, input), Step: "charge-payment"})
			if conformance.Failed(rs) > 0 {
				t.Errorf("got:\n%s", printed(rs))
			}
			for _, rule := range append(pollRules, conformance.RuleRetryAfter) {
				if !slices.ContainsFunc(rs, func(r conformance.Result) bool {
					return r.Step == "charge-payment" && r.Rule == rule && r.Verdict == conformance.Pass
				}) {
					t.Errorf("%s did not pass:\n%s", rule, printed(rs))
				}
			}
		})
	}
}
