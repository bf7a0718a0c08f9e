package console_test

import (
	"context"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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

// pauseWorld is a stage on the emulators and its console, whose operator
// is whoever *who says at the time.
func pauseWorld(t *testing.T) (w *testenv.World, stage *ops.Stage, srv *httptest.Server, who *string) {
	t.Helper()
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w = testenv.NewWorld(t, enginetest.Fast)
	stage = ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	who = new(string)
	*who = "arn:aws:iam::1:user/ana"
	c := console.New(w.Stack.Catalog.Stage, stage, slog.New(slog.NewTextHandler(io.Discard, nil))).
		WithWho(func(context.Context) (string, error) { return *who, nil })
	srv = httptest.NewServer(c)
	t.Cleanup(srv.Close)
	return w, stage, srv, who
}

// anyOn reports whether any of the stage's pauses is on.
func anyOn(t *testing.T, stage *ops.Stage) bool {
	t.Helper()
	ps, err := stage.Pauses(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		if p.On() {
			return true
		}
	}
	return false
}

// pauseQuery is a pause's form as the pauses page sends it.
func pauseQuery(target, forDur, reason, submissions string) url.Values {
	return url.Values{"target": {target}, "for": {forDur}, "reason": {reason}, "submissions": {submissions}}
}

// Bad input to a pause or a resume, on its confirmation or its POST,
// shows ops' error with 400 (409 for a resume of what is not paused),
// the form as it was filled in, and pauses nothing.
func TestPauseRefusesBadInputFromTheConsole(t *testing.T) {
	_, stage, srv, _ := pauseWorld(t)
	// A good confirmation writes nothing, and carries the token.
	status, page := get(t, srv.URL+"/pauses/pause?"+pauseQuery("service:"+ordertest.AgentPayment, "1h", "x", "").Encode())
	m := tokenField.FindStringSubmatch(page)
	if status != http.StatusOK || m == nil {
		t.Fatalf("the pause's confirmation: %d, token %v:\n%s", status, m, page)
	}
	if anyOn(t, stage) {
		t.Fatal("the confirmation paused")
	}
	token := m[1]
	for _, tt := range []struct {
		name string
		form url.Values
		// resume is a resume's form, else a pause's.
		resume bool
		status int
		says   string
	}{
		{"an unknown service", pauseQuery("service:paymnt", "1h", "x", ""), false, 400, `no service &#34;paymnt&#34; in the stage&#39;s workflows`},
		{"no reason", pauseQuery("service:"+ordertest.AgentPayment, "1h", " ", ""), false, 400, "say why"},
		{"no length", pauseQuery("service:"+ordertest.AgentPayment, "", "x", ""), false, 400, "how long"},
		{"a length that is no duration", pauseQuery("service:"+ordertest.AgentPayment, "2 hours", "x", ""), false, 400, "want a duration such as 30m"},
		{"too long", pauseQuery("service:"+ordertest.AgentPayment, "200h", "x", ""), false, 400, "longer than a pause may"},
		{"submissions of a service", pauseQuery("service:"+ordertest.AgentPayment, "1h", "x", "refuse"), false, 400, "not a service&#39;s"},
		{"bad submissions", pauseQuery("workflow:"+order.LegacyWorkflow, "1h", "x", "drop"), false, 400, `submissions &#34;drop&#34;`},
		{"an unknown kind", pauseQuery("queue:x", "1h", "x", ""), false, 400, `a pause of &#34;queue&#34;`},
		{"nothing chosen", pauseQuery("", "1h", "x", ""), false, 400, "choose the service or workflow"},
		{"a resume of what is not paused", url.Values{"target": {"service:" + ordertest.AgentPayment}}, true, 409, "is not paused: nothing to resume"},
		{"a resume of an unknown workflow", url.Values{"target": {"workflow:nope"}}, true, 400, `no workflow &#34;nope&#34;`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := "/pauses/pause"
			if tt.resume {
				path = "/pauses/resume"
			}
			status, page := get(t, srv.URL+path+"?"+tt.form.Encode())
			if status != tt.status || !strings.Contains(page, `id="problem">Nothing done: `) || !strings.Contains(page, tt.says) {
				t.Errorf("confirmation: %d, want %d saying %q:\n%s", status, tt.status, tt.says, page)
			}
			form := url.Values{"token": {token}}
			for k, v := range tt.form {
				form[k] = v
			}
			status, _, page = post(t, srv, path, form)
			if status != tt.status || !strings.Contains(page, tt.says) {
				t.Errorf("post: %d, want %d saying %q:\n%s", status, tt.status, tt.says, page)
			}
			if !tt.resume && tt.form.Get("reason") == "x" && !strings.Contains(page, `id="p-reason" value="x"`) {
				t.Errorf("the refused form is not shown as it was filled in:\n%s", page)
			}
			if anyOn(t, stage) {
				t.Error("bad input paused")
			}
		})
	}
	// A form from elsewhere pauses nothing.
	if status, _, _ := post(t, srv, "/pauses/pause", pauseQuery("service:"+ordertest.AgentPayment, "1h", "x", "")); status != http.StatusForbidden || anyOn(t, stage) {
		t.Errorf("a pause without the token: %d, want 403 and nothing paused", status)
	}
}

// An operator pauses a service from the console behind its confirmation:
// the pause names them, an order waiting on the service says it is held
// and by what, the pauses page shows it with its history; another
// operator resumes it with a reason, and the page and the history say
// who. A workflow's pause shows what its new orders get.
func TestPauseAndResumeFromTheConsole(t *testing.T) {
	w, stage, srv, who := pauseWorld(t)
	ctx := context.Background()
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	agent := w.Step(t, id, w.Workflow.Steps[0].Name).Agent
	target := "service:" + agent
	rec := w.Follow(order.PauseKey(order.PauseService, agent))

	status, page := get(t, srv.URL+"/pauses/pause?"+pauseQuery(target, "2h", "partner maintenance", "").Encode())
	if status != http.StatusOK {
		t.Fatalf("confirmation: %d:\n%s", status, page)
	}
	for _, want := range []string{"Pause service " + agent + "?", `id="who" class="mono">arn:aws:iam::1:user/ana`, "waits in its agent&#39;s queue",
		`id="until">2h from now`, `id="confirm"`} {
		if !strings.Contains(page, want) {
			t.Errorf("the confirmation lacks %q", want)
		}
	}
	form := hiddenFields(t, page, "pause-confirm")
	if form.Get("target") != target || form.Get("for") != "2h" || form.Get("reason") != "partner maintenance" || form.Get("token") == "" {
		t.Fatalf("the confirmation's form carries %v", form)
	}
	status, loc, page := post(t, srv, "/pauses/pause", form)
	if status != http.StatusSeeOther || !strings.HasPrefix(loc, "/pauses?done=") || !strings.HasSuffix(loc, "#pause-service-"+agent) {
		t.Fatalf("pause: %d to %q, want 303 to the pauses page:\n%s", status, loc, page)
	}
	ps, err := stage.Pauses(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var paused order.Pause
	for _, p := range ps {
		if p.Kind == order.PauseService && p.Name == agent {
			paused = p
		}
	}
	if !paused.On() || paused.By != "arn:aws:iam::1:user/ana" || paused.Reason != "partner maintenance" || paused.Until.Sub(paused.Since) != 2*time.Hour {
		t.Fatalf("after the pause: %+v; want it on for 2h, by ana, with the reason", paused)
	}
	rec.Record(t)

	// The held order names the pause, and links the pauses page.
	_, page = get(t, srv.URL+"/orders/"+id)
	if want := `<dt>held</dt><dd id="held">service ` + agent + ` paused by arn:aws:iam::1:user/ana since`; !strings.Contains(page, want) ||
		!strings.Contains(page, `href="/pauses#pause-service-`+agent+`"`) {
		t.Errorf("the held order's page lacks %q and the link to the pauses page:\n%s", want, page)
	}
	_, page = get(t, srv.URL+loc)
	for _, want := range []string{`id="done">service ` + agent + ` paused since`, `data-pause="` + target + `" data-state="paused"`, "partner maintenance",
		`id="history-pause-service-` + agent + `"`, "<td>" + order.PausedEvent + "</td><td>arn:aws:iam::1:user/ana</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("the pauses page lacks %q:\n%s", want, page)
		}
	}

	// Another operator resumes it.
	*who = "arn:aws:iam::1:user/bo"
	status, page = get(t, srv.URL+"/pauses/resume?target="+url.QueryEscape(target))
	if status != http.StatusOK || !strings.Contains(page, "Resume service "+agent+"?") || !strings.Contains(page, "by arn:aws:iam::1:user/ana: partner maintenance") {
		t.Fatalf("the resume's confirmation: %d:\n%s", status, page)
	}
	form = hiddenFields(t, page, "pause-confirm")
	form.Set("reason", "window over")
	status, loc, _ = post(t, srv, "/pauses/resume", form)
	if status != http.StatusSeeOther || !strings.Contains(loc, url.QueryEscape("service "+agent+" resumed after")) {
		t.Fatalf("resume: %d to %q", status, loc)
	}
	rec.Record(t)
	_, page = get(t, srv.URL+"/pauses")
	for _, want := range []string{`data-pause="` + target + `" data-state="running"`, "<td>arn:aws:iam::1:user/bo</td><td>window over</td>",
		"<td>" + order.ResumedEvent + "</td><td>arn:aws:iam::1:user/bo</td>"} {
		if !strings.Contains(page, want) {
			t.Errorf("after the resume the pauses page lacks %q:\n%s", want, page)
		}
	}
	if _, page = get(t, srv.URL+"/orders/"+id); strings.Contains(page, `id="held"`) {
		t.Error("after the resume the order's page still says it is held")
	}
	if status, _, page = post(t, srv, "/pauses/resume", form); status != http.StatusConflict || !strings.Contains(page, "is not paused") {
		t.Errorf("a second resume: %d, want 409 saying it is not paused", status)
	}

	// A workflow's pause says what its new orders get.
	wf := "workflow:" + w.Workflow.Name
	_, page = get(t, srv.URL+"/pauses/pause?"+pauseQuery(wf, "30m", "stock count", "refuse").Encode())
	if !strings.Contains(page, "are refused with 503 and Retry-After") || !strings.Contains(page, `id="submissions">refuse`) {
		t.Errorf("the workflow pause's confirmation does not say its new orders are refused:\n%s", page)
	}
	if status, _, _ = post(t, srv, "/pauses/pause", hiddenFields(t, page, "pause-confirm")); status != http.StatusSeeOther {
		t.Fatalf("the workflow's pause: %d", status)
	}
	if _, page = get(t, srv.URL+"/pauses"); !strings.Contains(page, `data-pause="`+wf+`" data-state="paused"`) || !strings.Contains(page, "new orders: refuse") {
		t.Errorf("the pauses page does not show the workflow paused, refusing new orders:\n%s", page)
	}
	// Leave no pause on for the emulators' next test of this stage.
	if _, err := stage.Resume(ctx, order.PauseWorkflow, w.Workflow.Name, "test", ""); err != nil {
		t.Fatal(err)
	}
}

// hiddenFields are the hidden fields of the form of that id on page.
func hiddenFields(t *testing.T, page, id string) url.Values {
	t.Helper()
	i := strings.Index(page, `id="`+id+`"`)
	if i < 0 {
		t.Fatalf("the page has no form %s:\n%s", id, page)
	}
	end := strings.Index(page[i:], "</form>")
	form := url.Values{}
	for _, m := range hiddenField.FindAllStringSubmatch(page[i:i+end], -1) {
		form.Add(m[1], html.UnescapeString(m[2]))
	}
	return form
}
