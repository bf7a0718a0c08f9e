// Package console is the operator's web console (`orderly console`, and
// `make run`): server-rendered pages over a stage, through the same
// operations as the CLI (package ops). The overview counts the orders in
// flight by status, those stuck past their deadline and those in Error;
// the search page finds orders by customer, status, workflow, version and
// when they were created or ended, newest first, page by page, with their
// counts by status, and acts on every order it finds (a bulk redrive,
// cancel, move or event, planned, confirmed and run by package ops, its
// report on a page of its own); an order's page shows its records, a
// timeline of their attempts, deadlines, retries and undos, its full
// history, the pause that holds it, if any, and
// cancel, redrive and, for an order that waits for an event, a form that
// sends it, behind a confirmation page. The pauses page shows every
// service and workflow, paused or running, with its history, and pauses
// and resumes them, behind a confirmation, naming the operator.
//
// Every change is a POST carrying the console's own token, so another
// site open in the operator's browser cannot make one (CSRF). The console
// answers only under the address it serves (loopback, its port) or names
// it was given, so a page of another name that resolves to 127.0.0.1 (DNS
// rebinding) reads nothing, and a change must come from its own origin.
package console

import (
	"bytes"
	"cmp"
	"context"
	"crypto/rand"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
)

// Stage is what the console reads and changes: *ops.Stage.
type Stage interface {
	InFlight(ctx context.Context, late time.Duration, limit int) ([]ops.Listed, error)
	InError(ctx context.Context, limit int) ([]ops.Listed, error)
	Show(ctx context.Context, id string) (api.OrderView, error)
	HistorySince(ctx context.Context, id string, since time.Time) ([]order.HistoryEntry, error)
	Cancel(ctx context.Context, id string) (order.Order, error)
	Redrive(ctx context.Context, id, action string) (order.Order, error)
	SendEvent(ctx context.Context, id, name string, data json.RawMessage) (order.Order, error)
	DeadLetters(ctx context.Context) ([]ops.DeadLetterQueue, error)
	Alerts(ctx context.Context, since time.Time, kind order.AlertKind, limit int) ([]order.Alert, error)
	SearchPage(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error)
	Count(ctx context.Context, q order.Query, budget int) (order.Counts, error)
	// A bulk action over a search's results: ops' plan, check and run.
	PlanBulk(ctx context.Context, f ops.BulkFilter, max int) ([]ops.Planned, error)
	CheckPlan(plan []ops.Planned, a ops.BulkAction) error
	RunBulk(ctx context.Context, plan []ops.Planned, a ops.BulkAction, j *ops.Journal, opts ops.BulkOptions) (ops.BulkReport, error)
	Events() []string
	// Pauses of services and workflows: ops' check, pause, resume, list
	// and history.
	PlanPause(r order.PauseRequest) (order.Pause, error)
	Pause(ctx context.Context, r order.PauseRequest) (order.Pause, error)
	Resume(ctx context.Context, kind order.PauseKind, name, by, reason string) (order.Pause, error)
	Pauses(ctx context.Context) ([]order.Pause, error)
	PauseHistory(ctx context.Context, kind order.PauseKind, name string) ([]order.HistoryEntry, error)
}

// CountLimit caps how many orders the overview reads per listing; a count
// that reaches it is shown as "N+".
const CountLimit = 1000

// StuckAfter is how long past its deadline an order in flight counts as
// stuck on the overview: the Supervisor acts on a deadline within a
// minute or two, so longer means it could not.
const StuckAfter = 2 * time.Minute

//go:embed templates/*.html
var templateFiles embed.FS

// Console serves the pages.
type Console struct {
	stage Stage
	name  string
	token string
	pages map[string]*template.Template
	log   *slog.Logger
	now   func() time.Time
	mux   *http.ServeMux
	hosts []hostAndPort // names it answers under besides loopback; port "" is any
	// positions seals a search's page position into the page's Next
	// link, bound to its query, with a key made at start: a position
	// cannot be altered, nor carried over to another query.
	positions *pagetoken.Sealer
	// jobs are the bulk actions started from the console.
	jobs *bulkJobs
	// who says who the operator is, for a pause's record (WithWho).
	who func(context.Context) (string, error)
}

// New returns the console of the stage named name.
func New(name string, stage Stage, log *slog.Logger) *Console {
	c := &Console{stage: stage, name: name, token: newToken(), log: log, now: time.Now, pages: map[string]*template.Template{},
		positions: newSealer(), jobs: newBulkJobs()}
	funcs := template.FuncMap{
		"ago":   func(t time.Time) string { return ago(c.now(), t) },
		"clock": clock,
		"when": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000")
		},
		"dur":   func(d time.Duration) string { return d.Round(time.Second).String() },
		"final": final,
		// pretty indents a JSON document (an order's input, a step's
		// result) for reading; the template escapes it.
		"pretty": func(raw json.RawMessage) string {
			var b bytes.Buffer
			if json.Indent(&b, raw, "", "  ") != nil {
				return string(raw)
			}
			return b.String()
		},
	}
	for _, page := range []string{"overview", "order", "confirm", "dlq", "alerts", "problem", "search", "bulk", "bulkjob", "pauses", "pauseconfirm"} {
		c.pages[page] = template.Must(template.New(page).Funcs(funcs).ParseFS(templateFiles, "templates/layout.html", "templates/"+page+".html"))
	}
	c.mux = http.NewServeMux()
	c.mux.HandleFunc("GET /{$}", c.overview)
	c.mux.HandleFunc("GET /find", c.find)
	c.mux.HandleFunc("GET /search", c.search)
	c.mux.HandleFunc("GET /orders/{id}", c.order)
	c.mux.HandleFunc("GET /orders/{id}/{action}", c.confirm)
	c.mux.HandleFunc("POST /orders/{id}/{action}", c.act)
	c.mux.HandleFunc("GET /bulk", c.bulkPlan)
	c.mux.HandleFunc("POST /bulk", c.bulkConfirm)
	c.mux.HandleFunc("GET /bulk/{job}", c.bulkJob)
	c.mux.HandleFunc("POST /bulk/{job}/stop", c.bulkStop)
	c.mux.HandleFunc("GET /dlq", c.deadLetters)
	c.mux.HandleFunc("GET /alerts", c.alerts)
	c.mux.HandleFunc("GET /pauses", c.pauses)
	c.mux.HandleFunc("GET /pauses/pause", c.pauseConfirm)
	c.mux.HandleFunc("POST /pauses/pause", c.pauseAct)
	c.mux.HandleFunc("GET /pauses/resume", c.resumeConfirm)
	c.mux.HandleFunc("POST /pauses/resume", c.resumeAct)
	return c
}

// WithClock returns the console with another clock (tests).
func (c *Console) WithClock(now func() time.Time) *Console { c.now = now; return c }

// WithHosts returns the console answering under these names too, each
// "name" (any port) or "name:port": the name an SSH tunnel or a proxy in
// front of it gives it. Loopback with the port it serves needs none.
func (c *Console) WithHosts(hosts ...string) *Console {
	for _, h := range hosts {
		h = strings.TrimSpace(h)
		if h == "" {
			continue
		}
		name := hostAndPort{host: strings.ToLower(strings.Trim(h, "[]"))} // any port
		if host, port, err := net.SplitHostPort(h); err == nil {
			name = hostAndPort{strings.ToLower(host), port}
		}
		c.hosts = append(c.hosts, name)
	}
	return c
}

func (c *Console) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	served := servedAddr(r)
	loopback, named := c.servedAs(r.Host, served)
	if !loopback && !named {
		c.problem(w, http.StatusMisdirectedRequest, "Misdirected request",
			fmt.Sprintf("This console answers at http://%s/ (or localhost with that port), not as %q. "+
				"Another name that leads here is how a web page reaches a local server (DNS rebinding), so it is refused. "+
				"To reach it under another name (an SSH tunnel, a proxy), give it that name: orderly console --host NAME[:PORT], or ORDERLY_CONSOLE_HOSTS for make run.",
				served, r.Host))
		return
	}
	// Under a name it was given, a proxy in front may serve it over HTTPS.
	if r.Method != http.MethodGet && r.Method != http.MethodHead && !sameOrigin(r, named) {
		c.problem(w, http.StatusForbidden, "Refused",
			fmt.Sprintf("The form was sent from another site (origin %q), not from this console's pages at http://%s/: nothing was changed.",
				r.Header.Get("Origin"), r.Host))
		return
	}
	// A read another site's page makes behind the operator's back (an
	// image, a script, a fetch: anything but following a link) would make
	// the console read with the operator's credentials (a search counts up
	// to 200,000 index items), although the page cannot see the answer.
	if site := r.Header.Get("Sec-Fetch-Site"); (site == "cross-site" || site == "same-site") && r.Header.Get("Sec-Fetch-Mode") != "navigate" {
		c.problem(w, http.StatusForbidden, "Refused",
			"A page of another site asked for this console's page without you following a link to it: nothing was read.")
		return
	}
	c.mux.ServeHTTP(w, r)
}

// servedAddr is the address the request's connection was accepted on, as
// host:port; without one (a handler called directly) it is 127.0.0.1 on
// the request's port.
func servedAddr(r *http.Request) string {
	if a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok {
		return a.String()
	}
	return net.JoinHostPort("127.0.0.1", hostPort(r.Host).port)
}

type hostAndPort struct{ host, port string }

// hostPort splits a Host header; without a port it is HTTP's 80.
func hostPort(h string) hostAndPort {
	host, port, err := net.SplitHostPort(h)
	if err != nil {
		host, port = strings.TrimSuffix(strings.TrimPrefix(h, "["), "]"), "80"
	}
	return hostAndPort{strings.ToLower(host), port}
}

// servedAs reports whether host (the request's Host header) names this
// console: loopback (localhost or a loopback address, which no DNS answer
// can stand for) with the port it serves, or a name it was given.
func (c *Console) servedAs(host, served string) (loopback, named bool) {
	h, self := hostPort(host), hostPort(served)
	if h.port == self.port {
		if ip := net.ParseIP(h.host); h.host == "localhost" || (ip != nil && ip.IsLoopback()) {
			return true, false
		}
	}
	for _, name := range c.hosts {
		if name.host == h.host && (name.port == "" || name.port == h.port) {
			return false, true
		}
	}
	return false, false
}

// sameOrigin reports whether a change came from the console's own pages:
// the browser's Origin, when it sends one, is exactly the console's (under
// the Host already checked; https too when orHTTPS), and its
// Sec-Fetch-Site, when it sends one, does not say another site (a sibling
// port of localhost is same-site). A client that is no browser sends
// neither, and still needs the token.
func sameOrigin(r *http.Request, orHTTPS bool) bool {
	origin := r.Header.Get("Origin")
	if origin != "" && !strings.EqualFold(origin, "http://"+r.Host) && !(orHTTPS && strings.EqualFold(origin, "https://"+r.Host)) {
		return false
	}
	site := r.Header.Get("Sec-Fetch-Site")
	return site == "" || site == "same-origin" || site == "none"
}

func newToken() string {
	b := make([]byte, 16)
	rand.Read(b) // never fails (crypto/rand)
	return hex.EncodeToString(b)
}

// count is a number of orders, capped at CountLimit.
type count struct {
	N      int
	Capped bool
}

func (n count) String() string {
	if n.Capped {
		return fmt.Sprintf("%d+", n.N)
	}
	return fmt.Sprint(n.N)
}

// Lists shown on the overview, by the filter that picks them.
const (
	showError    = "Error"
	showStuck    = "stuck"
	showInFlight = "in flight"
)

type overviewPage struct {
	Stage    string
	Counts   []statusCount
	Show     string
	Orders   []ops.Listed
	Dead     []ops.DeadLetterQueue
	DeadErr  string
	Problems []string
	// Paused are the services and workflows paused now, whose orders
	// are held.
	Paused []pauseRow
}

type statusCount struct {
	Label string
	Count count
	Show  string // the filter that lists them; empty for counts only
	Alarm bool   // worth an operator's attention when not zero
}

func (c *Console) overview(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	page := overviewPage{Stage: c.name, Show: r.URL.Query().Get("show")}
	inError, err := c.stage.InError(ctx, CountLimit)
	if err != nil {
		page.Problems = append(page.Problems, err.Error())
	}
	inFlight, err := c.stage.InFlight(ctx, 0, CountLimit)
	if err != nil {
		page.Problems = append(page.Problems, err.Error())
	}
	byStatus := map[order.Status]int{}
	var stuck []ops.Listed
	for _, l := range inFlight {
		byStatus[l.Status]++
		if l.Late >= StuckAfter {
			stuck = append(stuck, l)
		}
	}
	capped := len(inFlight) >= CountLimit
	page.Counts = []statusCount{{Label: "Error", Count: count{len(inError), len(inError) >= CountLimit}, Show: showError, Alarm: true},
		{Label: "stuck > " + StuckAfter.String(), Count: count{len(stuck), capped}, Show: showStuck, Alarm: true},
		{Label: "in flight", Count: count{len(inFlight), capped}, Show: showInFlight}}
	for _, s := range []order.Status{order.StatusPending, order.StatusProcessing, order.StatusWaiting, order.StatusCompensating, order.StatusCancelling} {
		page.Counts = append(page.Counts, statusCount{Label: string(s), Count: count{byStatus[s], capped}})
	}
	if page.Show == "" {
		page.Show = showInFlight
		if len(inError) > 0 {
			page.Show = showError
		}
	}
	switch page.Show {
	case showError:
		page.Orders = inError
	case showStuck:
		page.Orders = stuck
	default:
		page.Show, page.Orders = showInFlight, inFlight
	}
	// The longest waiting first.
	slices.SortStableFunc(page.Orders, func(a, b ops.Listed) int { return a.CompleteBy.Compare(b.CompleteBy) })
	page.Dead, err = c.stage.DeadLetters(ctx)
	if err != nil {
		page.DeadErr = err.Error()
	}
	pauses, err := c.stage.Pauses(ctx)
	if err != nil {
		page.Problems = append(page.Problems, err.Error())
	}
	for _, p := range pauses {
		if p.On() {
			page.Paused = append(page.Paused, pauseRow{Pause: p, Anchor: anchor(p.Kind, p.Name), Overrun: p.Overrun(c.now())})
		}
	}
	c.render(w, http.StatusOK, "overview", page)
}

// find goes to the order whose id was typed in the search box.
func (c *Console) find(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if !order.ValidID(id) {
		c.problem(w, http.StatusBadRequest, "Not an order id", fmt.Sprintf("%q is not an order id.", id))
		return
	}
	http.Redirect(w, r, "/orders/"+url.PathEscape(id), http.StatusSeeOther)
}

type orderPage struct {
	Stage    string
	Order    api.OrderView
	History  []order.HistoryEntry
	Timeline Timeline
	// Stuck is the record an operator's redrive resumes, in Error.
	Stuck *api.StepView
	// Waiting is the step the order waits on, while it is Waiting.
	Waiting   *api.StepView
	CanCancel bool
	Done      string // what the last action did
	Live      bool
}

func (c *Console) order(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	v, ok := c.read(w, r.Context(), id)
	if !ok {
		return
	}
	history, err := c.stage.HistorySince(r.Context(), id, v.CreatedAt)
	if err != nil {
		c.fail(w, err)
		return
	}
	page := orderPage{Stage: c.name, Order: v, History: history, Timeline: BuildTimeline(v, history, c.now()),
		Stuck: stuck(v), Waiting: waitingStep(v), CanCancel: cancellable(v.Status), Done: r.URL.Query().Get("done"),
		Live: r.URL.Query().Get("live") == "1" && !final(v.Status)}
	c.render(w, http.StatusOK, "order", page)
}

func (c *Console) read(w http.ResponseWriter, ctx context.Context, id string) (api.OrderView, bool) {
	if !order.ValidID(id) {
		c.problem(w, http.StatusNotFound, "No such order", "No order has that id.")
		return api.OrderView{}, false
	}
	v, err := c.stage.Show(ctx, id)
	if errors.Is(err, order.ErrNotFound) {
		c.problem(w, http.StatusNotFound, "No such order", fmt.Sprintf("Stage %s has no order %s.", c.name, id))
		return v, false
	}
	if err != nil {
		c.fail(w, err)
		return v, false
	}
	return v, true
}

func stuck(v api.OrderView) *api.StepView {
	if v.Status != order.StatusError {
		return nil
	}
	for i := range v.Steps {
		if v.Steps[i].State == string(order.Error) {
			return &v.Steps[i]
		}
	}
	return nil
}

// waitingStep is the step a Waiting order waits on.
func waitingStep(v api.OrderView) *api.StepView {
	if v.Status != order.StatusWaiting {
		return nil
	}
	for i := range v.Steps {
		if v.Steps[i].Waiting != nil {
			return &v.Steps[i]
		}
	}
	return nil
}

// cancellable reports whether an order in status s can be cancelled for
// its client: one that runs or waits, and has not started undoing.
func cancellable(s order.Status) bool {
	return s == order.StatusPending || s == order.StatusProcessing || s == order.StatusWaiting
}

// Actions the order page offers.
const (
	actCancel            = "cancel"
	actRedriveRetry      = "redrive-retry"
	actRedriveCompensate = "redrive-compensate"
	actSendEvent         = "send-event"
)

type confirmPage struct {
	Stage  string
	Order  api.OrderView
	Stuck  *api.StepView
	Action string
	Title  string
	What   string
	Token  string
	// Event is the event the form sends (send-event), with Data, its
	// data as typed, and Problem, why the last send was refused.
	Event, Data, Problem string
}

// confirm shows what an action will do and asks to confirm it.
func (c *Console) confirm(w http.ResponseWriter, r *http.Request) {
	v, ok := c.read(w, r.Context(), r.PathValue("id"))
	if !ok {
		return
	}
	page := confirmPage{Stage: c.name, Order: v, Stuck: stuck(v), Action: r.PathValue("action"), Token: c.token}
	switch page.Action {
	case actCancel:
		page.Title = "Cancel order " + v.OrderID
		page.What = "The order stops at its current step and the work already done is undone, in reverse, as if its client had cancelled it. The history names the operator."
		if v.Status == order.StatusWaiting {
			page.What += " The step's wait stops at once: nothing is in flight."
		}
		if !cancellable(v.Status) {
			c.problem(w, http.StatusConflict, "Cannot cancel", fmt.Sprintf("Order %s is %s: only a Pending, Processing or Waiting order can be cancelled.", v.OrderID, v.Status))
			return
		}
	case actRedriveRetry, actRedriveCompensate:
		if page.Stuck == nil {
			c.problem(w, http.StatusConflict, "Cannot redrive", fmt.Sprintf("Order %s is %s: only an order in Error can be redriven.", v.OrderID, v.Status))
			return
		}
		// The domain's own answer, as the order's view carries it: what
		// the redrive does, or why it is refused.
		for _, r := range v.Redrive {
			if "redrive-"+r.Action != page.Action {
				continue
			}
			if r.Refused != "" {
				c.problem(w, http.StatusConflict, "Cannot redrive", fmt.Sprintf("Order %s: %s.", v.OrderID, r.Refused))
				return
			}
			page.What = r.What
		}
		page.Title = "Redrive order " + v.OrderID
	case actSendEvent:
		if !c.eventForm(w, v, &page) {
			return
		}
		page.Data = "{}"
	default:
		c.problem(w, http.StatusNotFound, "No such action", fmt.Sprintf("%q is not an action on an order.", page.Action))
		return
	}
	c.render(w, http.StatusOK, "confirm", page)
}

// act makes a confirmed change and goes back to the order.
func (c *Console) act(w http.ResponseWriter, r *http.Request) {
	if !c.trusted(r) {
		c.problem(w, http.StatusForbidden, "Refused", "The form did not come from this console: reload the order and try again.")
		return
	}
	id, action := r.PathValue("id"), r.PathValue("action")
	if !order.ValidID(id) {
		c.problem(w, http.StatusNotFound, "No such order", "No order has that id.")
		return
	}
	var (
		o   order.Order
		err error
	)
	switch action {
	case actCancel:
		o, err = c.stage.Cancel(r.Context(), id)
	case actRedriveRetry:
		o, err = c.stage.Redrive(r.Context(), id, order.RedriveRetry)
	case actRedriveCompensate:
		o, err = c.stage.Redrive(r.Context(), id, order.RedriveCompensate)
	case actSendEvent:
		event, data := r.PostFormValue("event"), r.PostFormValue("data")
		o, err = c.stage.SendEvent(r.Context(), id, event, json.RawMessage(data))
		if errors.Is(err, order.ErrInvalid) || errors.Is(err, order.ErrTooLarge) {
			c.eventRefused(w, r, id, data, err)
			return
		}
	default:
		c.problem(w, http.StatusNotFound, "No such action", fmt.Sprintf("%q is not an action on an order.", action))
		return
	}
	switch {
	case errors.Is(err, order.ErrNotFound):
		c.problem(w, http.StatusNotFound, "No such order", fmt.Sprintf("Stage %s has no order %s.", c.name, id))
		return
	case errors.Is(err, order.ErrNotAllowed):
		c.problem(w, http.StatusConflict, "Not done", fmt.Sprintf("%s: %v. Reload the order to see where it is now.", action, err))
		return
	case errors.Is(err, order.ErrTooLate):
		c.problem(w, http.StatusGone, "Too late", fmt.Sprintf("%s: %v. Nothing was changed.", action, err))
		return
	case err != nil:
		c.fail(w, err)
		return
	}
	c.log.Info("operator action from the console", "order", id, "action", action, "status", o.Status)
	done := fmt.Sprintf("%s accepted: the order is now %s.", action, o.Status)
	if action == actSendEvent {
		done = fmt.Sprintf("event %s taken: the order is now %s.", r.PostFormValue("event"), o.Status)
	}
	http.Redirect(w, r, "/orders/"+url.PathEscape(id)+"?live=1&done="+url.QueryEscape(done), http.StatusSeeOther)
}

// eventForm fills page with the form that sends the event v's Waiting
// step waits for, or answers 409 when it waits for none.
func (c *Console) eventForm(w http.ResponseWriter, v api.OrderView, page *confirmPage) bool {
	st := waitingStep(v)
	if st == nil || st.Waiting.Event == "" {
		why := fmt.Sprintf("Order %s is %s and waits for no event.", v.OrderID, v.Status)
		if st != nil {
			why = fmt.Sprintf("Order %s waits for no event: %s waits for %s until %s.", v.OrderID, st.Step, cmp.Or(st.Waiting.For, "what its workflow version, which this build lacks, says"),
				st.Waiting.Until.UTC().Format(time.RFC3339))
		}
		c.problem(w, http.StatusConflict, "Cannot send an event", why)
		return false
	}
	page.Event = st.Waiting.Event
	page.Title = fmt.Sprintf("Send event %s to order %s", page.Event, v.OrderID)
	page.What = fmt.Sprintf("Step %s waits for event %s until %s. Its data, a JSON object, is checked against the step's schema and kept as the step's result; "+
		"the order goes on at once. The history names the operator's event.", st.Step, page.Event, st.Waiting.Until.UTC().Format(time.RFC3339))
	return true
}

// eventRefused shows the event's form again, with the data as it was
// typed and why it was refused (err: order.ErrInvalid or ErrTooLarge).
func (c *Console) eventRefused(w http.ResponseWriter, r *http.Request, id, data string, err error) {
	v, ok := c.read(w, r.Context(), id)
	if !ok {
		return
	}
	page := confirmPage{Stage: c.name, Order: v, Action: actSendEvent, Token: c.token}
	if !c.eventForm(w, v, &page) {
		return
	}
	page.Data, page.Problem = data, err.Error()
	status := http.StatusBadRequest
	if errors.Is(err, order.ErrTooLarge) {
		status = http.StatusRequestEntityTooLarge
	}
	c.render(w, status, "confirm", page)
}

// trusted reports whether a change came from this console's own form: it
// carries the console's token. (Where it was sent from, by Host and
// Origin, was checked before it got here.)
func (c *Console) trusted(r *http.Request) bool {
	return subtle.ConstantTimeCompare([]byte(r.PostFormValue("token")), []byte(c.token)) == 1
}

type dlqPage struct {
	Stage string
	Dead  []ops.DeadLetterQueue
}

func (c *Console) deadLetters(w http.ResponseWriter, r *http.Request) {
	dead, err := c.stage.DeadLetters(r.Context())
	if err != nil {
		c.fail(w, err)
		return
	}
	c.render(w, http.StatusOK, "dlq", dlqPage{Stage: c.name, Dead: dead})
}

type alertsPage struct {
	Stage  string
	Since  time.Duration
	Alerts []order.Alert
}

// alerts lists the alerts sent to operators over the last day (?since=
// another duration).
func (c *Console) alerts(w http.ResponseWriter, r *http.Request) {
	since := 24 * time.Hour
	if v := r.URL.Query().Get("since"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			c.problem(w, http.StatusBadRequest, "Not a duration", fmt.Sprintf("since=%q: want a duration such as 1h or 168h.", v))
			return
		}
		since = d
	}
	alerts, err := c.stage.Alerts(r.Context(), c.now().Add(-since), "", CountLimit)
	if err != nil {
		c.fail(w, err)
		return
	}
	c.render(w, http.StatusOK, "alerts", alertsPage{Stage: c.name, Since: since, Alerts: alerts})
}

type problemPage struct {
	Stage   string
	Title   string
	Message string
}

func (c *Console) problem(w http.ResponseWriter, status int, title, msg string) {
	c.render(w, status, "problem", problemPage{Stage: c.name, Title: title, Message: msg})
}

func (c *Console) fail(w http.ResponseWriter, err error) {
	c.log.Error("console request failed", "error", err)
	c.problem(w, http.StatusBadGateway, "The stage did not answer", err.Error())
}

func (c *Console) render(w http.ResponseWriter, status int, page string, data any) {
	var buf bytes.Buffer
	if err := c.pages[page].ExecuteTemplate(&buf, "layout", data); err != nil {
		c.log.Error("render console page", "page", page, "error", err)
		http.Error(w, "the console could not render this page: "+err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	w.Write(buf.Bytes())
}

// ago says how long before now t was, e.g. "3m20s ago".
func ago(now, t time.Time) string {
	if t.IsZero() {
		return ""
	}
	d := now.Sub(t)
	if d < 0 {
		return "in " + (-d).Round(time.Second).String()
	}
	return d.Round(time.Second).String() + " ago"
}
