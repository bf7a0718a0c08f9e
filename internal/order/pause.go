package order

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// A pause is an operator's statement that a service, or a workflow, must
// not be worked on for a while: a partner's maintenance window, say. It
// holds orders without failing them (see docs/architecture.md, "Pauses").
//
// A paused service: its agent calls it no more; each request (a step's
// work, its undo, a status check) waits in the agent's queue, as behind
// an open circuit breaker, so the Supervisor moves its deadline on and
// counts no failure. Calls already under way finish.
//
// A paused workflow: a new order is held (written, its first step not
// started until the resume) or refused, as the operator chose. Orders
// already running go on.

// PauseKind is what a pause stops: a service or a workflow.
type PauseKind string

const (
	PauseService  PauseKind = "service"
	PauseWorkflow PauseKind = "workflow"
)

// Submissions is what a paused workflow does with a new order.
type Submissions string

const (
	// HoldSubmissions accepts a new order and starts it at the resume.
	HoldSubmissions Submissions = "hold"
	// RefuseSubmissions answers 503 with Retry-After (the pause's
	// expected end) and writes nothing.
	RefuseSubmissions Submissions = "refuse"
)

// Pause is one service's or workflow's pause, as stored: while Since is
// set it is on; a resume clears Since and sets Resumed.
type Pause struct {
	Kind PauseKind `json:"kind"`
	Name string    `json:"name"`
	// By is who paused (the operator's identity), Reason why. A pause
	// made again while on keeps its Since and takes the new By, Reason
	// and Until.
	By     string `json:"by,omitempty"`
	Reason string `json:"reason,omitempty"`
	// Since is when the pause began; zero when it is not on.
	Since time.Time `json:"since,omitzero"`
	// Until is when the operator expects it to end. It does not end it:
	// only a resume does. A pause on past Until is overrun, and the
	// stage alarms.
	Until time.Time `json:"until,omitzero"`
	// Submissions is, for a workflow, what its new orders get.
	Submissions Submissions `json:"submissions,omitempty"`
	// Resumed, ResumedBy and ResumeReason say how the last pause ended.
	Resumed      time.Time `json:"resumed,omitzero"`
	ResumedBy    string    `json:"resumedBy,omitempty"`
	ResumeReason string    `json:"resumeReason,omitempty"`
}

// On reports whether the pause holds now.
func (p Pause) On() bool { return !p.Since.IsZero() }

// Overrun reports whether the pause is on past the end the operator gave.
func (p Pause) Overrun(now time.Time) bool { return p.On() && now.After(p.Until) }

// Subject names what is paused, for people: "service payment".
func (p Pause) Subject() string { return string(p.Kind) + " " + p.Name }

// Held is the reason a held request or submission gives.
func (p Pause) Held() string {
	return fmt.Sprintf("%s paused by %s since %s (%s), expected to end by %s",
		p.Subject(), p.By, p.Since.UTC().Format(time.RFC3339), p.Reason, p.Until.UTC().Format(time.RFC3339))
}

// pauseKeyPrefix starts the key of a pause's item in the orders table: no
// order id has a '#' (see ValidID), so no order can collide with one.
const pauseKeyPrefix = "#pause#"

// PauseKey is the key of a pause's item in the orders table.
func PauseKey(kind PauseKind, name string) string {
	return pauseKeyPrefix + string(kind) + "#" + name
}

// PauseOfKey reads a pause item's key; ok is false for any other key.
func PauseOfKey(key string) (kind PauseKind, name string, ok bool) {
	rest, found := strings.CutPrefix(key, pauseKeyPrefix)
	if !found {
		return "", "", false
	}
	k, name, found := strings.Cut(rest, "#")
	kind = PauseKind(k)
	if !found || name == "" || (kind != PauseService && kind != PauseWorkflow) {
		return "", "", false
	}
	return kind, name, true
}

// Limits of a pause's request.
const (
	// MaxPause is the longest a pause may be said to last. A longer
	// window is made by pausing again before it ends.
	MaxPause = 7 * 24 * time.Hour
	// MaxPauseReason is the longest reason kept, in bytes.
	MaxPauseReason = 500
)

var (
	// ErrNotPaused marks a resume of something that is not paused.
	ErrNotPaused = errors.New("not paused")
	// ErrPaused marks a submission refused because its workflow is
	// paused: the API answers 503 with Retry-After.
	ErrPaused = errors.New("paused")
)

// PauseRequest is an operator's pause, before it is checked.
type PauseRequest struct {
	Kind        PauseKind
	Name        string
	For         time.Duration
	Reason      string
	By          string
	Submissions Submissions
}

// PlanPause checks a pause against the workflows the stage runs and
// returns the pause to store. Every rule broken is named, and nothing is
// to be written then.
func PlanPause(r PauseRequest, wfs Versions, now time.Time) (Pause, error) {
	var problems []string
	if problem := unknownPausable(r.Kind, r.Name, wfs); problem != "" {
		problems = append(problems, problem)
	}
	switch r.Kind {
	case PauseService:
		if r.Submissions != "" {
			problems = append(problems, "submissions are held or refused by a workflow's pause, not a service's")
		}
	case PauseWorkflow:
		switch r.Submissions {
		case "":
			r.Submissions = HoldSubmissions
		case HoldSubmissions, RefuseSubmissions:
		default:
			problems = append(problems, fmt.Sprintf("submissions %q: want %q or %q", r.Submissions, HoldSubmissions, RefuseSubmissions))
		}
	}
	switch {
	case r.For <= 0:
		problems = append(problems, "say how long the pause is expected to last (more than 0)")
	case r.For > MaxPause:
		problems = append(problems, fmt.Sprintf("%s is longer than a pause may be said to last (%s); pause again before it ends to make it longer", r.For, MaxPause))
	}
	if strings.TrimSpace(r.Reason) == "" {
		problems = append(problems, "say why (a reason)")
	} else if len(r.Reason) > MaxPauseReason {
		problems = append(problems, fmt.Sprintf("the reason is %d bytes; at most %d", len(r.Reason), MaxPauseReason))
	}
	if r.By == "" {
		problems = append(problems, "who pauses is not known")
	}
	if len(problems) > 0 {
		return Pause{}, fmt.Errorf("pause %s %s: %s: %w", r.Kind, r.Name, strings.Join(problems, "; "), ErrInvalid)
	}
	return Pause{Kind: r.Kind, Name: r.Name, By: r.By, Reason: strings.TrimSpace(r.Reason), Since: now.UTC(), Until: now.Add(r.For).UTC(), Submissions: r.Submissions}, nil
}

// CheckPausable refuses a kind or a name the stage's workflows do not
// have: what a resume, or a pause's history, is asked of.
func CheckPausable(kind PauseKind, name string, wfs Versions) error {
	if problem := unknownPausable(kind, name, wfs); problem != "" {
		return fmt.Errorf("%s: %w", problem, ErrInvalid)
	}
	return nil
}

// unknownPausable names what is wrong with a pause's kind and name, ""
// when the stage has them.
func unknownPausable(kind PauseKind, name string, wfs Versions) string {
	switch kind {
	case PauseService:
		if !slices.Contains(wfs.Agents(), name) {
			return fmt.Sprintf("no service %q in the stage's workflows (it has %s)", name, strings.Join(wfs.Agents(), ", "))
		}
	case PauseWorkflow:
		if !slices.Contains(wfs.Names(), name) {
			return fmt.Sprintf("no workflow %q in the stage (it has %s)", name, strings.Join(wfs.Names(), ", "))
		}
	default:
		return fmt.Sprintf("a pause of %q: want %q or %q", kind, PauseService, PauseWorkflow)
	}
	return ""
}

// PauseHistory is what a change of a pause's item adds to its history:
// one entry, and the event published with it.
func PauseHistory(before, after Pause, at time.Time) (HistoryEntry, bool) {
	switch {
	case after.On() && !before.On():
		return HistoryEntry{At: at, Record: -1, Event: PausedEvent, By: after.By, To: after.Until.UTC().Format(time.RFC3339), Reason: after.Reason}, true
	case after.On():
		return HistoryEntry{At: at, Record: -1, Event: PauseChangedEvent, By: after.By, From: before.Until.UTC().Format(time.RFC3339), To: after.Until.UTC().Format(time.RFC3339), Reason: after.Reason}, true
	case before.On():
		return HistoryEntry{At: at, Record: -1, Event: ResumedEvent, By: after.ResumedBy, From: before.Since.UTC().Format(time.RFC3339), Reason: after.ResumeReason}, true
	}
	return HistoryEntry{}, false
}

// The events of a pause's history.
const (
	PausedEvent       = "paused"
	PauseChangedEvent = "pause changed"
	ResumedEvent      = "resumed"
)

// PauseChange is a pause's change, published as an event for operators'
// rules: who paused or resumed what, and why.
type PauseChange struct {
	// ID identifies the change, for consumers that drop duplicates.
	ID    string `json:"eventId"`
	Event string `json:"event"`
	// Pause is the pause after the change; of a resume, PausedSince is
	// when the pause it ended began.
	Pause       Pause     `json:"pause"`
	PausedSince time.Time `json:"pausedSince,omitzero"`
	At          time.Time `json:"at"`
}

// PausedError refuses a submission to a workflow paused with submissions
// refused: nothing is written, and the client tries again after
// RetryAfter.
type PausedError struct {
	Pause Pause
	Now   time.Time
}

func (e *PausedError) Error() string {
	return fmt.Sprintf("workflow %s takes no new orders for now (paused for maintenance); try again in %d s", e.Pause.Name, e.RetryAfterSeconds())
}

func (e *PausedError) Unwrap() error { return ErrPaused }

// RetryAfterSeconds is when to try again: at the pause's stated end, or
// a minute from now when that has passed (an overrun pause), at least 1.
func (e *PausedError) RetryAfterSeconds() int {
	wait := e.Pause.Until.Sub(e.Now)
	if wait <= 0 {
		wait = time.Minute
	}
	return max(1, int((wait+time.Second-1)/time.Second))
}
