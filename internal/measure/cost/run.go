package cost

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/local/engine"
	"orderly/internal/local/provision"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// Scenario is one path through the workflow, driven by the simulator's
// test values.
type Scenario struct {
	Name  string
	Lines []order.Line
	// Want is the status every order of the scenario must end in.
	Want order.Status
	// Workflow names the workflow the orders are submitted to (one of
	// WaitWorkflows); empty is the stage's default, the shipped one.
	Workflow string
	// Holds are the waits every order goes through, in turn: the run
	// moves the clock through each once every order waits in it.
	Holds []Hold
}

// Scenarios are the paths the cost model prices: the happy path first,
// then each failure path.
var Scenarios = []Scenario{
	{Name: "happy path", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}, Want: order.StatusProcessed},
	{Name: "transient faults", Lines: []order.Line{{SKU: "TEST-INVENTORY-TRANSIENT-2", Quantity: 1}}, Want: order.StatusProcessed},
	{Name: "permanent fault", Lines: []order.Line{{SKU: "TEST-PAYMENT-PERMANENT", Quantity: 1}}, Want: order.StatusFailed},
	{Name: "undo refused", Lines: []order.Line{{SKU: "TEST-PAYMENT-PERMANENT", Quantity: 1}, {SKU: "TEST-INVENTORY-UNDO-PERMANENT", Quantity: 1}}, Want: order.StatusError},
	{Name: "hang, then success", Lines: []order.Line{{SKU: "TEST-SHIPPING-HANG-1", Quantity: 1}}, Want: order.StatusProcessed},
}

// Options sizes a cost run.
type Options struct {
	Stage string
	// Orders per scenario, submitted Concurrency at a time.
	Orders      int
	Concurrency int
	Scenarios   []Scenario
	// Timing is the workflow's; zero means DefaultTiming.
	Timing order.Timing
	// Log receives the engine's own log lines (nil discards them).
	Log io.Writer
	// WaitSteps is how many steps the clock moves through each wait in,
	// each followed by a Supervisor run; zero means 6.
	WaitSteps int
	// WaitOrders is the orders of each scenario with waits; zero means
	// Orders, at most 25. Their numbers are exact counts, with no race in
	// them to average out, and each wait is a pause in the run.
	WaitOrders int
}

// Result is the measured usage of one scenario.
type Result struct {
	Scenario string
	// Workflow is the scenario's workflow: empty for the shipped one.
	Workflow    string
	Orders      int
	APIRequests int
	Usage       Usage
	LogBytes    int64
	PerOrder    PerOrder
	Elapsed     time.Duration
	// Windows are what the orders cost while they waited, one per Hold,
	// and Definition the workflow they waited in.
	Windows    []Window
	Definition order.Workflow
}

// DefaultTiming is short enough that the hang scenario's timeout and retry
// take seconds, and long enough that no healthy order on a loaded machine
// outlives its first deadline: the Supervisor would then read it and move
// its DueAt on, requests the path does not make in AWS.
var DefaultTiming = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 20 * time.Second, FailureThreshold: 3, ClaimWithin: 10 * time.Second}

// Run starts an engine whose functions' clients carry a Meter, drives each
// scenario's orders to their end, and returns what each cost.
func Run(ctx context.Context, awsCfg aws.Config, opts Options) ([]Result, error) {
	if opts.Scenarios == nil {
		opts.Scenarios = slices.Concat(Scenarios, WaitScenarios)
	}
	if opts.Timing == (order.Timing{}) {
		opts.Timing = DefaultTiming
	}
	opts.Orders = max(opts.Orders, 1)
	opts.Concurrency = max(opts.Concurrency, 1)
	if opts.WaitSteps <= 0 {
		opts.WaitSteps = 6
	}
	if opts.WaitOrders <= 0 {
		opts.WaitOrders = min(opts.Orders, 25)
	}
	plain := dynamodb.NewFromConfig(awsCfg)
	meter := NewMeter(plain)
	logs := &logCounter{}
	// The shipped workflows, and beside them the ones with waits the
	// wait scenarios submit to.
	shipped := ordertest.Built(opts.Timing)
	workflows, err := order.NewVersions(append(shipped.Workflows(), WaitWorkflows(shipped.Latest())...)...)
	if err != nil {
		return nil, fmt.Errorf("workflows with waits: %w", err)
	}
	clk, calls := &clock{}, newCallbacks()
	const supervisorEvery = 500 * time.Millisecond
	e, err := engine.New(ctx, awsCfg, engine.Config{
		Stage: opts.Stage, APIAddr: "127.0.0.1:0", SimulatorAddr: "127.0.0.1:0",
		Timing: opts.Timing, SupervisorEvery: supervisorEvery, Workflows: workflows,
		// Moved on through a day of waiting, while every order waits.
		Clock:        clk.Now,
		FunctionHTTP: func(string) func(http.RoundTripper) http.RoundTripper { return calls.Transport },
		// One Scheduler: in AWS one event source mapping delivers each
		// stream record once; two local ones would double the claims.
		Schedulers: 1,
		// Pollers as localrun's default, several batches at once as
		// Lambda's event source mapping runs them: a retry must not wait
		// behind another order's hung call (with one poller it did, ran
		// past its window and was retried again, a cost AWS never sees).
		QueueVisibility: opts.Timing.MaxAllowance + 10*time.Second,
		AgentBackoff:    agent.Backoff{Base: 20 * time.Millisecond, Cap: 200 * time.Millisecond},
		// Each path is priced as it is: with every order of a run failing
		// its first calls, a breaker would open and hold requests, which
		// is the path of a service that is down, not of a flaky one.
		Breaker: agent.Breaker{Failures: 1 << 30, OpenFor: time.Second},
		// DynamoDB's expiry off (items still carry ExpiresAt, in the same
		// writes): DynamoDB Local's expiry scans would only add load.
		WithoutTableTTL: true,
		Log:             slog.New(newFunctionLogs(logs, opts.Log)),
		APIOptions:      []func(*middleware.Stack) error{meter.AddTo},
	})
	if err != nil {
		return nil, fmt.Errorf("start engine: %w", err)
	}
	meter.Watch(e.Stack.Catalog, e.Stack.ResponseQueue.URL)
	// The run reads state through a store the meter does not see.
	observer := dynamo.NewStore(plain, e.Stack.Catalog.Orders.Name)

	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	defer func() {
		stop()
		<-done
		// The stage is the run's own; on a shared DynamoDB Local its
		// tables would stay for as long as the emulator runs.
		if err := provision.Delete(context.WithoutCancel(ctx), e.Clients(), e.Stack); err != nil && opts.Log != nil {
			fmt.Fprintf(opts.Log, "cost run: stage %s not removed: %v\n", opts.Stage, err)
		}
	}()

	// A few orders first, uncounted: a cold emulator (DynamoDB Local's JIT
	// above all) can make the first orders slow enough to look late.
	warm := opts
	warm.Orders, warm.Concurrency = 3, 3
	if _, err := runScenario(ctx, e.URL(), observer, meter, logs, Scenarios[0], warm); err != nil {
		return nil, fmt.Errorf("warm up: %w", err)
	}

	waits := &waitRun{url: e.URL(), observer: observer, plain: plain, orders: e.Stack.Catalog.Orders, history: e.Stack.Catalog.History,
		workflows: workflows, meter: meter, logs: logs, clock: clk, callbacks: calls, skewGrace: workflows.Latest().SkewGrace,
		steps: opts.WaitSteps, concurrency: opts.Concurrency, supervisor: supervisorEvery}
	var results []Result
	for _, sc := range opts.Scenarios {
		run := func() (Result, error) { return runScenario(ctx, e.URL(), observer, meter, logs, sc, opts) }
		if len(sc.Holds) > 0 {
			run = func() (Result, error) { return waits.run(ctx, sc, opts) }
		}
		r, err := run()
		if err != nil {
			return results, fmt.Errorf("scenario %s: %w", sc.Name, err)
		}
		results = append(results, r)
	}
	return results, nil
}

func runScenario(ctx context.Context, url string, observer *dynamo.Store, meter *Meter, logs *logCounter, sc Scenario, opts Options) (Result, error) {
	meter.Reset()
	logs.Reset()
	began := time.Now()
	ids := make(chan string, opts.Orders)
	errs := make(chan error, opts.Orders)
	next := make(chan int)
	var wg sync.WaitGroup
	for range opts.Concurrency {
		wg.Go(func() {
			for range next {
				id, err := post(ctx, url, ordertest.Submission{CustomerID: "c-cost", Lines: sc.Lines})
				if err == nil {
					err = awaitEnd(ctx, observer, id, sc.Want, 3*time.Minute) // a hang waits out its window behind a busy agent
				}
				if err != nil {
					errs <- err
					continue
				}
				ids <- id
			}
		})
	}
	for i := range opts.Orders {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := errors.Join(collect(errs)...); err != nil {
		return Result{}, err
	}
	// The recorder's work on the orders' last writes is theirs, and
	// nothing else should happen after an order ends: waiting until the
	// functions go quiet lets a late stray (a stale reply, a Supervisor
	// pass) show up in the counts, and leaves none to the next scenario.
	if err := settle(ctx, meter); err != nil {
		return Result{}, err
	}
	u := meter.Usage()
	r := Result{Scenario: sc.Name, Orders: opts.Orders, APIRequests: opts.Orders, Usage: u,
		LogBytes: logs.Bytes(), Elapsed: time.Since(began)}
	r.PerOrder = Divide(u, r.Orders, r.APIRequests, r.LogBytes)
	return r, nil
}

func collect(errs <-chan error) []error {
	var out []error
	for err := range errs {
		out = append(out, err)
	}
	return out
}

func post(ctx context.Context, url string, sub ordertest.Submission) (string, error) {
	return postTo(ctx, url+"/orders", sub)
}

// postTo submits an order at url, an orders resource.
func postTo(ctx context.Context, url string, sub ordertest.Submission) (string, error) {
	body, err := json.Marshal(sub)
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("POST %s: %w", req.URL.Path, err)
	}
	defer resp.Body.Close()
	var out struct{ OrderID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
		return "", fmt.Errorf("POST %s: status %d: %v", req.URL.Path, resp.StatusCode, err)
	}
	return out.OrderID, nil
}

// awaitEnd waits until the order reached want and, for Error, until its
// alert went out.
func awaitEnd(ctx context.Context, store *dynamo.Store, id string, want order.Status, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		o, steps, err := store.GetOrder(ctx, id)
		if err != nil {
			return err
		}
		settled := o.Status == want
		for _, st := range steps {
			settled = settled && !st.AlertPending
		}
		if settled {
			return nil
		}
		if o.Status == order.StatusProcessed || (o.Status == order.StatusError && want != order.StatusError) {
			return fmt.Errorf("order %s ended %s, want %s: %s", id, o.Status, want, o.LastError)
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("order %s still %s after %s", id, o.Status, timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// logCounter counts the bytes the functions log.
type logCounter struct{ n atomic.Int64 }

func (c *logCounter) Write(p []byte) (int, error) { c.n.Add(int64(len(p))); return len(p), nil }
func (c *logCounter) Bytes() int64                { return c.n.Load() }
func (c *logCounter) Reset()                      { c.n.Store(0) }

// functionServices are the engine's loggers that run as Lambda functions
// in AWS; the local stand-ins for API Gateway, the event sources and the
// simulator log too, but cost nothing there.
var functionServices = map[string]bool{"submit": true, "scheduler": true, "agent": true, "supervisor": true}

// functionLogs writes every record to out and counts, at the functions'
// deployed log level (INFO), the bytes of the functions' own records.
type functionLogs struct {
	counted, all slog.Handler
	isFunction   bool
}

func newFunctionLogs(counter *logCounter, out io.Writer) *functionLogs {
	if out == nil {
		out = io.Discard
	}
	return &functionLogs{
		counted: slog.NewJSONHandler(counter, nil),
		all:     slog.NewJSONHandler(out, nil),
	}
}

func (h *functionLogs) Enabled(context.Context, slog.Level) bool { return true }

func (h *functionLogs) Handle(ctx context.Context, r slog.Record) error {
	if h.isFunction && r.Level >= slog.LevelInfo {
		if err := h.counted.Handle(ctx, r); err != nil {
			return err
		}
	}
	if r.Level >= slog.LevelInfo {
		return h.all.Handle(ctx, r)
	}
	return nil
}

func (h *functionLogs) WithAttrs(attrs []slog.Attr) slog.Handler {
	isFunction := h.isFunction
	for _, a := range attrs {
		if a.Key == "service" && functionServices[a.Value.String()] {
			isFunction = true
		}
	}
	return &functionLogs{counted: h.counted.WithAttrs(attrs), all: h.all.WithAttrs(attrs), isFunction: isFunction}
}

func (h *functionLogs) WithGroup(name string) slog.Handler {
	return &functionLogs{counted: h.counted.WithGroup(name), all: h.all.WithGroup(name), isFunction: h.isFunction}
}
