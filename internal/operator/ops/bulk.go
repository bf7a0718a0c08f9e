package ops

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/time/rate"

	"orderly/internal/actor/control"
	"orderly/internal/order"
)

// Bulk defaults: a plan of more than DefaultBulkMax orders is refused
// unless the operator raises the limit, and a run acts on at most
// DefaultBulkRate orders a second, a small share of what the API and the
// actors take, so live traffic keeps the table's capacity.
const (
	DefaultBulkMax  = 1000
	DefaultBulkRate = 10.0
	// bulkScanFactor bounds how many search matches a plan reads: a
	// filter matching more than this many times its limit is refused
	// without reading the rest.
	bulkScanFactor = 10
	// bulkActTimeout bounds one order's action once begun: an interrupt
	// lets it finish, so that it is journaled, but not forever.
	bulkActTimeout = 30 * time.Second
)

// The actions a bulk run takes on each order, each the single-order
// operation of the same name.
const (
	BulkRedrive   = "redrive"
	BulkCancel    = "cancel"
	BulkMove      = "move"
	BulkSendEvent = "send-event"
)

// BulkActions lists the bulk actions.
var BulkActions = []string{BulkRedrive, BulkCancel, BulkMove, BulkSendEvent}

// Errors of a bulk plan: bad input, refused before anything is done.
var (
	ErrPlanEmpty    = errors.New("the filter matches no order")
	ErrPlanTooLarge = errors.New("the filter matches more orders than the limit")
	ErrNoFilter     = errors.New("a bulk action needs at least one filter")
)

// BulkAction is what a bulk run does to each order.
type BulkAction struct {
	// Kind is one of BulkActions.
	Kind string `json:"kind"`
	// Redrive is a redrive's action: order.RedriveRetry,
	// order.RedriveCompensate or empty (what each stuck record calls for).
	Redrive string `json:"redrive,omitempty"`
	// Version is the version a move moves the orders onto.
	Version string `json:"version,omitempty"`
	// Event and Data are the event a send-event sends and its data.
	Event string          `json:"event,omitempty"`
	Data  json.RawMessage `json:"data,omitempty"`
}

// Check reports what is wrong with a, as order.ErrInvalid.
func (a BulkAction) Check() error {
	invalid := func(format string, args ...any) error {
		return fmt.Errorf("bulk %s: %s: %w", a.Kind, fmt.Sprintf(format, args...), order.ErrInvalid)
	}
	switch a.Kind {
	case BulkRedrive:
		if a.Redrive != "" && a.Redrive != order.RedriveRetry && a.Redrive != order.RedriveCompensate {
			return invalid("action %q: want %s or %s", a.Redrive, order.RedriveRetry, order.RedriveCompensate)
		}
	case BulkCancel:
	case BulkMove:
		if a.Version == "" {
			return invalid("the version to move the orders onto is missing")
		}
	case BulkSendEvent:
		if a.Event == "" {
			return invalid("the event's name is missing")
		}
		if _, err := order.ParseEventData(a.Data); err != nil {
			return invalid("event %s's data: %v", a.Event, err)
		}
	default:
		return fmt.Errorf("bulk action %q: want one of %s: %w", a.Kind, strings.Join(BulkActions, ", "), order.ErrInvalid)
	}
	return nil
}

// String names a as a command line would: "redrive --action retry".
func (a BulkAction) String() string {
	switch {
	case a.Kind == BulkRedrive && a.Redrive != "":
		return a.Kind + " --action " + a.Redrive
	case a.Kind == BulkMove:
		return a.Kind + " --to " + a.Version
	case a.Kind == BulkSendEvent:
		return a.Kind + " " + a.Event
	}
	return a.Kind
}

// BulkFilter is the orders a bulk action is for: a search's filters and,
// optionally, the step (or undo) their running or stuck record is at.
type BulkFilter struct {
	Query order.Query
	Step  string
}

// Empty reports whether f filters nothing: every order would match.
func (f BulkFilter) Empty() bool {
	q := f.Query
	q.Limit = 0
	return q == (order.Query{}) && f.Step == ""
}

// Key is f in one canonical string, which a journal records.
func (f BulkFilter) Key() string {
	q := f.Query
	q.Limit = 0
	return q.Key() + ",step=" + f.Step
}

// Planned is one order a bulk plan acts on, as read when planned.
type Planned struct {
	OrderID  string       `json:"orderId"`
	Status   order.Status `json:"status"`
	Workflow string       `json:"workflow"`
	Version  string       `json:"version"`
	// Step is the step (or undo) of its running or stuck record; empty
	// for an order that ended.
	Step string `json:"step,omitempty"`
	Undo bool   `json:"undo,omitempty"`
}

// PlanBulk lists every order f matches, newest first, paging through the
// search, each with its status and step read from its item; a filter that
// matches nothing, or more than max orders, is refused (ErrPlanEmpty,
// ErrPlanTooLarge, saying how many match), as is an empty filter
// (ErrNoFilter). With a step, the search's matches are read one by one,
// at most ten times max of them. Planning changes nothing.
func (s *Stage) PlanBulk(ctx context.Context, f BulkFilter, max int) ([]Planned, error) {
	plan, err := planBulk(ctx, s.SearchPage, s.planned, f, max)
	if err != nil {
		return nil, fmt.Errorf("plan on stage %s: %w", s.Name, err)
	}
	return plan, nil
}

// Events lists the events this build's workflow versions wait for,
// sorted: the events a bulk send-event can send.
func (s *Stage) Events() []string {
	var out []string
	for _, w := range s.workflows.Workflows() {
		for _, d := range w.Steps {
			if d.Wait != nil && d.Wait.Event != "" && !slices.Contains(out, d.Wait.Event) {
				out = append(out, d.Wait.Event)
			}
		}
	}
	slices.Sort(out)
	return out
}

// CheckPlan reports, as order.ErrInvalid, what makes the action a wrong
// for the orders of plan before any is acted on: a move onto a version
// this build lacks for a planned order's workflow, or an event that a
// planned order's version (one this build has) never waits for. Each
// order's own operation checks the rest when it acts.
func (s *Stage) CheckPlan(plan []Planned, a BulkAction) error {
	if err := a.Check(); err != nil {
		return err
	}
	for _, p := range plan {
		switch a.Kind {
		case BulkMove:
			if _, ok := s.workflows.Get(p.Workflow, a.Version); !ok {
				return fmt.Errorf("bulk move: order %s: workflow %s has no version %q in this build (known: %s): %w",
					p.OrderID, order.WorkflowOf(p.Workflow), a.Version, strings.Join(s.workflows.Known(), ", "), order.ErrInvalid)
			}
		case BulkSendEvent:
			w, ok := s.workflows.Get(p.Workflow, p.Version)
			if _, waits := w.EventStep(a.Event); ok && !waits {
				return fmt.Errorf("bulk send-event: order %s: workflow %s never waits for event %q (this build's events: %s): %w",
					p.OrderID, order.Ref(p.Workflow, p.Version), a.Event, strings.Join(s.Events(), ", "), order.ErrInvalid)
			}
		}
	}
	return nil
}

// planned reads an order as a plan lists it: one GetItem, as show's.
func (s *Stage) planned(ctx context.Context, id string) (Planned, error) {
	o, steps, err := s.store.GetOrder(ctx, id)
	if err != nil {
		return Planned{}, err
	}
	p := Planned{OrderID: o.ID, Status: o.Status, Workflow: o.Workflow, Version: o.Version}
	// The first record not done is the one running or stuck (as Move
	// reads it): undo records follow the steps they undo.
	for _, st := range steps {
		switch st.ProcessState {
		case order.Pending, order.Processing, order.Waiting, order.Error:
			p.Step, p.Undo = st.Step, st.Undo
			return p, nil
		}
	}
	return p, nil
}

// searchPager reads one page of a search; readPlanned reads one order.
type (
	searchPager func(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error)
	readPlanned func(ctx context.Context, id string) (Planned, error)
)

func planBulk(ctx context.Context, search searchPager, read readPlanned, f BulkFilter, max int) ([]Planned, error) {
	if f.Empty() {
		return nil, fmt.Errorf("%w (a status, workflow, version, customer, step or time window): without one it would act on every order", ErrNoFilter)
	}
	if max < 1 {
		return nil, fmt.Errorf("limit %d: want 1 or more: %w", max, order.ErrInvalid)
	}
	// Without a step, the search's matches are the plan: more than max
	// is refused before any is read. With one, each match is read to
	// learn its step, so the matches read are bounded too.
	scan := max
	if f.Step != "" {
		scan = max * bulkScanFactor
	}
	var found []order.Summary
	var position []byte
	more := false
	q := f.Query
	for {
		q.Limit = order.MaxSearchLimit
		page, err := search(ctx, q, position)
		if err != nil {
			return nil, err
		}
		found = append(found, page.Orders...)
		position = page.Next
		if position == nil {
			break
		}
		// Counting goes on past the limit, up to ten times it, so that
		// the refusal says how many match.
		if len(found) > max*bulkScanFactor {
			more = true
			break
		}
	}
	if len(found) > scan {
		what := fmt.Sprintf("%d orders match", len(found))
		if more {
			what = fmt.Sprintf("more than %d orders match", len(found))
		}
		if f.Step != "" {
			return nil, fmt.Errorf("%s before the step is looked at, more than %d (%d times the limit %d) are read: narrow the filter with a status, workflow, version or time window: %w",
				what, scan, bulkScanFactor, max, ErrPlanTooLarge)
		}
		return nil, fmt.Errorf("%s, more than the limit of %d: narrow the filter (a step, status, workflow, version or time window) or raise the limit: %w", what, max, ErrPlanTooLarge)
	}
	plan := make([]Planned, 0, len(found))
	for _, o := range found {
		p, err := read(ctx, o.ID)
		if errors.Is(err, order.ErrNotFound) {
			continue // removed since the search (retention)
		}
		if err != nil {
			return nil, fmt.Errorf("read order %s: %w", o.ID, err)
		}
		// The search's index may be a moment behind the item: an order
		// whose status moved on since no longer matches.
		if f.Query.Status != "" && p.Status != f.Query.Status {
			continue
		}
		if f.Step != "" && p.Step != f.Step {
			continue
		}
		plan = append(plan, p)
	}
	switch {
	case len(plan) == 0:
		return nil, fmt.Errorf("%w: check the filter with orderly search, or widen it", ErrPlanEmpty)
	case len(plan) > max:
		return nil, fmt.Errorf("%d orders match, more than the limit of %d: narrow the filter (a step, status, workflow, version or time window) or raise the limit: %w", len(plan), max, ErrPlanTooLarge)
	}
	return plan, nil
}

// Outcome is what a bulk run did to one order.
type Outcome string

// Outcomes: done; refused by the single-order operation (the order is
// not in a status the action takes, an event it does not wait for), not
// acted on again by a resumed run; failed (an AWS error, an order that
// kept changing), tried again by a resumed run.
const (
	OutcomeDone    Outcome = "done"
	OutcomeRefused Outcome = "refused"
	OutcomeFailed  Outcome = "failed"
)

// JournalEntry is one line of a bulk run's journal.
type JournalEntry struct {
	OrderID string  `json:"orderId"`
	Outcome Outcome `json:"outcome"`
	// Reason is why it was refused or failed.
	Reason string    `json:"reason,omitempty"`
	At     time.Time `json:"at"`
}

// journalHeader is a journal's first line: the run it records, so that
// a journal is resumed only by the same action over the same filter.
type journalHeader struct {
	Journal string `json:"journal"`
	Stage   string `json:"stage"`
	Action  string `json:"action"`
	Filter  string `json:"filter"`
}

const journalKind = "orderly bulk"

// Journal records, one JSON line per order, what a bulk run did, so that
// a run started again with it skips the orders done or refused. Its
// outcomes may be read while a run records them.
type Journal struct {
	path string
	file *os.File // nil for a journal kept in memory
	mu   sync.Mutex
	// recorded is guarded by mu.
	recorded map[string]JournalEntry
}

// MemoryJournal is a journal kept in memory only, for a run that is
// watched while it goes on and not resumed by another process (the web
// console's): its outcomes are lost with the process.
func MemoryJournal() *Journal { return &Journal{recorded: map[string]JournalEntry{}} }

// OpenJournal opens the journal at path for a bulk action over a filter
// on a stage, creating it (and its directory) if it is not there, else
// reading what it recorded. filter names the filter as the operator gave
// it (BulkFilter.Key, or the command line's flags, a time back from now
// unresolved, so that the same command resumes). A journal of another
// stage, action or filter is refused: resuming it would skip orders of
// another run.
func OpenJournal(path, stage string, a BulkAction, filter string) (*Journal, error) {
	head := journalHeader{Journal: journalKind, Stage: stage, Action: a.String(), Filter: filter}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	file, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	j := &Journal{path: path, file: file, recorded: map[string]JournalEntry{}}
	if err := j.load(head); err != nil {
		file.Close()
		return nil, fmt.Errorf("journal %s: %w", path, err)
	}
	return j, nil
}

// load reads the journal's header and entries, or writes the header of a
// new one. A last line cut short (a crash while it was written) is
// dropped: its order is acted on again, which its fence makes safe.
func (j *Journal) load(head journalHeader) error {
	data, err := io.ReadAll(j.file)
	if err != nil {
		return err
	}
	if len(data) == 0 {
		return j.writeLine(head)
	}
	if i := bytes.LastIndexByte(data, '\n'); i < len(data)-1 {
		data = data[:i+1] // a torn last line
		if err := j.file.Truncate(int64(len(data))); err != nil {
			return err
		}
		if _, err := j.file.Seek(0, io.SeekEnd); err != nil {
			return err
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		if n == 1 {
			var got journalHeader
			if err := json.Unmarshal(sc.Bytes(), &got); err != nil || got.Journal != journalKind {
				return errors.New("not a bulk journal: give another path")
			}
			if got != head {
				return fmt.Errorf("it records bulk %s on stage %s over filter %s, not this run (bulk %s on stage %s over %s): give another path",
					got.Action, got.Stage, got.Filter, head.Action, head.Stage, head.Filter)
			}
			continue
		}
		var e JournalEntry
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil || e.OrderID == "" {
			return fmt.Errorf("line %d is not an entry: %v", n, err)
		}
		j.recorded[e.OrderID] = e // a later line is a later outcome
	}
	return sc.Err()
}

// Path is where the journal is; empty for one kept in memory.
func (j *Journal) Path() string { return j.path }

// Len is how many orders the journal records an outcome of.
func (j *Journal) Len() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.recorded)
}

// Recorded is the last outcome the journal holds for an order.
func (j *Journal) Recorded(id string) (JournalEntry, bool) {
	j.mu.Lock()
	defer j.mu.Unlock()
	e, ok := j.recorded[id]
	return e, ok
}

// Record appends an order's outcome and syncs it to disk (when the
// journal has a file) before the next order is acted on.
func (j *Journal) Record(e JournalEntry) error {
	if j.file != nil {
		if err := j.writeLine(e); err != nil {
			return fmt.Errorf("journal %s: %w", j.path, err)
		}
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	j.recorded[e.OrderID] = e
	return nil
}

func (j *Journal) writeLine(v any) error {
	line, err := json.Marshal(v)
	if err != nil {
		return err
	}
	if _, err := j.file.Write(append(line, '\n')); err != nil {
		return err
	}
	return j.file.Sync()
}

// Close closes the journal's file, if it has one.
func (j *Journal) Close() error {
	if j.file == nil {
		return nil
	}
	return j.file.Close()
}

// BulkReport is what a bulk run did.
type BulkReport struct {
	Action  string `json:"action"`
	Journal string `json:"journal"`
	Planned int    `json:"planned"`
	// Skipped counts the planned orders an earlier run with the journal
	// did or had refused.
	Skipped int `json:"skipped"`
	Done    int `json:"done"`
	Refused int `json:"refused"`
	Failed  int `json:"failed"`
	// Problems are the orders refused or failed in this run, with why,
	// in the plan's order.
	Problems []JournalEntry `json:"problems"`
	// Interrupted says the run stopped before the end of its plan: run
	// it again with the same journal to resume.
	Interrupted bool `json:"interrupted,omitempty"`
}

// Left counts the planned orders not acted on yet.
func (r BulkReport) Left() int { return r.Planned - r.Skipped - r.Done - r.Refused - r.Failed }

// BulkOptions tunes a bulk run.
type BulkOptions struct {
	// Rate is how many orders a second at most; DefaultBulkRate when 0.
	Rate float64
	// Progress, when set, is told after each order.
	Progress func(BulkReport)
}

// RunBulk acts on each order of plan, in order, through the single-order
// operation (Redrive, Cancel, Move, SendEvent: each fenced, so an order
// that moved on since it was planned is refused, not acted on twice), at
// most opts.Rate orders a second, and records each outcome in j before
// the next. Orders j records as done or refused are skipped. When ctx
// ends, the order being acted on is finished and journaled, and the run
// stops with ctx's error and the report so far (Interrupted).
func (s *Stage) RunBulk(ctx context.Context, plan []Planned, a BulkAction, j *Journal, opts BulkOptions) (BulkReport, error) {
	if err := a.Check(); err != nil {
		return BulkReport{}, err
	}
	act := func(ctx context.Context, id string) error {
		var err error
		switch a.Kind {
		case BulkRedrive:
			_, err = s.Redrive(ctx, id, a.Redrive)
		case BulkCancel:
			_, err = s.Cancel(ctx, id)
		case BulkMove:
			_, err = s.Move(ctx, id, a.Version)
		case BulkSendEvent:
			_, err = s.SendEvent(ctx, id, a.Event, a.Data)
		}
		return err
	}
	perSecond := opts.Rate
	if perSecond == 0 {
		perSecond = DefaultBulkRate
	}
	if perSecond < 0 {
		return BulkReport{}, fmt.Errorf("rate %g: want more than 0 orders a second: %w", perSecond, order.ErrInvalid)
	}
	return runBulk(ctx, plan, a.String(), act, j, newPace(perSecond, s.now, sleepCtx), opts.Progress, s.now)
}

// pacer waits until the next order may be acted on.
type pacer interface {
	Wait(ctx context.Context) error
}

// pace spaces actions with a token bucket of one: never two orders at
// once, whatever came before. Its clock and sleep are injected so that a
// test checks the rate without waiting.
type pace struct {
	lim   *rate.Limiter
	now   func() time.Time
	sleep func(ctx context.Context, d time.Duration) error
}

func newPace(perSecond float64, now func() time.Time, sleep func(context.Context, time.Duration) error) *pace {
	return &pace{lim: rate.NewLimiter(rate.Limit(perSecond), 1), now: now, sleep: sleep}
}

func (p *pace) Wait(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	now := p.now()
	r := p.lim.ReserveN(now, 1)
	if d := r.DelayFrom(now); d > 0 {
		if err := p.sleep(ctx, d); err != nil {
			r.CancelAt(p.now())
			return err
		}
	}
	return nil
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// refused reports whether an operation's error is its refusal of the
// order (acting again would be refused again) rather than a failure.
func refused(err error) bool {
	return errors.Is(err, order.ErrNotAllowed) || errors.Is(err, order.ErrNotFound) || errors.Is(err, order.ErrInvalid) ||
		errors.Is(err, order.ErrConflict) || errors.Is(err, order.ErrTooLate) || errors.Is(err, control.ErrVersionUnknown)
}

func runBulk(ctx context.Context, plan []Planned, action string, act func(context.Context, string) error, j *Journal,
	p pacer, progress func(BulkReport), now func() time.Time) (BulkReport, error) {
	rep := BulkReport{Action: action, Journal: j.Path(), Planned: len(plan), Problems: []JournalEntry{}}
	for _, o := range plan {
		if e, ok := j.Recorded(o.OrderID); ok && e.Outcome != OutcomeFailed {
			rep.Skipped++
			continue
		}
		if err := p.Wait(ctx); err != nil {
			rep.Interrupted = true
			return rep, fmt.Errorf("bulk %s interrupted with %d orders left: run it again with journal %s to resume: %w", action, rep.Left(), j.Path(), err)
		}
		// Once begun, an order's action finishes and is journaled even if
		// the run is interrupted: it is never left done but unrecorded.
		actCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), bulkActTimeout)
		err := act(actCtx, o.OrderID)
		cancel()
		e := JournalEntry{OrderID: o.OrderID, Outcome: OutcomeDone, At: now().UTC()}
		switch {
		case err == nil:
			rep.Done++
		case refused(err):
			e.Outcome, e.Reason = OutcomeRefused, err.Error()
			rep.Refused++
		default:
			e.Outcome, e.Reason = OutcomeFailed, err.Error()
			rep.Failed++
		}
		if e.Outcome != OutcomeDone {
			rep.Problems = append(rep.Problems, e)
		}
		if err := j.Record(e); err != nil {
			rep.Interrupted = true
			return rep, fmt.Errorf("bulk %s stopped: %w", action, err)
		}
		if progress != nil {
			progress(rep)
		}
	}
	return rep, nil
}
