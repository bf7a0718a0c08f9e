package console_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
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
)

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
	return api.NewOrderView(o, steps)
}

// fakeStage is a stage with one order in Error and one in flight. It
// records the changes asked of it.
type fakeStage struct {
	actions  []string
	failWith error
}

func (f *fakeStage) InFlight(context.Context, time.Duration, int) ([]ops.Listed, error) {
	return []ops.Listed{{OrderID: flyingID, Status: order.StatusProcessing, Step: ordertest.StepChargePayment, State: "Processing", Attempt: 2,
		CompleteBy: t0.Add(-5 * time.Minute), Late: 5 * time.Minute}}, nil
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

func (f *fakeStage) DeadLetters(context.Context) ([]ops.DeadLetterQueue, error) {
	return []ops.DeadLetterQueue{{Name: "orderly-t-payment-requests-dlq", Source: "orderly-t-payment-requests", Messages: 3}}, nil
}

func (f *fakeStage) Alerts(context.Context, time.Time, order.AlertKind, int) ([]order.Alert, error) {
	return []order.Alert{{Kind: order.AlertUndoFailed, OrderID: stuckID, Step: ordertest.StepChargePayment, Undo: true, Attempt: 1,
		Reason: "refund refused", Undone: []string{ordertest.StepArrangeShipping}, At: t0}}, nil
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
		{"/", 200, []string{`data-count="Error"`, `Orders in Error: an operator must act`, `/orders/` + stuckID, "refund refused", "orderly-t-payment-requests-dlq"}},
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
		{"/orders/" + stuckID + "/cancel", 409, []string{"only a Pending or Processing order can be cancelled"}},
		{"/orders/NOSUCHORDERAAAAAAAAAAAAAAA", 404, []string{"has no order"}},
		{"/orders/not-an-id", 404, []string{"No order has that id"}},
		{"/orders/" + stuckID + "/delete", 404, []string{"is not an action"}},
		{"/find?id=" + url.QueryEscape("<script>"), 400, []string{"&#34;&lt;script&gt;&#34; is not an order id"}},
		{"/dlq", 200, []string{"dlq redrive orderly-t-payment-requests-dlq --dry-run"}},
		{"/alerts", 200, []string{"UndoFailed", "/orders/" + stuckID, "undo charge-payment (undone before: arrange-shipping)", "refund refused"}},
		{"/alerts?since=-1h", 400, []string{"want a duration"}},
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
	return resp.StatusCode, string(b)
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
