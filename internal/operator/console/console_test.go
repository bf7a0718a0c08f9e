package console_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

const (
	stuckID    = "STUCKORDERAAAAAAAAAAAAAAAA"
	flyingID   = "FLYINGORDERAAAAAAAAAAAAAAA"
	timedOutID = "TIMEDOUTORDERAAAAAAAAAAAAA"
	waitingID  = "WAITINGORDERAAAAAAAAAAAAAA"
	// reviewingID waits for the event "review".
	reviewingID = "REVIEWINGORDERAAAAAAAAAAAA"
)

// waitingOrder is an order whose first step, a timer, waits an hour from
// t0.
func waitingOrder(id string) api.OrderView {
	until := t0.Add(time.Hour)
	return api.OrderView{OrderID: id, Status: order.StatusWaiting, CreatedAt: t0, UpdatedAt: t0,
		Steps: []api.StepView{{Step: "cool-off", State: "Waiting", Attempt: 1, CompleteBy: &until, UpdatedAt: t0,
			Waiting: &api.WaitView{For: order.WaitTimer, Since: t0, Until: until}},
			{Step: ordertest.StepReserveInventory, Agent: ordertest.AgentInventory, State: "NotStarted"}}}
}

// reviewingOrder is an order whose first step waits an hour from t0 for
// the event "review".
func reviewingOrder(id string) api.OrderView {
	v := waitingOrder(id)
	v.Steps[0].Step = ordertest.StepReview
	v.Steps[0].Waiting = &api.WaitView{For: order.WaitEvent, Event: ordertest.EventReview, Since: t0, Until: t0.Add(time.Hour)}
	return v
}

// stuckAtUndo is an order in Error at the refund that undoes its payment,
// after its shipping was refused; tweak changes the stuck undo.
func stuckAtUndo(id string, tweak func(*order.StepState)) api.OrderView {
	o := order.Order{ID: id, Status: order.StatusError, CreatedAt: t0, UpdatedAt: t0.Add(time.Second)}
	steps := []order.StepState{
		{Step: ordertest.StepReserveInventory, Index: 0, ProcessState: order.Processed, Attempt: 1},
		{Step: ordertest.StepChargePayment, Index: 1, ProcessState: order.Processed, Attempt: 1},
		{Step: ordertest.StepArrangeShipping, Index: 2, ProcessState: order.Failed, Attempt: 1},
		{Step: ordertest.StepChargePayment, Index: 3, Undo: true, ProcessState: order.Error, Attempt: 1, LastError: "refund refused"},
		{Step: ordertest.StepReserveInventory, Index: 4, Undo: true, ProcessState: order.NotStarted},
	}
	if tweak != nil {
		tweak(&steps[3])
	}
	return api.NewOrderView(o, steps, ordertest.OrderWorkflow(order.DefaultTiming))
}

// fakeStage is a stage with one order in Error and one in flight, and
// the orders of searchable to search. It records the changes asked of it,
// and the searches and counts.
type fakeStage struct {
	actions  []string
	failWith error

	mu       sync.Mutex
	searched []order.Query
	counted  []order.Query
	countErr error
}

func (f *fakeStage) InFlight(context.Context, time.Duration, int) ([]ops.Listed, error) {
	return []ops.Listed{{OrderID: flyingID, Status: order.StatusProcessing, Step: ordertest.StepChargePayment, State: "Processing", Attempt: 2,
		CompleteBy: t0.Add(-5 * time.Minute), Late: 5 * time.Minute},
		{OrderID: waitingID, Status: order.StatusWaiting, Step: "cool-off", State: "Waiting", Attempt: 1, CompleteBy: t0.Add(time.Hour)}}, nil
}

func (f *fakeStage) InError(context.Context, int) ([]ops.Listed, error) {
	return []ops.Listed{{OrderID: stuckID, Status: order.StatusError, Step: ordertest.StepChargePayment, Undo: true, State: "Error",
		Attempt: 1, LastError: "refund refused"}}, nil
}

func (f *fakeStage) Show(_ context.Context, id string) (api.OrderView, error) {
	switch id {
	case stuckID:
		return stuckAtUndo(id, nil), nil
	case timedOutID:
		return stuckAtUndo(id, func(s *order.StepState) {
			s.Attempt, s.FailureCount, s.LastError = 3, 3, "undo: attempt 3 timed out"
		}), nil
	case flyingID:
		return api.OrderView{OrderID: id, Status: order.StatusProcessing, CreatedAt: t0,
			Steps: []api.StepView{{Step: ordertest.StepChargePayment, State: "Processing"}}}, nil
	case waitingID:
		return waitingOrder(id), nil
	case reviewingID:
		return reviewingOrder(id), nil
	}
	return api.OrderView{}, fmt.Errorf("order %s: %w", id, order.ErrNotFound)
}

func (f *fakeStage) HistorySince(context.Context, string, time.Time) ([]order.HistoryEntry, error) {
	return []order.HistoryEntry{{At: t0, Record: -1, Event: "status", To: "Pending", By: "submit", Reason: "submitted"}}, nil
}

func (f *fakeStage) Cancel(_ context.Context, id string) (order.Order, error) {
	f.actions = append(f.actions, "cancel "+id)
	return order.Order{ID: id, Status: order.StatusCancelling}, f.failWith
}

func (f *fakeStage) Redrive(_ context.Context, id, action string) (order.Order, error) {
	f.actions = append(f.actions, "redrive "+id+" "+action)
	return order.Order{ID: id, Status: order.StatusCompensating}, f.failWith
}

func (f *fakeStage) SendEvent(_ context.Context, id, name string, data json.RawMessage) (order.Order, error) {
	f.actions = append(f.actions, "event "+id+" "+name+" "+string(data))
	return order.Order{ID: id, Status: order.StatusProcessing}, f.failWith
}

func (f *fakeStage) DeadLetters(context.Context) ([]ops.DeadLetterQueue, error) {
	return []ops.DeadLetterQueue{{Name: "orderly-t-payment-requests-dlq", Source: "orderly-t-payment-requests", Messages: 3}}, nil
}

func (f *fakeStage) Alerts(context.Context, time.Time, order.AlertKind, int) ([]order.Alert, error) {
	return []order.Alert{{Kind: order.AlertUndoFailed, OrderID: stuckID, Step: ordertest.StepChargePayment, Undo: true, Attempt: 1,
		Reason: "refund refused", Undone: []string{ordertest.StepArrangeShipping}, At: t0}}, nil
}

// searchable are the orders the fake stage searches, newest first: five
// of customer c-1 and two of c-2, an hour apart, in the hours before t0;
// the newest is Pending, the others Processed.
func searchable() []order.Summary {
	var out []order.Summary
	for i := range 7 {
		customer := "c-1"
		if i%3 == 2 {
			customer = "c-2"
		}
		s := order.Summary{ID: fmt.Sprintf("SEARCHORDER%c%s", 'A'+i, strings.Repeat("Z", 14)), CustomerID: customer, Workflow: "order", Version: "1",
			Status: order.StatusProcessed, CreatedAt: t0.Add(-time.Duration(i+1) * time.Hour)}
		if i == 0 {
			s.Status = order.StatusPending
		} else {
			s.EndedAt = s.CreatedAt.Add(time.Minute)
		}
		out = append(out, s)
	}
	return out
}

// SearchPage pages through searchable's matches, a position being the
// offset of the page.
func (f *fakeStage) SearchPage(_ context.Context, q order.Query, position []byte) (order.SearchPage, error) {
	f.mu.Lock()
	f.searched = append(f.searched, q)
	f.mu.Unlock()
	from := 0
	if position != nil {
		n, err := strconv.Atoi(string(position))
		if err != nil {
			return order.SearchPage{}, fmt.Errorf("search position: %w", order.ErrInvalid)
		}
		from = n
	}
	var matches []order.Summary
	for _, s := range searchable() {
		o := order.Order{ID: s.ID, CustomerID: s.CustomerID, Workflow: s.Workflow, Version: s.Version, Status: s.Status, CreatedAt: s.CreatedAt}
		if q.Matches(o, s.EndedAt) {
			matches = append(matches, s)
		}
	}
	var page order.SearchPage
	page.Orders = matches[min(from, len(matches)):min(from+q.Limit, len(matches))]
	if from+q.Limit < len(matches) {
		page.Next = []byte(strconv.Itoa(from + q.Limit))
	}
	return page, nil
}

// Count counts searchable's matches of q.
func (f *fakeStage) Count(_ context.Context, q order.Query, _ int) (order.Counts, error) {
	f.mu.Lock()
	f.counted = append(f.counted, q)
	f.mu.Unlock()
	c := order.NewCounts(q)
	for _, s := range searchable() {
		o := order.Order{ID: s.ID, CustomerID: s.CustomerID, Workflow: s.Workflow, Version: s.Version, Status: s.Status, CreatedAt: s.CreatedAt}
		if q.Matches(o, s.EndedAt) {
			c.Add(s.Status)
		}
	}
	c.Evaluated = len(searchable())
	return c, f.countErr
}

// The fake stage plans no bulk action and knows no event: bulk_test.go
// plans and runs them over a stage on the emulators.
func (f *fakeStage) PlanBulk(context.Context, ops.BulkFilter, int) ([]ops.Planned, error) {
	return nil, ops.ErrPlanEmpty
}
func (f *fakeStage) CheckPlan([]ops.Planned, ops.BulkAction) error { return nil }
func (f *fakeStage) RunBulk(context.Context, []ops.Planned, ops.BulkAction, *ops.Journal, ops.BulkOptions) (ops.BulkReport, error) {
	return ops.BulkReport{}, errors.New("the fake stage runs no bulk action")
}
func (f *fakeStage) Events() []string { return nil }

// The fake stage's pauses: service payment paused until t0 (overrun on
// the console's clock), inventory resumed, workflow order never paused.
// Pausing and resuming are tried over a stage on the emulators
// (pause_test.go).
func (f *fakeStage) Pauses(context.Context) ([]order.Pause, error) {
	return []order.Pause{
		{Kind: order.PauseService, Name: ordertest.AgentPayment, By: "arn:aws:iam::1:user/ana", Reason: "PSP maintenance", Since: t0.Add(-time.Hour), Until: t0},
		{Kind: order.PauseService, Name: ordertest.AgentInventory, Resumed: t0.Add(-time.Hour), ResumedBy: "arn:aws:iam::1:user/bo", ResumeReason: "stock count over"},
		{Kind: order.PauseWorkflow, Name: "order"},
	}, nil
}
func (f *fakeStage) PauseHistory(context.Context, order.PauseKind, string) ([]order.HistoryEntry, error) {
	return nil, nil
}
func (f *fakeStage) PlanPause(order.PauseRequest) (order.Pause, error) {
	return order.Pause{}, errors.New("the fake stage pauses nothing")
}
func (f *fakeStage) Pause(context.Context, order.PauseRequest) (order.Pause, error) {
	return order.Pause{}, errors.New("the fake stage pauses nothing")
}
func (f *fakeStage) Resume(context.Context, order.PauseKind, string, string, string) (order.Pause, error) {
	return order.Pause{}, errors.New("the fake stage resumes nothing")
}

// reads are the searches and counts asked of the stage.
func (f *fakeStage) reads() (searched, counted []order.Query) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.searched), slices.Clone(f.counted)
}

func serve(t *testing.T, f *fakeStage) *httptest.Server {
	t.Helper()
	c := console.New("t", f, slog.New(slog.NewTextHandler(io.Discard, nil))).WithClock(func() time.Time { return t0.Add(time.Minute) })
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return srv
}

var noRedirect = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}

func get(t *testing.T, u string) (int, string) {
	t.Helper()
	resp, err := noRedirect.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

var tokenField = regexp.MustCompile(`name="token" value="([0-9a-f]+)"`)

func TestPages(t *testing.T) {
	srv := serve(t, &fakeStage{})
	tests := []struct {
		path   string
		status int
		want   []string
	}{
		{"/", 200, []string{`data-count="Error"`, `Orders in Error: an operator must act`, `/orders/` + stuckID, "refund refused", "orderly-t-payment-requests-dlq",
			`id="paused">Paused now, their orders held: <a href="/pauses#pause-service-payment">service payment</a> until 2026-11-22 10:00:00.000 UTC <span class="badge s-Error">OVERRUN</span>.`}},
		{"/?show=stuck", 200, []string{`Orders stuck past their deadline`, `/orders/` + flyingID, "6m0s ago"}},
		{"/orders/" + stuckID, 200, []string{`id="redrive-retry" href=`, `id="redrive-compensate" href=`, `id="timeline"`, "undo charge-payment", "submitted",
			"Redrive: run the failed step again", "Redrive: resume undoing", "the undo records are dropped and step arrange-shipping runs again"}},
		// The refund may have been made: running forward is not offered.
		{"/orders/" + timedOutID, 200, []string{`id="redrive-compensate" href=`, `id="redrive-retry-refused"`, "may have been done", `redrive with &#34;compensate&#34;`}},
		{"/orders/" + timedOutID + "/redrive-retry", 409, []string{"may have been done", "compensate"}},
		{"/orders/" + timedOutID + "/redrive-compensate", 200, []string{"The undo of charge-payment runs again", `id="confirm"`}},
		{"/orders/" + flyingID, 200, []string{`id="cancel"`, "Watch live"}},
		{"/orders/" + stuckID + "/redrive-retry", 200, []string{"Redrive order " + stuckID, "step arrange-shipping runs again", `id="confirm"`}},
		{"/orders/" + stuckID + "/redrive-compensate", 200, []string{"then the rest of the order"}},
		{"/orders/" + flyingID + "/cancel", 200, []string{"Cancel order " + flyingID}},
		{"/orders/" + flyingID + "/redrive-retry", 409, []string{"only an order in Error can be redriven"}},
		{"/orders/" + stuckID + "/cancel", 409, []string{"only a Pending, Processing or Waiting order can be cancelled"}},
		// A waiting order: counted, shown with what it waits for, and cancellable.
		{"/?show=in+flight", 200, []string{"data-count=\"Waiting\">\n    <div class=\"n\">1</div>", `/orders/` + waitingID}},
		{"/orders/" + waitingID, 200, []string{`id="waiting"`, "cool-off waits for timer since 2026-11-22 10:00:00.000 until 2026-11-22 11:00:00.000 (in 59m0s)",
			`id="cancel"`, "Watch live"}},
		{"/orders/" + waitingID + "/cancel", 200, []string{"Cancel order " + waitingID, "wait stops at once", `id="confirm"`}},
		// An order that waits for an event: the form to send it.
		{"/orders/" + reviewingID, 200, []string{"manual-review waits for event review since", `id="send-event" href="/orders/` + reviewingID + `/send-event"`,
			"Send event review", `id="cancel"`}},
		{"/orders/" + reviewingID + "/send-event", 200, []string{"Send event review to order " + reviewingID, "checked against the step&#39;s schema",
			`<textarea id="data" name="data"`, ">{}</textarea>", `name="event" value="review"`, `id="confirm"`}},
		{"/orders/" + waitingID + "/send-event", 409, []string{"waits for no event: cool-off waits for timer"}},
		{"/orders/" + stuckID + "/send-event", 409, []string{"is Error and waits for no event"}},
		{"/orders/NOSUCHORDERAAAAAAAAAAAAAAA", 404, []string{"has no order"}},
		{"/orders/not-an-id", 404, []string{"No order has that id"}},
		{"/orders/" + stuckID + "/delete", 404, []string{"is not an action"}},
		{"/find?id=" + url.QueryEscape("<script>"), 400, []string{"&#34;&lt;script&gt;&#34; is not an order id"}},
		{"/dlq", 200, []string{"dlq redrive orderly-t-payment-requests-dlq --dry-run"}},
		{"/alerts", 200, []string{"UndoFailed", "/orders/" + stuckID, "undo charge-payment (undone before: arrange-shipping)", "refund refused"}},
		{"/alerts?since=-1h", 400, []string{"want a duration"}},
		// The pauses: payment on past its end, inventory resumed, each
		// in the pause form's list.
		{"/pauses", 200, []string{`id="pause-service-payment" data-pause="service:payment" data-state="overrun"`, "OVERRUN", "PSP maintenance",
			"arn:aws:iam::1:user/ana", `href="/pauses/resume?target=service%3apayment"`, `data-state="running"`, "last resumed 2026-11-22 09:00:00.000",
			"stock count over", `<option value="workflow:order">workflow order</option>`, `id="no-history"`}},
		{"/pauses/resume?target=service:inventory", 409, []string{"service inventory is not paused: nothing to resume"}},
		// A console that does not know its operator pauses nothing.
		{"/pauses/pause?target=service:payment&for=1h&reason=x", 503, []string{"does not know who you are", `id="p-reason" value="x"`}},
	}
	for _, tt := range tests {
		t.Run(tt.path, func(t *testing.T) {
			status, body := get(t, srv.URL+tt.path)
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
		})
	}
}

// A change needs the console's token from its own confirmation page: a
// form posted from elsewhere changes nothing.
func TestActionsNeedTheConsolesToken(t *testing.T) {
	f := &fakeStage{}
	srv := serve(t, f)
	_, page := get(t, srv.URL+"/orders/"+stuckID+"/redrive-retry")
	m := tokenField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the confirmation page has no token")
	}
	post := func(action string, form url.Values, site string) *http.Response {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders/"+stuckID+"/"+action, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if site != "" {
			req.Header.Set("Sec-Fetch-Site", site)
		}
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	for _, tt := range []struct {
		name string
		form url.Values
		site string
	}{
		{"no token", url.Values{}, ""},
		{"a wrong token", url.Values{"token": {strings.Repeat("0", 32)}}, ""},
		{"the right token from another site", url.Values{"token": {m[1]}}, "cross-site"},
	} {
		if resp := post("redrive-retry", tt.form, tt.site); resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", tt.name, resp.StatusCode)
		}
	}
	if len(f.actions) != 0 {
		t.Fatalf("refused posts changed the stage: %v", f.actions)
	}
	resp := post("redrive-retry", url.Values{"token": {m[1]}}, "same-origin")
	if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc, "/orders/"+stuckID+"?live=1&done=") {
		t.Errorf("confirmed redrive: %d to %q, want 303 back to the order, watching it", resp.StatusCode, loc)
	}
	resp = post("redrive-compensate", url.Values{"token": {m[1]}}, "")
	if resp.StatusCode != http.StatusSeeOther {
		t.Errorf("confirmed compensate: %d", resp.StatusCode)
	}
	want := []string{"redrive " + stuckID + " retry", "redrive " + stuckID + " compensate"}
	if strings.Join(f.actions, ",") != strings.Join(want, ",") {
		t.Errorf("actions %v, want %v", f.actions, want)
	}
	// A change the order's state no longer allows is a 409 with the reason.
	f.failWith = fmt.Errorf("order %s is Compensating: %w", stuckID, order.ErrNotAllowed)
	if resp := post("redrive-retry", url.Values{"token": {m[1]}}, ""); resp.StatusCode != http.StatusConflict {
		t.Errorf("redrive of an order that moved on: %d, want 409", resp.StatusCode)
	}
}

// An event is sent from its form with the console's token, as an
// operator: taken, the page goes back to the order, watching it; data
// that cannot be taken shows the form again with what is wrong and the
// data as typed; an event too late or no longer waited for says so.
func TestSendEventFromTheConsole(t *testing.T) {
	f := &fakeStage{}
	srv := serve(t, f)
	_, page := get(t, srv.URL+"/orders/"+reviewingID+"/send-event")
	m := tokenField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the event's form has no token")
	}
	approve := `{"decision":"approve"}`
	send := func(form url.Values) (int, string, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/orders/"+reviewingID+"/send-event", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		resp, err := noRedirect.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Location"), string(b)
	}
	if status, _, _ := send(url.Values{"event": {"review"}, "data": {approve}}); status != http.StatusForbidden || len(f.actions) != 0 {
		t.Fatalf("without the token: %d, actions %v; want 403 and nothing sent", status, f.actions)
	}
	for _, tt := range []struct {
		name     string
		failWith error
		data     string
		status   int
		// says is what the page (or where it goes) says.
		says []string
	}{
		{"taken", nil, approve, http.StatusSeeOther, []string{"/orders/" + reviewingID + "?live=1&done=", url.QueryEscape("event review taken: the order is now Processing")}},
		{"data its schema refuses", &order.ValidationError{Fields: []order.FieldError{{Field: "decision", Problem: `must be one of "approve", "reject"`}}},
			`{"decision":"maybe"}`, http.StatusBadRequest,
			[]string{`id="problem"`, "decision: must be one of &#34;approve&#34;, &#34;reject&#34;", `>{&#34;decision&#34;:&#34;maybe&#34;}</textarea>`, `name="token" value="` + m[1]}},
		{"data over what the step keeps", fmt.Errorf("event review's data is 5000 bytes, step manual-review keeps at most 4096: %w", order.ErrTooLarge),
			approve, http.StatusRequestEntityTooLarge, []string{`id="problem"`, "keeps at most 4096"}},
		{"too late", fmt.Errorf("order %s: the wait for event review ended at 2026-11-22T11:00:00Z: %w", reviewingID, order.ErrTooLate),
			approve, http.StatusGone, []string{"Too late", "the wait for event review ended"}},
		{"taken already, other data", fmt.Errorf("order %s took event review already, with other data: %w", reviewingID, order.ErrNotAllowed),
			approve, http.StatusConflict, []string{"Not done", "took event review already"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f.actions, f.failWith = nil, tt.failWith
			status, loc, body := send(url.Values{"token": {m[1]}, "event": {"review"}, "data": {tt.data}})
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			for _, w := range tt.says {
				if !strings.Contains(loc+body, w) {
					t.Errorf("the answer lacks %q:\n%s%s", w, loc, body)
				}
			}
			if want := "event " + reviewingID + " review " + tt.data; len(f.actions) != 1 || f.actions[0] != want {
				t.Errorf("actions %q, want %q", f.actions, want)
			}
		})
	}
}

// The order page of an order whose undo may have been done offers no
// way to run it forward.
func TestNoRetryOfferedOverAnUndoThatMayHaveRun(t *testing.T) {
	srv := serve(t, &fakeStage{})
	_, page := get(t, srv.URL+"/orders/"+timedOutID)
	if strings.Contains(page, `href="/orders/`+timedOutID+`/redrive-retry"`) {
		t.Errorf("the page links the refused retry:\n%s", page)
	}
}

// request sends method path to srv with the given Host header and other
// headers ("Name: value"), and returns the status and body.
func request(t *testing.T, srv *httptest.Server, method, path, host string, form url.Values, headers ...string) (int, string) {
	t.Helper()
	status, _, body := send(t, srv, method, path, host, form, headers...)
	return status, body
}

// send is request, which says where a redirect goes too.
func send(t *testing.T, srv *httptest.Server, method, path, host string, form url.Values, headers ...string) (status int, location, page string) {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, srv.URL+path, body)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for _, h := range headers {
		name, value, _ := strings.Cut(h, ": ")
		req.Header.Set(name, value)
	}
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Location"), string(b)
}

// A page of another name that resolves to 127.0.0.1 (DNS rebinding) is
// same-origin with the console in the browser's eyes; only the Host header
// tells it apart. The console answers only as the address it serves.
func TestConsoleAnswersOnlyAsItsOwnAddress(t *testing.T) {
	srv := serve(t, &fakeStage{})
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")
	for _, tt := range []struct {
		host   string
		status int
	}{
		{"127.0.0.1:" + port, http.StatusOK},
		{"localhost:" + port, http.StatusOK},
		{"LOCALHOST:" + port, http.StatusOK},
		{"[::1]:" + port, http.StatusOK},
		{"evil.example:" + port, http.StatusMisdirectedRequest},
		{"evil.example", http.StatusMisdirectedRequest},
		{"127.0.0.1.nip.io:" + port, http.StatusMisdirectedRequest},
		{"localhost.:" + port, http.StatusMisdirectedRequest},
		{"127.0.0.1:1", http.StatusMisdirectedRequest}, // not the port it serves
		{"localhost", http.StatusMisdirectedRequest},   // port 80, not its own
		{"192.168.1.10:" + port, http.StatusMisdirectedRequest},
	} {
		for _, path := range []string{"/", "/orders/" + stuckID + "/redrive-retry"} {
			status, body := request(t, srv, http.MethodGet, path, tt.host, nil)
			if status != tt.status {
				t.Errorf("GET %s as %s: status %d, want %d", path, tt.host, status, tt.status)
			}
			if status == http.StatusMisdirectedRequest {
				if tokenField.MatchString(body) {
					t.Errorf("GET %s as %s: the refusal carries the console's token", path, tt.host)
				}
				if !strings.Contains(body, "127.0.0.1:"+port) {
					t.Errorf("GET %s as %s: the refusal does not say where the console answers: %q", path, tt.host, body)
				}
			}
		}
	}
}

// A name the operator gives the console (an SSH tunnel's, a proxy's) is
// served too.
func TestConsoleAnswersAsAConfiguredName(t *testing.T) {
	c := console.New("t", &fakeStage{}, slog.New(slog.DiscardHandler)).WithHosts("console.internal", "localhost:9000")
	srv := httptest.NewServer(c)
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		host   string
		status int
	}{
		{"console.internal", http.StatusOK},
		{"console.internal:443", http.StatusOK},
		{"localhost:9000", http.StatusOK},
		{"localhost:9001", http.StatusMisdirectedRequest},
		{"other.internal", http.StatusMisdirectedRequest},
	} {
		if status, _ := request(t, srv, http.MethodGet, "/", tt.host, nil); status != tt.status {
			t.Errorf("GET / as %s: status %d, want %d", tt.host, status, tt.status)
		}
	}
	// Behind a proxy that serves it over HTTPS, its pages' origin is https.
	_, page := request(t, srv, http.MethodGet, "/orders/"+stuckID+"/redrive-retry", "console.internal", nil)
	m := tokenField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the confirmation page has no token")
	}
	for _, tt := range []struct {
		origin string
		status int
	}{
		{"https://console.internal", http.StatusSeeOther},
		{"http://console.internal", http.StatusSeeOther},
		{"https://other.internal", http.StatusForbidden},
	} {
		status, _ := request(t, srv, http.MethodPost, "/orders/"+stuckID+"/redrive-retry", "console.internal", url.Values{"token": {m[1]}}, "Origin: "+tt.origin)
		if status != tt.status {
			t.Errorf("POST as console.internal from %s: status %d, want %d", tt.origin, status, tt.status)
		}
	}
}

// A change must come from the console's own pages: a POST that the
// browser says came from another origin changes nothing, even with the
// console's token (which a rebinding page could have read before this
// check existed).
func TestActionsFromAnotherOriginAreRefused(t *testing.T) {
	f := &fakeStage{}
	srv := serve(t, f)
	self := srv.Listener.Addr().String()
	_, page := get(t, srv.URL+"/orders/"+stuckID+"/redrive-retry")
	m := tokenField.FindStringSubmatch(page)
	if m == nil {
		t.Fatal("the confirmation page has no token")
	}
	form := url.Values{"token": {m[1]}}
	for _, tt := range []struct {
		name    string
		host    string
		headers []string
		status  int
	}{
		{"another origin", self, []string{"Origin: http://evil.example"}, http.StatusForbidden},
		{"another origin on the same port", self, []string{"Origin: http://evil.example:" + strings.Split(self, ":")[1]}, http.StatusForbidden},
		{"another port of localhost", self, []string{"Origin: http://127.0.0.1:1"}, http.StatusForbidden},
		{"an opaque origin", self, []string{"Origin: null"}, http.StatusForbidden},
		{"https, not the console's scheme", self, []string{"Origin: https://" + self}, http.StatusForbidden},
		{"no origin, from a sibling site", self, []string{"Sec-Fetch-Site: same-site"}, http.StatusForbidden},
		{"the console's origin, another Host", "evil.example", []string{"Origin: http://" + self}, http.StatusMisdirectedRequest},
	} {
		if status, _ := request(t, srv, http.MethodPost, "/orders/"+stuckID+"/redrive-retry", tt.host, form, tt.headers...); status != tt.status {
			t.Errorf("%s: status %d, want %d", tt.name, status, tt.status)
		}
	}
	if len(f.actions) != 0 {
		t.Fatalf("refused posts changed the stage: %v", f.actions)
	}
	for _, tt := range []struct {
		name    string
		host    string
		headers []string
	}{
		{"its own origin", self, []string{"Origin: http://" + self, "Sec-Fetch-Site: same-origin"}},
		{"its own origin as localhost", "localhost:" + strings.Split(self, ":")[1], []string{"Origin: http://localhost:" + strings.Split(self, ":")[1]}},
		{"no origin, no browser (curl)", self, nil},
	} {
		if status, _ := request(t, srv, http.MethodPost, "/orders/"+stuckID+"/redrive-retry", tt.host, form, tt.headers...); status != http.StatusSeeOther {
			t.Errorf("%s: status %d, want 303", tt.name, status)
		}
	}
	if len(f.actions) != 3 {
		t.Errorf("actions %v, want the three accepted redrives", f.actions)
	}
}

// A read that another site's page makes without the operator following a
// link (an image, a script, a fetch) reads nothing; following a link from
// elsewhere opens the page.
func TestReadsFromAnotherSitesPageAreRefused(t *testing.T) {
	f := &fakeStage{}
	srv := serve(t, f)
	self := srv.Listener.Addr().String()
	for _, tt := range []struct {
		name    string
		headers []string
		status  int
	}{
		{"an image of another site", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: no-cors"}, http.StatusForbidden},
		{"a fetch of another site", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: cors"}, http.StatusForbidden},
		{"a fetch of another port of localhost", []string{"Sec-Fetch-Site: same-site", "Sec-Fetch-Mode: no-cors"}, http.StatusForbidden},
		{"a link followed from another site", []string{"Sec-Fetch-Site: cross-site", "Sec-Fetch-Mode: navigate"}, http.StatusOK},
		{"typed in the address bar", []string{"Sec-Fetch-Site: none", "Sec-Fetch-Mode: navigate"}, http.StatusOK},
		{"no browser (curl)", nil, http.StatusOK},
	} {
		f.mu.Lock()
		f.searched, f.counted = nil, nil
		f.mu.Unlock()
		status, _ := request(t, srv, http.MethodGet, "/search?customer=c-1", self, nil, tt.headers...)
		f.mu.Lock()
		read := len(f.searched) + len(f.counted)
		f.mu.Unlock()
		if status != tt.status || (status == http.StatusForbidden) != (read == 0) {
			t.Errorf("%s: status %d after %d reads, want %d (and reads only when served)", tt.name, status, read, tt.status)
		}
	}
}

// The ids of searchable's orders by their letter: c-1's are A, B, D, E
// and G, newest first.
func searchID(letter byte) string { return "SEARCHORDER" + string(letter) + strings.Repeat("Z", 14) }

// The search page lists what its filters match, newest first, with the
// counts by status over its window, each a link to its status's orders.
// Bad input is a 400 naming the field, and reads nothing.
func TestSearchPage(t *testing.T) {
	tests := []struct {
		name   string
		path   string
		status int
		want   []string
		not    []string
		// reads: whether the page searched and counted.
		reads bool
	}{
		{"one customer's, a page", "/search?customer=c-1&limit=2", 200,
			[]string{`id="results"`, `href="/orders/` + searchID('A') + `"`, searchID('B'), `id="next" href="/search?cursor=`, "order@1",
				`data-count="Pending"><div class="n">1</div>`, `data-count="Processed"><div class="n">4</div>`, `data-count="total"><div class="n">5</div>`,
				"Orders created in the last 24 hours, by status", "Counted: the orders created from 2026-11-21T10:01:00Z on, customer c-1",
				`value="c-1"`, `<option selected>2</option>`},
			[]string{searchID('C'), searchID('D'), `id="first"`, `id="problem"`}, true},
		// A count links to its status's orders over the same window.
		{"the counts' links", "/search?customer=c-1", 200,
			[]string{`href="/search?created_from=2026-11-21T10%3A01%3A00Z&amp;customer=c-1&amp;status=Pending" data-count="Pending"`,
				`class="card selected" href="/search?created_from=2026-11-21T10%3A01%3A00Z&amp;customer=c-1" data-count="total"`},
			nil, true},
		{"one status, selected", "/search?customer=c-1&status=Processed", 200,
			[]string{searchID('B'), `<option selected>Processed</option>`, `class="card selected" href="/search?created_from=2026-11-21T10%3A01%3A00Z&amp;customer=c-1&amp;status=Processed"`},
			[]string{`href="/orders/` + searchID('A')}, true},
		// A date and a datetime-local input's values are UTC.
		{"a window of dates and times", "/search?customer=c-1&created_from=2026-11-22T05:00&created_to=2026-11-22T09:30", 200,
			[]string{searchID('A'), searchID('E'), `value="2026-11-22T05:00:00"`, `value="2026-11-22T09:30:00"`,
				"Orders of this search, by status", "the orders created from 2026-11-22T05:00:00Z to 2026-11-22T09:30:00Z",
				`data-count="Processed"><div class="n">3</div>`},
			[]string{searchID('G'), "last 24 hours"}, true},
		{"an ended window", "/search?ended_from=2026-11-22&ended_to=2026-11-22T05:30:00Z", 200,
			[]string{searchID('E'), searchID('F'), searchID('G'), "the orders ended from 2026-11-22T00:00:00Z to 2026-11-22T05:30:00Z"}, []string{searchID('D')}, true},
		{"nothing: the newest orders", "/search", 200, []string{searchID('A'), searchID('C'), "Orders created in the last 24 hours"}, nil, true},
		{"a time that is none", "/search?customer=c-1&created_from=yesterday", 400,
			[]string{`query parameter created_from: &#34;yesterday&#34; is not an RFC 3339 time`, `id="f-created_from" value="yesterday" class="invalid"`, `value="c-1"`},
			[]string{`id="results"`, `id="counts"`}, false},
		{"a status that is none", "/search?status=Done", 400, []string{"query parameter status: &#34;Done&#34; is not a status", `id="f-status" class="invalid"`}, nil, false},
		{"a range that ends before it starts", "/search?ended_from=2026-11-22&ended_to=2026-11-21", 400,
			[]string{"query parameter ended_to: must be later than ended_from", `id="f-ended_to" value="2026-11-21" class="invalid"`}, nil, false},
		{"a page size over the maximum", "/search?limit=500", 400, []string{"query parameter limit:"}, nil, false},
		{"a parameter of no search", "/search?sort=oldest", 400, []string{"query parameter sort: not a search parameter"}, nil, false},
		{"a position that is none", "/search?customer=c-1&cursor=AAAA", 400,
			[]string{"is not one of this search", `id="first" href="/search?customer=c-1"`}, []string{`id="results"`}, false},
		{"a customer id with markup", "/search?customer=" + url.QueryEscape(`<script>alert(1)</script>`), 200,
			[]string{`value="&lt;script&gt;alert(1)&lt;/script&gt;"`, "customer &lt;script&gt;"}, []string{"<script>alert"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := &fakeStage{}
			srv := serve(t, f)
			status, body := get(t, srv.URL+tt.path)
			if status != tt.status {
				t.Errorf("status %d, want %d", status, tt.status)
			}
			for _, w := range tt.want {
				if !strings.Contains(body, w) {
					t.Errorf("page lacks %q", w)
				}
			}
			for _, w := range tt.not {
				if strings.Contains(body, w) {
					t.Errorf("page has %q", w)
				}
			}
			if searched, counted := f.reads(); (len(searched) == 1 && len(counted) == 1) != tt.reads || len(searched) > 1 || len(counted) > 1 {
				t.Errorf("searched %d and counted %d times, want once each: %t", len(searched), len(counted), tt.reads)
			}
			if t.Failed() {
				t.Logf("page:\n%s", body)
			}
		})
	}
}

// A count is of every status over the search's window, whatever status
// the search lists; a search with no window is counted over the last 24
// hours.
func TestSearchPageCountsTheWindow(t *testing.T) {
	now := t0.Add(time.Minute)
	day := time.Date(2026, 11, 22, 0, 0, 0, 0, time.UTC)
	tests := []struct {
		path string
		want order.Query
	}{
		{"/search?status=Error&customer=c-1", order.Query{CustomerID: "c-1", CreatedFrom: now.Add(-24 * time.Hour)}},
		{"/search?created_to=2026-11-22&workflow=order&limit=50", order.Query{Workflow: "order", CreatedTo: day, Limit: 50}},
		{"/search?ended_from=2026-11-22T00:00:00%2B01:00&status=Failed", order.Query{EndedFrom: day.Add(-time.Hour), Limit: order.DefaultSearchLimit}},
	}
	for _, tt := range tests {
		f := &fakeStage{}
		srv := serve(t, f)
		if status, body := get(t, srv.URL+tt.path); status != http.StatusOK {
			t.Fatalf("%s: status %d:\n%s", tt.path, status, body)
		}
		_, counted := f.reads()
		want := tt.want
		if want.Limit == 0 {
			want.Limit = order.DefaultSearchLimit
		}
		if len(counted) != 1 || counted[0] != want {
			t.Errorf("%s: counted %+v, want %+v", tt.path, counted, want)
		}
	}
}

var (
	nextLink  = regexp.MustCompile(`id="next" href="([^"]+)"`)
	firstLink = regexp.MustCompile(`id="first" href="([^"]+)"`)
	resultIDs = regexp.MustCompile(`href="/orders/([A-Z2-7]{26})"`)
)

// Next pages through the search, each page's position sealed and bound
// to its query: a later page links back to the first, and a position
// altered or carried over to another search reads nothing.
func TestSearchPagesThrough(t *testing.T) {
	f := &fakeStage{}
	srv := serve(t, f)
	var pages [][]string
	var cursors []string
	path := "/search?customer=c-1&limit=2"
	for len(pages) < 5 {
		status, body := get(t, srv.URL+path)
		if status != http.StatusOK {
			t.Fatalf("%s: status %d:\n%s", path, status, body)
		}
		var ids []string
		for _, m := range resultIDs.FindAllStringSubmatch(body, -1) {
			ids = append(ids, m[1])
		}
		pages = append(pages, ids)
		first := firstLink.FindStringSubmatch(body)
		if (first == nil) != (len(pages) == 1) || (first != nil && html.UnescapeString(first[1]) != "/search?customer=c-1&limit=2") {
			t.Errorf("page %d: first-page link %q", len(pages), first)
		}
		next := nextLink.FindStringSubmatch(body)
		if next == nil {
			break
		}
		path = html.UnescapeString(next[1])
		u, _ := url.Parse(path)
		cursors = append(cursors, u.Query().Get("cursor"))
	}
	want := [][]string{{searchID('A'), searchID('B')}, {searchID('D'), searchID('E')}, {searchID('G')}}
	if fmt.Sprint(pages) != fmt.Sprint(want) {
		t.Fatalf("pages %v, want %v", pages, want)
	}
	// Only the first page counts: the later ones are of the same search.
	searched, counted := f.reads()
	if len(counted) != 1 {
		t.Errorf("three pages counted %d times, want once", len(counted))
	}
	for _, tt := range []struct{ name, path string }{
		{"another customer's", "/search?customer=c-2&limit=2&cursor=" + cursors[0]},
		{"another page size", "/search?customer=c-1&limit=3&cursor=" + cursors[0]},
		{"altered", "/search?customer=c-1&limit=2&cursor=" + cursors[0][:len(cursors[0])-2] + "AA"},
		{"the position alone", "/search?customer=c-1&limit=2&cursor=Mg"},
	} {
		if status, body := get(t, srv.URL+tt.path); status != http.StatusBadRequest || !strings.Contains(body, "is not one of this search") {
			t.Errorf("%s position: status %d, want 400 saying so", tt.name, status)
		}
	}
	if after, _ := f.reads(); len(after) != len(searched) {
		t.Errorf("refused positions searched %d times", len(after)-len(searched))
	}
}

// The search box opens the order an id names; anything else, or an id no
// order has, searches that customer's orders.
func TestSearchBox(t *testing.T) {
	srv := serve(t, &fakeStage{})
	for _, tt := range []struct{ path, to string }{
		{"/search?q=" + stuckID, "/orders/" + stuckID},
		{"/search?q=+" + stuckID + "+", "/orders/" + stuckID},
		{"/search?q=c-1", "/search?customer=c-1"},
		{"/search?q=NOSUCHORDERAAAAAAAAAAAAAAA", "/search?customer=NOSUCHORDERAAAAAAAAAAAAAAA"},
		{"/search?q=c-1&status=Failed&cursor=x", "/search?customer=c-1&status=Failed"},
		{"/search?q=&status=Error", "/search?status=Error"},
		{"/search?q=" + url.QueryEscape("a&b=c"), "/search?customer=a%26b%3Dc"},
	} {
		resp, err := noRedirect.Get(srv.URL + tt.path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if loc := resp.Header.Get("Location"); resp.StatusCode != http.StatusSeeOther || loc != tt.to {
			t.Errorf("%s: %d to %q, want 303 to %q", tt.path, resp.StatusCode, loc, tt.to)
		}
	}
	if _, body := get(t, srv.URL+"/"); !strings.Contains(body, `<form action="/search" method="get" role="search"><input name="q"`) || !strings.Contains(body, `id="nav-search"`) {
		t.Error("the overview has no search box and no link to the search page")
	}
}

// Counts that cannot be read leave the listing, and say why.
func TestSearchPageWithoutCounts(t *testing.T) {
	srv := serve(t, &fakeStage{countErr: errors.New("ProvisionedThroughputExceededException")})
	status, body := get(t, srv.URL+"/search?customer=c-1")
	if status != http.StatusOK || !strings.Contains(body, searchID('A')) || !strings.Contains(body, "The counts could not be read: ProvisionedThroughputExceededException") || strings.Contains(body, `id="counts"`) {
		t.Errorf("status %d:\n%s\nwant the orders, and the counts' error in their place", status, body)
	}
}
