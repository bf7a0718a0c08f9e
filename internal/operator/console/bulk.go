package console

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

// Form fields of a bulk action besides the search's filters.
const (
	fieldStep    = "step"
	fieldMax     = "max"
	fieldAction  = "action"
	fieldRedrive = "redrive"
	fieldTo      = "to" // the version a move moves onto ("version" is a filter)
	fieldEvent   = "event"
	fieldData    = "data"
	fieldPlan    = "plan"
)

// bulkFilterParams are the search's filters a bulk action takes: all but
// its page size and position.
var bulkFilterParams = []string{api.ParamStatus, api.ParamCustomer, api.ParamWorkflow, api.ParamVersion,
	api.ParamCreatedFrom, api.ParamCreatedTo, api.ParamEndedFrom, api.ParamEndedTo}

// maxBulkJobs is how many bulk runs the console remembers: past it, the
// oldest that ended is forgotten.
const maxBulkJobs = 50

// bulkRequest is a bulk action as the search page's form or the
// confirmation's asks for it.
type bulkRequest struct {
	filter ops.BulkFilter
	action ops.BulkAction
	max    int
	// filters are the search's filters as typed: the link back to the
	// search. fields are those and the action's fields as typed (the
	// event's data and the token aside): what the confirmation carries.
	filters, fields url.Values
}

// parseBulk reads a bulk action from a form's values: the search's
// filters, step, max, the action and its own fields. A send-event's
// event must be one of events; its data is {} until the confirmation's
// form says. Bad input is order.ErrInvalid, and invalid names its field.
func parseBulk(values url.Values, events []string) (req bulkRequest, invalid string, err error) {
	req.max = ops.DefaultBulkMax
	req.filters, req.filter.Query, invalid, err = parseFilters(values, func(name string) bool { return slices.Contains(bulkFilterParams, name) })
	req.fields = url.Values{}
	for name := range req.filters {
		req.fields.Set(name, req.filters.Get(name))
	}
	if err != nil {
		return req, invalid, err
	}
	field := func(name string) string {
		v := strings.TrimSpace(values.Get(name))
		if v != "" {
			req.fields.Set(name, v)
		}
		return v
	}
	req.filter.Step = field(fieldStep)
	if m := field(fieldMax); m != "" {
		n, err := strconv.Atoi(m)
		if err != nil || n < 1 {
			return req, fieldMax, fmt.Errorf("max %q: want a whole number of orders, 1 or more: %w", m, order.ErrInvalid)
		}
		req.max = n
	}
	a := ops.BulkAction{Kind: field(fieldAction)}
	invalid = fieldAction
	switch a.Kind {
	case ops.BulkRedrive:
		a.Redrive, invalid = field(fieldRedrive), fieldRedrive
	case ops.BulkMove:
		a.Version, invalid = field(fieldTo), fieldTo
	case ops.BulkSendEvent:
		a.Event, a.Data, invalid = field(fieldEvent), json.RawMessage("{}"), fieldEvent
		if a.Event != "" && !slices.Contains(events, a.Event) {
			known := "none"
			if len(events) > 0 {
				known = strings.Join(events, ", ")
			}
			return req, fieldEvent, fmt.Errorf("bulk send-event: no workflow version of this stage waits for event %q (its events: %s): %w", a.Event, known, order.ErrInvalid)
		}
	}
	req.action = a
	if err := a.Check(); err != nil {
		return req, invalid, err
	}
	return req, "", nil
}

// fingerprint names a plan: its action, filter and limit, and each
// planned order as read (id, status, workflow version, step). A
// confirmation carries the fingerprint of the plan it shows, so that one
// whose matching set changed since is told apart and refused.
func fingerprint(req bulkRequest, plan []ops.Planned) string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %d\n", req.action.String(), req.filter.Key(), req.max)
	for _, p := range plan {
		fmt.Fprintf(h, "%q %q %q %q %q %t\n", p.OrderID, p.Status, p.Workflow, p.Version, p.Step, p.Undo)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// bulkRow is one planned order, with what the run did to it once it has.
type bulkRow struct {
	ops.Planned
	Record  string // its running or stuck record: "charge-payment", "undo charge-payment"
	Outcome ops.Outcome
	Reason  string
}

func rowsOf(plan []ops.Planned, j *ops.Journal) []bulkRow {
	rows := make([]bulkRow, len(plan))
	for i, p := range plan {
		rows[i] = bulkRow{Planned: p, Record: order.RecordLabel(p.Step, p.Undo)}
		if j != nil {
			if e, ok := j.Recorded(p.OrderID); ok {
				rows[i].Outcome, rows[i].Reason = e.Outcome, e.Reason
			}
		}
	}
	return rows
}

type bulkPage struct {
	Stage  string
	Title  string
	What   string
	Filter string // the filter in words
	Action ops.BulkAction
	Max    int
	Orders []bulkRow
	// Fields are what the confirmation's form carries, with Plan, the
	// plan's fingerprint, and Token.
	Fields url.Values
	Plan   string
	Token  string
	// Data is a send-event's data as typed.
	Data string
	// Problem is why nothing was done; Invalid, the field it names.
	Problem, Invalid string
	Search           string // the search's page
}

// bulkPlan shows what a bulk action would do, and asks to confirm it:
// GET /bulk with the search's filters, step, max, action and the
// action's fields. Planning reads and changes nothing.
func (c *Console) bulkPlan(w http.ResponseWriter, r *http.Request) {
	req, invalid, err := parseBulk(r.URL.Query(), c.stage.Events())
	if err != nil {
		c.bulkRefused(w, http.StatusBadRequest, req, invalid, err)
		return
	}
	plan, invalid, err := c.planBulk(r.Context(), req)
	if err != nil {
		c.bulkRefused(w, planStatus(err), req, invalid, err)
		return
	}
	c.render(w, http.StatusOK, "bulk", c.bulkPage(req, plan))
}

// bulkConfirm runs a confirmed bulk action: POST /bulk with the plan's
// fields and fingerprint and the console's token. The plan is made again;
// when its orders changed since the confirmation showed them, nothing is
// done and the new plan is shown to confirm. Bad data is shown again with
// what is wrong. A run starts in the background and the page goes to its
// report.
func (c *Console) bulkConfirm(w http.ResponseWriter, r *http.Request) {
	if !c.trusted(r) {
		c.problem(w, http.StatusForbidden, "Refused", "The form did not come from this console: search again and try again. Nothing was done.")
		return
	}
	req, invalid, err := parseBulk(r.PostForm, c.stage.Events())
	if err != nil {
		c.bulkRefused(w, http.StatusBadRequest, req, invalid, err)
		return
	}
	plan, invalid, err := c.planBulk(r.Context(), req)
	switch {
	case errors.Is(err, ops.ErrPlanEmpty) || errors.Is(err, ops.ErrPlanTooLarge):
		// It was neither when the plan was shown.
		c.bulkRefused(w, http.StatusConflict, req, invalid,
			fmt.Errorf("the orders this filter matches changed since the plan was shown: %w", err))
		return
	case err != nil:
		c.bulkRefused(w, planStatus(err), req, invalid, err)
		return
	}
	page := c.bulkPage(req, plan)
	if req.action.Kind == ops.BulkSendEvent {
		page.Data = r.PostFormValue(fieldData)
	}
	if page.Plan != r.PostFormValue(fieldPlan) {
		page.Problem = "the orders this filter matches changed since the plan was shown (an order moved on, or another matches now). This is the plan now: check it, and confirm it to act."
		c.render(w, http.StatusConflict, "bulk", page)
		return
	}
	if req.action.Kind == ops.BulkSendEvent {
		req.action.Data = json.RawMessage(page.Data)
		if err := req.action.Check(); err != nil {
			page.Problem, page.Invalid = err.Error(), fieldData
			c.render(w, http.StatusBadRequest, "bulk", page)
			return
		}
	}
	job := c.jobs.start(c, req, plan, page.Plan)
	http.Redirect(w, r, "/bulk/"+job.id, http.StatusSeeOther)
}

// planBulk is ops' plan of req, checked against its action; a problem
// the check finds names the action's field.
func (c *Console) planBulk(ctx context.Context, req bulkRequest) (plan []ops.Planned, invalid string, err error) {
	plan, err = c.stage.PlanBulk(ctx, req.filter, req.max)
	switch {
	case errors.Is(err, ops.ErrPlanTooLarge):
		return nil, fieldMax, err
	case err != nil:
		return nil, "", err
	}
	if err := c.stage.CheckPlan(plan, req.action); err != nil {
		return nil, map[string]string{ops.BulkMove: fieldTo, ops.BulkSendEvent: fieldEvent}[req.action.Kind], err
	}
	return plan, "", nil
}

// planStatus is the status of a plan's refusal: bad input (no filter,
// over the limit, a bad field) 400, no order 404, else the stage's fault.
func planStatus(err error) int {
	switch {
	case errors.Is(err, ops.ErrPlanEmpty):
		return http.StatusNotFound
	case errors.Is(err, ops.ErrNoFilter), errors.Is(err, ops.ErrPlanTooLarge), errors.Is(err, order.ErrInvalid):
		return http.StatusBadRequest
	}
	return http.StatusBadGateway
}

func (c *Console) bulkPage(req bulkRequest, plan []ops.Planned) bulkPage {
	page := bulkPage{Stage: c.name, Title: fmt.Sprintf("Bulk %s on %d orders", req.action.Kind, len(plan)), What: bulkWhat(req.action),
		Filter: filterWords(req), Action: req.action, Max: req.max, Orders: rowsOf(plan, nil),
		Fields: req.fields, Plan: fingerprint(req, plan), Token: c.token, Data: "{}", Search: searchHref(req.filters)}
	return page
}

// bulkRefused shows why a bulk action is not planned or not run: nothing
// was done.
func (c *Console) bulkRefused(w http.ResponseWriter, status int, req bulkRequest, invalid string, err error) {
	if status == http.StatusBadGateway {
		c.fail(w, err)
		return
	}
	kind := cmp.Or(req.action.Kind, "action")
	c.render(w, status, "bulk", bulkPage{Stage: c.name, Title: "Bulk " + kind + ": nothing done", Filter: filterWords(req),
		Action: req.action, Problem: err.Error(), Invalid: invalid, Search: searchHref(req.filters)})
}

// filterWords says a bulk filter as the form gave it.
func filterWords(req bulkRequest) string {
	var out []string
	for _, name := range append(slices.Clone(bulkFilterParams), fieldStep) {
		if v := req.fields.Get(name); v != "" {
			out = append(out, strings.ReplaceAll(name, "_", " ")+" "+v)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}

// bulkWhat says what the action does to each order.
func bulkWhat(a ops.BulkAction) string {
	var what string
	switch a.Kind {
	case ops.BulkRedrive:
		what = "Each order in Error resumes, as its page's redrive does: "
		switch a.Redrive {
		case order.RedriveRetry:
			what += "its failed step (or undo) runs again."
		case order.RedriveCompensate:
			what += "the work it did is undone, in reverse."
		default:
			what += "as its stuck record calls for (a failed step runs again, a failed undo is resumed)."
		}
	case ops.BulkCancel:
		what = "Each Pending, Processing or Waiting order stops at its current step and the work already done is undone, as if its client had cancelled it."
	case ops.BulkMove:
		what = fmt.Sprintf("Each order parked under a workflow version this build lacks moves onto version %s, when its steps fit it.", a.Version)
	case ops.BulkSendEvent:
		what = fmt.Sprintf("Each Waiting order that waits for event %s takes it with the data below (a JSON object, the same for every order), checked against its step's schema.", a.Event)
	}
	return what + fmt.Sprintf(" At most %g orders a second, each through the same conditional write as the order's own page: an order that moved on since this plan is refused, not acted on twice. The history names the operator.", ops.DefaultBulkRate)
}

// bulkJob is a bulk run started from the console: it goes on in the
// background, whoever watches, until its plan is done or it is stopped.
type bulkJob struct {
	id       string
	req      bulkRequest
	plan     []ops.Planned
	print    string // the plan's fingerprint
	journal  *ops.Journal
	started  time.Time
	stop     context.CancelFunc
	mu       sync.Mutex
	report   ops.BulkReport // guarded by mu, as are err and ended
	err      error
	ended    bool
	endedAt  time.Time
	stopping bool
}

type bulkJobs struct {
	mu   sync.Mutex
	jobs []*bulkJob // oldest first
}

func newBulkJobs() *bulkJobs { return &bulkJobs{} }

func (js *bulkJobs) get(id string) *bulkJob {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.jobs {
		if j.id == id {
			return j
		}
	}
	return nil
}

// start runs the plan in the background, unless a run of the same plan
// goes on already (a confirmation sent twice): then it is that run.
func (js *bulkJobs) start(c *Console, req bulkRequest, plan []ops.Planned, print string) *bulkJob {
	js.mu.Lock()
	defer js.mu.Unlock()
	for _, j := range js.jobs {
		if j.print == print && !j.isEnded() {
			return j
		}
	}
	// Forget the oldest runs that ended.
	for len(js.jobs) >= maxBulkJobs {
		i := slices.IndexFunc(js.jobs, (*bulkJob).isEnded)
		if i < 0 {
			break
		}
		js.jobs = slices.Delete(js.jobs, i, i+1)
	}
	// The run outlives the request that started it: an operator who
	// closes the page does not stop it; Stop does.
	ctx, stop := context.WithCancel(context.Background())
	job := &bulkJob{id: newToken()[:16], req: req, plan: plan, print: print, journal: ops.MemoryJournal(), started: c.now(), stop: stop,
		report: ops.BulkReport{Action: req.action.String(), Planned: len(plan)}}
	js.jobs = append(js.jobs, job)
	// No event data in the log: it may hold a customer's details.
	log := c.log.With("job", job.id, "action", req.action.String(), "filter", filterWords(req))
	log.Info("bulk action from the console", "orders", len(plan))
	go func() {
		defer stop()
		rep, err := c.stage.RunBulk(ctx, plan, req.action, job.journal, ops.BulkOptions{Progress: func(r ops.BulkReport) {
			job.mu.Lock()
			job.report = r
			job.mu.Unlock()
		}})
		job.mu.Lock()
		job.report, job.err, job.ended, job.endedAt = rep, err, true, c.now()
		job.mu.Unlock()
		log.Info("bulk action from the console ended", "done", rep.Done, "refused", rep.Refused, "failed", rep.Failed, "left", rep.Left(), "error", err)
	}()
	return job
}

func (j *bulkJob) isEnded() bool {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.ended
}

type bulkJobPage struct {
	Stage   string
	ID      string
	Action  string
	Filter  string
	Started time.Time
	Ended   time.Time
	Running bool
	// State is running, stopping, done or stopped; Summary says it in a
	// sentence, Failed when it ended with an error.
	State   string
	Summary string
	Failed  bool
	Report  ops.BulkReport
	Rows    []bulkRow
	Token   string
	Search  string
}

// bulkJob shows a bulk run: how far it got and each order's outcome,
// refreshed every two seconds while it runs.
func (c *Console) bulkJob(w http.ResponseWriter, r *http.Request) {
	job := c.jobs.get(r.PathValue("job"))
	if job == nil {
		c.problem(w, http.StatusNotFound, "No such bulk run",
			"The console has no bulk run of that id: it keeps the last "+strconv.Itoa(maxBulkJobs)+" since it started. Search again to see where the orders are.")
		return
	}
	job.mu.Lock()
	rep, err, ended, endedAt, stopping := job.report, job.err, job.ended, job.endedAt, job.stopping
	job.mu.Unlock()
	page := bulkJobPage{Stage: c.name, ID: job.id, Action: rep.Action, Filter: filterWords(job.req), Started: job.started, Ended: endedAt,
		Running: !ended, Report: rep, Rows: rowsOf(job.plan, job.journal), Token: c.token, Search: searchHref(job.req.filters)}
	counts := fmt.Sprintf("%d done, %d refused, %d failed", rep.Done, rep.Refused, rep.Failed)
	switch {
	case !ended && stopping:
		page.State, page.Summary = "stopping", fmt.Sprintf("Stopping after the order being acted on: %s so far.", counts)
	case !ended:
		page.State, page.Summary = "running", fmt.Sprintf("Running, at most %g orders a second: %s, %d left.", ops.DefaultBulkRate, counts, rep.Left())
	case rep.Interrupted:
		page.State, page.Summary = "stopped", fmt.Sprintf("Stopped: %s; %d orders were not acted on. Search again to plan the rest.", counts, rep.Left())
	case err != nil:
		page.State, page.Summary, page.Failed = "failed", fmt.Sprintf("Ended early: %v (%s).", err, counts), true
	default:
		page.State, page.Summary = "done", fmt.Sprintf("Done: %s.", counts)
		page.Failed = rep.Failed > 0
		if rep.Failed > 0 {
			page.Summary += " The failed orders were not changed: search again to plan them anew."
		}
	}
	c.render(w, http.StatusOK, "bulkjob", page)
}

// bulkStop stops a bulk run after the order it acts on.
func (c *Console) bulkStop(w http.ResponseWriter, r *http.Request) {
	if !c.trusted(r) {
		c.problem(w, http.StatusForbidden, "Refused", "The form did not come from this console: reload the run's page and try again.")
		return
	}
	job := c.jobs.get(r.PathValue("job"))
	if job == nil {
		c.problem(w, http.StatusNotFound, "No such bulk run", "The console has no bulk run of that id.")
		return
	}
	job.mu.Lock()
	job.stopping = true
	job.mu.Unlock()
	job.stop()
	c.log.Info("bulk action from the console stopped", "job", job.id)
	http.Redirect(w, r, "/bulk/"+job.id, http.StatusSeeOther)
}
