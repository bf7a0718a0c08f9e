package console

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"orderly/internal/order"
)

// Form fields of a pause and a resume. What is paused is one field,
// target, "service:NAME" or "workflow:NAME", as `orderly pauses
// --history` names it.
const (
	fieldTarget      = "target"
	fieldFor         = "for"
	fieldReason      = "reason"
	fieldSubmissions = "submissions"
)

// The two changes the pauses page makes.
const (
	actPause  = "pause"
	actResume = "resume"
)

// errNoWho refuses a pause or resume from a console that was not told how
// to learn who its operator is: a pause names who made it.
var errNoWho = errors.New("this console does not know who you are, and a pause or resume names who made it: " +
	"orderly console asks AWS who your credentials are; orderly pause and orderly resume do the same")

// WithWho returns the console asking who for the operator's identity,
// which a pause and a resume record (orderly console passes the AWS
// principal of its credentials). Without it the console pauses nothing.
func (c *Console) WithWho(who func(context.Context) (string, error)) *Console { c.who = who; return c }

// pauseForm is a pause or resume as its form was filled in, kept to
// show the form again.
type pauseForm struct {
	Target, For, Reason, Submissions string
}

func pauseFormOf(v url.Values) pauseForm {
	return pauseForm{Target: v.Get(fieldTarget), For: strings.TrimSpace(v.Get(fieldFor)), Reason: v.Get(fieldReason),
		Submissions: v.Get(fieldSubmissions)}
}

// targetOf reads "service:NAME" or "workflow:NAME"; ops checks the kind
// and the name against the stage.
func targetOf(s string) (order.PauseKind, string, error) {
	if s == "" {
		return "", "", fmt.Errorf("choose the service or workflow: %w", order.ErrInvalid)
	}
	kind, name, ok := strings.Cut(s, ":")
	if !ok || name == "" {
		return "", "", fmt.Errorf("%q: want service:NAME or workflow:NAME: %w", s, order.ErrInvalid)
	}
	return order.PauseKind(kind), name, nil
}

func targetName(kind order.PauseKind, name string) string { return string(kind) + ":" + name }

// anchor is the id of a pause's row on the pauses page.
func anchor(kind order.PauseKind, name string) string { return "pause-" + string(kind) + "-" + name }

// pauseRequest reads a pause's form, as the operator who. A length that
// is no duration is refused here; the rest is ops' check.
func pauseRequest(f pauseForm, who string) (order.PauseRequest, error) {
	kind, name, err := targetOf(f.Target)
	if err != nil {
		return order.PauseRequest{}, err
	}
	r := order.PauseRequest{Kind: kind, Name: name, Reason: f.Reason, By: who, Submissions: order.Submissions(f.Submissions)}
	if f.For != "" {
		if r.For, err = time.ParseDuration(f.For); err != nil {
			return r, fmt.Errorf("pause %s %s: for %q: want a duration such as 30m, 2h or 1h30m: %w", kind, name, f.For, order.ErrInvalid)
		}
	}
	return r, nil
}

// whoAmI is the operator's identity, from the console's who.
func (c *Console) whoAmI(ctx context.Context) (string, error) {
	if c.who == nil {
		return "", errNoWho
	}
	who, err := c.who(ctx)
	if err != nil {
		return "", fmt.Errorf("who you are, for the pause's record: %w", err)
	}
	return who, nil
}

// pauseStatus is the status of a pause's or resume's refusal: bad input
// 400, a resume of what is not paused 409, a console that does not know
// its operator 503, else the stage's fault.
func pauseStatus(err error) int {
	switch {
	case errors.Is(err, order.ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, order.ErrNotPaused):
		return http.StatusConflict
	case errors.Is(err, errNoWho):
		return http.StatusServiceUnavailable
	}
	return http.StatusBadGateway
}

type pausesPage struct {
	Stage   string
	Rows    []pauseRow
	Form    pauseForm
	Done    string
	Problem string
}

// pauseRow is one service's or workflow's pause, with its history.
type pauseRow struct {
	order.Pause
	Target  string
	Anchor  string
	Overrun bool
	History []order.HistoryEntry
	// HistoryError is why its history could not be read.
	HistoryError string
}

// Services and Workflows are the rows of each kind, for the pause form's
// list.
func (p pausesPage) Services() []pauseRow  { return p.of(order.PauseService) }
func (p pausesPage) Workflows() []pauseRow { return p.of(order.PauseWorkflow) }

// AnyHistory reports whether any row has history to show.
func (p pausesPage) AnyHistory() bool {
	for _, r := range p.Rows {
		if len(r.History) > 0 || r.HistoryError != "" {
			return true
		}
	}
	return false
}

func (p pausesPage) of(kind order.PauseKind) []pauseRow {
	var out []pauseRow
	for _, r := range p.Rows {
		if r.Kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// pauses shows every service and workflow of the stage, paused or
// running, each with its history, and the forms that pause and resume.
func (c *Console) pauses(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	c.renderPauses(w, r.Context(), http.StatusOK, pausesPage{Done: q.Get("done"), Form: pauseForm{Target: q.Get(fieldTarget)}})
}

// renderPauses reads the stage's pauses into page and shows it.
func (c *Console) renderPauses(w http.ResponseWriter, ctx context.Context, status int, page pausesPage) {
	ps, err := c.stage.Pauses(ctx)
	if err != nil {
		c.fail(w, err)
		return
	}
	page.Stage = c.name
	now := c.now()
	for _, p := range ps {
		row := pauseRow{Pause: p, Target: targetName(p.Kind, p.Name), Anchor: anchor(p.Kind, p.Name), Overrun: p.Overrun(now)}
		// One read per service and workflow: a stage has a few.
		if row.History, err = c.stage.PauseHistory(ctx, p.Kind, p.Name); err != nil {
			row.HistoryError = err.Error()
		}
		page.Rows = append(page.Rows, row)
	}
	c.render(w, status, "pauses", page)
}

// pauseRefused shows the pauses page again with why nothing was done and
// the form as it was filled in.
func (c *Console) pauseRefused(w http.ResponseWriter, ctx context.Context, f pauseForm, err error) {
	status := pauseStatus(err)
	if status == http.StatusBadGateway {
		c.fail(w, err)
		return
	}
	c.renderPauses(w, ctx, status, pausesPage{Form: f, Problem: err.Error()})
}

type pauseConfirmPage struct {
	Stage  string
	Action string
	Title  string
	What   string
	Form   pauseForm
	// Pause is the pause the confirmation makes (its end as if made
	// now), or, of a resume, the pause it ends. Current is the pause on
	// already, which a pause keeps the start of.
	Pause, Current order.Pause
	Who            string
	Token          string
}

// pauseConfirm shows what a pause will do and asks to confirm it: GET
// /pauses/pause with the form's fields. It runs ops' own check, so bad
// input is refused here, and writes nothing.
func (c *Console) pauseConfirm(w http.ResponseWriter, r *http.Request) {
	ctx, f := r.Context(), pauseFormOf(r.URL.Query())
	who, err := c.whoAmI(ctx)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	req, err := pauseRequest(f, who)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	p, err := c.stage.PlanPause(req)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	current, _, err := c.pauseOf(ctx, p.Kind, p.Name)
	if err != nil {
		c.fail(w, err)
		return
	}
	page := pauseConfirmPage{Stage: c.name, Action: actPause, Title: "Pause " + p.Subject(), What: pauseWhat(p), Form: f, Pause: p,
		Current: current, Who: who, Token: c.token}
	c.render(w, http.StatusOK, "pauseconfirm", page)
}

// pauseAct makes a confirmed pause: POST /pauses/pause with the form's
// fields and the console's token.
func (c *Console) pauseAct(w http.ResponseWriter, r *http.Request) {
	if !c.trusted(r) {
		c.problem(w, http.StatusForbidden, "Refused", "The form did not come from this console: open the pauses page and try again. Nothing was paused.")
		return
	}
	ctx, f := r.Context(), pauseFormOf(r.PostForm)
	who, err := c.whoAmI(ctx)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	req, err := pauseRequest(f, who)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	p, err := c.stage.Pause(ctx, req)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	c.log.Info("operator pause from the console", "pause", p.Subject(), "by", who, "until", p.Until)
	done := fmt.Sprintf("%s paused since %s, expected to end by %s UTC (in %s).", p.Subject(), p.Since.UTC().Format(time.DateTime),
		p.Until.UTC().Format(time.DateTime), p.Until.Sub(c.now()).Round(time.Second))
	http.Redirect(w, r, "/pauses?done="+url.QueryEscape(done)+"#"+anchor(p.Kind, p.Name), http.StatusSeeOther)
}

// resumeConfirm shows the pause a resume ends and asks to confirm it,
// with a reason: GET /pauses/resume?target=.
func (c *Console) resumeConfirm(w http.ResponseWriter, r *http.Request) {
	ctx, f := r.Context(), pauseFormOf(r.URL.Query())
	kind, name, err := targetOf(f.Target)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	p, known, err := c.pauseOf(ctx, kind, name)
	switch {
	case err != nil:
		c.fail(w, err)
		return
	case !known:
		c.pauseRefused(w, ctx, f, fmt.Errorf("resume %s %s: this stage has no %s %q: %w", kind, name, kind, name, order.ErrInvalid))
		return
	case !p.On():
		c.pauseRefused(w, ctx, f, fmt.Errorf("%s is not paused: nothing to resume: %w", p.Subject(), order.ErrNotPaused))
		return
	}
	who, err := c.whoAmI(ctx)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	what := "Its held requests are called again as they come back from their queue, within about a minute."
	if kind == order.PauseWorkflow {
		what = "Its held orders start within about 3 minutes (the Supervisor looks at each every 2 minutes); new orders are taken again."
	}
	page := pauseConfirmPage{Stage: c.name, Action: actResume, Title: "Resume " + p.Subject(), What: what + " The history names you and keeps your reason.",
		Form: f, Pause: p, Who: who, Token: c.token}
	c.render(w, http.StatusOK, "pauseconfirm", page)
}

// resumeAct makes a confirmed resume: POST /pauses/resume with the
// target, a reason and the console's token.
func (c *Console) resumeAct(w http.ResponseWriter, r *http.Request) {
	if !c.trusted(r) {
		c.problem(w, http.StatusForbidden, "Refused", "The form did not come from this console: open the pauses page and try again. Nothing was resumed.")
		return
	}
	ctx, f := r.Context(), pauseFormOf(r.PostForm)
	kind, name, err := targetOf(f.Target)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	who, err := c.whoAmI(ctx)
	if err != nil {
		c.pauseRefused(w, ctx, f, err)
		return
	}
	ended, err := c.stage.Resume(ctx, kind, name, who, f.Reason)
	if err != nil {
		c.pauseRefused(w, ctx, pauseForm{Target: f.Target}, err)
		return
	}
	c.log.Info("operator resume from the console", "pause", ended.Subject(), "by", who)
	// Who paused stays out of the page's address (it is an IAM ARN,
	// with the account): the pauses page's row names them.
	done := fmt.Sprintf("%s resumed after %s (paused for: %s).", ended.Subject(), c.now().Sub(ended.Since).Round(time.Second), ended.Reason)
	http.Redirect(w, r, "/pauses?done="+url.QueryEscape(done)+"#"+anchor(kind, name), http.StatusSeeOther)
}

// pauseOf is the pause of one service or workflow as the stage lists it;
// known is false for a name the stage does not have.
func (c *Console) pauseOf(ctx context.Context, kind order.PauseKind, name string) (p order.Pause, known bool, err error) {
	ps, err := c.stage.Pauses(ctx)
	if err != nil {
		return order.Pause{}, false, err
	}
	for _, p := range ps {
		if p.Kind == kind && p.Name == name {
			return p, true, nil
		}
	}
	return order.Pause{}, false, nil
}

// pauseWhat says what a pause does, as orderly pause's help does.
func pauseWhat(p order.Pause) string {
	var what string
	switch {
	case p.Kind == order.PauseService:
		what = fmt.Sprintf("Service %s is called no more: each of its requests (a step's work, an undo, a status check) waits in its agent's queue, "+
			"no failure is counted and no deadline runs out against it. Calls already under way finish.", p.Name)
	case p.Submissions == order.RefuseSubmissions:
		what = fmt.Sprintf("New orders of workflow %s are refused with 503 and Retry-After (the pause's expected end), and nothing is written for them. "+
			"Orders already running go on.", p.Name)
	default:
		what = fmt.Sprintf("New orders of workflow %s are accepted and held: their first step starts at the resume. Orders already running go on.", p.Name)
	}
	return what + " The pause lasts until it is resumed; past its expected end the stage alarms. The pause's history and its event name you and your reason."
}
