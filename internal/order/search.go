package order

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Search limits: a page holds DefaultSearchLimit orders unless the caller
// asks for up to MaxSearchLimit.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
)

// Query is a search of orders, newest first: every filter that is set
// must hold. A client's query is always of its own orders (Caller); an
// operator's may be of anyone's.
type Query struct {
	// Caller restricts the search to one principal's orders; the API
	// sets it to the client, whatever the client asked.
	Caller     string
	Status     Status
	CustomerID string
	Workflow   string
	Version    string
	// CreatedFrom and CreatedTo bound when the orders were submitted:
	// from inclusive, to exclusive; zero is unbounded.
	CreatedFrom, CreatedTo time.Time
	// EndedFrom and EndedTo bound when the orders reached a terminal
	// status (Processed, Failed, Cancelled, or Error); set, they exclude
	// the orders still running.
	EndedFrom, EndedTo time.Time
	Limit              int
}

// The query parameters of a search, as GET /orders takes them.
const (
	ParamStatus      = "status"
	ParamCustomer    = "customer"
	ParamWorkflow    = "workflow"
	ParamVersion     = "version"
	ParamCreatedFrom = "created_from"
	ParamCreatedTo   = "created_to"
	ParamEndedFrom   = "ended_from"
	ParamEndedTo     = "ended_to"
	ParamLimit       = "limit"
	ParamCursor      = "cursor"
)

// SearchParams lists every parameter a search takes.
var SearchParams = []string{ParamStatus, ParamCustomer, ParamWorkflow, ParamVersion,
	ParamCreatedFrom, ParamCreatedTo, ParamEndedFrom, ParamEndedTo, ParamLimit, ParamCursor}

// ParseQuery reads a search's query parameters (the cursor excepted,
// which the API opens). A parameter it does not know, a status that is
// not one, a time that is not RFC 3339, a range that ends before it
// starts, or a limit that is not 1 to MaxSearchLimit is ErrInvalid,
// naming the parameter.
func ParseQuery(params map[string]string) (Query, error) {
	q := Query{Limit: DefaultSearchLimit}
	invalid := func(name, problem string) (Query, error) {
		return Query{}, fmt.Errorf("query parameter %s: %s: %w", name, problem, ErrInvalid)
	}
	for name := range params {
		if !slices.Contains(SearchParams, name) {
			return invalid(Cut(name, 64), "not a search parameter (they are "+strings.Join(SearchParams, ", ")+")")
		}
	}
	if s, ok := params[ParamStatus]; ok {
		if !slices.Contains(Statuses, Status(s)) {
			return invalid(ParamStatus, fmt.Sprintf("%q is not a status (one of %s)", Cut(s, 64), statusNames()))
		}
		q.Status = Status(s)
	}
	for name, field := range map[string]*string{ParamCustomer: &q.CustomerID, ParamWorkflow: &q.Workflow, ParamVersion: &q.Version} {
		v, ok := params[name]
		if !ok {
			continue
		}
		if v == "" || len(v) > MaxFilterBytes {
			return invalid(name, fmt.Sprintf("must be 1 to %d bytes", MaxFilterBytes))
		}
		*field = v
	}
	for name, field := range map[string]*time.Time{ParamCreatedFrom: &q.CreatedFrom, ParamCreatedTo: &q.CreatedTo,
		ParamEndedFrom: &q.EndedFrom, ParamEndedTo: &q.EndedTo} {
		v, ok := params[name]
		if !ok {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, v)
		if err != nil {
			return invalid(name, fmt.Sprintf("%q is not an RFC 3339 time (like 2026-11-26T00:00:00Z)", Cut(v, 64)))
		}
		// To the millisecond, as the indexes hold times: a range within
		// one millisecond is empty, and refused below.
		*field = t.UTC().Truncate(time.Millisecond)
	}
	if !q.CreatedFrom.IsZero() && !q.CreatedTo.IsZero() && !q.CreatedFrom.Before(q.CreatedTo) {
		return invalid(ParamCreatedTo, "must be later than "+ParamCreatedFrom)
	}
	if !q.EndedFrom.IsZero() && !q.EndedTo.IsZero() && !q.EndedFrom.Before(q.EndedTo) {
		return invalid(ParamEndedTo, "must be later than "+ParamEndedFrom)
	}
	if v, ok := params[ParamLimit]; ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 || n > MaxSearchLimit {
			return invalid(ParamLimit, fmt.Sprintf("%q is not a whole number from 1 to %d", Cut(v, 64), MaxSearchLimit))
		}
		q.Limit = n
	}
	return q, nil
}

// MaxFilterBytes bounds a filter's value (a customer id, a workflow name).
const MaxFilterBytes = 256

func statusNames() string {
	names := make([]string, len(Statuses))
	for i, s := range Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}

// Matches reports whether an order, as found, meets every filter of q
// (its Limit aside); ended is when it reached a terminal status, zero
// while it runs.
func (q Query) Matches(o Order, ended time.Time) bool {
	in := func(t, from, to time.Time) bool {
		return (from.IsZero() || !t.Before(from)) && (to.IsZero() || t.Before(to))
	}
	switch {
	case q.Caller != "" && o.Caller != q.Caller,
		q.Status != "" && o.Status != q.Status,
		q.CustomerID != "" && o.CustomerID != q.CustomerID,
		q.Workflow != "" && o.Workflow != q.Workflow,
		q.Version != "" && o.Version != q.Version,
		!in(o.CreatedAt, q.CreatedFrom, q.CreatedTo):
		return false
	case !q.EndedFrom.IsZero() || !q.EndedTo.IsZero():
		return !ended.IsZero() && in(ended, q.EndedFrom, q.EndedTo)
	}
	return true
}

// Key is q's filters in one canonical string: a page token is bound to
// it, so that a token of one query does not continue another.
func (q Query) Key() string {
	ms := func(t time.Time) string {
		if t.IsZero() {
			return ""
		}
		return strconv.FormatInt(t.UnixMilli(), 10)
	}
	// Each field quoted, so that no value's characters can move a
	// field's boundary.
	fields := []string{q.Caller, string(q.Status), q.CustomerID, q.Workflow, q.Version,
		ms(q.CreatedFrom), ms(q.CreatedTo), ms(q.EndedFrom), ms(q.EndedTo), strconv.Itoa(q.Limit)}
	for i, f := range fields {
		fields[i] = strconv.Quote(f)
	}
	return strings.Join(fields, ",")
}

// Summary is an order as a search lists it.
type Summary struct {
	ID         string    `json:"orderId"`
	Caller     string    `json:"caller"`
	CustomerID string    `json:"customerId,omitempty"`
	Workflow   string    `json:"workflow"`
	Version    string    `json:"version"`
	Status     Status    `json:"status"`
	CreatedAt  time.Time `json:"createdAt"`
	// EndedAt is when it reached its terminal status; zero while it runs.
	EndedAt time.Time `json:"endedAt,omitzero"`
}

// SearchPage is one page of a search's orders, newest first, and where
// the next page starts (Next; nil when there is none). A page may hold
// fewer than the query's limit while more orders follow: each page reads
// a bounded part of the index.
type SearchPage struct {
	Orders []Summary
	Next   []byte
}
