// Package conformance checks a team's remote service against the contract
// orderly's engine relies on (internal/adapter/remote's contract.json), before it
// is deployed: it calls the service as the agents do, through the same
// client and with the same request bodies, and reports each rule passed
// or failed, as Pact's provider verification does for a published
// contract. It is `orderly conformance`.
package conformance

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/remote"
	"orderly/internal/callbacktoken"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// Config is one run: the workflow's steps against the services under
// BaseURL.
type Config struct {
	Workflow order.Workflow
	// Input is the order's input the calls carry (ExampleInput).
	Input json.RawMessage
	// UnknownInput is an order's input naming what the services do not
	// know (an unknown SKU, customer), for the unknown-entity rule; nil
	// makes one from Input, each string value replaced by one no service
	// can know wherever the input schema allows it.
	UnknownInput json.RawMessage
	// BaseURL is where every step's service answers.
	BaseURL string
	// Step, when set, is the one step checked; the earlier steps it
	// carries results of are called once first, for their answers.
	Step string
	// Header is sent with every call, as a stage's credential is. Its
	// values are never reported.
	Header http.Header
	// HTTP is the client calls go through; nil is a plain one.
	HTTP *http.Client
	// CallbackListen is where the callback receiver listens when a step
	// calls back (HOST:PORT, the address the services reach this machine
	// at); "" is 127.0.0.1 on a free port.
	CallbackListen string
	// CallbackWait bounds the wait for one call's callback where the
	// step's callback timeout is longer; 0 is DefaultCallbackWait.
	CallbackWait time.Duration
	// PollWait bounds the checks of one accepted call's status URL, of a
	// step whose service is polled, where the step's poll timeout is
	// longer; 0 is DefaultPollWait.
	PollWait time.Duration
}

// Verdict is a rule's outcome for a step.
type Verdict string

// Verdicts. Skip is a rule that does not apply (an undo rule of a step
// without an undo) or had nothing to check.
const (
	Pass Verdict = "PASS"
	Fail Verdict = "FAIL"
	Skip Verdict = "SKIP"
)

// Rules, in the order they are reported.
const (
	RuleSameKey           = "same-key"
	RuleConcurrentKey     = "concurrent-key"
	RuleResult            = "result"
	RuleMalformedBody     = "malformed-body"
	RuleUnknownEntity     = "unknown-entity"
	RuleUndoTwice         = "undo-twice"
	RuleUndoBlocksKey     = "undo-blocks-key"
	RuleUndoWithoutResult = "undo-without-result"
	RuleUndoUnknownKey    = "undo-unknown-key"
	RuleRetryAfter        = "retry-after"
	RuleWithinAllowance   = "within-allowance"
	RuleErrorBody         = "error-body"
	// The rules of a step whose service calls back.
	RuleCallbackAccepts    = "callback-accepts"
	RuleCallbackArrives    = "callback-arrives"
	RuleCallbackIdempotent = "callback-idempotent"
	RuleCallbackTokenKept  = "callback-token-kept"
	// The rules of a step whose service is polled.
	RulePollAccepts    = "poll-accepts"
	RulePollDone       = "poll-done"
	RulePollIdempotent = "poll-idempotent"
	// RuleSetup is reported only when an earlier step whose result the
	// checked step carries could not be called.
	RuleSetup = "setup"
)

var ruleOrder = []string{RuleSetup, RuleCallbackAccepts, RuleCallbackArrives, RuleCallbackIdempotent, RuleCallbackTokenKept,
	RulePollAccepts, RulePollDone, RulePollIdempotent, RuleSameKey, RuleConcurrentKey, RuleResult, RuleMalformedBody, RuleUnknownEntity, RuleUndoTwice,
	RuleUndoBlocksKey, RuleUndoWithoutResult, RuleUndoUnknownKey, RuleRetryAfter, RuleWithinAllowance, RuleErrorBody}

// Result is one rule's verdict for one step, with why.
type Result struct {
	Step    string  `json:"step"`
	Rule    string  `json:"rule"`
	Verdict Verdict `json:"verdict"`
	Why     string  `json:"why"`
}

// maxRetryAfter is the longest wait a Retry-After may sanely ask for:
// beyond it, the service is asking the engine to give up on the order.
const maxRetryAfter = time.Hour

// tries bounds the attempts of one call that meets transient faults, as
// the agent retries within the step's window.
const tries = 3

// ExampleInput is the first of the workflow's input schema's examples,
// the input a run carries unless given one.
func ExampleInput(w order.Workflow) (json.RawMessage, error) {
	var schema struct {
		Examples []json.RawMessage `json:"examples"`
	}
	if err := json.Unmarshal(w.Input, &schema); err != nil || len(schema.Examples) == 0 {
		return nil, fmt.Errorf("workflow %s version %s: its input schema has no examples: give an input file", w.Name, w.Version)
	}
	return schema.Examples[0], nil
}

// CheckInput reports an input the workflow's input schema refuses, naming
// each field, as the API would.
func CheckInput(w order.Workflow, input json.RawMessage) error {
	s, err := definition.CompileSchema(w.Input)
	if err != nil {
		return fmt.Errorf("workflow %s version %s: input schema: %w", w.Name, w.Version, err)
	}
	var problems []string
	for _, p := range s.Check(input) {
		problems = append(problems, strings.TrimPrefix(p.Field+": "+p.Problem, ": "))
	}
	if len(problems) > 0 {
		return fmt.Errorf("the input breaks workflow %s's input schema: %s", w.Name, strings.Join(problems, "; "))
	}
	return nil
}

// Run checks the steps of cfg.Workflow (or cfg.Step) against the services
// under cfg.BaseURL. Its error is a run that cannot start (an unknown
// step, a bad URL); every rule's outcome is a Result.
func Run(ctx context.Context, cfg Config) ([]Result, error) {
	w := cfg.Workflow
	u, err := url.Parse(cfg.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("base URL %q: want http:// or https:// and a host", redactURL(cfg.BaseURL))
	}
	// A step that waits calls no service: there is nothing of it to check.
	checked := slices.DeleteFunc(slices.Clone(w.Steps), order.StepDef.Waits)
	if _, _, err := callbackAddr(cfg.CallbackListen); err != nil {
		return nil, err
	}
	if cfg.Step != "" {
		d, ok := w.Step(cfg.Step)
		if !ok {
			var names []string
			for _, d := range w.Steps {
				names = append(names, d.Name)
			}
			return nil, fmt.Errorf("workflow %s version %s has no step %q (it has %s)", w.Name, w.Version, cfg.Step, strings.Join(names, ", "))
		}
		if d.Waits() {
			return nil, fmt.Errorf("step %s of workflow %s version %s waits (a %s): it calls no service, so there is nothing to check", d.Name, w.Name, w.Version, d.Wait.Kind())
		}
		checked = []order.StepDef{d}
	}
	if len(checked) == 0 {
		return nil, fmt.Errorf("workflow %s version %s has no step that calls a service: there is nothing to check", w.Name, w.Version)
	}
	versions, err := order.NewVersions(w)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{}
	if cfg.HTTP != nil {
		c := *cfg.HTTP
		hc = &c
	}
	hc.Transport = &recorder{base: cmpTransport(hc.Transport), header: cfg.Header}
	// As the agents' client: a redirect is an answer, never followed.
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	r := &run{
		cfg: cfg, http: hc, client: remote.NewClient(cfg.BaseURL, hc, versions),
		orderID: order.NewID(), answers: map[string]json.RawMessage{}, seen: map[string]*stepLog{},
		unknown: cfg.UnknownInput, unknownNamed: "of the given unknown input",
	}
	if slices.ContainsFunc(w.Steps, func(d order.StepDef) bool { return d.Callback != nil }) {
		// The services call this run back: a receiver of its own, with a
		// key of its own, sealing the tokens its calls carry.
		if r.receiver, err = startReceiver(w, cfg.CallbackListen); err != nil {
			return nil, err
		}
		defer r.receiver.close()
		r.client = r.client.CallingBack(r.receiver.callbacks())
	}
	if r.unknown == nil {
		var fields []string
		r.unknown, fields = unknownInput(w, cfg.Input)
		r.unknownNamed = "with " + listed(fields, 3) + " unknown"
	}
	return r.all(ctx, checked), nil
}

func cmpTransport(t http.RoundTripper) http.RoundTripper {
	if t == nil {
		return http.DefaultTransport
	}
	return t
}

// run is one conformance run: one order, whose steps' answers are passed
// on as the engine passes them.
type run struct {
	cfg     Config
	http    *http.Client
	client  *remote.Client
	orderID string
	// answers are the steps' kept answers (the same-key calls'), by step.
	answers map[string]json.RawMessage
	seen    map[string]*stepLog
	results []Result
	// unknown is the input of the unknown-entity rule (nil: none could
	// be made), unknownNamed how its why names it.
	unknown      json.RawMessage
	unknownNamed string
	// scrubber takes the configured headers' values out of what is
	// reported (redact).
	scrubber *remote.Scrubber
	// kept are the keys of the checked steps' kept work (same-key's),
	// setupKeys those of the steps called only for their results: both
	// are undone at the end.
	kept, setupKeys []setupKey
	// receiver takes the callbacks of steps that call back; attempts
	// numbers their calls, so that each call's token names it alone.
	receiver *receiver
	attempts atomic.Int64
}

// stepLog is every exchange with a step's service, for the rules that
// look at them all.
type stepLog struct {
	mu        sync.Mutex
	exchanges []*exchange
	// contract are the client's contract faults of the step's answers
	// (and the receiver's, of its callbacks' results).
	contract []string
	// pendings are the calls of a step that calls back; first and again
	// are same-key's two calls, for callback-idempotent.
	pendings     []*pending
	first, again *outcome
	// pollings are the checks of the accepted calls of a step whose
	// service is polled; pollFirst and pollEarly are same-key's call and
	// its repeat while the work went on, for poll-idempotent.
	pollings             []*polling
	pollFirst, pollEarly *outcome
}

func (r *run) report(step, rule string, v Verdict, format string, args ...any) {
	r.results = append(r.results, Result{Step: step, Rule: rule, Verdict: v, Why: r.redact(fmt.Sprintf(format, args...))})
}

// redact takes the configured header values out of text, and each part
// of them in the forms a service may quote it in (remote.Scrubber, as the
// agents do): a service may quote a credential in its error.
func (r *run) redact(text string) string {
	if r.scrubber == nil {
		var values []string
		for _, vs := range r.cfg.Header {
			values = append(values, vs...)
		}
		r.scrubber = remote.NewScrubber(values...)
	}
	return r.scrubber.Scrub(text)
}

func (r *run) all(ctx context.Context, checked []order.StepDef) []Result {
	w := r.cfg.Workflow
	setup := r.setupSteps(checked)
	for _, d := range w.Steps {
		switch {
		case slices.ContainsFunc(checked, func(c order.StepDef) bool { return c.Name == d.Name }):
			r.forward(ctx, d)
		case slices.Contains(setup, d.Name):
			out := r.call(ctx, d, newKey(), false, nil)
			if out.err != nil {
				for _, c := range checked {
					r.report(c.Name, RuleSetup, Fail, "step %s, whose result this step carries, failed, so its result is missing: %s", d.Name, describe(out))
				}
				continue
			}
			r.answers[d.Name] = out.answer.Body
			r.setupKeys = append(r.setupKeys, setupKey{d, out.key})
		}
	}
	// Compensation, in reverse, as the engine undoes a failed order.
	for i := len(w.Steps) - 1; i >= 0; i-- {
		d := w.Steps[i]
		if slices.ContainsFunc(checked, func(c order.StepDef) bool { return c.Name == d.Name }) {
			r.compensate(ctx, d)
		}
	}
	for i := len(r.setupKeys) - 1; i >= 0; i-- {
		s := r.setupKeys[i]
		if s.d.UndoCall.Path != "" {
			r.call(ctx, s.d, s.key, true, r.withOwn(s.d, r.answers[s.d.Name])) // cleanup; its outcome is not a rule
		}
	}
	for _, d := range checked {
		r.aggregate(d)
	}
	slices.SortStableFunc(r.results, func(a, b Result) int {
		ia, _ := w.Index(a.Step)
		ib, _ := w.Index(b.Step)
		if ia != ib {
			return ia - ib
		}
		return slices.Index(ruleOrder, a.Rule) - slices.Index(ruleOrder, b.Rule)
	})
	return r.results
}

// setupKey is an earlier step called once for its result, undone at the end.
type setupKey struct {
	d   order.StepDef
	key string
}

// setupSteps are the earlier steps whose results the checked steps
// carry, and theirs in turn, when only some steps are checked.
func (r *run) setupSteps(checked []order.StepDef) []string {
	w := r.cfg.Workflow
	if r.cfg.Step == "" {
		return nil // every step that calls a service is checked
	}
	var need []string
	var add func(d order.StepDef)
	add = func(d order.StepDef) {
		for _, item := range slices.Concat(d.Carries, d.UndoCarries) {
			if item == order.CarriesOrder || item == d.Name || slices.Contains(need, item) {
				continue
			}
			if e, ok := w.Step(item); ok {
				need = append(need, item)
				add(e)
			}
		}
	}
	for _, d := range checked {
		add(d)
	}
	return need
}

// withOwn is the kept answers with the step's own (what its undo may carry).
func (r *run) withOwn(d order.StepDef, own json.RawMessage) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for k, v := range r.answers {
		out[k] = v
	}
	if own != nil {
		out[d.Name] = own
	} else {
		delete(out, d.Name)
	}
	return out
}

// forward runs the rules of a step's call, in the order's forward pass.
func (r *run) forward(ctx context.Context, d order.StepDef) {
	r.sameKey(ctx, d)
	r.concurrentKey(ctx, d)
	r.malformedBody(ctx, d)
	r.unknownEntity(ctx, d)
	r.undoUnknownKey(ctx, d)
	r.undoWithoutResult(ctx, d)
}

// sameKey: the same key twice is one piece of work, answered with one id.
// The first answer is the step's result for the steps after it.
func (r *run) sameKey(ctx context.Context, d order.StepDef) {
	key := newKey()
	var first outcome
	if d.Poll != nil {
		first = r.sameKeyPolled(ctx, d, key)
	} else {
		first = r.call(ctx, d, key, false, nil)
	}
	if d.Callback != nil {
		r.log(d.Name).first = &first
	}
	if first.err != nil {
		if remote.ClassOf(first.err) == remote.ClassContract {
			// The work was done: undone with the others, as the engine
			// undoes it, without the unusable answer.
			r.kept = append(r.kept, setupKey{d, key})
		}
		r.report(d.Name, RuleSameKey, Fail, "the call failed: %s", describe(first))
		return
	}
	r.answers[d.Name] = first.answer.Body
	r.kept = append(r.kept, setupKey{d, key})
	again := r.call(ctx, d, key, false, nil)
	if d.Async() {
		log := r.log(d.Name)
		log.first, log.again = &first, &again
	}
	switch {
	case again.err != nil:
		r.report(d.Name, RuleSameKey, Fail, "the first call succeeded (id %s); its repeat with the same Idempotency-Key failed: %s: "+
			"a retry of work done must answer the same", first.answer.Reference, describe(again))
	case again.answer.Reference != first.answer.Reference:
		r.report(d.Name, RuleSameKey, Fail, "the same Idempotency-Key twice gave two ids (%s, then %s): the service ignores the key, "+
			"so a retry would do the work twice", first.answer.Reference, again.answer.Reference)
	case !bytes.Equal(first.answer.Body, again.answer.Body):
		r.report(d.Name, RuleSameKey, Pass, "the same Idempotency-Key twice: one piece of work, id %s both times (the rest of the answer differs; the first one is kept)", first.answer.Reference)
	default:
		r.report(d.Name, RuleSameKey, Pass, "the same Idempotency-Key twice: one piece of work, the same answer (id %s)", first.answer.Reference)
	}
}

// concurrentKey: two calls at once with one key do the work once (the
// second may answer 409, which is retried). The work is then undone.
func (r *run) concurrentKey(ctx context.Context, d order.StepDef) {
	key := newKey()
	var outs [2]outcome
	var wg sync.WaitGroup
	for i := range outs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			outs[i] = r.callOnce(ctx, d, key, false, nil, r.cfg.Input)
		}()
	}
	wg.Wait()
	// A service that calls back may do so once for the two: orderly
	// takes only its newest attempt's callback.
	r.settle(ctx, &outs[0], &outs[1])
	r.poll(ctx, d, &outs[0])
	r.poll(ctx, d, &outs[1])
	var why string
	verdict := Fail
	switch {
	case outs[0].err != nil || outs[1].err != nil:
		failed := outs[0]
		if failed.err == nil {
			failed = outs[1]
		}
		why = "of two calls at once with one Idempotency-Key, one failed: " + describe(failed)
	case outs[0].answer.Reference != outs[1].answer.Reference:
		why = fmt.Sprintf("two calls at once with one Idempotency-Key did the work twice (ids %s and %s): the service must hold the key "+
			"while a call runs (and may answer 409 to the other)", outs[0].answer.Reference, outs[1].answer.Reference)
	default:
		verdict = Pass
		why = fmt.Sprintf("two calls at once with one Idempotency-Key: one piece of work (id %s)%s%s", outs[0].answer.Reference, conflicts(outs[:]), onceForTwo(outs[:]))
	}
	done := func(o outcome) bool {
		c := remote.ClassOf(o.err)
		return c == remote.ClassSuccess || c == remote.ClassContract
	}
	if d.UndoCall.Path != "" && (done(outs[0]) || done(outs[1])) {
		own := outs[0].answer.Body
		if outs[0].err != nil {
			own = outs[1].answer.Body
		}
		if undo := r.call(ctx, d, key, true, r.withOwn(d, own)); undo.err != nil {
			verdict = Fail
			why += "; undoing that work failed: " + describe(undo)
		}
	}
	r.report(d.Name, RuleConcurrentKey, verdict, "%s", why)
}

// onceForTwo says when the service called back once for the two calls.
func onceForTwo(outs []outcome) string {
	if slices.ContainsFunc(outs, func(o outcome) bool { return o.superseded }) {
		return "; called back once, for one of the two calls"
	}
	return ""
}

// conflicts says how many 409s the calls met on their way.
func conflicts(outs []outcome) string {
	n := 0
	for _, o := range outs {
		for _, e := range o.tries {
			if e.status == http.StatusConflict {
				n++
			}
		}
	}
	if n == 0 {
		return ""
	}
	return fmt.Sprintf("; %d answer(s) 409 while the other call ran, retried", n)
}

// malformedBody: a body that is not JSON is refused with a 4xx that is
// not a configuration status, the class the engine fails a step for
// (not retried, not held).
func (r *run) malformedBody(ctx context.Context, d order.StepDef) {
	key := newKey()
	e := r.raw(ctx, d, d.Call, key, []byte(`{"orderId": "`+r.orderID+`", "lines": [`))
	switch class := remote.StatusClass(e.status); {
	case e.err != nil:
		r.report(d.Name, RuleMalformedBody, Fail, "a body that is not JSON got no answer: %v", e.err)
	case e.status >= 400 && e.status < 500 && class == remote.ClassPermanent:
		r.report(d.Name, RuleMalformedBody, Pass, "a body that is not JSON: refused with %d (permanent)", e.status)
	case class == remote.ClassSuccess:
		r.report(d.Name, RuleMalformedBody, Fail, "a body that is not JSON was accepted with %d: the service must refuse it with a 4xx such as 400", e.status)
		if d.UndoCall.Path != "" {
			r.call(ctx, d, key, true, r.withOwn(d, nil)) // cleanup
		}
	default:
		r.report(d.Name, RuleMalformedBody, Fail, "a body that is not JSON was answered %d, which orderly takes as %s%s: want a 4xx such as 400 or 422",
			e.status, class, consequence(class))
	}
}

// consequence says what the engine does with an answer of class c where
// it wanted a refusal.
func consequence(c remote.Class) string {
	switch c {
	case remote.ClassTransient:
		return " (it would retry a call that cannot succeed, until the step's window ends)"
	case remote.ClassConfiguration:
		return " (it would hold every order of the step for an operator)"
	}
	return ""
}

// unknownEntity: an order naming what the service does not know (an
// unknown SKU, customer) is refused so that only that order fails: a
// permanent 4xx such as 422 says so plainly; a 404 does while
// the step's call succeeds for other orders, which is how the agent tells
// it from a wrong URL (order.UnknownEntity); any other configuration
// status, or a transient answer, holds or retries every such order.
func (r *run) unknownEntity(ctx context.Context, d order.StepDef) {
	switch {
	case !slices.Contains(d.Carries, order.CarriesOrder):
		r.report(d.Name, RuleUnknownEntity, Skip, "the step's call carries none of the order's input")
		return
	case r.unknown == nil:
		r.report(d.Name, RuleUnknownEntity, Skip, "no value of the input could be made unknown within its schema: "+
			"give --unknown-input FILE, an input naming what the service does not know")
		return
	}
	key := newKey()
	out := r.callWith(ctx, d, key, false, nil, r.unknown)
	status, _ := order.ConfigurationStatus(out.err)
	switch class := remote.ClassOf(out.err); {
	case class == remote.ClassSuccess || class == remote.ClassContract:
		r.report(d.Name, RuleUnknownEntity, Skip, "an order %s: accepted %d (id %s): the service takes whatever it is given; "+
			"give --unknown-input FILE naming an entity it refuses", r.unknownNamed, out.lastStatus(), out.answer.Reference)
		if d.UndoCall.Path != "" {
			r.call(ctx, d, key, true, r.withOwn(d, out.answer.Body)) // cleanup
		}
	case class == remote.ClassPermanent:
		r.report(d.Name, RuleUnknownEntity, Pass, "an order %s: refused %s (permanent): only that order's step fails, with the service's words",
			r.unknownNamed, refusal(out))
	case class == remote.ClassConfiguration && order.UnknownEntity(out.err) && r.answers[d.Name] == nil:
		r.report(d.Name, RuleUnknownEntity, Skip, "an order %s: answered %s, and the step's call did not succeed for the example order "+
			"(see %s): nothing shows the %s is that order's alone", r.unknownNamed, status, RuleSameKey, status)
	case class == remote.ClassConfiguration && order.UnknownEntity(out.err):
		b := agent.DefaultBreaker
		r.report(d.Name, RuleUnknownEntity, Pass, "an order %s: answered %s while the step's call succeeds for other orders: only that order's step fails "+
			"(a 422 says so plainly: a fresh agent, which saw no other order succeed in the last %.0f minutes, holds such orders until one does, "+
			"and %d refused with no success between open its circuit)", r.unknownNamed, status, b.SucceededWithin.Minutes(), b.RefusedKeys)
	case class == remote.ClassConfiguration:
		r.report(d.Name, RuleUnknownEntity, Fail, "an order %s: answered %d, a configuration status no order's data causes: "+
			"the agent would hold every order of the step (its circuit opens); answer a 4xx such as 422 (or 404)", r.unknownNamed, out.lastStatus())
	default:
		r.report(d.Name, RuleUnknownEntity, Fail, "an order %s: %s: want a refusal, a 4xx such as 422 (or 404)%s", r.unknownNamed, describe(out), consequence(class))
	}
}

// undoWithoutResult: the undo of work done takes effect by its key
// alone. A step whose call timed out after the service did the work has
// no answer, so its undo is sent without results.<step> even where the
// definition has the undo carry it.
func (r *run) undoWithoutResult(ctx context.Context, d order.StepDef) {
	switch {
	case d.UndoCall.Path == "":
		r.report(d.Name, RuleUndoWithoutResult, Skip, "the step has no undo")
		return
	case !slices.Contains(d.UndoCarries, d.Name):
		r.report(d.Name, RuleUndoWithoutResult, Skip, "the undo carries no result of its own step: %s checks it as it is sent", RuleUndoTwice)
		return
	}
	key := newKey()
	work := r.call(ctx, d, key, false, nil)
	if c := remote.ClassOf(work.err); c != remote.ClassSuccess && c != remote.ClassContract {
		r.report(d.Name, RuleUndoWithoutResult, Skip, "no work to undo: the step's call failed (see %s)", RuleSameKey)
		return
	}
	without := "without results." + d.Name
	undo := r.call(ctx, d, key, true, r.withOwn(d, nil))
	if undo.err != nil {
		r.report(d.Name, RuleUndoWithoutResult, Fail, "the work (id %s), then its undo by the Idempotency-Key alone, %s (as the engine sends it "+
			"when the step timed out after its work was done): %s: the undo must find the work by its key and answer 2xx",
			work.answer.Reference, without, describe(undo))
		r.call(ctx, d, key, true, r.withOwn(d, work.answer.Body)) // cleanup
		return
	}
	late := r.call(ctx, d, key, false, nil)
	done := fmt.Sprintf("the work (id %s), then its undo %s: %d (id %s); then a call with the key", work.answer.Reference, without,
		undo.lastStatus(), undo.answer.Reference)
	switch class := remote.ClassOf(late.err); {
	case class == remote.ClassPermanent:
		r.report(d.Name, RuleUndoWithoutResult, Pass, "%s: refused %s", done, refusal(late))
	case class == remote.ClassSuccess && late.answer.Reference == work.answer.Reference:
		r.report(d.Name, RuleUndoWithoutResult, Pass, "%s: replayed its first answer with no new work (a refusal, 4xx, says so more plainly)", done)
	case class == remote.ClassSuccess:
		r.report(d.Name, RuleUndoWithoutResult, Fail, "%s did the work again (new id %s): the undo without the result did not block the key", done, late.answer.Reference)
		r.call(ctx, d, key, true, r.withOwn(d, late.answer.Body)) // cleanup
	default:
		r.report(d.Name, RuleUndoWithoutResult, Fail, "%s: %s: want a refusal (4xx)%s", done, describe(late), consequence(class))
	}
}

// unknownInput is input with each string value replaced by one no
// service can know (an unknown SKU, customer, address), wherever the
// workflow's input schema still takes it, one value at a time; it names
// the fields replaced. Nil when none could be.
func unknownInput(w order.Workflow, input json.RawMessage) (json.RawMessage, []string) {
	schema, err := definition.CompileSchema(w.Input)
	if err != nil {
		return nil, nil
	}
	var doc any
	if err := json.Unmarshal(input, &doc); err != nil {
		return nil, nil
	}
	valid := func() bool {
		b, err := json.Marshal(doc)
		return err == nil && len(schema.Check(b)) == 0
	}
	suffix := rand.Text()[:10]
	candidates := []string{"UNKNOWN-" + suffix, "UNKNOWN" + suffix, "unknown" + strings.ToLower(suffix)}
	var fields []string
	var walk func(v any, path string, set func(any))
	walk = func(v any, path string, set func(any)) {
		switch v := v.(type) {
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				walk(v[k], strings.TrimPrefix(path+"."+k, "."), func(n any) { v[k] = n })
			}
		case []any:
			for i := range v {
				walk(v[i], fmt.Sprintf("%s[%d]", path, i), func(n any) { v[i] = n })
			}
		case string:
			if set == nil {
				return
			}
			for _, c := range candidates {
				if set(c); valid() {
					fields = append(fields, path)
					return
				}
			}
			set(v)
		}
	}
	walk(doc, "", nil)
	if len(fields) == 0 {
		return nil, nil
	}
	out, err := json.Marshal(doc)
	if err != nil {
		return nil, nil
	}
	return out, fields
}

// listed names the first n of items, and how many more there are.
func listed(items []string, n int) string {
	if len(items) <= n {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:n], ", "), len(items)-n)
}

// undoUnknownKey: an undo of a key never used is a success (nothing to
// undo) and blocks the key: a late call with it does no work, since
// nothing would undo it.
func (r *run) undoUnknownKey(ctx context.Context, d order.StepDef) {
	if d.UndoCall.Path == "" {
		r.report(d.Name, RuleUndoUnknownKey, Skip, "the step has no undo")
		return
	}
	key := newKey()
	undo := r.call(ctx, d, key, true, r.withOwn(d, nil))
	if undo.err != nil {
		r.report(d.Name, RuleUndoUnknownKey, Fail, "an undo of an Idempotency-Key never used failed: %s: nothing to undo is a success (2xx)", describe(undo))
		return
	}
	late := r.call(ctx, d, key, false, nil)
	switch class := remote.ClassOf(late.err); class {
	case remote.ClassPermanent:
		r.report(d.Name, RuleUndoUnknownKey, Pass, "an undo of an Idempotency-Key never used: %d; then a call with that key: refused %s",
			undo.lastStatus(), refusal(late))
	case remote.ClassSuccess, remote.ClassContract:
		r.report(d.Name, RuleUndoUnknownKey, Fail, "after an undo of an Idempotency-Key never used, a call with that key did the work (id %s): "+
			"a late retry would then do work that nothing undoes; the undo must block the key", late.answer.Reference)
		r.call(ctx, d, key, true, r.withOwn(d, late.answer.Body)) // cleanup
	default:
		r.report(d.Name, RuleUndoUnknownKey, Fail, "after an undo of an Idempotency-Key never used, a call with that key: %s: want a refusal (4xx)%s",
			describe(late), consequence(class))
	}
}

// compensate runs the undo rules on the step's kept work (the same-key
// calls'), after the later steps ran, as a failed order is undone: the
// undo and its repeat succeed, and the key is then blocked.
func (r *run) compensate(ctx context.Context, d order.StepDef) {
	if d.UndoCall.Path == "" {
		r.report(d.Name, RuleUndoTwice, Skip, "the step has no undo")
		r.report(d.Name, RuleUndoBlocksKey, Skip, "the step has no undo")
		return
	}
	i := slices.IndexFunc(r.kept, func(k setupKey) bool { return k.d.Name == d.Name })
	if i < 0 {
		r.report(d.Name, RuleUndoTwice, Skip, "no work to undo: the step's call failed (see %s)", RuleSameKey)
		r.report(d.Name, RuleUndoBlocksKey, Skip, "no work to undo: the step's call failed (see %s)", RuleSameKey)
		return
	}
	key, done := r.kept[i].key, r.answers[d.Name]
	first := r.call(ctx, d, key, true, r.withOwn(d, done))
	again := r.call(ctx, d, key, true, r.withOwn(d, done))
	switch {
	case first.err != nil:
		r.report(d.Name, RuleUndoTwice, Fail, "the undo failed: %s", describe(first))
	case again.err != nil:
		r.report(d.Name, RuleUndoTwice, Fail, "the undo succeeded (id %s); its repeat failed: %s: a repeated undo must succeed", first.answer.Reference, describe(again))
	default:
		r.report(d.Name, RuleUndoTwice, Pass, "the undo: %d (id %s); its repeat: %d (id %s)", first.lastStatus(), first.answer.Reference, again.lastStatus(), again.answer.Reference)
	}
	var ref struct {
		ID string `json:"id"`
	}
	_ = json.Unmarshal(done, &ref)
	late := r.call(ctx, d, key, false, nil)
	switch class := remote.ClassOf(late.err); {
	case class == remote.ClassPermanent:
		r.report(d.Name, RuleUndoBlocksKey, Pass, "a call with the Idempotency-Key of undone work: refused %s", refusal(late))
	case class == remote.ClassSuccess && late.answer.Reference == ref.ID:
		r.report(d.Name, RuleUndoBlocksKey, Pass, "a call with the Idempotency-Key of undone work: replayed its first answer (id %s) with no new work "+
			"(a refusal, 4xx, says so more plainly)", late.answer.Reference)
	case class == remote.ClassSuccess:
		r.report(d.Name, RuleUndoBlocksKey, Fail, "a call with the Idempotency-Key of undone work did it again (new id %s, was %s): "+
			"a late retry would redo work after its undo", late.answer.Reference, ref.ID)
		r.call(ctx, d, key, true, r.withOwn(d, late.answer.Body)) // cleanup
	default:
		r.report(d.Name, RuleUndoBlocksKey, Fail, "a call with the Idempotency-Key of undone work: %s: want a refusal (4xx)%s", describe(late), consequence(class))
	}
}

// aggregate runs the rules on every exchange with the step's service.
func (r *run) aggregate(d order.StepDef) {
	log := r.log(d.Name)
	if d.Callback != nil {
		r.callbackAcceptsRule(d, log)
		r.callbackArrivesRule(d, log)
		r.callbackIdempotentRule(d, log)
		r.callbackTokenKeptRule(d, log)
	}
	if d.Poll != nil {
		r.pollAcceptsRule(d, log)
		r.pollDoneRule(d, log)
		r.pollIdempotentRule(d, log)
	}
	r.resultRule(d, log)
	r.retryAfterRule(d, log)
	r.allowanceRule(d, log)
	r.errorBodyRule(d, log)
}

func (r *run) resultRule(d order.StepDef, log *stepLog) {
	if len(log.contract) > 0 {
		r.report(d.Name, RuleResult, Fail, "%s", strings.Join(dedupe(log.contract), "; "))
		return
	}
	calls, undos, checked := 0, 0, 0
	for _, e := range log.exchanges {
		if e.status < 200 || e.status >= 300 || (e.token != "" && e.status == http.StatusAccepted) || (d.Poll != nil && e.status == http.StatusAccepted) {
			// A 202 to a call that calls back has no answer: its callback
			// has; nor one of a polled step: its status URL's 200 has.
			continue
		}
		if e.check {
			checked++
		}
		if e.undo {
			undos++
		} else {
			calls++
		}
		var answer struct {
			ID any `json:"id"`
		}
		if err := json.Unmarshal(e.body, &answer); err != nil {
			r.report(d.Name, RuleResult, Fail, "a %d answer is not a JSON object: a success must be one, with the reference in \"id\"", e.status)
			return
		}
		if id, ok := answer.ID.(string); !ok || id == "" {
			r.report(d.Name, RuleResult, Fail, "a %d answer has no string \"id\": the engine takes it as transient and retries until the window ends", e.status)
			return
		}
	}
	byCallback := 0
	if r.receiver != nil {
		r.receiver.mu.Lock()
		for _, p := range log.pendings {
			if p.taken != nil && p.taken.Outcome == order.CallbackOutcomeSucceeded {
				byCallback++
			}
		}
		r.receiver.mu.Unlock()
	}
	calls += byCallback
	if calls == 0 {
		r.report(d.Name, RuleResult, Skip, "no success to check")
		return
	}
	what := "a JSON object with an id"
	if len(d.ResultSchema) > 0 {
		what += ", matching the step's result schema"
	}
	if r.cfg.Workflow.Keeps(d.Name) {
		what += fmt.Sprintf(", within %d bytes (the step's result is kept)", d.ResultMaxBytes)
	}
	undone := ""
	if undos > 0 {
		undone = fmt.Sprintf("; %s, each with an id", plural(undos, "successful undo"))
	}
	called := ""
	if byCallback > 0 {
		called = fmt.Sprintf(" (%d by callback)", byCallback)
	}
	if checked > 0 {
		called = fmt.Sprintf(" (%d by status URL)", checked)
	}
	r.report(d.Name, RuleResult, Pass, "%s%s, each %s%s", plural(calls, "successful call"), called, what, undone)
}

// plural is n things.
func plural(n int, thing string) string {
	if n == 1 {
		return "1 " + thing
	}
	return fmt.Sprintf("%d %ss", n, thing)
}

func (r *run) retryAfterRule(d order.StepDef, log *stepLog) {
	// checks counts the 202s of a polled step that said when to check.
	n, checks, longest := 0, 0, time.Duration(0)
	for _, e := range log.exchanges {
		v := e.header.Get("Retry-After")
		if v == "" {
			continue
		}
		n++
		after, ok := remote.ParseRetryAfter(e.header)
		if d.Poll != nil && e.status == http.StatusAccepted {
			// When to check the status URL next: bounded by the wait.
			switch {
			case !ok:
				r.report(d.Name, RuleRetryAfter, Fail, "a 202 answer's Retry-After %q is neither delay-seconds nor an HTTP date: the status URL "+
					"is checked after the step's poll.every (%s) instead", v, d.Poll.Every)
				return
			case after > d.Poll.Timeout:
				r.report(d.Name, RuleRetryAfter, Fail, "a 202 answer's Retry-After asks for a wait of %s, more than the step's %s poll timeout: "+
					"the wait would end first", after, d.Poll.Timeout)
				return
			}
			checks++
			continue
		}
		switch {
		case !ok:
			r.report(d.Name, RuleRetryAfter, Fail, "a %d answer's Retry-After %q is neither delay-seconds nor an HTTP date: the agent ignores it", e.status, v)
			return
		case after > maxRetryAfter:
			r.report(d.Name, RuleRetryAfter, Fail, "a %d answer's Retry-After asks for a wait of %s, more than %s: the step's attempt would time out long before", e.status, after, maxRetryAfter)
			return
		}
		longest = max(longest, after)
	}
	if n == 0 {
		r.report(d.Name, RuleRetryAfter, Skip, "no answer carried Retry-After")
		return
	}
	note := ""
	if longest > d.Allowance {
		note = fmt.Sprintf(" (longer than the step's %s allowance: such an attempt times out and the Supervisor retries it)", d.Allowance)
	}
	if checks == n {
		r.report(d.Name, RuleRetryAfter, Pass, "%s (202) said when to check again, each a Retry-After within the step's %s poll timeout",
			plural(n, "answer"), d.Poll.Timeout)
		return
	}
	if checks > 0 {
		note += fmt.Sprintf("; %d of them 202s saying when to check again", checks)
	}
	r.report(d.Name, RuleRetryAfter, Pass, "%s carried Retry-After, the longest %s%s", plural(n, "answer"), longest, note)
}

func (r *run) allowanceRule(d order.StepDef, log *stepLog) {
	var slowest time.Duration
	answered := 0
	for _, e := range log.exchanges {
		if e.timedOut {
			r.report(d.Name, RuleWithinAllowance, Fail, "a call got no answer within the step's %s allowance", d.Allowance)
			return
		}
		if e.status != 0 {
			answered++
			slowest = max(slowest, e.took)
		}
	}
	if answered == 0 {
		r.report(d.Name, RuleWithinAllowance, Skip, "no answer to time")
		return
	}
	if slowest > d.Allowance {
		r.report(d.Name, RuleWithinAllowance, Fail, "an answer took %s, more than the step's %s allowance", roughly(slowest), d.Allowance)
		return
	}
	r.report(d.Name, RuleWithinAllowance, Pass, "%s, the slowest in %s (allowance %s)", plural(answered, "answer"), roughly(slowest), d.Allowance)
}

// roughly prints a duration to the millisecond, or as under one.
func roughly(d time.Duration) string {
	if d < time.Millisecond {
		return "under 1ms"
	}
	return d.Round(time.Millisecond).String()
}

func (r *run) errorBodyRule(d order.StepDef, log *stepLog) {
	n := 0
	for _, e := range log.exchanges {
		if e.status < 400 {
			continue
		}
		n++
		var body struct {
			Error *string `json:"error"`
		}
		if err := json.Unmarshal(e.body, &body); err != nil || body.Error == nil || *body.Error == "" {
			r.report(d.Name, RuleErrorBody, Fail, "a %d answer's body is not {\"error\": \"...\"} (Content-Type %q): operators and clients see its reason from there",
				e.status, e.header.Get("Content-Type"))
			return
		}
	}
	if n == 0 {
		r.report(d.Name, RuleErrorBody, Skip, "no answer failed")
		return
	}
	r.report(d.Name, RuleErrorBody, Pass, "%s, each with {\"error\": \"...\"}", plural(n, "failed answer"))
}

func dedupe(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// newKey is a fresh Idempotency-Key: random, so every run is new work to
// the service.
func newKey() string { return "conformance-" + rand.Text() }

func (r *run) log(step string) *stepLog {
	l, ok := r.seen[step]
	if !ok {
		l = &stepLog{}
		r.seen[step] = l
	}
	return l
}

// outcome is one call, with the attempts it took.
type outcome struct {
	key    string
	answer order.Answer
	err    error
	tries  []*exchange
	// pending is the call's callback, of a step that calls back, and
	// token the last it carried. calledBack: the outcome is its
	// callback's; superseded: the other call's, of two at once with one
	// key, which alone was called back.
	pending    *pending
	token      string
	calledBack bool
	superseded bool
	// polling is how the status URL of the call, accepted, of a step
	// whose service is polled was checked, and checks are the checks;
	// sameJob: a call made again whose 202 named the same status URL.
	polling *polling
	checks  []*exchange
	sameJob bool
}

// refusal says how a refused call was refused: its status, or its
// callback.
func refusal(o outcome) string {
	if o.calledBack {
		return "by a \"failed\" callback"
	}
	return strconv.Itoa(o.lastStatus())
}

func (o outcome) lastStatus() int {
	if len(o.checks) > 0 {
		return o.checks[len(o.checks)-1].status
	}
	if len(o.tries) == 0 {
		return 0
	}
	return o.tries[len(o.tries)-1].status
}

// describe says how a failed call ended, in the engine's terms.
func describe(o outcome) string {
	class := remote.ClassOf(o.err)
	last := o.lastStatus()
	var b strings.Builder
	switch {
	case last == 0 && len(o.tries) > 0 && o.tries[len(o.tries)-1].timedOut:
		b.WriteString("no answer within the step's allowance")
	case last == 0:
		fmt.Fprintf(&b, "no answer (%v)", o.err)
	default:
		fmt.Fprintf(&b, "%d (%s)", last, class)
	}
	if len(o.tries) > 1 {
		fmt.Fprintf(&b, " after %d attempts", len(o.tries))
	}
	if o.err != nil && last != 0 {
		fmt.Fprintf(&b, ": %v", o.err)
	}
	return b.String()
}

// call makes one call of step d as the agent does, through the real
// client, retrying transient faults (not a call that got no answer in
// time: that would only wait longer) a few times, honouring Retry-After
// up to a few seconds.
func (r *run) call(ctx context.Context, d order.StepDef, key string, undo bool, results map[string]json.RawMessage) outcome {
	return r.callWith(ctx, d, key, undo, results, r.cfg.Input)
}

// callWith is call for an order of another input. A call of a step
// that calls back takes its outcome from its callback (settle), as the
// step's record does.
func (r *run) callWith(ctx context.Context, d order.StepDef, key string, undo bool, results map[string]json.RawMessage, input json.RawMessage) outcome {
	out := r.callOnce(ctx, d, key, undo, results, input)
	r.settle(ctx, &out)
	r.poll(ctx, d, &out)
	return out
}

// callOnce is callWith without waiting for a callback.
func (r *run) callOnce(ctx context.Context, d order.StepDef, key string, undo bool, results map[string]json.RawMessage, input json.RawMessage) (out outcome) {
	if results == nil {
		results = r.answers
	}
	req := order.StepRequest{
		OrderID: r.orderID, Workflow: r.cfg.Workflow.Name, Version: r.cfg.Workflow.Version, Step: d.Name, Attempt: 1,
		IdempotencyKey: key, Input: input, Results: results, Undo: undo,
	}
	if undo {
		req.Record = len(r.cfg.Workflow.Steps)
	}
	log := r.log(d.Name)
	out = outcome{key: key}
	if d.Callback != nil && !undo && r.receiver != nil {
		// Each call an attempt of its own: its token names it alone.
		req.Attempt = int(r.attempts.Add(1))
		record, _ := req.StepIndex(r.cfg.Workflow)
		wait := cmp.Or(r.cfg.CallbackWait, DefaultCallbackWait)
		out.pending = r.receiver.register(callbacktoken.Claim{OrderID: r.orderID, Record: record, Step: d.Name, Attempt: req.Attempt}, d, wait, log)
		log.mu.Lock()
		log.pendings = append(log.pendings, out.pending)
		log.mu.Unlock()
		defer func() {
			if len(out.tries) > 0 {
				out.token = out.tries[len(out.tries)-1].token
			}
			r.receiver.answered(out.pending, d, out)
		}()
	}
	for attempt := 1; ; attempt++ {
		e := &exchange{undo: undo}
		callCtx, cancel := context.WithTimeout(context.WithValue(ctx, exchangeKey{}, e), d.Allowance)
		out.answer, out.err = r.client.Call(callCtx, d.Agent, req)
		cancel()
		if e.sent {
			e.timedOut = e.status == 0 && errors.Is(out.err, context.DeadlineExceeded) && ctx.Err() == nil
			out.tries = append(out.tries, e)
			log.mu.Lock()
			log.exchanges = append(log.exchanges, e)
			if errors.Is(out.err, order.ErrContract) {
				log.contract = append(log.contract, contractProblem(out.err))
			}
			log.mu.Unlock()
		}
		if remote.ClassOf(out.err) != remote.ClassTransient || attempt == tries || (len(out.tries) > 0 && out.tries[len(out.tries)-1].timedOut) || ctx.Err() != nil {
			return out
		}
		wait := time.Duration(100<<attempt) * time.Millisecond
		if after, ok := order.RetryAfter(out.err); ok {
			wait = min(after, 3*time.Second)
		}
		select {
		case <-time.After(wait):
		case <-ctx.Done():
			return out
		}
	}
}

// contractProblem is what a contract fault says of the answer, without
// the operation the client names first.
func contractProblem(err error) string {
	var ce *order.ContractError
	if errors.As(err, &ce) {
		return "the answer " + ce.Problem
	}
	return err.Error()
}

// raw sends body as the step's call with key, for what the client would
// never send.
func (r *run) raw(ctx context.Context, d order.StepDef, call order.Endpoint, key string, body []byte) *exchange {
	e := &exchange{}
	callCtx, cancel := context.WithTimeout(context.WithValue(ctx, exchangeKey{}, e), d.Allowance)
	defer cancel()
	req, err := http.NewRequestWithContext(callCtx, call.Method, strings.TrimRight(r.cfg.BaseURL, "/")+call.Path, bytes.NewReader(body))
	if err != nil {
		e.err = err
		return e
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	req.Header.Set("Idempotency-Key", key)
	resp, err := r.http.Do(req)
	if err != nil {
		e.err = err
		e.timedOut = errors.Is(err, context.DeadlineExceeded)
	} else {
		resp.Body.Close()
	}
	if e.sent {
		log := r.log(d.Name)
		log.mu.Lock()
		log.exchanges = append(log.exchanges, e)
		log.mu.Unlock()
	}
	return e
}

// exchange is one HTTP call and its answer, as the recorder saw it.
type exchange struct {
	undo bool
	// token is the callback token the call carried, if any.
	token string
	// prefer: the call carried Prefer: respond-async; check: it was a
	// GET of a status URL. url is where it went, for a Location to be
	// resolved against (never reported: it may carry a token); via are
	// the statuses of the answers it went on from (a 303 to the answer).
	prefer, check bool
	url           string
	via           []int

	sent     bool
	status   int
	header   http.Header
	body     []byte
	took     time.Duration
	timedOut bool
	err      error
}

type exchangeKey struct{}

// recorder adds the configured headers to every call and records each
// answer in the exchange its context carries.
type recorder struct {
	base   http.RoundTripper
	header http.Header
}

func (rec *recorder) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, vs := range rec.header {
		req.Header[http.CanonicalHeaderKey(k)] = vs
	}
	e, _ := req.Context().Value(exchangeKey{}).(*exchange)
	if e == nil {
		e = &exchange{}
	}
	if e.sent {
		e.via = append(e.via, e.status)
	}
	e.sent = true
	e.token = callbackToken(req)
	e.prefer = strings.Contains(req.Header.Get("Prefer"), remote.PreferAsync)
	e.check = e.check || req.Method == http.MethodGet
	e.url = req.URL.String()
	began := time.Now()
	resp, err := rec.base.RoundTrip(req)
	if err != nil {
		e.took, e.err = time.Since(began), err
		return nil, err
	}
	body, err := io.ReadAll(io.LimitReader(resp.Body, remote.MaxResponseBytes))
	resp.Body.Close()
	e.took = time.Since(began)
	if err != nil {
		e.err = err
		return nil, err
	}
	e.status, e.header, e.body = resp.StatusCode, resp.Header, body
	resp.Body = io.NopCloser(bytes.NewReader(body))
	return resp, nil
}

// callbackToken is the token req's body carries in its callback object,
// or "".
func callbackToken(req *http.Request) string {
	if req.GetBody == nil {
		return ""
	}
	body, err := req.GetBody()
	if err != nil {
		return ""
	}
	defer body.Close()
	var fields struct {
		Callback struct {
			Token string `json:"token"`
		} `json:"callback"`
	}
	raw, _ := io.ReadAll(io.LimitReader(body, order.MaxInputBytes+4096))
	_ = json.Unmarshal(raw, &fields)
	return fields.Callback.Token
}

// redactURL leaves a password out of a URL.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unreadable)"
	}
	return u.Redacted()
}

// Failed counts the failed rules.
func Failed(rs []Result) int {
	n := 0
	for _, r := range rs {
		if r.Verdict == Fail {
			n++
		}
	}
	return n
}

// Write prints one line per rule per step, then a summary.
func Write(w io.Writer, rs []Result) {
	stepW, ruleW := 4, 4
	for _, r := range rs {
		stepW, ruleW = max(stepW, len(r.Step)), max(ruleW, len(r.Rule))
	}
	counts := map[Verdict]int{}
	for _, r := range rs {
		counts[r.Verdict]++
		fmt.Fprintf(w, "%-4s  %-*s  %-*s  %s\n", r.Verdict, stepW, r.Step, ruleW, r.Rule, r.Why)
	}
	fmt.Fprintf(w, "%d passed, %d failed, %d skipped\n", counts[Pass], counts[Fail], counts[Skip])
}
