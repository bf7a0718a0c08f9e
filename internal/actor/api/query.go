package api

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"orderly/internal/order"
)

// The query parameters of a search, as GET /orders takes them. They are
// the API's words for an order.Query's filters, so they live here and not
// in the domain.
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
// starts, or a limit that is not 1 to order.MaxSearchLimit is
// order.ErrInvalid, naming the parameter.
func ParseQuery(params map[string]string) (order.Query, error) {
	q := order.Query{Limit: order.DefaultSearchLimit}
	invalid := func(name, problem string) (order.Query, error) {
		return order.Query{}, fmt.Errorf("query parameter %s: %s: %w", name, problem, order.ErrInvalid)
	}
	for name := range params {
		if !slices.Contains(SearchParams, name) {
			return invalid(order.Cut(name, 64), "not a search parameter (they are "+strings.Join(SearchParams, ", ")+")")
		}
	}
	if s, ok := params[ParamStatus]; ok {
		if !slices.Contains(order.Statuses, order.Status(s)) {
			return invalid(ParamStatus, fmt.Sprintf("%q is not a status (one of %s)", order.Cut(s, 64), statusNames()))
		}
		q.Status = order.Status(s)
	}
	for name, field := range map[string]*string{ParamCustomer: &q.CustomerID, ParamWorkflow: &q.Workflow, ParamVersion: &q.Version} {
		v, ok := params[name]
		if !ok {
			continue
		}
		if v == "" || len(v) > order.MaxFilterBytes {
			return invalid(name, fmt.Sprintf("must be 1 to %d bytes", order.MaxFilterBytes))
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
			return invalid(name, fmt.Sprintf("%q is not an RFC 3339 time (like 2026-11-26T00:00:00Z)", order.Cut(v, 64)))
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
		if err != nil || n < 1 || n > order.MaxSearchLimit {
			return invalid(ParamLimit, fmt.Sprintf("%q is not a whole number from 1 to %d", order.Cut(v, 64), order.MaxSearchLimit))
		}
		q.Limit = n
	}
	return q, nil
}

func statusNames() string {
	names := make([]string, len(order.Statuses))
	for i, s := range order.Statuses {
		names[i] = string(s)
	}
	return strings.Join(names, ", ")
}
