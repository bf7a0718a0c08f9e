package conformance_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/definition"
	"orderly/internal/local/simulator"
	"orderly/internal/operator/conformance"
	"orderly/internal/order"
)

// callbackRules are the rules of a step whose service calls back.
var callbackRules = []string{conformance.RuleCallbackAccepts, conformance.RuleCallbackArrives, conformance.RuleCallbackIdempotent,
	conformance.RuleCallbackTokenKept}

// callingBack is oneStep with its payment service calling back.
func callingBack() order.Workflow {
	w := oneStep()
	w.Steps[0].Callback = &order.CallbackWait{Timeout: time.Minute, MaxTimeout: time.Hour}
	return w
}

// callbackFake is a payment service that accepts a charge (202) and
// calls back with its result, with one defect switched on at a time.
type callbackFake struct {
	accept200  bool // answers 200 {"status":"pending"}, no 202 and no answer
	atOnce     bool // answers 201 with the charge, as a synchronous service
	neverCalls bool // accepts, and never calls back
	badToken   bool // calls back with the token altered
	badBody    bool // calls back with an outcome orderly does not know
	badResult  bool // calls back a result without the schema's "amount"
	echoToken  bool // its 202 quotes the token
	echoInBack bool // its callback's error quotes the token
	ignoreKey  bool // every call is new work
	working    bool // calls back "working" before the success
	twice      bool // sends each success twice
	changes    bool // after the success, calls back "failed" for the same call
	unknown    bool // refuses a customer other than c-1 by a "failed" callback
	// oncePerWork: a call for work whose callback is not sent yet is
	// accepted, and only that callback is sent.
	oncePerWork bool

	mu       sync.Mutex
	n        int
	work     map[string]string // key → charge id
	undone   map[string]bool
	statuses [][]int // what each call's callbacks were answered
	queued   []queued
	sending  map[string]bool // keys whose callback is being sent
	key      string          // of the call being answered
	tokens   []string        // every token its calls carried
	wg       sync.WaitGroup
}

func (f *callbackFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	if f.work == nil {
		f.work, f.undone, f.sending = map[string]string{}, map[string]bool{}, map[string]bool{}
	}
	f.mu.Unlock()
	key := r.Header.Get("Idempotency-Key")
	body, _ := io.ReadAll(r.Body)
	var req struct {
		CustomerID string `json:"customerId"`
		Callback   *struct {
			URL   string `json:"url"`
			Token string `json:"token"`
		} `json:"callback"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		answer(w, http.StatusBadRequest, map[string]any{"error": "body is not JSON"})
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.key = key
	defer func() {
		if len(f.queued) > 0 {
			f.wg.Add(1)
			f.statuses = append(f.statuses, nil)
			go f.send(len(f.statuses)-1, f.queued)
			f.queued = nil
		}
	}()
	switch r.URL.Path {
	case "/charges":
		if req.Callback == nil {
			answer(w, http.StatusBadRequest, map[string]any{"error": "no callback"})
			return
		}
		f.tokens = append(f.tokens, req.Callback.Token)
		if f.undone[key] {
			answer(w, http.StatusUnprocessableEntity, map[string]any{"error": "key was undone"})
			return
		}
		if f.unknown && req.CustomerID != "c-1" {
			answer(w, http.StatusAccepted, map[string]any{"status": "pending"})
			f.callBack(req.Callback.URL, req.Callback.Token, map[string]any{"outcome": "failed", "error": "no such customer"})
			return
		}
		id, done := f.work[key]
		if f.oncePerWork && done && !f.sending[key] {
			answer(w, http.StatusAccepted, map[string]any{"status": "pending"})
			return
		}
		if !done || f.ignoreKey {
			f.n++
			id = fmt.Sprintf("ch_%d", f.n)
			f.work[key] = id
		}
		result := map[string]any{"id": id, "amount": 100}
		if f.badResult {
			delete(result, "amount")
		}
		switch {
		case f.atOnce:
			answer(w, http.StatusCreated, result)
			return
		case f.accept200:
			answer(w, http.StatusOK, map[string]any{"status": "pending"})
			return
		case f.echoToken:
			answer(w, http.StatusAccepted, map[string]any{"status": "pending", "callback": req.Callback.Token})
		default:
			answer(w, http.StatusAccepted, map[string]any{"status": "pending"})
		}
		if f.neverCalls {
			return
		}
		token := req.Callback.Token
		if f.badToken {
			// One character changed, always: upper-casing a prefix left
			// a token whose prefix had no lower-case letter as it was.
			swap := byte('A')
			if token[10] == swap {
				swap = 'B'
			}
			token = token[:10] + string(swap) + token[11:]
		}
		if f.working {
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "working"})
		}
		switch {
		case f.badBody:
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "done", "result": result})
		case f.echoInBack:
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "failed", "error": "token " + token + " is odd"})
		default:
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "succeeded", "result": result})
		}
		if f.twice {
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "succeeded", "result": result})
		}
		if f.changes {
			f.callBack(req.Callback.URL, token, map[string]any{"outcome": "failed", "error": "changed our mind"})
		}
	case "/refunds":
		f.undone[key] = true
		answer(w, http.StatusOK, map[string]any{"id": "rf_" + key})
	default:
		answer(w, http.StatusNotFound, map[string]any{"error": "no such path"})
	}
}

// callBack queues a callback, sent once the call is answered.
func (f *callbackFake) callBack(url, token string, body map[string]any) {
	f.queued = append(f.queued, queued{url, token, body, f.key})
}

type queued struct {
	url, token string
	body       map[string]any
	key        string
}

// send sends the callbacks queued, in order, after a moment, as a
// service does once its work is done.
func (f *callbackFake) send(call int, callbacks []queued) {
	defer f.wg.Done()
	time.Sleep(10 * time.Millisecond)
	for _, cb := range callbacks {
		f.mu.Lock()
		f.sending[cb.key] = true
		f.mu.Unlock()
		raw, _ := json.Marshal(cb.body)
		req, _ := http.NewRequest(http.MethodPost, cb.url, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Orderly-Callback "+cb.token)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		status := 0
		if err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			status = resp.StatusCode
		}
		f.mu.Lock()
		f.statuses[call] = append(f.statuses[call], status)
		f.mu.Unlock()
	}
}

func answer(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

// Each defect of a service that calls back fails its rule (and the rules
// its consequences break), and a service without one passes every rule.
func TestCallbackRules(t *testing.T) {
	// A defect that leaves a call without its callback fails every rule
	// that needs the work done.
	noWork := []string{conformance.RuleCallbackArrives, conformance.RuleConcurrentKey, conformance.RuleSameKey, conformance.RuleUnknownEntity}
	tests := []struct {
		name string
		svc  *callbackFake
		want []string
		// why is what a failed (or for none, the passed) callback rule says.
		why string
	}{
		{"conforming", &callbackFake{}, nil, "called back"},
		{"says it is working first", &callbackFake{working: true}, nil, "working"},
		{"sends each callback twice", &callbackFake{twice: true}, nil, "called back"},
		{"answers at once", &callbackFake{atOnce: true}, nil, "at once"},
		{"refuses an unknown customer by callback", &callbackFake{unknown: true}, nil, "called back"},
		{"answers 200 without an answer", &callbackFake{accept200: true},
			[]string{conformance.RuleCallbackAccepts, conformance.RuleConcurrentKey, conformance.RuleResult, conformance.RuleSameKey,
				conformance.RuleUnknownEntity}, "200 with no answer"},
		{"never calls back", &callbackFake{neverCalls: true}, noWork, "no callback"},
		{"alters the token", &callbackFake{badToken: true}, noWork, "401"},
		{"sends a body orderly cannot take", &callbackFake{badBody: true}, noWork, "400"},
		{"calls back a result against the schema", &callbackFake{badResult: true}, slices.Concat(noWork, []string{conformance.RuleResult}), "result schema"},
		{"echoes the token in its answer", &callbackFake{echoToken: true}, []string{conformance.RuleCallbackTokenKept}, "202 answer"},
		{"echoes the token in its callback", &callbackFake{echoInBack: true},
			[]string{conformance.RuleCallbackTokenKept, conformance.RuleConcurrentKey, conformance.RuleSameKey}, "callback's body"},
		{"does the work twice for one key", &callbackFake{ignoreKey: true},
			[]string{conformance.RuleCallbackIdempotent, conformance.RuleConcurrentKey, conformance.RuleSameKey}, "ch_"},
		{"changes its mind after a success", &callbackFake{changes: true}, []string{conformance.RuleCallbackIdempotent}, "409"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := callingBack()
			input, _ := conformance.ExampleInput(w)
			rs := run(t, tt.svc, conformance.Config{Workflow: w, Input: input, CallbackWait: 500 * time.Millisecond})
			tt.svc.wg.Wait()
			slices.Sort(tt.want)
			if got := failed(rs); !slices.Equal(got, tt.want) {
				t.Errorf("failed %v, want %v:\n%s", got, tt.want, printed(rs))
			}
			if len(rs) != 16 {
				t.Errorf("%d results, want one per rule (16):\n%s", len(rs), printed(rs))
			}
			said := false
			for _, r := range rs {
				if !slices.Contains(callbackRules, r.Rule) {
					continue
				}
				if (r.Verdict == conformance.Fail || len(tt.want) == 0) && strings.Contains(r.Why, tt.why) {
					said = true
				}
			}
			// No token is printed, even where the service quoted it.
			out := printed(rs)
			tt.svc.mu.Lock()
			defer tt.svc.mu.Unlock()
			for _, token := range tt.svc.tokens {
				if strings.Contains(out, token[:20]) {
					t.Errorf("the report quotes a token:\n%s", out)
					break
				}
			}
			if !said {
				t.Errorf("no callback rule says %q:\n%s", tt.why, printed(rs))
			}
		})
	}
}

// A service may call back once for two calls at once with one key (as
// orderly takes only its newest attempt's callback): the other call is
// given a moment, then takes the one callback's answer.
func TestOneCallbackForTwoCallsAtOnce(t *testing.T) {
	w := callingBack()
	input, _ := conformance.ExampleInput(w)
	svc := &callbackFake{oncePerWork: true}
	rs := run(t, svc, conformance.Config{Workflow: w, Input: input, CallbackWait: 5 * time.Second})
	svc.wg.Wait()
	if conformance.Failed(rs) > 0 {
		t.Errorf("got:\n%s", printed(rs))
	}
	for _, r := range rs {
		if r.Rule == conformance.RuleConcurrentKey && !strings.Contains(r.Why, "called back once, for one of the two calls") {
			t.Errorf("concurrent-key says %q, want it to say the service called back once", r.Why)
		}
	}
}

// The receiver answers a service's callbacks as orderly's POST /callbacks
// does, so that its retry logic meets real answers: 200 for the callback
// taken and for a duplicate of it, 409 for a second, different one, 401
// for a token that does not open, 400 for a body orderly cannot take.
func TestReceiverAnswersAsOrderly(t *testing.T) {
	tests := []struct {
		name string
		svc  *callbackFake
		want []int // what the first call's callbacks are answered
	}{
		{"taken", &callbackFake{}, []int{200}},
		{"working, then taken", &callbackFake{working: true}, []int{200, 200}},
		{"a duplicate", &callbackFake{twice: true}, []int{200, 200}},
		{"a second, different one", &callbackFake{changes: true}, []int{200, 409}},
		{"a token that does not open", &callbackFake{badToken: true}, []int{401}},
		{"a body orderly cannot take", &callbackFake{badBody: true}, []int{400}},
		{"a result against the schema", &callbackFake{badResult: true}, []int{400}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := callingBack()
			input, _ := conformance.ExampleInput(w)
			run(t, tt.svc, conformance.Config{Workflow: w, Input: input, CallbackWait: 300 * time.Millisecond})
			tt.svc.wg.Wait()
			tt.svc.mu.Lock()
			defer tt.svc.mu.Unlock()
			if len(tt.svc.statuses) == 0 || !slices.Equal(tt.svc.statuses[0], tt.want) {
				t.Errorf("the first call's callbacks answered %v, want %v", tt.svc.statuses, tt.want)
			}
		})
	}
}

// --callback-listen binds the receiver where the service can reach it;
// an address it cannot bind, or one no service can call, is refused
// before any call is made.
func TestCallbackListen(t *testing.T) {
	w := callingBack()
	input, _ := conformance.ExampleInput(w)
	svc := &callbackFake{}
	rs := run(t, svc, conformance.Config{Workflow: w, Input: input, CallbackWait: time.Second, CallbackListen: "127.0.0.1:0"})
	if conformance.Failed(rs) > 0 {
		t.Errorf("with --callback-listen 127.0.0.1:0:\n%s", printed(rs))
	}
	for _, tt := range []struct{ addr, want string }{
		{"0.0.0.0:0", "the address the service reaches"},
		{"nonsense", "--callback-listen"},
	} {
		_, err := conformance.Run(t.Context(), conformance.Config{Workflow: w, Input: input, BaseURL: "http://127.0.0.1:1", CallbackListen: tt.addr})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("--callback-listen %s: %v, want %q", tt.addr, err, tt.want)
		}
	}
}

// The simulator's services that call back (payment and warehouse of the
// fulfilment example) pass every rule, the callback rules among them.
func TestCallbackServicesOfTheSimulator(t *testing.T) {
	s, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	v, err := definition.Build(append(s, examples...), definition.ShippedWorkflow, order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	w, ok := v.LatestOf("fulfilment")
	if !ok {
		t.Skip("no fulfilment example")
	}
	input, err := conformance.ExampleInput(w)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulator.New(simulator.WithCallbackDelay(20 * time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	rs := run(t, sim, conformance.Config{Workflow: w, Input: input, UnknownInput: unknownToTheSimulator(t, input), CallbackWait: 5 * time.Second})
	if conformance.Failed(rs) > 0 {
		t.Errorf("got:\n%s", printed(rs))
	}
	for _, step := range []string{"charge-payment", "pick-and-ship"} {
		for _, rule := range callbackRules {
			if !slices.ContainsFunc(rs, func(r conformance.Result) bool {
				return r.Step == step && r.Rule == rule && r.Verdict == conformance.Pass
			}) {
				t.Errorf("%s %s did not pass:\n%s", step, rule, printed(rs))
			}
		}
	}
}
