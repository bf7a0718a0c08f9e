package simulator_test

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/adapter/remote"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// pollDelay is how long the simulator's polled work takes in these tests.
const pollDelay = 200 * time.Millisecond

// polledShipped is the shipped workflow with charge-payment's service
// polled, as a definition's "call": {"poll": ...} makes it.
func polledShipped() order.Versions {
	wf := shipped.Latest()
	wf.Steps = slices.Clone(wf.Steps)
	i, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[i].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	return order.MustVersions(wf)
}

// startPolled serves a simulator whose polled work takes pollDelay, and
// a client that polls charge-payment's service as the agents do.
func startPolled(t *testing.T, opts ...simulator.Option) (*simulator.Server, *httptest.Server, *remote.Client) {
	t.Helper()
	sim, ts, _ := start(t, append([]simulator.Option{simulator.WithCallbackDelay(pollDelay)}, opts...)...)
	return sim, ts, remote.NewClient(ts.URL, ts.Client(), polledShipped())
}

// polledRequest is charge-payment's call for an order of skus, of the
// polled workflow.
func polledRequest(orderID string, skus ...string) order.StepRequest {
	req := stepRequest(orderID, ordertest.StepChargePayment, append([]string{"WIDGET-1"}, skus...)...)
	wf := polledShipped().Latest()
	req.Workflow, req.Version = wf.Name, wf.Version
	return req
}

// checkOf is the check of req's status URL.
func checkOf(req order.StepRequest, statusURL string) order.StepRequest {
	req.Poll = statusURL
	return req
}

// A call that prefers respond-async is accepted (202, a status URL and
// Retry-After); its checks say "working" until the work is done, then
// answer it, as each test value says. The work is done once, and a
// failed job does none.
func TestPolledServices(t *testing.T) {
	t.Parallel()
	// A check's outcome, as the agent's client sees it.
	const (
		working   = "working"
		moved     = "moved"
		transient = "transient"
		done      = "done"
		failed    = "failed"
	)
	tests := []struct {
		name string
		skus []string
		// first is the first check's outcome, made at once; last the
		// outcome the checks end in once the work's time passed.
		first, last string
		wantErr     string
	}{
		{name: "normal", first: working, last: done},
		{name: "failed", skus: []string{"TEST-PAYMENT-POLL-FAILED"}, first: working, last: failed, wantErr: "status 422: card declined"},
		{name: "see other", skus: []string{"TEST-PAYMENT-POLL-SEE-OTHER"}, first: working, last: done},
		{name: "moved", skus: []string{"TEST-PAYMENT-POLL-MOVED"}, first: moved, last: done},
		{name: "flaky", skus: []string{"TEST-PAYMENT-POLL-FLAKY"}, first: transient, last: done},
		{name: "another service's value", skus: []string{"TEST-INVENTORY-POLL-FAILED"}, first: working, last: done},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			sim, ts, client := startPolled(t)
			req := polledRequest("ord-poll-"+strings.ReplaceAll(tt.name, " ", "-"), tt.skus...)
			ans, err := client.Call(t.Context(), ordertest.AgentPayment, req)
			if err != nil || !ans.Accepted || ans.RetryAfter != time.Second {
				t.Fatalf("the call: got %+v, %v; want accepted with a Retry-After of 1s", ans, err)
			}
			if !strings.HasPrefix(ans.StatusURL, ts.URL+"/status/payment/") {
				t.Fatalf("status URL %q, want one under %s/status/payment/", ans.StatusURL, ts.URL)
			}
			statusURL := ans.StatusURL
			outcome := func(ans order.Answer, err error) string {
				switch {
				case errors.Is(err, order.ErrTransient):
					return transient
				case err != nil:
					return failed
				case ans.Accepted && ans.StatusURL != "":
					statusURL = ans.StatusURL
					return moved
				case ans.Accepted:
					return working
				}
				return done
			}
			if got := outcome(client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, statusURL))); got != tt.first {
				t.Fatalf("the first check: %s, want %s", got, tt.first)
			}
			var last order.Answer
			testenv.Eventually(t, 5*time.Second, func() (bool, string) {
				time.Sleep(pollDelay / 4)
				ans, err := client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, statusURL))
				got := outcome(ans, err)
				if got == tt.last && tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
					return false, "the check failed with " + err.Error() + ", want " + tt.wantErr
				}
				last = ans
				return got == tt.last, "the checks end " + got + ", want " + tt.last
			})
			ref := sim.Reference(ordertest.AgentPayment, req.IdempotencyKey)
			if tt.last == done && (ref == "" || last.Reference != ref || !strings.HasPrefix(ref, "ch_")) {
				t.Errorf("done with %q, the service's work is %q: want one charge, answered", last.Reference, ref)
			}
			if tt.last == failed && ref != "" {
				t.Errorf("failed, and the service did work %q", ref)
			}
			if n := sim.Calls(ordertest.AgentPayment, req.IdempotencyKey); n != 1 {
				t.Errorf("%d calls, want 1: the checks are no calls", n)
			}
		})
	}
}

// The call made again with its key (its wait timed out) is the same job
// while it works, and answered with its answer once it is done; the
// work is done once, as the ledger shows.
func TestAPolledCallMadeAgainIsTheSameJob(t *testing.T) {
	t.Parallel()
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	sim, _, client := startPolled(t, simulator.WithLedger(ledger))
	req := polledRequest("ord-poll-again")
	first, err := client.Call(t.Context(), ordertest.AgentPayment, req)
	if err != nil || !first.Accepted {
		t.Fatalf("the call: %+v, %v", first, err)
	}
	again, err := client.Call(t.Context(), ordertest.AgentPayment, req)
	if err != nil || !again.Accepted || again.StatusURL != first.StatusURL {
		t.Fatalf("the call again while the work goes on: %+v, %v; want the same job, %s", again, err, first.StatusURL)
	}
	time.Sleep(pollDelay)
	doneAns, err := client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, first.StatusURL))
	if err != nil || doneAns.Accepted || doneAns.Reference == "" {
		t.Fatalf("the check after the work's time: %+v, %v; want the answer", doneAns, err)
	}
	late, err := client.Call(t.Context(), ordertest.AgentPayment, req)
	if err != nil || late.Accepted || late.Reference != doneAns.Reference {
		t.Fatalf("the call again once done: %+v, %v; want its answer, %s", late, err, doneAns.Reference)
	}
	if checked, err := client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, first.StatusURL)); err != nil || checked.Reference != doneAns.Reference {
		t.Errorf("a check once done: %+v, %v; want the same answer, %s", checked, err, doneAns.Reference)
	}
	sim.Close()
	effects, err := simulator.ReadLedger(ledger)
	if err != nil {
		t.Fatal(err)
	}
	if len(effects) != 1 || effects[0].Reference != doneAns.Reference {
		t.Errorf("ledger effects %+v, want one: the charge %s", effects, doneAns.Reference)
	}
}

// A simulator restarted with its ledger knows the jobs it accepted: a
// check of one after the restart finds it and ends in its answer.
func TestAPolledJobOutlivesARestart(t *testing.T) {
	t.Parallel()
	ledger := filepath.Join(t.TempDir(), "ledger.jsonl")
	sim, _, client := startPolled(t, simulator.WithLedger(ledger))
	req := polledRequest("ord-poll-restart", "TEST-PAYMENT-POLL-MOVED")
	ans, err := client.Call(t.Context(), ordertest.AgentPayment, req)
	if err != nil || !ans.Accepted {
		t.Fatalf("the call: %+v, %v", ans, err)
	}
	sim.Close()

	restarted, ts, _ := startPolled(t, simulator.WithLedger(ledger))
	client = remote.NewClient(ts.URL, ts.Client(), polledShipped())
	statusURL := strings.Replace(ans.StatusURL, ans.StatusURL[:strings.Index(ans.StatusURL, "/status/")], ts.URL, 1)
	var last order.Answer
	testenv.Eventually(t, 5*time.Second, func() (bool, string) {
		time.Sleep(pollDelay / 4)
		a, err := client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, statusURL))
		if err != nil {
			t.Fatalf("a check after the restart: %v", err)
		}
		if a.StatusURL != "" {
			statusURL = a.StatusURL
		}
		last = a
		return !a.Accepted, "still working"
	})
	if ref := restarted.Reference(ordertest.AgentPayment, req.IdempotencyKey); ref == "" || last.Reference != ref {
		t.Errorf("done with %q, the service's work %q", last.Reference, ref)
	}
}

// An undo while the job works fences its key: the job then does no
// work, and its check says so (422).
func TestAnUndoFencesAPolledJob(t *testing.T) {
	t.Parallel()
	sim, _, client := startPolled(t)
	req := polledRequest("ord-poll-undo")
	ans, err := client.Call(t.Context(), ordertest.AgentPayment, req)
	if err != nil || !ans.Accepted {
		t.Fatalf("the call: %+v, %v", ans, err)
	}
	undo := req
	undo.Undo = true
	if _, err := client.Call(t.Context(), ordertest.AgentPayment, undo); err != nil {
		t.Fatalf("the undo: %v", err)
	}
	time.Sleep(pollDelay)
	if _, err := client.Call(t.Context(), ordertest.AgentPayment, checkOf(req, ans.StatusURL)); !errors.Is(err, order.ErrPermanent) || !strings.Contains(err.Error(), "was undone") {
		t.Errorf("the check after the undo: %v, want 422, undone", err)
	}
	if ref := sim.Reference(ordertest.AgentPayment, req.IdempotencyKey); ref != "" || !sim.Undone(ordertest.AgentPayment, req.IdempotencyKey) {
		t.Errorf("work %q, undone %t: want none, the key fenced", ref, sim.Undone(ordertest.AgentPayment, req.IdempotencyKey))
	}
}

// The status URLs over plain HTTP: where the 202 points (relative to the
// call, under the simulator's base), what a 303 points to, and what a
// status URL of no job, or not a GET, is answered.
func TestStatusURLs(t *testing.T) {
	t.Parallel()
	_, ts, _ := startPolled(t)
	do := func(method, url string, header http.Header, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequestWithContext(t.Context(), method, url, strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header = header
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	key := "ord-raw#charge-payment"
	header := http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {key}, "Prefer": {"wait=5, respond-async"}}
	call := do(http.MethodPost, ts.URL+"/payment/charges", header,
		`{"orderId":"ord-raw","customerId":"c","lines":[{"sku":"TEST-PAYMENT-POLL-SEE-OTHER","quantity":1}]}`)
	loc := call.Header.Get("Location")
	if call.StatusCode != http.StatusAccepted || !strings.HasPrefix(loc, "../status/payment/") || call.Header.Get("Retry-After") != "1" {
		t.Fatalf("the call: %d, Location %q, Retry-After %q; want 202, ../status/payment/<id>, 1", call.StatusCode, loc, call.Header.Get("Retry-After"))
	}
	status, _ := call.Request.URL.Parse(loc)
	if status.Path != "/status/payment/"+strings.TrimPrefix(loc, "../status/payment/") {
		t.Fatalf("Location %q resolves to %s", loc, status)
	}
	if !simulator.Serves(http.MethodGet, status.Path) || !simulator.Serves(http.MethodGet, status.Path+"/result") || simulator.Serves(http.MethodGet, "/status/nobody/1") {
		t.Errorf("Serves: want GET of a status URL and of its result URL served, of another service's not")
	}
	check := http.Header{"Accept": {"application/json"}, "Idempotency-Key": {key}}
	time.Sleep(pollDelay)
	done := do(http.MethodGet, status.String(), check, "")
	result, _ := done.Request.URL.Parse(done.Header.Get("Location"))
	if done.StatusCode != http.StatusSeeOther || result == nil || result.Path != status.Path+"/result" {
		t.Fatalf("the check once done: %d, Location %q; want 303 to %s/result", done.StatusCode, done.Header.Get("Location"), status.Path)
	}
	for _, tt := range []struct {
		name, method, url string
		header            http.Header
		want              int
	}{
		{"the result", http.MethodGet, result.String(), check, http.StatusOK},
		{"no such job", http.MethodGet, ts.URL + "/status/payment/nosuchjob", check, http.StatusNotFound},
		{"another key's job", http.MethodGet, status.String(), http.Header{"Idempotency-Key": {"another"}}, http.StatusNotFound},
		{"another service's job", http.MethodGet, strings.Replace(status.String(), "/payment/", "/shipping/", 1), check, http.StatusNotFound},
		{"not a GET", http.MethodPost, status.String(), check, http.StatusMethodNotAllowed},
		{"no such path", http.MethodGet, status.String() + "/more/path", check, http.StatusNotFound},
	} {
		if got := do(tt.method, tt.url, tt.header, "").StatusCode; got != tt.want {
			t.Errorf("%s: %d, want %d", tt.name, got, tt.want)
		}
	}
	// A call without the preference is answered at once, whatever the
	// order's poll test values say.
	sync := do(http.MethodPost, ts.URL+"/payment/charges", http.Header{"Content-Type": {"application/json"}, "Idempotency-Key": {"ord-sync#charge-payment"}},
		`{"orderId":"ord-sync","customerId":"c","lines":[{"sku":"TEST-PAYMENT-POLL-FAILED","quantity":1}]}`)
	if sync.StatusCode != http.StatusCreated {
		t.Errorf("a call without Prefer: respond-async: %d, want 201", sync.StatusCode)
	}
}
