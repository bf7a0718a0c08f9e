package console_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// bulkWorld is a stage on the emulators whose workflow is wf (the
// World's own when nil) and the console over it.
func bulkWorld(t *testing.T, wf func(order.Workflow) order.Workflow) (*testenv.World, *httptest.Server) {
	t.Helper()
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, enginetest.Fast)
	if wf != nil {
		w.Run(t, wf(w.Workflow))
	}
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	srv := httptest.NewServer(console.New(w.Stack.Catalog.Stage, stage, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	return w, srv
}

// inError submits an order of customer and fails its first step: Error
// at reserve-inventory.
func inError(t *testing.T, w *testenv.World, customer string) string {
	t.Helper()
	id := w.Submit(t, ordertest.Submission{CustomerID: customer, Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	if _, _, err := w.Store.Apply(context.Background(), order.FailReply(w.Step(t, id, ordertest.StepReserveInventory), "declined", w.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	return id
}

var hiddenField = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// confirmForm is the form of a plan page's confirmation: its hidden
// fields.
func confirmForm(t *testing.T, page string) url.Values {
	t.Helper()
	i := strings.Index(page, `id="bulk-confirm"`)
	if i < 0 {
		t.Fatalf("the page has no confirmation form:\n%s", page)
	}
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(page[i:], -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	return form
}

// post sends a form to the console as a client that is no browser
// would, and returns the status, where it goes and the page.
func post(t *testing.T, srv *httptest.Server, path string, form url.Values, headers ...string) (int, string, string) {
	t.Helper()
	return send(t, srv, http.MethodPost, path, srv.Listener.Addr().String(), form, headers...)
}

// finished waits for the bulk run at path to end, and returns its page.
func finished(t *testing.T, srv *httptest.Server, path string) string {
	t.Helper()
	var page string
	testenv.Eventually(t, 20*time.Second, func() (bool, string) {
		_, page = get(t, srv.URL+path)
		return !strings.Contains(page, `id="job-state">running`) && !strings.Contains(page, `id="job-state">stopping`), page
	})
	return page
}

var reportRow = regexp.MustCompile(`data-order="([A-Z2-7]{26})" data-outcome="([a-z]*)"`)

// outcomes are a run's outcomes by order, from its page.
func outcomes(page string) map[string]string {
	out := map[string]string{}
	for _, m := range reportRow.FindAllStringSubmatch(page, -1) {
		out[m[1]] = m[2]
	}
	return out
}

// After an outage, orders are in Error at one step. From the search of
// the orders in Error, the operator plans a redrive of those at the step:
// the plan lists them, and changes nothing. Another order fails before
// the confirmation: the confirmed plan is stale, so nothing is done and
// the new plan is shown. Confirmed, the run redrives every one, and its
// page reports each order done. The same confirmation again does nothing.
func TestBulkRedriveFromTheConsole(t *testing.T) {
	w, srv := bulkWorld(t, nil)
	var stuck []string
	for range 3 {
		stuck = append(stuck, inError(t, w, "c-1"))
	}
	pending := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})

	status, page := get(t, srv.URL+"/search?status=Error")
	if status != http.StatusOK || !strings.Contains(page, `id="bulk" action="/bulk" method="get"`) || !strings.Contains(page, `<input type="hidden" name="status" value="Error">`) {
		t.Fatalf("the search page (%d) has no bulk form over its filters:\n%s", status, page)
	}
	plan := "/bulk?" + url.Values{"status": {"Error"}, "step": {ordertest.StepReserveInventory}, "action": {"redrive"}, "redrive": {"retry"},
		"to": {""}, "max": {"1000"}}.Encode()
	status, page = get(t, srv.URL+plan)
	if status != http.StatusOK {
		t.Fatalf("plan: status %d:\n%s", status, page)
	}
	for _, want := range []string{"Bulk redrive on 3 orders?", `id="bulk-action">redrive --action retry`, "status Error, step " + ordertest.StepReserveInventory,
		"its failed step (or undo) runs again", `id="confirm"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the plan lacks %q", want)
		}
	}
	for _, id := range stuck {
		if !strings.Contains(page, `<tr data-order="`+id+`">`) {
			t.Errorf("the plan does not list %s", id)
		}
	}
	if strings.Contains(page, pending) {
		t.Errorf("the plan lists %s, which is not in Error", pending)
	}
	stale := confirmForm(t, page)
	if stale.Get("token") == "" || stale.Get("plan") == "" || stale.Get("status") != "Error" || stale.Get("redrive") != "retry" || stale.Has("to") {
		t.Errorf("the confirmation carries %v: want the token, the plan's fingerprint, the filter and the action's fields only", stale)
	}

	// Another order fails before the confirmation.
	stuck = append(stuck, inError(t, w, "c-2"))
	status, _, page = post(t, srv, "/bulk", stale)
	if status != http.StatusConflict || !strings.Contains(page, "changed since the plan was shown") || !strings.Contains(page, "Bulk redrive on 4 orders?") {
		t.Fatalf("a stale confirmation: %d, want 409 showing the new plan of 4:\n%s", status, page)
	}
	for _, id := range stuck {
		if o, _ := w.Records(t, id); o.Status != order.StatusError {
			t.Fatalf("after a stale confirmation order %s is %s, want it untouched (Error)", id, o.Status)
		}
	}

	fresh := confirmForm(t, page)
	status, loc, _ := post(t, srv, "/bulk", fresh, "Origin: "+srv.URL, "Sec-Fetch-Site: same-origin")
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/bulk/") {
		t.Fatalf("confirmed: %d to %q, want 303 to the run's page", status, loc)
	}
	page = finished(t, srv, loc)
	if !strings.Contains(page, `id="job-state">done`) || !strings.Contains(page, "Done: 4 done, 0 refused, 0 failed.") {
		t.Errorf("the run's page says:\n%s\nwant it done, 4 done", page)
	}
	got := outcomes(page)
	for _, id := range stuck {
		if got[id] != string(ops.OutcomeDone) {
			t.Errorf("order %s: outcome %q, want done", id, got[id])
		}
		if o, _ := w.Records(t, id); o.Status == order.StatusError {
			t.Errorf("after the run order %s is still in Error", id)
		}
	}
	if o, _ := w.Records(t, pending); o.Status != order.StatusPending {
		t.Errorf("the order not in Error is %s, want it untouched", o.Status)
	}

	// The same confirmation again: nothing matches now.
	if status, _, page := post(t, srv, "/bulk", fresh); status != http.StatusConflict || !strings.Contains(page, "matches no order") {
		t.Errorf("the confirmation again: %d, want 409 saying nothing matches now:\n%s", status, page)
	}
}

// Bad input to a bulk action is refused with what is wrong, and nothing
// is done: a plan is not made, or a confirmation not run. Over a stage
// whose orders wait for the event review.
func TestBulkBadInput(t *testing.T) {
	w, srv := bulkWorld(t, func(wf order.Workflow) order.Workflow { return ordertest.Reviewed(wf, 0, time.Hour) })
	var waiting []string
	for range 2 {
		waiting = append(waiting, w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}))
	}
	for _, id := range waiting {
		if o, _ := w.Records(t, id); o.Status != order.StatusWaiting {
			t.Fatalf("order %s is %s, want Waiting for the review", id, o.Status)
		}
	}
	// The search page offers the events its workflows wait for.
	if _, page := get(t, srv.URL+"/search?status=Waiting"); !strings.Contains(page, `<select name="event" id="b-event"><option>review</option></select>`) ||
		!strings.Contains(page, `id="b-send-event-go"`) {
		t.Errorf("the search page offers no event review to send:\n%s", page)
	}

	plans := []struct {
		name   string
		query  string
		status int
		says   string
		field  string
	}{
		{"no action", "status=Waiting", 400, `bulk action &#34;&#34;: want one of redrive, cancel, move, send-event`, "action"},
		{"an unknown action", "status=Waiting&action=delete", 400, `bulk action &#34;delete&#34;: want one of`, "action"},
		{"a redrive of no kind", "status=Waiting&action=redrive&redrive=later", 400, `action &#34;later&#34;: want retry or compensate`, "redrive"},
		{"a move onto no version", "status=Waiting&action=move&to=", 400, "the version to move the orders onto is missing", "to"},
		{"a move onto a version this build lacks", "status=Waiting&action=move&to=9", 400, `has no version &#34;9&#34; in this build`, "to"},
		{"an event no workflow waits for", "status=Waiting&action=send-event&event=approve", 400, `waits for event &#34;approve&#34; (its events: review)`, "event"},
		{"no filter", "action=cancel", 400, "a bulk action needs at least one filter", ""},
		{"a filter of no status", "status=Done&action=cancel", 400, `query parameter status: &#34;Done&#34; is not a status`, "status"},
		{"a time that is none", "created_from=yesterday&action=cancel", 400, "is not an RFC 3339 time", "created_from"},
		{"a limit of none", "status=Waiting&action=cancel&max=0", 400, `max &#34;0&#34;: want a whole number`, "max"},
		{"more orders than the limit", "status=Waiting&action=cancel&max=1", 400, "2 orders match, more than the limit of 1", "max"},
		{"no order matches", "status=Waiting&customer=nobody&action=cancel", 404, "the filter matches no order", ""},
		{"no order at that step", "status=Waiting&step=" + ordertest.StepChargePayment + "&action=cancel", 404, "the filter matches no order", ""},
	}
	for _, tt := range plans {
		t.Run("plan/"+tt.name, func(t *testing.T) {
			status, page := get(t, srv.URL+"/bulk?"+tt.query)
			if status != tt.status || !strings.Contains(page, tt.says) {
				t.Errorf("status %d, want %d saying %q:\n%s", status, tt.status, tt.says, page)
			}
			if tt.field != "" && !strings.Contains(page, `data-field="`+tt.field+`"`) {
				t.Errorf("the problem does not name field %s", tt.field)
			}
			if strings.Contains(page, `id="confirm"`) || tokenField.MatchString(page) {
				t.Error("a refused plan offers a confirmation")
			}
		})
	}

	// A plan of a send-event, to confirm.
	status, page := get(t, srv.URL+"/bulk?status=Waiting&action=send-event&event=review")
	if status != http.StatusOK || !strings.Contains(page, `<textarea id="data" name="data"`) {
		t.Fatalf("plan of send-event review: %d:\n%s", status, page)
	}
	form := confirmForm(t, page)
	with := func(changes ...string) url.Values {
		f := url.Values{}
		for k, v := range form {
			f[k] = slices.Clone(v)
		}
		for i := 0; i+1 < len(changes); i += 2 {
			if changes[i+1] == "" {
				f.Del(changes[i])
			} else {
				f.Set(changes[i], changes[i+1])
			}
		}
		return f
	}
	confirms := []struct {
		name    string
		form    url.Values
		headers []string
		status  int
		says    string
	}{
		{"no token", with("token", "", "data", `{"decision":"approve"}`), nil, 403, "did not come from this console"},
		{"a wrong token", with("token", strings.Repeat("0", 32), "data", `{"decision":"approve"}`), nil, 403, "did not come from this console"},
		{"the token from another site", with("data", `{"decision":"approve"}`), []string{"Sec-Fetch-Site: cross-site"}, 403, "another site"},
		{"no plan's fingerprint", with("plan", "", "data", `{"decision":"approve"}`), nil, 409, "changed since the plan was shown"},
		{"another action than the plan's", with("action", "cancel", "data", `{"decision":"approve"}`), nil, 409, "changed since the plan was shown"},
		{"data that is not JSON", with("data", `{"decision":`), nil, 400, "event review&#39;s data"},
		{"data that is no object", with("data", `["approve"]`), nil, 400, "event review&#39;s data"},
		{"no data", with("data", ""), nil, 400, "event review&#39;s data"},
		{"an unknown action", with("action", "delete"), nil, 400, "want one of"},
	}
	for _, tt := range confirms {
		t.Run("confirm/"+tt.name, func(t *testing.T) {
			status, loc, page := post(t, srv, "/bulk", tt.form, tt.headers...)
			if status != tt.status || !strings.Contains(page, tt.says) || loc != "" {
				t.Errorf("status %d to %q, want %d saying %q:\n%s", status, loc, tt.status, tt.says, page)
			}
		})
	}
	for _, id := range waiting {
		if o, _ := w.Records(t, id); o.Status != order.StatusWaiting {
			t.Fatalf("after refused input order %s is %s, want it untouched (Waiting)", id, o.Status)
		}
	}
	// Data the step's schema refuses is each order's refusal, with why,
	// and changes nothing: the same plan holds, and good data moves the
	// orders on.
	status, loc, _ := post(t, srv, "/bulk", with("data", `{"decision":"maybe"}`))
	if status != http.StatusSeeOther {
		t.Fatalf("confirmed send-event with data the schema refuses: %d", status)
	}
	page = finished(t, srv, loc)
	if got := outcomes(page); got[waiting[0]] != "refused" || got[waiting[1]] != "refused" || !strings.Contains(page, "decision") ||
		!strings.Contains(page, "Done: 0 done, 2 refused, 0 failed.") {
		t.Errorf("outcomes %v, want both refused saying why (decision):\n%s", got, page)
	}
	status, loc, _ = post(t, srv, "/bulk", with("data", `{"decision":"approve"}`))
	if status != http.StatusSeeOther {
		t.Fatalf("confirmed send-event: %d", status)
	}
	page = finished(t, srv, loc)
	if got := outcomes(page); got[waiting[0]] != "done" || got[waiting[1]] != "done" {
		t.Errorf("outcomes %v, want both done:\n%s", got, page)
	}
	for _, id := range waiting {
		if o, _ := w.Records(t, id); o.Status == order.StatusWaiting {
			t.Errorf("after the event order %s is still Waiting", id)
		}
	}
}
