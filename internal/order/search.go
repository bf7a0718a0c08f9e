package order

import (
	"strconv"
	"strings"
	"time"
)

// Search limits: a page holds DefaultSearchLimit orders unless the caller
// asks for up to MaxSearchLimit, and a filter's value (a customer id, a
// workflow name) holds at most MaxFilterBytes.
const (
	DefaultSearchLimit = 20
	MaxSearchLimit     = 100
	MaxFilterBytes     = 256
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
