package console_test

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"orderly/internal/local/engine"
	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// chromium is the browser the test drives: Debian's, which `make test`
// installs; ORDERLY_CHROMIUM names another.
func chromium(t *testing.T) string {
	t.Helper()
	path := cmp.Or(os.Getenv("ORDERLY_CHROMIUM"), "/usr/bin/chromium")
	if _, err := os.Stat(path); err != nil {
		// Not a skip: `make test` installs it, and a browser test that
		// quietly did not run would read as passed.
		t.Fatalf("no browser at %s (make test installs Debian's chromium; ORDERLY_CHROMIUM names another): %v", path, err)
	}
	return path
}

// artifacts is where the test keeps its screenshots: ORDERLY_ARTIFACTS,
// or .local/artifacts in the repository.
func artifacts(t *testing.T) string {
	t.Helper()
	dir := cmp.Or(os.Getenv("ORDERLY_ARTIFACTS"), filepath.Join("..", "..", "..", ".local", "artifacts"))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// An operator, in a real browser, finds an order in Error on the console,
// reads its timeline, redrives it behind the confirmation page and
// watches it end Failed with its work undone; the history names the
// operator. Against the whole engine on the emulators.
func TestConsoleInABrowser(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	browser := chromium(t)
	e := enginetest.Start(t, func(c *engine.Config) { c.ConsoleAddr = "127.0.0.1:0" })

	// A shipment refused for good, then a refund refused once: Error.
	id := submit(t, e.URL(), "TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT-1")
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		o, steps, err := e.Store.GetOrder(context.Background(), id)
		return err == nil && o.Status == order.StatusError, "order " + string(o.Status) + " " + describe(steps)
	})

	ctx, shoot, text := browse(t, browser)

	// The overview lists it in Error; its link opens the order.
	do(t, ctx, "open the overview", chromedp.Navigate(e.ConsoleURL()), chromedp.WaitVisible(chromedp.CSS("#orders")))
	errorCount, listed := text(`[data-count="Error"] .n`), text("#orders")
	shoot("console-overview.png")
	if errorCount != "1" || !strings.Contains(listed, id) || !strings.Contains(listed, "refund refused") {
		t.Errorf("overview: %s in Error, list %q; want 1, %s with its refused refund", errorCount, listed, id)
	}
	do(t, ctx, "open the order", chromedp.Click(chromedp.CSS(`a[href="/orders/`+id+`"]`)), chromedp.WaitVisible(chromedp.CSS("#timeline")))

	// Its page: Error, a timeline lane per record, the refused undo.
	status, timeline := text("#status"), text("#timeline")
	phases := run(t, ctx, "read the timeline's phases", chromedp.AttributesAll(chromedp.CSSAll("#timeline .phase")))
	shoot("console-order-error.png")
	if status != "Error" {
		t.Errorf("status %q, want Error", status)
	}
	for _, lane := range []string{"order", "reserve-inventory", "charge-payment", "arrange-shipping", "undo charge-payment"} {
		if !strings.Contains(timeline, lane) {
			t.Errorf("the timeline has no lane %q: %q", lane, timeline)
		}
	}
	if len(phases) < 5 {
		t.Errorf("the timeline draws %d phases, want one per attempt and status (at least 5)", len(phases))
	}

	// Redrive, resuming the undo, behind the confirmation page.
	do(t, ctx, "ask to redrive", chromedp.Click(chromedp.CSS("#redrive-compensate")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	if confirm := text("main"); !strings.Contains(confirm, "The undo of charge-payment runs again") {
		t.Errorf("the confirmation page says %q", confirm)
	}
	do(t, ctx, "confirm the redrive", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#done")))
	if done := text("#done"); !strings.Contains(done, "now Compensating") {
		t.Errorf("after the redrive the page says %q, want the order Compensating", done)
	}

	// The page watches the order live: it ends Failed, every record's
	// work undone, and the history names the operator.
	deadline := time.Now().Add(30 * time.Second)
	for status = ""; status != "Failed" && time.Now().Before(deadline); {
		time.Sleep(500 * time.Millisecond)
		do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#status")))
		status = text("#status")
	}
	history, records := text("#history"), text("#records")
	shoot("console-order-failed.png")
	if status != "Failed" {
		t.Fatalf("after the redrive the order is %q, want Failed", status)
	}
	if !strings.Contains(history, "operator redrive") {
		t.Errorf("the history does not name the operator's redrive:\n%s", history)
	}
	if n := strings.Count(records, "Undone"); n != 2 {
		t.Errorf("%d records Undone, want the payment and the reservation:\n%s", n, records)
	}
	if !e.Sim.Undone(ordertest.AgentPayment, enginetest.RemoteKey(t, e, id, ordertest.StepChargePayment)) {
		t.Error("the simulator never refunded the payment")
	}
}

func do(t *testing.T, ctx context.Context, what string, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	if err := chromedp.Do(ctx, steps...); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

func run[T any](t *testing.T, ctx context.Context, what string, a chromedp.Action[T]) T {
	t.Helper()
	v, err := chromedp.Run(ctx, a)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return v
}

func submit(t *testing.T, apiURL string, skus ...string) string {
	t.Helper()
	sub := ordertest.Submission{CustomerID: "c-console"}
	for _, s := range skus {
		sub.Lines = append(sub.Lines, order.Line{SKU: s, Quantity: 1})
	}
	body, _ := json.Marshal(sub)
	resp, err := http.Post(apiURL+"/orders", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var out struct {
		OrderID string `json:"orderId"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("submit: %d, %v", resp.StatusCode, err)
	}
	return out.OrderID
}

func describe(steps []order.StepState) string {
	var out []string
	for _, s := range steps {
		out = append(out, s.Step+"="+string(s.ProcessState))
	}
	return strings.Join(out, ",")
}

// DNS rebinding in a real browser: a page under another name that
// resolves to 127.0.0.1 (Chromium's host-resolver rules stand in for the
// attacker's DNS) gets the console's refusal, without its token, while the
// console's own address still serves it.
func TestConsoleRefusesARebindingNameInABrowser(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run the browser tests")
	}
	browser := chromium(t)
	srv := serve(t, &fakeStage{})
	_, port, _ := strings.Cut(srv.Listener.Addr().String(), ":")

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("host-resolver-rules", "MAP rebind.example 127.0.0.1"),
		chromedp.UserDataDir(t.TempDir()))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	defer cancelAlloc()
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	defer cancelBrowser()
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()

	confirm := "/orders/" + stuckID + "/redrive-retry"
	do(t, ctx, "open the confirmation page under the rebinding name",
		chromedp.Navigate("http://rebind.example:"+port+confirm), chromedp.WaitReady(chromedp.CSS("body")))
	html := run(t, ctx, "read the page", chromedp.OuterHTML(chromedp.CSS("html")))
	if !strings.Contains(html, "Misdirected request") || !strings.Contains(html, "127.0.0.1:"+port) {
		t.Errorf("under the rebinding name the page is not the refusal naming the console's address:\n%s", html)
	}
	if strings.Contains(html, `name="token"`) {
		t.Error("the page under the rebinding name carries the console's token")
	}
	do(t, ctx, "open it at the console's own address",
		chromedp.Navigate("http://127.0.0.1:"+port+confirm), chromedp.WaitVisible(chromedp.CSS("#confirm")))
}

// An operator, in a real browser, finds yesterday's orders of one
// customer on the console's search page: only those are listed, newest
// first, with their counts by status, and Next pages through them; a
// count's link lists its status's orders, and the search box opens an
// order by its id. Over a stage on the emulators whose clock put the
// orders on two days, two customers' each.
func TestSearchInABrowser(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	browser := chromium(t)
	w := testenv.NewWorld(t, enginetest.Fast)
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	srv := httptest.NewServer(console.New(w.Stack.Catalog.Stage, stage, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)

	// Yesterday from 06:00, then today: 22 orders of c-1 and 4 of c-2
	// yesterday, 3 and 2 today. One of c-1's yesterday is cancelled
	// (Cancelling: its step is still out), one is in Error.
	ctx := context.Background()
	today := w.Clock.Now().UTC().Truncate(24 * time.Hour)
	yesterday := today.Add(-24 * time.Hour)
	w.Clock.Advance(yesterday.Add(6 * time.Hour).Sub(w.Clock.Now()))
	var wanted []string // c-1's yesterday, newest first
	for i := range 26 {
		customer := "c-1"
		if i%6 == 5 {
			customer = "c-2"
		}
		id := w.Submit(t, ordertest.Submission{CustomerID: customer, Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
		if customer == "c-1" {
			wanted = append([]string{id}, wanted...)
		}
		w.Clock.Advance(17 * time.Minute)
	}
	cancelled, failed := wanted[3], wanted[7]
	if _, err := stage.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	if _, _, err := w.Store.Apply(ctx, order.FailReply(w.Step(t, failed, ordertest.StepReserveInventory), "declined", w.Clock.Now())); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(today.Add(time.Hour).Sub(w.Clock.Now()))
	for i := range 5 {
		w.Submit(t, ordertest.Submission{CustomerID: []string{"c-1", "c-2"}[i%2], Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
		w.Clock.Advance(time.Minute)
	}
	if len(wanted) != 22 {
		t.Fatalf("seeded %d orders of c-1 yesterday, want 22", len(wanted))
	}

	bctx, shoot, text := browse(t, browser)
	listed := func() []string {
		t.Helper()
		links := run(t, bctx, "read the results", chromedp.AttributesAll(chromedp.CSSAll("#results td a")))
		var ids []string
		for _, a := range links {
			ids = append(ids, strings.TrimPrefix(a["href"], "/orders/"))
		}
		return ids
	}

	// From the overview to the search page; the filters: c-1, yesterday,
	// 10 a page.
	do(t, bctx, "open the overview", chromedp.Navigate(srv.URL), chromedp.WaitVisible(chromedp.CSS("#nav-search")))
	do(t, bctx, "open the search page", chromedp.Click(chromedp.CSS("#nav-search")), chromedp.WaitVisible(chromedp.CSS("#search")))
	do(t, bctx, "fill in the filters",
		chromedp.SendKeys(chromedp.CSS("#f-customer"), "c-1"),
		chromedp.SetValue(chromedp.CSS("#f-created_from"), yesterday.Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS("#f-created_to"), today.Format("2006-01-02T15:04")),
		chromedp.SetValue(chromedp.CSS("#f-limit"), "10"))
	// The page the search answers has the filters in its form's markup
	// (typing sets only the field's value).
	do(t, bctx, "search", chromedp.Click(chromedp.CSS("#search-go")), chromedp.WaitVisible(chromedp.CSS(`#f-customer[value="c-1"]`)),
		chromedp.WaitVisible(chromedp.CSS("#results")))
	shoot("console-search.png")

	// The counts: every status over yesterday, c-1's.
	counts := map[string]string{}
	for _, s := range []string{"total", "Pending", "Cancelling", "Error", "Processed"} {
		counts[s] = text(`[data-count="` + s + `"] .n`)
	}
	if want := map[string]string{"total": "22", "Pending": "20", "Cancelling": "1", "Error": "1", "Processed": "0"}; fmt.Sprint(counts) != fmt.Sprint(want) {
		t.Errorf("counts %v, want %v", counts, want)
	}
	span := fmt.Sprintf("created from %s to %s, customer c-1", yesterday.Format(time.RFC3339), today.Format(time.RFC3339))
	if got := text("#counts-span"); !strings.Contains(got, span) {
		t.Errorf("the counts say %q, want them to say %q", got, span)
	}

	// Next pages through them, newest first; the last page has no Next,
	// and a page links back to the first.
	got := listed()
	for page := 2; page <= 3 && len(got) > 0; page++ {
		previous := got[len(got)-1]
		do(t, bctx, fmt.Sprint("open page ", page), chromedp.Click(chromedp.CSS("#next")),
			chromedp.WaitNotPresent(chromedp.CSS(`#results a[href="/orders/`+previous+`"]`)), chromedp.WaitVisible(chromedp.CSS("#first")))
		got = append(got, listed()...)
	}
	if !slices.Equal(got, wanted) {
		t.Errorf("listed %d orders\n%v\nwant c-1's %d of yesterday, newest first\n%v", len(got), got, len(wanted), wanted)
	}
	if html := run(t, bctx, "read the last page", chromedp.OuterHTML(chromedp.CSS("main"))); strings.Contains(html, `id="next"`) {
		t.Error("the last page has a Next link")
	}
	do(t, bctx, "back to the first page", chromedp.Click(chromedp.CSS("#first")), chromedp.WaitNotPresent(chromedp.CSS("#first")),
		chromedp.WaitVisible(chromedp.CSS("#results")))
	if first := listed(); !slices.Equal(first, wanted[:10]) {
		t.Errorf("the first page again: %v, want %v", first, wanted[:10])
	}

	// A count's link lists its status's orders: the one in Error.
	do(t, bctx, "list the orders in Error", chromedp.Click(chromedp.CSS(`[data-count="Error"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-count="Error"].selected`)))
	if inError := listed(); !slices.Equal(inError, []string{failed}) {
		t.Errorf("c-1's yesterday in Error: %v, want %v", inError, []string{failed})
	}
	shoot("console-search-error.png")

	// The search box opens an order by its id.
	do(t, bctx, "open an order from the box", chromedp.SendKeys(chromedp.CSS("#box"), cancelled+"\n"), chromedp.WaitVisible(chromedp.CSS("#status")))
	if status := text("#status"); status != string(order.StatusCancelling) {
		t.Errorf("the box opened a page of status %q, want order %s, Cancelling", status, cancelled)
	}
}

// An operator, in a real browser, sends the event an order waits for
// from its page: data the step's schema refuses shows the form again
// with the problem, and the order does not change; the right data moves
// the order on, and its history names the operator's event. Over a stage
// on the emulators.
func TestSendEventInABrowser(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	browser := chromium(t)
	w := testenv.NewWorld(t, enginetest.Fast)
	w.Run(t, ordertest.Reviewed(w.Workflow, 0, time.Hour)) // each order waits for the review from its submission
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	srv := httptest.NewServer(console.New(w.Stack.Catalog.Stage, stage, slog.New(slog.NewTextHandler(io.Discard, nil))))
	t.Cleanup(srv.Close)
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	rec := w.Follow(id)
	rec.Record(t)

	ctx, shoot, text := browse(t, browser)
	do(t, ctx, "open the order", chromedp.Navigate(srv.URL+"/orders/"+id), chromedp.WaitVisible(chromedp.CSS("#waiting")))
	if waiting := text("#waiting"); !strings.Contains(waiting, ordertest.StepReview+" waits for event review") {
		t.Errorf("the page says %q, want what the step waits for", waiting)
	}
	do(t, ctx, "open the event's form", chromedp.Click(chromedp.CSS("#send-event")), chromedp.WaitVisible(chromedp.CSS("#data")))
	do(t, ctx, "send data the schema refuses", chromedp.SetValue(chromedp.CSS("#data"), `{"decision":"maybe"}`),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#problem")))
	shoot("console-send-event-refused.png")
	if problem, data := text("#problem"), run(t, ctx, "read the data", chromedp.Value(chromedp.CSS("#data"))); !strings.Contains(problem, "decision") || data != `{"decision":"maybe"}` {
		t.Errorf("refused: the page says %q with the data %q; want the problem with decision, and the data as typed", problem, data)
	}
	if o, _ := w.Records(t, id); o.Status != order.StatusWaiting {
		t.Fatalf("after refused data the order is %s, want Waiting", o.Status)
	}
	do(t, ctx, "send the review", chromedp.SetValue(chromedp.CSS("#data"), `{"decision":"approve"}`),
		chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#done")))
	if done := text("#done"); !strings.Contains(done, "event review taken: the order is now Processing") {
		t.Errorf("after the send the page says %q, want the order Processing", done)
	}
	rec.Record(t)
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#history")))
	shoot("console-send-event.png")
	if history := text("#history"); !strings.Contains(history, "operator event") {
		t.Errorf("the history does not name the operator's event: %q", history)
	}
}

// browse starts Chromium for the test, for at most 90 seconds, and
// returns its context and what screenshots the page (into the test's
// artifacts) and reads an element's text.
func browse(t *testing.T, browser string) (ctx context.Context, shoot func(name string), text func(sel string) string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(browser), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 1000))
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelBrowser := chromedp.NewContext(allocCtx)
	t.Cleanup(cancelBrowser)
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(cancel)
	shots := artifacts(t)
	shoot = func(name string) {
		t.Helper()
		png := run(t, ctx, "screenshot "+name, chromedp.FullScreenshot(100))
		path := filepath.Join(shots, name)
		if err := os.WriteFile(path, png, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot %s", path)
	}
	text = func(sel string) string {
		t.Helper()
		return run(t, ctx, "read "+sel, chromedp.Text(chromedp.CSS(sel)))
	}
	return ctx, shoot, text
}

// An operator, in a real browser, redrives every order in Error at one
// step after an outage: from the search of the orders in Error, the bulk
// form with the step, the plan listing them, the confirmation, and the
// run's page reporting each one done. Over a stage on the emulators.
func TestBulkRedriveInABrowser(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	browser := chromium(t)
	w, srv := bulkWorld(t, nil)
	var stuck []string
	for range 3 {
		stuck = append(stuck, inError(t, w, "c-1"))
	}

	ctx, shoot, text := browse(t, browser)
	do(t, ctx, "search the orders in Error", chromedp.Navigate(srv.URL+"/search?status=Error"), chromedp.WaitVisible(chromedp.CSS("#bulk")))
	do(t, ctx, "plan their redrive at the step", chromedp.SendKeys(chromedp.CSS("#b-step"), ordertest.StepReserveInventory),
		chromedp.SetValue(chromedp.CSS("#b-redrive"), order.RedriveRetry),
		chromedp.Click(chromedp.CSS("#b-redrive-go")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shoot("console-bulk-plan.png")
	if count, planned := text("#bulk-count"), text("#plan"); !strings.HasPrefix(count, "3") || !strings.Contains(planned, stuck[0]) {
		t.Errorf("the plan says %q orders:\n%s\nwant the 3 in Error", count, planned)
	}
	do(t, ctx, "confirm", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#job-state")))
	deadline := time.Now().Add(20 * time.Second)
	state := text("#job-state")
	for state == "running" && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#job-state")))
		state = text("#job-state")
	}
	shoot("console-bulk-report.png")
	if summary := text("#summary"); state != "done" || !strings.Contains(summary, "3 done") {
		t.Errorf("the run is %s: %q, want done with 3 done", state, summary)
	}
	for _, id := range stuck {
		if o, _ := w.Records(t, id); o.Status == order.StatusError {
			t.Errorf("after the run order %s is still in Error", id)
		}
	}
}

// An operator, in a real browser, pauses a service from the pauses page
// behind its confirmation: the page shows it paused, by whom and why,
// and an order waiting on the service says it is held, linking back.
// Then resumes it. Over a stage on the emulators.
func TestPauseInABrowser(t *testing.T) {
	w, stage, srv, _ := pauseWorld(t)
	browser := chromium(t)
	id := w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	agent := w.Step(t, id, w.Workflow.Steps[0].Name).Agent
	rec := w.Follow(order.PauseKey(order.PauseService, agent))

	ctx, shoot, text := browse(t, browser)
	do(t, ctx, "open the pauses page", chromedp.Navigate(srv.URL+"/"), chromedp.Click(chromedp.CSS("#nav-pauses")), chromedp.WaitVisible(chromedp.CSS("#pause-form")))
	do(t, ctx, "ask to pause the service", chromedp.SetValue(chromedp.CSS("#p-target"), "service:"+agent),
		chromedp.SendKeys(chromedp.CSS("#p-for"), "2h"), chromedp.SendKeys(chromedp.CSS("#p-reason"), "partner maintenance"),
		chromedp.Click(chromedp.CSS("#p-go")), chromedp.WaitVisible(chromedp.CSS("#confirm")))
	shoot("console-pause-confirm.png")
	if who := text("#who"); who != "arn:aws:iam::1:user/ana" {
		t.Errorf("the confirmation names %q, want the operator", who)
	}
	do(t, ctx, "confirm the pause", chromedp.Click(chromedp.CSS("#confirm")), chromedp.WaitVisible(chromedp.CSS("#done")))
	rec.Record(t)
	do(t, ctx, "reload", chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#pauses")))
	shoot("console-pauses.png")
	if row := text("#pause-service-" + agent); !strings.Contains(row, "paused") || !strings.Contains(row, "partner maintenance") {
		t.Errorf("the service's row says %q, want it paused with the reason", row)
	}
	if history := text("#history-pause-service-" + agent); !strings.Contains(history, "arn:aws:iam::1:user/ana") {
		t.Errorf("the history says %q, want who paused", history)
	}

	do(t, ctx, "open the held order", chromedp.Navigate(srv.URL+"/orders/"+id), chromedp.WaitVisible(chromedp.CSS("#held")))
	shoot("console-order-held.png")
	if held := text("#held"); !strings.HasPrefix(held, "service "+agent+" paused by arn:aws:iam::1:user/ana") {
		t.Errorf("the order says held: %q, want the pause", held)
	}
	do(t, ctx, "follow the link to the pauses page", chromedp.Click(chromedp.CSS("#held a")), chromedp.WaitVisible(chromedp.CSS("#resume-pause-service-"+agent)))
	do(t, ctx, "ask to resume", chromedp.Click(chromedp.CSS("#resume-pause-service-"+agent)), chromedp.WaitVisible(chromedp.CSS("#reason")))
	do(t, ctx, "confirm the resume", chromedp.SendKeys(chromedp.CSS("#reason"), "window over"), chromedp.Click(chromedp.CSS("#confirm")),
		chromedp.WaitVisible(chromedp.CSS("#done")))
	if done := text("#done"); !strings.Contains(done, "resumed after") {
		t.Errorf("after the resume the page says %q", done)
	}
	if anyOn(t, stage) {
		t.Error("after the resume a pause is still on")
	}
}
