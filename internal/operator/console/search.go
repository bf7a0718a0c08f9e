package console

import (
	"crypto/rand"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
)

// Form fields of the search page besides the query's parameters: the
// search box, and the sealed page position.
const (
	fieldBox    = "q"
	fieldCursor = api.ParamCursor
)

// timeParams are the query's times, which the page takes as a day or a
// date and time in UTC (its date and datetime-local inputs) as well as
// RFC 3339.
var timeParams = []string{api.ParamCreatedFrom, api.ParamCreatedTo, api.ParamEndedFrom, api.ParamEndedTo}

// dateTimeLocal is how a datetime-local input sends its value (seconds
// only when they are set, or its step is under a minute).
const (
	dateTimeLocal        = "2006-01-02T15:04"
	dateTimeLocalSeconds = "2006-01-02T15:04:05"
)

func newSealer() *pagetoken.Sealer {
	key := make([]byte, pagetoken.MinKeyBytes)
	rand.Read(key) // never fails (crypto/rand)
	s, _ := pagetoken.New(key)
	return s
}

type searchPage struct {
	Stage    string
	Statuses []order.Status
	Limits   []int
	// Form holds the filters as given, to show them again; Invalid is
	// the one Problem names.
	Form    map[string]string
	Invalid string
	Problem string
	Query   order.Query
	Orders  []order.Summary
	// Counts, over the query's window (or order.DefaultCountWindow's:
	// Default),
	// each a link to the search of its status.
	Counts      *order.Counts
	CountLinks  []countLink
	AnyStatus   string
	Default     bool
	CountsError string
	// Later marks a page after the first, which counts nothing again: the
	// first page's counts are of the same search.
	Later bool
	// Next is the next page's link; First, on a later page, the first's.
	Next, First string
	// Bulk is the form that acts on every order the search finds: its
	// filters as typed (the page size and position aside), the events a
	// send-event may send, and the default limit of a plan.
	Bulk struct {
		Filters url.Values
		Events  []string
		Max     int
	}
}

type countLink struct {
	Status   order.Status
	N        int
	Href     string
	Selected bool
}

// search finds orders: GET /search with the query's parameters (status,
// customer, workflow, version, created_from … ended_to, limit), and a
// sealed cursor for a later page. The search box (q) opens the order it
// names, or else searches that customer's orders. Bad input is a 400
// that names the field, and reads nothing.
func (c *Console) search(w http.ResponseWriter, r *http.Request) {
	params := r.URL.Query()
	if params.Has(fieldBox) {
		c.searchBox(w, r, params)
		return
	}
	page := searchPage{Stage: c.name, Statuses: order.Statuses, Limits: []int{10, order.DefaultSearchLimit, 50, order.MaxSearchLimit}, Form: map[string]string{}}
	// The filters given, as typed: the links to other pages carry them
	// as they are.
	given, q, invalid, err := parseFilters(params, func(name string) bool { return name != fieldCursor })
	for name := range given {
		page.Form[name] = given.Get(name)
	}
	if err != nil {
		page.Problem, page.Invalid = err.Error(), invalid
		c.render(w, http.StatusBadRequest, "search", page)
		return
	}
	page.Query = q
	page.Bulk.Filters, page.Bulk.Events, page.Bulk.Max = url.Values{}, c.stage.Events(), ops.DefaultBulkMax
	for _, name := range bulkFilterParams {
		if v := given.Get(name); v != "" {
			page.Bulk.Filters.Set(name, v)
		}
	}
	if !slices.Contains(page.Limits, q.Limit) {
		page.Limits = append(page.Limits, q.Limit)
		slices.Sort(page.Limits)
	}
	for _, name := range timeParams {
		if _, ok := page.Form[name]; ok {
			page.Form[name] = map[string]time.Time{api.ParamCreatedFrom: q.CreatedFrom, api.ParamCreatedTo: q.CreatedTo,
				api.ParamEndedFrom: q.EndedFrom, api.ParamEndedTo: q.EndedTo}[name].UTC().Format(dateTimeLocalSeconds)
		}
	}
	var position []byte
	if token := params.Get(fieldCursor); token != "" {
		if position, err = c.positions.Open(q.Key(), token); err != nil {
			page.Problem = "The page position (cursor) is not one of this search's: it was altered, or the filters changed since. Start again from the first page."
			page.Invalid = fieldCursor
			page.First = searchHref(given)
			c.render(w, http.StatusBadRequest, "search", page)
			return
		}
		page.First = searchHref(given)
	}

	// The counts are of every status over the query's window, or the last
	// day's when it has none, while the page is read.
	// (To the second: the count links carry the window.)
	cq, defaulted := q.Bounded(c.now().Truncate(time.Second))
	cq.Status, page.Default = "", defaulted
	var counts order.Counts
	var countErr error
	var wg sync.WaitGroup
	page.Later = position != nil
	if !page.Later {
		wg.Go(func() { counts, countErr = c.stage.Count(r.Context(), cq, 0) })
	}
	found, err := c.stage.SearchPage(r.Context(), q, position)
	wg.Wait()
	switch {
	case errors.Is(err, order.ErrInvalid):
		page.Problem, page.Invalid, page.First = err.Error(), fieldCursor, searchHref(given)
		c.render(w, http.StatusBadRequest, "search", page)
		return
	case err != nil:
		c.fail(w, err)
		return
	}
	page.Orders = found.Orders
	if found.Next != nil {
		next := maps.Clone(given)
		next.Set(fieldCursor, c.positions.Seal(q.Key(), found.Next))
		page.Next = searchHref(next)
	}
	switch {
	case page.Later:
	case countErr != nil:
		c.log.Error("count orders for the search page", "error", countErr)
		page.CountsError = countErr.Error()
	default:
		page.Counts = &counts
		base := maps.Clone(given)
		if page.Default {
			base.Set(api.ParamCreatedFrom, cq.CreatedFrom.Format(time.RFC3339))
		}
		base.Del(api.ParamStatus)
		page.AnyStatus = searchHref(base)
		for _, sc := range counts.InOrder() {
			link := maps.Clone(base)
			link.Set(api.ParamStatus, string(sc.Status))
			page.CountLinks = append(page.CountLinks, countLink{Status: sc.Status, N: sc.N, Href: searchHref(link), Selected: sc.Status == q.Status})
		}
	}
	c.render(w, http.StatusOK, "search", page)
}

// parseFilters reads the search's filters of params that keep takes, as
// typed (an empty field is none): given holds them as typed, and q is the
// query they make, a time as the page's date and datetime-local inputs
// send it being UTC. A filter the query refuses is its error, and
// invalid names its field.
func parseFilters(params url.Values, keep func(name string) bool) (given url.Values, q order.Query, invalid string, err error) {
	given = url.Values{}
	query := map[string]string{}
	for name, values := range params {
		v := strings.TrimSpace(values[0])
		if !keep(name) || v == "" {
			continue
		}
		given.Set(name, v)
		if slices.Contains(timeParams, name) {
			v = rfc3339(v)
		}
		query[name] = v
	}
	q, err = api.ParseQuery(query)
	if err != nil {
		for name := range query {
			if strings.HasPrefix(err.Error(), "query parameter "+name+":") {
				invalid = name
			}
		}
		return given, q, invalid, err
	}
	return given, q, "", nil
}

// searchBox answers the search box: an order id that names an order
// opens it; anything else is a customer's id, searched with the other
// filters given.
func (c *Console) searchBox(w http.ResponseWriter, r *http.Request, params url.Values) {
	box := strings.TrimSpace(params.Get(fieldBox))
	if order.ValidID(box) {
		_, err := c.stage.Show(r.Context(), box)
		switch {
		case err == nil:
			http.Redirect(w, r, "/orders/"+url.PathEscape(box), http.StatusSeeOther)
			return
		case !errors.Is(err, order.ErrNotFound):
			c.fail(w, err)
			return
		}
	}
	rest := maps.Clone(params)
	rest.Del(fieldBox)
	rest.Del(fieldCursor)
	if box != "" {
		rest.Set(api.ParamCustomer, box)
	}
	http.Redirect(w, r, searchHref(rest), http.StatusSeeOther)
}

// rfc3339 is a time field's value as the query takes it: a day (a date
// input's) is midnight UTC, a date and time (a datetime-local input's) is
// UTC; anything else is left for the query to take or refuse.
func rfc3339(v string) string {
	for _, layout := range []string{time.DateOnly, dateTimeLocal, dateTimeLocalSeconds} {
		if t, err := time.Parse(layout, v); err == nil {
			return t.Format(time.RFC3339)
		}
	}
	return v
}

func searchHref(v url.Values) string {
	if len(v) == 0 {
		return "/search"
	}
	return "/search?" + v.Encode()
}

// Selected reports whether s is the status the page's form selects.
func (p searchPage) Selected(s order.Status) bool { return p.Form[api.ParamStatus] == string(s) }

// LimitSelected reports whether n is the page size the form selects.
func (p searchPage) LimitSelected(n int) bool {
	return p.Form[api.ParamLimit] == fmt.Sprint(n) || (p.Form[api.ParamLimit] == "" && n == order.DefaultSearchLimit)
}
