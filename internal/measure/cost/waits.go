package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
)

// The workflows with waits the cost run adds beside the shipped one, each
// the shipped workflow with steps that wait inserted.
const (
	TimerWorkflow = "cost-timer"
	EventWorkflow = "cost-event"
	WaitsWorkflow = "cost-waits"
	PollWorkflow  = "cost-poll"
)

// PollEvery is how often the cost run's polled payment is checked: its
// service's Retry-After, and the step's every.
const PollEvery = time.Minute

// The steps that wait in those workflows.
const (
	StepCoolOff = "cool-off"
	StepReview  = "manual-review"
	EventReview = "review"
)

// WaitWorkflows are the workflows with waits, made from base (the
// shipped workflow): a day's timer after the first step; a review event
// there, with two days to arrive; one with all three kinds, a review,
// a payment whose service calls back, and a timer before shipping; and
// one whose payment's service is polled.
func WaitWorkflows(base order.Workflow) []order.Workflow {
	timer := order.StepDef{Name: StepCoolOff, Wait: &order.Wait{For: 24 * time.Hour}}
	review := order.StepDef{Name: StepReview, Wait: &order.Wait{Event: EventReview, Timeout: 48 * time.Hour}}
	with := func(name string, at int, inserted ...order.StepDef) order.Workflow {
		wf := base
		wf.Name, wf.Version = name, "1"
		wf.Steps = slices.Insert(slices.Clone(base.Steps), at, inserted...)
		return wf
	}
	waits := with(WaitsWorkflow, 1, review)
	for i, d := range waits.Steps {
		if d.Name == ordertest.StepChargePayment {
			waits.Steps[i].Callback = &order.CallbackWait{Timeout: 2 * time.Hour, MaxTimeout: 6 * time.Hour}
			waits.Steps = slices.Insert(waits.Steps, i+1, timer)
			break
		}
	}
	polled := with(PollWorkflow, 0)
	for i, d := range polled.Steps {
		if d.Name == ordertest.StepChargePayment {
			polled.Steps[i].Poll = &order.PollWait{Timeout: 6 * time.Hour, Every: PollEvery}
		}
	}
	return []order.Workflow{with(TimerWorkflow, 1, timer), with(EventWorkflow, 1, review), waits, polled}
}

// How a wait of a cost run ends, once the clock has moved through it.
type WaitEnd string

const (
	// EndsAtItsTime: the clock passes the timer's time and the
	// Supervisor ends the wait.
	EndsAtItsTime WaitEnd = "timer"
	// EndsByEvent: the client sends the event through the API.
	EndsByEvent WaitEnd = "event"
	// EndsByCallback: the service calls back through the API.
	EndsByCallback WaitEnd = "callback"
	// EndsByPoll: the service's status says the work is done at the
	// next check. Until then every check says it goes on: the window
	// measures what the checks cost.
	EndsByPoll WaitEnd = "poll"
)

// Hold is one wait every order of a scenario goes through.
type Hold struct {
	Step string
	// For is how far the clock moves on while every order waits, with the
	// Supervisor running on its schedule.
	For  time.Duration
	Ends WaitEnd
}

// WaitScenarios are the paths through the workflows with waits: a day in
// a timer, a day waiting for an event, and the workflow with all three
// kinds of wait.
var WaitScenarios = []Scenario{
	{Name: "a day in a timer", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}, Want: order.StatusProcessed,
		Workflow: TimerWorkflow, Holds: []Hold{{StepCoolOff, 24 * time.Hour, EndsAtItsTime}}},
	{Name: "a day waiting for an event", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}, Want: order.StatusProcessed,
		Workflow: EventWorkflow, Holds: []Hold{{StepReview, 24 * time.Hour, EndsByEvent}}},
	{Name: "an event, a callback and a timer", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}, Want: order.StatusProcessed,
		Workflow: WaitsWorkflow, Holds: []Hold{
			{StepReview, time.Hour, EndsByEvent},
			{ordertest.StepChargePayment, 10 * time.Minute, EndsByCallback},
			{StepCoolOff, 24 * time.Hour, EndsAtItsTime},
		}},
	{Name: "an hour of a polled payment", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}, Want: order.StatusProcessed,
		Workflow: PollWorkflow, Holds: []Hold{{ordertest.StepChargePayment, time.Hour, EndsByPoll}}},
}

// Window is what the orders of a scenario cost while they all waited in
// one step and the clock moved through the wait.
type Window struct {
	Hold Hold
	// Moved is how far the clock moved, in Steps steps, each followed by
	// at least one whole Supervisor run.
	Moved time.Duration
	Steps int
	// Usage is every request the functions made meanwhile, for all the
	// orders; SupervisorRuns is about how many runs looked at the index.
	Usage          Usage
	LogBytes       int64
	SupervisorRuns float64
	// StoredBytes is what one order keeps stored while it waits, as
	// DynamoDB bills it: its item, its index entries and its history
	// items, each with 100 bytes of overhead.
	StoredBytes float64
	// Checks is how many checks of polled steps' status URLs the
	// window's service answered (EndsByPoll): what its usage paid for.
	Checks int
}

// PerCheck is the window's usage per check of a status URL, for a
// window of a polled step.
func (w Window) PerCheck() PerOrder {
	return Divide(w.Usage, max(w.Checks, 1), 0, w.LogBytes)
}

// PerOrder is the window's usage divided over the orders: its Lambda
// invocations, requests and units are what waiting adds to an order.
func (w Window) PerOrder(orders int) PerOrder {
	return Divide(w.Usage, orders, 0, w.LogBytes)
}

// clock is the machine's clock moved on by what the run advanced it: the
// engine's functions read it, so a day of waiting takes seconds.
type clock struct{ offset atomic.Int64 }

func (c *clock) Now() time.Time          { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *clock) Advance(d time.Duration) { c.offset.Add(int64(d)) }

// callbacks plays the services that call back and those that are
// polled: the call of a step whose service calls back is answered 202
// and its token kept, to call back with when the run ends the wait; a
// polled call is answered 202 with a status URL, whose checks say the
// work goes on until the run marks it done; every other call goes on to
// the simulator.
type callbacks struct {
	mu     sync.Mutex
	tokens map[string]string // order id -> token
	done   map[string]bool   // order id -> its polled work is done
	checks int
}

func newCallbacks() *callbacks {
	return &callbacks{tokens: map[string]string{}, done: map[string]bool{}}
}

// statusPath is where the polled service's status URLs are.
const statusPath = "/cost-status/"

// polled answers a polled call (202, its status URL) and each check of
// it (202 while the work goes on, then 200 with the answer).
func (c *callbacks) polled(r *http.Request, orderID string) *http.Response {
	answer := func(status int, h http.Header, body string) *http.Response {
		h.Set("Content-Type", "application/json")
		return &http.Response{StatusCode: status, Status: http.StatusText(status), Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: h, Body: io.NopCloser(strings.NewReader(body)), Request: r}
	}
	retry := strconv.Itoa(int(PollEvery / time.Second))
	if r.Method == http.MethodPost {
		return answer(http.StatusAccepted, http.Header{"Location": {statusPath + orderID}, "Retry-After": {retry}}, `{}`)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	if c.done[orderID] {
		return answer(http.StatusOK, http.Header{}, `{"id":"ch-`+orderID+`"}`)
	}
	return answer(http.StatusAccepted, http.Header{"Retry-After": {retry}}, `{"status":"working"}`)
}

// finish marks the polled work of orderID done.
func (c *callbacks) finish(orderID string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.done[orderID] = true
}

// checked is how many checks the polled service answered so far.
func (c *callbacks) checked() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.checks
}

// Transport wraps an agent's transport.
func (c *callbacks) Transport(next http.RoundTripper) http.RoundTripper {
	return roundTripper(func(r *http.Request) (*http.Response, error) {
		if id, ok := strings.CutPrefix(r.URL.Path, statusPath); ok && r.Method == http.MethodGet {
			return c.polled(r, id), nil
		}
		if r.Body == nil {
			return next.RoundTrip(r)
		}
		raw, err := io.ReadAll(r.Body)
		r.Body.Close()
		if err != nil {
			return nil, err
		}
		var body struct {
			OrderID  string `json:"orderId"`
			Callback *struct {
				Token string `json:"token"`
			} `json:"callback"`
		}
		if json.Unmarshal(raw, &body) == nil && r.Header.Get("Prefer") == "respond-async" {
			return c.polled(r, body.OrderID), nil
		}
		if json.Unmarshal(raw, &body) == nil && body.Callback != nil && body.Callback.Token != "" {
			c.mu.Lock()
			c.tokens[body.OrderID] = body.Callback.Token
			c.mu.Unlock()
			return &http.Response{StatusCode: http.StatusAccepted, Status: "202 Accepted", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header: http.Header{"Content-Type": {"application/json"}}, Body: io.NopCloser(strings.NewReader(`{}`)), Request: r}, nil
		}
		r.Body = io.NopCloser(bytes.NewReader(raw))
		return next.RoundTrip(r)
	})
}

func (c *callbacks) token(orderID string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tokens[orderID]
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// waitRun drives the orders of a scenario with waits: it submits them,
// and at each wait, once every order waits, moves the clock through it
// with the Supervisor running, measures what that cost, and ends it.
type waitRun struct {
	url         string
	observer    *dynamo.Store
	plain       *dynamodb.Client
	orders      resources.Table
	history     resources.Table
	workflows   order.Versions
	meter       *Meter
	logs        *logCounter
	clock       *clock
	callbacks   *callbacks
	skewGrace   time.Duration
	steps       int
	concurrency int
	supervisor  time.Duration
}

func (w *waitRun) run(ctx context.Context, sc Scenario, opts Options) (Result, error) {
	// What the scenario before left to the stream's consumers is its own.
	if err := w.settle(ctx); err != nil {
		return Result{}, err
	}
	w.meter.Reset()
	w.logs.Reset()
	began := time.Now()
	opts.Orders = opts.WaitOrders
	ids, err := w.submit(ctx, sc, opts)
	if err != nil {
		return Result{}, err
	}
	api := len(ids)
	var windows []Window
	for _, h := range sc.Holds {
		due, err := w.awaitWaiting(ctx, ids, h.Step)
		if err != nil {
			return Result{}, fmt.Errorf("wait %s: %w", h.Step, err)
		}
		win, err := w.window(ctx, ids, h, due)
		if err != nil {
			return Result{}, fmt.Errorf("wait %s: %w", h.Step, err)
		}
		windows = append(windows, win)
		n, err := w.end(ctx, ids, h, due)
		if err != nil {
			return Result{}, fmt.Errorf("end wait %s: %w", h.Step, err)
		}
		api += n
	}
	var errs []error
	for _, id := range ids {
		if err := awaitEnd(ctx, w.observer, id, sc.Want, time.Minute); err != nil {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		return Result{}, err
	}
	// The recorder's work on the orders' last writes is theirs.
	if err := w.settle(ctx); err != nil {
		return Result{}, err
	}
	u := w.meter.Usage()
	r := Result{Scenario: sc.Name, Workflow: sc.Workflow, Orders: len(ids), APIRequests: api, Usage: u,
		LogBytes: w.logs.Bytes(), Elapsed: time.Since(began), Windows: windows}
	r.PerOrder = Divide(u, r.Orders, r.APIRequests, r.LogBytes)
	r.Definition, _ = w.workflows.LatestOf(sc.Workflow)
	return r, nil
}

// submit posts the scenario's orders, Concurrency at a time.
func (w *waitRun) submit(ctx context.Context, sc Scenario, opts Options) ([]string, error) {
	var (
		mu   sync.Mutex
		ids  []string
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan int)
	for range opts.Concurrency {
		wg.Go(func() {
			for range next {
				id, err := postTo(ctx, w.url+"/workflows/"+sc.Workflow+"/orders", ordertest.Submission{CustomerID: "c-cost", Lines: sc.Lines})
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					ids = append(ids, id)
				}
				mu.Unlock()
			}
		})
	}
	for i := range opts.Orders {
		next <- i
	}
	close(next)
	wg.Wait()
	return ids, errors.Join(errs...)
}

// dueSpan is when the first and the last of the orders' waits end.
type dueSpan struct{ first, last time.Time }

// awaitWaiting waits until every order waits in step, and returns when
// their waits end.
func (w *waitRun) awaitWaiting(ctx context.Context, ids []string, step string) (dueSpan, error) {
	var due dueSpan
	deadline := time.Now().Add(2 * time.Minute)
	for _, id := range ids {
		for {
			o, steps, err := w.observer.GetOrder(ctx, id)
			if err != nil {
				return due, err
			}
			i := slices.IndexFunc(steps, func(s order.StepState) bool { return s.Step == step && s.ProcessState == order.Waiting })
			if i >= 0 {
				end := steps[i].CompleteBy
				if due.first.IsZero() || end.Before(due.first) {
					due.first = end
				}
				if end.After(due.last) {
					due.last = end
				}
				break
			}
			if o.Status.Terminal() || time.Now().After(deadline) {
				return due, fmt.Errorf("order %s is %s, not waiting in %s: %s", id, o.Status, step, o.LastError)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return due, nil
}

// window moves the clock through h in steps, each followed by a whole
// Supervisor run, and returns what the functions did meanwhile. It
// starts once the writes that began the wait (their history, their
// status events) are done, and stops a minute short of the first order's
// wait ending (a timer's time, which end passes).
func (w *waitRun) window(ctx context.Context, ids []string, h Hold, due dueSpan) (Window, error) {
	if err := w.settle(ctx); err != nil {
		return Window{}, err
	}
	stored, err := w.storedBytes(ctx, ids)
	if err != nil {
		return Window{}, err
	}
	moved := min(h.For, due.first.Sub(w.clock.Now())-time.Minute).Truncate(time.Second)
	if moved <= 0 {
		return Window{}, fmt.Errorf("the first order's wait ends at %s, too soon to move the clock through it", due.first)
	}
	before, logsBefore, checksBefore := w.meter.Usage(), w.logs.Bytes(), w.callbacks.checked()
	for i := range w.steps {
		w.clock.Advance(moved/time.Duration(w.steps) + boolDuration(i == w.steps-1, moved%time.Duration(w.steps)))
		if err := w.awaitSupervisor(ctx, 2); err != nil {
			return Window{}, err
		}
	}
	// The checks' replies, and the stream's consumers, are the window's.
	if err := w.settle(ctx); err != nil {
		return Window{}, err
	}
	u := w.meter.Usage().Minus(before)
	return Window{Hold: h, Moved: moved, Steps: w.steps, Usage: u, LogBytes: w.logs.Bytes() - logsBefore,
		SupervisorRuns: float64(u.IndexQueries) / resources.DueShards, StoredBytes: stored, Checks: w.callbacks.checked() - checksBefore}, nil
}

func boolDuration(b bool, d time.Duration) time.Duration {
	if b {
		return d
	}
	return 0
}

// end ends the wait every order waits in, and returns the API requests
// that took.
func (w *waitRun) end(ctx context.Context, ids []string, h Hold, due dueSpan) (int, error) {
	switch h.Ends {
	case EndsAtItsTime:
		// Past the last order's time by the Supervisor's grace.
		w.clock.Advance(max(due.last.Sub(w.clock.Now())+w.skewGrace+time.Second, 0))
		return 0, w.awaitSupervisor(ctx, 2)
	case EndsByEvent:
		return len(ids), w.each(ids, func(id string) error {
			return send(ctx, w.url+"/orders/"+id+"/events/"+EventReview, "", `{"decision":"approve"}`, http.StatusAccepted)
		})
	case EndsByPoll:
		// The next check of each says done: a Supervisor run after the
		// next check is due sends it.
		for _, id := range ids {
			w.callbacks.finish(id)
		}
		w.clock.Advance(PollEvery + w.skewGrace + time.Second)
		return 0, w.awaitSupervisor(ctx, 2)
	case EndsByCallback:
		return len(ids), w.each(ids, func(id string) error {
			token := w.callbacks.token(id)
			if token == "" {
				return fmt.Errorf("order %s: its service was never called with a callback", id)
			}
			body := `{"outcome":"succeeded","result":{"id":"ch-` + id + `"}}`
			if err := send(ctx, w.url+"/callbacks", "Orderly-Callback "+token, body, http.StatusOK); err != nil {
				return fmt.Errorf("order %s: %w", id, err)
			}
			return nil
		})
	}
	return 0, fmt.Errorf("a wait that ends by %q", h.Ends)
}

// each calls f for every id, the run's concurrency at a time.
func (w *waitRun) each(ids []string, f func(id string) error) error {
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan string)
	for range max(w.concurrency, 1) {
		wg.Go(func() {
			for id := range next {
				if err := f(id); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for _, id := range ids {
		next <- id
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

func (w *waitRun) settle(ctx context.Context) error { return settle(ctx, w.meter) }

// settle waits until the functions have made no request for a few
// seconds: the stream's consumers have recorded the writes before (the
// local stream poller looks for new shards every second).
func settle(ctx context.Context, meter *Meter) error {
	const quiet = 3 * time.Second
	total := func() int {
		n := 0
		for _, c := range meter.Usage().Calls {
			n += c
		}
		return n
	}
	deadline := time.Now().Add(time.Minute)
	last, quietSince := total(), time.Now()
	for time.Since(quietSince) < quiet {
		if time.Now().After(deadline) {
			return fmt.Errorf("the functions did not go quiet within a minute")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(50 * time.Millisecond)
		if n := total(); n != last {
			last, quietSince = n, time.Now()
		}
	}
	return nil
}

// awaitSupervisor waits until the Supervisor has queried every shard of
// the due index runs times more, so that at least runs-1 whole runs
// started after the call.
func (w *waitRun) awaitSupervisor(ctx context.Context, runs int) error {
	from := w.meter.Usage().IndexQueries
	deadline := time.Now().Add(20*w.supervisor + 10*time.Second)
	for w.meter.Usage().IndexQueries < from+runs*resources.DueShards {
		if time.Now().After(deadline) {
			return fmt.Errorf("the Supervisor did not run")
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
	return nil
}

// storedBytes is what an order keeps stored, on average over ids, as
// DynamoDB bills storage: every item's bytes plus 100, and every index
// entry's likewise; the order's item and its history items.
func (w *waitRun) storedBytes(ctx context.Context, ids []string) (float64, error) {
	total := 0
	for _, id := range ids {
		key := map[string]types.AttributeValue{w.orders.PartitionKey.Name: &types.AttributeValueMemberS{Value: id}}
		out, err := w.plain.GetItem(ctx, &dynamodb.GetItemInput{TableName: &w.orders.Name, Key: key, ConsistentRead: aws.Bool(true)})
		if err != nil {
			return 0, fmt.Errorf("read order %s: %w", id, err)
		}
		total += storedSize(w.orders, out.Item)
		page := dynamodb.NewQueryPaginator(w.plain, &dynamodb.QueryInput{
			TableName: &w.history.Name, KeyConditionExpression: aws.String("#id = :id"), ConsistentRead: aws.Bool(true),
			ExpressionAttributeNames:  map[string]string{"#id": w.history.PartitionKey.Name},
			ExpressionAttributeValues: map[string]types.AttributeValue{":id": &types.AttributeValueMemberS{Value: id}},
		})
		for page.HasMorePages() {
			out, err := page.NextPage(ctx)
			if err != nil {
				return 0, fmt.Errorf("read history of order %s: %w", id, err)
			}
			for _, it := range out.Items {
				total += storedSize(w.history, it)
			}
		}
	}
	return float64(total) / float64(max(len(ids), 1)), nil
}

// itemOverhead is what DynamoDB adds to each item and each index entry
// it bills storage for.
const itemOverhead = 100

// storedSize is the bytes an item is billed for in its table and in the
// indexes it appears in.
func storedSize(t resources.Table, item map[string]types.AttributeValue) int {
	if item == nil {
		return 0
	}
	n := ItemSize(item) + itemOverhead
	for _, ix := range t.Indexes {
		entry := indexEntry(t, ix, item)
		if entry == nil {
			continue
		}
		if ix.Projection == resources.ProjectInclude {
			entry = maps.Clone(entry)
			for _, a := range ix.NonKey {
				if v, ok := item[a]; ok {
					entry[a] = v
				}
			}
		}
		n += ItemSize(entry) + itemOverhead
	}
	return n
}

// send posts body to url, with an Authorization header when auth is
// set, and wants the status want.
func send(ctx context.Context, url, auth, body string, want int) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != want {
		raw, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return fmt.Errorf("POST %s: status %d, want %d: %s", req.URL.Path, resp.StatusCode, want, raw)
	}
	return nil
}

// Minus is the usage between v, taken earlier, and u.
func (u Usage) Minus(v Usage) Usage {
	out := Usage{Calls: map[Op]int{}, ConditionFailures: map[Op]int{},
		ConditionFailureWrites: u.ConditionFailureWrites - v.ConditionFailureWrites,
		TableWrites:            u.TableWrites - v.TableWrites, IndexWrites: u.IndexWrites - v.IndexWrites, Reads: u.Reads - v.Reads,
		IndexQueries: u.IndexQueries - v.IndexQueries, IndexQueryReads: u.IndexQueryReads - v.IndexQueryReads,
		IndexQueryItems:   u.IndexQueryItems - v.IndexQueryItems,
		StreamInvocations: u.StreamInvocations - v.StreamInvocations, StreamRecords: u.StreamRecords - v.StreamRecords,
		RequestMessages: u.RequestMessages - v.RequestMessages, ReplyMessages: u.ReplyMessages - v.ReplyMessages,
	}
	for op, n := range u.Calls {
		if d := n - v.Calls[op]; d != 0 {
			out.Calls[op] = d
		}
	}
	for op, n := range u.ConditionFailures {
		if d := n - v.ConditionFailures[op]; d != 0 {
			out.ConditionFailures[op] = d
		}
	}
	return out
}
