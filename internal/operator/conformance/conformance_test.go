package conformance_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"path/filepath"
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

// workflows returns the shipped workflow and the checkout example.
func workflows(t *testing.T) (shipped, checkout order.Workflow) {
	t.Helper()
	s, examples, err := definition.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	v, err := definition.Build(append(s, examples...), definition.ShippedWorkflow, order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	shipped, _ = v.LatestOf("order")
	checkout, ok := v.LatestOf("checkout")
	if !ok {
		t.Fatal("no checkout workflow")
	}
	return shipped, checkout
}

var shippedInput = json.RawMessage(`{"customerId":"c-42","lines":[{"sku":"SKU-1","quantity":2}]}`)

// run checks cfg against h over a real connection.
func run(t *testing.T, h http.Handler, cfg conformance.Config) []conformance.Result {
	t.Helper()
	ts := httptest.NewServer(h)
	defer ts.Close()
	cfg.BaseURL, cfg.HTTP = ts.URL, ts.Client()
	rs, err := conformance.Run(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	return rs
}

func verdicts(rs []conformance.Result) map[string]conformance.Verdict {
	out := map[string]conformance.Verdict{}
	for _, r := range rs {
		out[r.Step+" "+r.Rule] = r.Verdict
	}
	return out
}

func failed(rs []conformance.Result) []string {
	var out []string
	for _, r := range rs {
		if r.Verdict == conformance.Fail {
			out = append(out, r.Rule)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

func printed(rs []conformance.Result) string {
	var b bytes.Buffer
	conformance.Write(&b, rs)
	return b.String()
}

// The simulator conforms, for the shipped workflow and the checkout
// example: every rule of every step passes, or does not apply (no undo,
// no Retry-After), and the run leaves no work behind that has an undo.
func TestPassesAgainstTheSimulator(t *testing.T) {
	shipped, checkout := workflows(t)
	input, err := conformance.ExampleInput(checkout)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w     order.Workflow
		input json.RawMessage
	}{{shipped, shippedInput}, {checkout, input}} {
		t.Run(tc.w.Name, func(t *testing.T) {
			ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
			sim, err := simulator.New(simulator.WithLedger(ledger))
			if err != nil {
				t.Fatal(err)
			}
			rs := run(t, sim, conformance.Config{Workflow: tc.w, Input: tc.input, UnknownInput: unknownToTheSimulator(t, tc.input)})
			sim.Close()
			got := verdicts(rs)
			want := map[string]conformance.Verdict{}
			for _, d := range tc.w.Steps {
				for _, rule := range []string{conformance.RuleSameKey, conformance.RuleConcurrentKey, conformance.RuleResult,
					conformance.RuleMalformedBody, conformance.RuleUnknownEntity, conformance.RuleUndoTwice, conformance.RuleUndoBlocksKey,
					conformance.RuleUndoWithoutResult, conformance.RuleUndoUnknownKey, conformance.RuleWithinAllowance, conformance.RuleErrorBody} {
					want[d.Name+" "+rule] = conformance.Pass
				}
				want[d.Name+" "+conformance.RuleRetryAfter] = conformance.Skip
				if d.Undo == "" {
					for _, rule := range []string{conformance.RuleUndoTwice, conformance.RuleUndoBlocksKey, conformance.RuleUndoWithoutResult, conformance.RuleUndoUnknownKey} {
						want[d.Name+" "+rule] = conformance.Skip
					}
				}
				if !slices.Contains(d.UndoCarries, d.Name) {
					// Its undo never carries a result of its own: undo-twice
					// is that undo already.
					want[d.Name+" "+conformance.RuleUndoWithoutResult] = conformance.Skip
				}
			}
			if !maps.Equal(got, want) || len(rs) != len(want) {
				t.Errorf("got:\n%swant every rule passed but retry-after (and undo rules without an undo, or whose undo carries no result of its own)", printed(rs))
			}
			effects, err := simulator.ReadLedger(ledger)
			if err != nil {
				t.Fatal(err)
			}
			undone := map[string]bool{}
			for _, e := range effects {
				if e.Undo {
					undone[e.Service+" "+e.Key] = true
				}
			}
			for _, e := range effects {
				if !e.Undo && e.Service != "fraud" && !undone[e.Service+" "+e.Key] {
					t.Errorf("%s work %s (key %s) was left done", e.Service, e.Reference, e.Key)
				}
			}
		})
	}
}

// unknownToTheSimulator is input with the lines the simulator's services
// know nothing of (TEST-<SERVICE>-UNKNOWN: each answers 404).
func unknownToTheSimulator(t *testing.T, input json.RawMessage) json.RawMessage {
	t.Helper()
	var in map[string]any
	if err := json.Unmarshal(input, &in); err != nil {
		t.Fatal(err)
	}
	var lines []any
	for _, svc := range []string{"INVENTORY", "PAYMENT", "SHIPPING", "FRAUD"} {
		lines = append(lines, map[string]any{"sku": "TEST-" + svc + "-UNKNOWN", "quantity": 1})
	}
	in["lines"] = lines
	out, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// Every run uses fresh keys: a second run against the same service is
// new work, not replays of the first (whose keys are blocked by then).
func TestRunsUseFreshKeys(t *testing.T) {
	shipped, _ := workflows(t)
	sim, err := simulator.New()
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	for i := range 2 {
		if rs := run(t, sim, conformance.Config{Workflow: shipped, Input: shippedInput}); conformance.Failed(rs) > 0 {
			t.Errorf("run %d:\n%s", i+1, printed(rs))
		}
	}
}

// --step checks one step; the earlier steps whose results it carries are
// called first for their answers (the simulator refuses a shipment
// without the order's reservation), and undone at the end.
func TestOneStep(t *testing.T) {
	_, checkout := workflows(t)
	input, _ := conformance.ExampleInput(checkout)
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	sim, err := simulator.New(simulator.WithLedger(ledger))
	if err != nil {
		t.Fatal(err)
	}
	rs := run(t, sim, conformance.Config{Workflow: checkout, Input: input, Step: "arrange-shipping"})
	sim.Close()
	if conformance.Failed(rs) > 0 || len(rs) != 12 {
		t.Errorf("got %d results, want 12 passed or skipped:\n%s", len(rs), printed(rs))
	}
	for _, r := range rs {
		if r.Step != "arrange-shipping" {
			t.Errorf("a result for step %s: %+v", r.Step, r)
		}
	}
	effects, err := simulator.ReadLedger(ledger)
	if err != nil {
		t.Fatal(err)
	}
	var services []string
	released := map[string]bool{}
	for _, e := range effects {
		if e.Undo && e.Undid != "" {
			released[e.Undid] = true
		}
	}
	for _, e := range effects {
		if e.Undo {
			continue
		}
		if !slices.Contains(services, e.Service) {
			services = append(services, e.Service)
		}
		if !released[e.Reference] {
			t.Errorf("%s work %s was left done", e.Service, e.Reference)
		}
	}
	if !slices.Equal(services, []string{"inventory", "shipping"}) {
		t.Errorf("services that did work: %v, want inventory (carried by the shipment) then shipping", services)
	}
}

// A credential given as a header reaches the service, and its value is
// never printed, even when the service quotes it.
func TestHeaderIsSentAndNeverPrinted(t *testing.T) {
	_, checkout := workflows(t)
	input, _ := conformance.ExampleInput(checkout)
	const secret = "Bearer t0ken-value"
	sim, err := simulator.New(simulator.WithRequiredHeader("fraud", "Authorization", secret))
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	with := run(t, sim, conformance.Config{Workflow: checkout, Input: input, Step: "fraud-check", Header: http.Header{"Authorization": {secret}}})
	if conformance.Failed(with) > 0 {
		t.Errorf("with the header:\n%s", printed(with))
	}
	without := run(t, sim, conformance.Config{Workflow: checkout, Input: input, Step: "fraud-check"})
	if got := failed(without); !slices.Contains(got, conformance.RuleSameKey) {
		t.Errorf("without the header, failed %v, want same-key among them:\n%s", got, printed(without))
	}
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"credential %s is not valid"}`, r.Header.Get("Authorization"))
	})
	out := printed(run(t, echo, conformance.Config{Workflow: checkout, Input: input, Step: "fraud-check", Header: http.Header{"Authorization": {secret}}}))
	if strings.Contains(out, "t0ken") || !strings.Contains(out, "[redacted]") {
		t.Errorf("the output quotes the credential, or does not say it was left out:\n%s", out)
	}
	// A service that quotes the token alone, or encoded, is scrubbed too.
	echoPart := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		token := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":"token %s (%s) is not allowed"}`, token, base64.StdEncoding.EncodeToString([]byte(token)))
	})
	out = printed(run(t, echoPart, conformance.Config{Workflow: checkout, Input: input, Step: "fraud-check", Header: http.Header{"Authorization": {secret}}}))
	if strings.Contains(out, "t0ken") || strings.Contains(out, base64.StdEncoding.EncodeToString([]byte("t0ken-value"))) || !strings.Contains(out, "[redacted]") {
		t.Errorf("the output quotes a part of the credential, or does not say it was left out:\n%s", out)
	}
}

// fake is a payment service with one defect switched on at a time, to
// show each rule fails against the service that breaks it.
type fake struct {
	ignoreKey           bool          // every call is new work
	racy                bool          // two calls at once with one key both do the work
	noBlockUnknown      bool          // an undo of an unknown key does not block it
	redoAfterUndo       bool          // an undo of done work does not block its key
	undoUnknown404      bool          // an undo of an unknown key answers 404
	always500           bool          // every call answers 500
	malformed500        bool          // a body that is not JSON answers 500
	textErrors          bool          // errors are text/plain
	wrongResult         bool          // the answer lacks the result schema's "amount"
	retryAfterOnRefusal string        // a Retry-After on every 422
	delay               time.Duration // before every answer
	undoNeedsResult     bool          // a refund without results.charge is refused 422
	unknownCustomer     int           // the status answered for a customer other than the example's c-1

	mu     sync.Mutex
	n      int
	work   map[string]string // key → charge id
	undone map[string]bool   // blocked keys
	// reverted are keys whose work redoAfterUndo undid without blocking.
	reverted map[string]bool
	calls    int
}

func (f *fake) fail(w http.ResponseWriter, status int, msg string) {
	if status == http.StatusUnprocessableEntity && f.retryAfterOnRefusal != "" {
		w.Header().Set("Retry-After", f.retryAfterOnRefusal)
	}
	if f.textErrors {
		w.Header().Set("Content-Type", "text/plain")
		w.WriteHeader(status)
		io.WriteString(w, msg)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"error": msg})
}

func (f *fake) answer(w http.ResponseWriter, status int, body map[string]any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(body)
}

func (f *fake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	f.calls++
	if f.work == nil {
		f.work, f.undone, f.reverted = map[string]string{}, map[string]bool{}, map[string]bool{}
	}
	f.mu.Unlock()
	select {
	case <-time.After(f.delay):
	case <-r.Context().Done():
		return
	}
	if f.always500 {
		f.fail(w, http.StatusInternalServerError, "broken")
		return
	}
	key := r.Header.Get("Idempotency-Key")
	body, _ := io.ReadAll(r.Body)
	if !json.Valid(body) {
		if f.malformed500 {
			f.fail(w, http.StatusInternalServerError, "could not parse")
			return
		}
		f.fail(w, http.StatusBadRequest, "body is not JSON")
		return
	}
	var req struct {
		CustomerID string                     `json:"customerId"`
		Results    map[string]json.RawMessage `json:"results"`
	}
	_ = json.Unmarshal(body, &req)
	switch r.URL.Path {
	case "/charges":
		if f.unknownCustomer != 0 && req.CustomerID != "c-1" {
			f.fail(w, f.unknownCustomer, "no such customer")
			return
		}
		f.charge(w, key)
	case "/refunds":
		if f.undoNeedsResult && req.Results["charge"] == nil {
			f.fail(w, http.StatusUnprocessableEntity, "results.charge is required: which charge?")
			return
		}
		f.refund(w, key)
	default:
		f.fail(w, http.StatusNotFound, "no such path")
	}
}

func (f *fake) charge(w http.ResponseWriter, key string) {
	f.mu.Lock()
	id, done := f.work[key]
	blocked := f.undone[key]
	f.mu.Unlock()
	switch {
	case blocked:
		f.fail(w, http.StatusUnprocessableEntity, "key was undone")
		return
	case done && !f.ignoreKey:
		f.answer(w, http.StatusOK, f.result(id))
		return
	}
	if f.racy {
		time.Sleep(30 * time.Millisecond) // the other call runs meanwhile
	}
	f.mu.Lock()
	if prior, ok := f.work[key]; ok && !f.racy && !f.ignoreKey {
		f.mu.Unlock()
		f.answer(w, http.StatusOK, f.result(prior))
		return
	}
	f.n++
	id = fmt.Sprintf("ch_%d", f.n)
	f.work[key] = id
	f.mu.Unlock()
	f.answer(w, http.StatusCreated, f.result(id))
}

func (f *fake) result(id string) map[string]any {
	if f.wrongResult {
		return map[string]any{"id": id}
	}
	return map[string]any{"id": id, "amount": 100}
}

func (f *fake) refund(w http.ResponseWriter, key string) {
	if f.undoUnknown404 {
		f.mu.Lock()
		_, done := f.work[key]
		f.mu.Unlock()
		if !done {
			f.fail(w, http.StatusNotFound, "no such charge")
			return
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	_, done := f.work[key]
	switch {
	case f.redoAfterUndo && (done || f.reverted[key]):
		delete(f.work, key)
		f.reverted[key] = true
	case f.undone[key]:
	case !done && !f.noBlockUnknown:
		f.undone[key] = true
	case done:
		f.undone[key] = true
	}
	f.answer(w, http.StatusOK, map[string]any{"id": "rf_" + key})
}

// oneStep is a workflow of one payment step with a result schema and a
// short allowance, whose refund carries the charge.
func oneStep() order.Workflow {
	return order.Workflow{
		Name: "pay", Version: "1", Input: json.RawMessage(`{"type":"object","examples":[{"customerId":"c-1"}]}`),
		Steps: []order.StepDef{{
			Name: "charge", Agent: "payment", Undo: "refund",
			Allowance: 300 * time.Millisecond, MaxAllowance: time.Second, FailureThreshold: 3,
			Call: order.Endpoint{Method: "POST", Path: "/charges"}, UndoCall: order.Endpoint{Method: "POST", Path: "/refunds"},
			Carries: []string{order.CarriesOrder}, UndoCarries: []string{order.CarriesOrder, "charge"}, ResultMaxBytes: order.DefaultResultMaxBytes,
			ResultSchema: json.RawMessage(`{"type":"object","required":["id","amount"]}`),
		}},
	}
}

// Each defect fails its rule, and only the rules it breaks; the service
// without one passes.
func TestFailsAgainstBrokenServices(t *testing.T) {
	tests := []struct {
		name string
		svc  *fake
		want []string
	}{
		{"conforming", &fake{}, nil},
		{"ignores Idempotency-Key", &fake{ignoreKey: true}, []string{conformance.RuleConcurrentKey, conformance.RuleSameKey}},
		{"does the work twice for calls at once", &fake{racy: true}, []string{conformance.RuleConcurrentKey}},
		{"does not block a key after an undo of nothing", &fake{noBlockUnknown: true}, []string{conformance.RuleUndoUnknownKey}},
		{"does the work again after its undo", &fake{redoAfterUndo: true}, []string{conformance.RuleUndoBlocksKey, conformance.RuleUndoWithoutResult}},
		{"answers 404 to an undo of nothing", &fake{undoUnknown404: true}, []string{conformance.RuleUndoUnknownKey}},
		{"answers 500 without end", &fake{always500: true},
			[]string{conformance.RuleConcurrentKey, conformance.RuleMalformedBody, conformance.RuleSameKey, conformance.RuleUndoUnknownKey, conformance.RuleUnknownEntity}},
		{"answers 500 to a body that is not JSON", &fake{malformed500: true}, []string{conformance.RuleMalformedBody}},
		{"answers errors as text", &fake{textErrors: true}, []string{conformance.RuleErrorBody}},
		{"answers without the result's fields", &fake{wrongResult: true},
			[]string{conformance.RuleConcurrentKey, conformance.RuleResult, conformance.RuleSameKey}},
		{"sends a Retry-After that is no delay", &fake{retryAfterOnRefusal: "soon"}, []string{conformance.RuleRetryAfter}},
		{"sends a Retry-After of a day", &fake{retryAfterOnRefusal: "86400"}, []string{conformance.RuleRetryAfter}},
		{"answers after the allowance", &fake{delay: 400 * time.Millisecond},
			[]string{conformance.RuleConcurrentKey, conformance.RuleMalformedBody, conformance.RuleSameKey, conformance.RuleUndoUnknownKey,
				conformance.RuleUnknownEntity, conformance.RuleWithinAllowance}},
		// An undo may come without its step's result: the step timed out
		// after its work was done, and the engine has no answer to send.
		{"refuses an undo without the step's result", &fake{undoNeedsResult: true},
			[]string{conformance.RuleUndoUnknownKey, conformance.RuleUndoWithoutResult}},
		{"refuses an unknown customer with 422", &fake{unknownCustomer: http.StatusUnprocessableEntity}, nil},
		{"answers 404 for an unknown customer", &fake{unknownCustomer: http.StatusNotFound}, nil},
		{"answers 401 for an unknown customer", &fake{unknownCustomer: http.StatusUnauthorized}, []string{conformance.RuleUnknownEntity}},
		{"answers 503 for an unknown customer", &fake{unknownCustomer: http.StatusServiceUnavailable}, []string{conformance.RuleUnknownEntity}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := oneStep()
			input, _ := conformance.ExampleInput(w)
			rs := run(t, tt.svc, conformance.Config{Workflow: w, Input: input})
			if got := failed(rs); !slices.Equal(got, tt.want) {
				t.Errorf("failed %v, want %v:\n%s", got, tt.want, printed(rs))
			}
			if len(rs) != 12 {
				t.Errorf("%d results, want one per rule (12):\n%s", len(rs), printed(rs))
			}
			// The run undoes the work it did, wherever the service lets it
			// (one that answers too late does its work after the client
			// left, and its undos come too late as well).
			tt.svc.mu.Lock()
			defer tt.svc.mu.Unlock()
			for key, id := range tt.svc.work {
				if tt.svc.delay > 0 {
					break
				}
				if !tt.svc.undone[key] {
					t.Errorf("charge %s (key %s) left done", id, key)
				}
			}
		})
	}
}

// A service that answers 500 to everything is tried a bounded number of
// times: three attempts per call, as the agent retries within its window.
func TestTransientFaultsAreRetriedABoundedNumberOfTimes(t *testing.T) {
	svc := &fake{always500: true}
	w := oneStep()
	input, _ := conformance.ExampleInput(w)
	began := time.Now()
	rs := run(t, svc, conformance.Config{Workflow: w, Input: input})
	// same-key 3, concurrent 2×3, malformed 1, unknown entity 3, undo of
	// nothing 3, the work for an undo without its result 3.
	if svc.calls != 19 {
		t.Errorf("%d calls, want 19:\n%s", svc.calls, printed(rs))
	}
	if time.Since(began) > 10*time.Second {
		t.Errorf("took %s", time.Since(began))
	}
	for _, r := range rs {
		if r.Rule == conformance.RuleSameKey && !strings.Contains(r.Why, "500 (transient) after 3 attempts") {
			t.Errorf("same-key says %q, want the status, class and attempts", r.Why)
		}
	}
}

// What a service answers for an order naming what it does not know: a
// permanent refusal (422) fails only that order; so does a 404 while the
// step's call succeeds for other orders (the agent's rule, which a fresh
// agent cannot apply: the 422 is plainer); a status no order's data can
// cause holds every order. By default the run makes the input's strings
// unknown, where the input schema allows.
func TestUnknownEntity(t *testing.T) {
	tests := []struct {
		name    string
		svc     *fake
		input   json.RawMessage
		unknown json.RawMessage
		want    conformance.Verdict
		why     string
	}{
		{"accepted", &fake{}, nil, nil, conformance.Skip, "customerId unknown"},
		{"refused 422", &fake{unknownCustomer: http.StatusUnprocessableEntity}, nil, nil, conformance.Pass, "refused 422 (permanent)"},
		{"refused 404", &fake{unknownCustomer: http.StatusNotFound}, nil, nil, conformance.Pass, "only that order's step fails"},
		{"refused 401", &fake{unknownCustomer: http.StatusUnauthorized}, nil, nil, conformance.Fail, "hold every order"},
		{"given an input", &fake{unknownCustomer: http.StatusNotFound}, nil, json.RawMessage(`{"customerId":"c-gone"}`), conformance.Pass, "404"},
		{"nothing can be made unknown", &fake{}, json.RawMessage(`{"n":1}`), nil, conformance.Skip, "--unknown-input"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := oneStep()
			input := tt.input
			if input == nil {
				input = json.RawMessage(`{"customerId":"c-1"}`)
			}
			rs := run(t, tt.svc, conformance.Config{Workflow: w, Input: input, UnknownInput: tt.unknown})
			for _, r := range rs {
				if r.Rule != conformance.RuleUnknownEntity {
					continue
				}
				if r.Verdict != tt.want || !strings.Contains(r.Why, tt.why) {
					t.Errorf("%s %q, want %s saying %q", r.Verdict, r.Why, tt.want, tt.why)
				}
				return
			}
			t.Errorf("no %s result:\n%s", conformance.RuleUnknownEntity, printed(rs))
		})
	}
}

// A step that waits calls no service: a run checks the other steps and
// reports nothing of it, and a run of it alone is refused.
func TestStepsThatWaitAreNotChecked(t *testing.T) {
	shipped, _ := workflows(t)
	shipped.Steps = slices.Insert(slices.Clone(shipped.Steps), 1, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: time.Hour}})
	sim, err := simulator.New()
	if err != nil {
		t.Fatal(err)
	}
	defer sim.Close()
	rs := run(t, sim, conformance.Config{Workflow: shipped, Input: shippedInput})
	if conformance.Failed(rs) > 0 {
		t.Errorf("a workflow with a step that waits:\n%s", printed(rs))
	}
	for _, r := range rs {
		if r.Step == "cool-off" {
			t.Errorf("a result for the step that waits: %+v", r)
		}
	}
	_, err = conformance.Run(t.Context(), conformance.Config{Workflow: shipped, BaseURL: "http://127.0.0.1:1", Step: "cool-off"})
	if want := `step cool-off of workflow order version 1 waits (a timer): it calls no service, so there is nothing to check`; err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Run of the step that waits alone: %v, want %q", err, want)
	}
}

func TestRunRefusesABadStart(t *testing.T) {
	_, checkout := workflows(t)
	tests := []struct {
		cfg  conformance.Config
		want string
	}{
		{conformance.Config{Workflow: checkout, BaseURL: "http://127.0.0.1:1", Step: "refund"},
			`workflow checkout version 1 has no step "refund" (it has fraud-check, reserve-inventory, charge-payment, arrange-shipping)`},
		{conformance.Config{Workflow: checkout, BaseURL: "ftp://user:pw@example.com"}, `base URL "ftp://user:xxxxx@example.com": want http:// or https:// and a host`},
		{conformance.Config{Workflow: checkout, BaseURL: "localhost:8091"}, `want http:// or https://`},
		{conformance.Config{Workflow: order.Workflow{Name: "pause", Version: "1", Steps: []order.StepDef{{Name: "cool-off", Wait: &order.Wait{For: time.Hour}}}},
			BaseURL: "http://127.0.0.1:1"}, `workflow pause version 1 has no step that calls a service: there is nothing to check`},
	}
	for _, tt := range tests {
		_, err := conformance.Run(t.Context(), tt.cfg)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Run(%+v): %v, want %q", tt.cfg.BaseURL, err, tt.want)
		}
	}
}

func TestInput(t *testing.T) {
	shipped, checkout := workflows(t)
	noExample := oneStep()
	noExample.Input = json.RawMessage(`{"type":"object"}`)
	if _, err := conformance.ExampleInput(noExample); err == nil || !strings.Contains(err.Error(), "no examples") {
		t.Errorf("a schema without examples: %v, want no examples", err)
	}
	in, err := conformance.ExampleInput(checkout)
	if err != nil || conformance.CheckInput(checkout, in) != nil {
		t.Errorf("checkout example %s: %v, %v", in, err, conformance.CheckInput(checkout, in))
	}
	err = conformance.CheckInput(shipped, json.RawMessage(`{"customerId":"c","lines":[{"sku":"","quantity":0}]}`))
	if err == nil || !strings.Contains(err.Error(), "lines[0].sku") || !strings.Contains(err.Error(), "lines[0].quantity") {
		t.Errorf("bad input: %v, want the fields named", err)
	}
}

func TestWrite(t *testing.T) {
	out := printed([]conformance.Result{
		{Step: "charge-payment", Rule: "same-key", Verdict: conformance.Pass, Why: "one piece of work"},
		{Step: "charge-payment", Rule: "undo-unknown-key", Verdict: conformance.Fail, Why: "did the work"},
		{Step: "fraud-check", Rule: "undo-twice", Verdict: conformance.Skip, Why: "no undo"},
	})
	want := "PASS  charge-payment  same-key          one piece of work\n" +
		"FAIL  charge-payment  undo-unknown-key  did the work\n" +
		"SKIP  fraud-check     undo-twice        no undo\n" +
		"1 passed, 1 failed, 1 skipped\n"
	if out != want {
		t.Errorf("got:\n%s\nwant:\n%s", out, want)
	}
}
