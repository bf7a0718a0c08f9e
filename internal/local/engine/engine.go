// Package engine runs all of orderly in one process against AWS endpoints
// (local emulators, LocalStack or an account): it provisions the resources,
// builds the same services the Lambda functions run, and drives them the
// way Lambda's event sources would: an HTTP front for API Gateway, SQS
// pollers, a DynamoDB stream poller and a Supervisor ticker. It also runs
// the simulated remote services. `make run` and the end-to-end tests use it.
package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/alerting"
	"orderly/internal/actor/api"
	"orderly/internal/actor/api/openapi"
	"orderly/internal/actor/control"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/recorder"
	"orderly/internal/actor/scheduler"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	orderlyeb "orderly/internal/adapter/eventbridge"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/secret"
	"orderly/internal/adapter/services"
	"orderly/internal/adapter/sns"
	"orderly/internal/adapter/sqs"
	"orderly/internal/definition"
	"orderly/internal/local/localrun"
	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/metrics"
	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
	"orderly/internal/resources"
)

// DefaultSupervisorEvery is the local Supervisor's rate: more often than
// EventBridge's one-minute minimum, so local recoveries take seconds.
const DefaultSupervisorEvery = 2 * time.Second

// Config tunes a local engine.
type Config struct {
	// Stage names the resources: orderly-<stage>-orders and so on.
	Stage string
	// APIAddr is where the API listens, e.g. 127.0.0.1:8080; port 0 picks
	// one. It, ConsoleAddr and SimulatorAddr must be loopback addresses
	// (localrun.ListenLoopback).
	APIAddr string
	// ConsoleAddr, when set, is where the operator's web console listens
	// (package console), over the stage the engine runs.
	ConsoleAddr string
	// ConsoleHosts are names the console answers under besides loopback
	// with its port ("name" or "name:port"; see console.WithHosts).
	ConsoleHosts []string
	// RemoteURL is the base URL of the remote services Services does not
	// list, called without a credential (so a loopback URL). Empty starts
	// the simulator on SimulatorAddr and uses it.
	RemoteURL     string
	SimulatorAddr string
	// Services, when set, is how the agents reach the services it lists
	// (base URL and authentication, see package services); every other
	// service is at RemoteURL. A listed service no workflow calls is an
	// error, before anything is provisioned.
	Services services.Config
	// SimulatorLedger, when set, is the file where the simulator records
	// the remote work it did, so it survives restarts (see
	// simulator.WithLedger); Outages take services down for a while.
	SimulatorLedger string
	Outages         []simulator.Outage
	// LocalSecrets lets the engine create, with a random value, the
	// secret of a header-authenticated service Services points at its
	// simulator when it does not exist yet (see simulatorCredentials):
	// the emulators' Secrets Manager, under `make run`.
	LocalSecrets bool
	Timing       order.Timing
	// Workflows, when set, are the workflow versions the engine runs
	// (tests of version changes); empty means the shipped ones with Timing.
	Workflows order.Versions
	// Retention is how long ended orders and their history are kept;
	// zero means resources.DefaultRetention.
	Retention time.Duration
	// WithoutTableTTL provisions the tables with DynamoDB's expiry off
	// (see resources.Catalog.WithoutTableTTL); items still carry their
	// ExpiresAt. For tests sharing one DynamoDB Local.
	WithoutTableTTL bool
	// StatusEvents, when set, are the only statuses whose events reach
	// the local status queue (see resources.Catalog.StatusEvents).
	StatusEvents []order.Status
	// ParkFor is how often an order of a version the engine lacks is
	// looked at; zero means the Supervisor's default.
	ParkFor time.Duration
	// SupervisorEvery is how often the Supervisor runs (EventBridge's rate).
	SupervisorEvery time.Duration
	// Schedulers is how many Scheduler instances consume the stream, to
	// exercise claim races; each polls every shard.
	Schedulers int
	// Supervisors is how many Supervisors run (at least one), each on its
	// own ticker, racing for the same due steps.
	Supervisors int
	// ClockSkew spreads the clocks of the Schedulers, Supervisors and
	// agents over [-ClockSkew, +ClockSkew] around the machine's, to show
	// that skew inside CLOCK_SKEW_GRACE loses nothing.
	ClockSkew time.Duration
	// QueueVisibility overrides the catalog's visibility timeouts, so a
	// failed message comes back quickly when running locally. 0 keeps them.
	QueueVisibility time.Duration
	// AgentBackoff is the agents' retry backoff; zero uses the default.
	AgentBackoff agent.Backoff
	// Breaker tunes the agents' circuit breakers; zero uses the default.
	Breaker agent.Breaker
	// WrapAgent, when set, wraps each agent's handler; tests use it to
	// inject crashes the way a dying Lambda would produce them.
	WrapAgent func(agent string, h SQSHandler) SQSHandler
	Log       *slog.Logger
	// Metrics receives EMF lines; nil discards them.
	Metrics *os.File
	// SQSPollers is how many pollers read each queue at once (batches in
	// the handler at once); zero means localrun's default.
	SQSPollers int
	// StateDir, when set, is where the local stream pollers keep their
	// checkpoints, so a restarted engine resumes the stream where it
	// stopped instead of replaying it from the oldest record.
	StateDir string
	// APIOptions adds SDK middleware to the clients the functions use
	// (not provisioning's, nor the local event sources'); the cost meter
	// counts requests this way.
	APIOptions []func(*middleware.Stack) error
	// FunctionAPIOptions, when set, adds SDK middleware to the clients of
	// one function, named as the stack names it (resources.FunctionSubmit,
	// resources.AgentFunction and so on): each function has clients of its
	// own, as each Lambda function has, and the role check records each
	// one's calls this way.
	FunctionAPIOptions func(function string) []func(*middleware.Stack) error
	// FunctionHTTP, when set, wraps the HTTP transport an agent function
	// calls its remote service through, under the service's
	// authentication: the role check records the signed calls this way
	// (remote.IAMCallOf).
	FunctionHTTP func(function string) func(http.RoundTripper) http.RoundTripper
}

// SQSHandler is the signature of an SQS-triggered function.
type SQSHandler = func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)

// Engine is a running orderly.
type Engine struct {
	cfg   Config
	Stack provision.Stack
	Store *dynamo.Store
	API   *api.Service
	apiLn net.Listener
	simLn net.Listener
	conLn net.Listener // nil without a console
	Sim   *simulator.Server
	// History is the history table the recorder writes.
	History *dynamo.History
	remote  string
	// services is how each agent reaches its service.
	services services.Config
	clients  provision.Clients // provisioning and the local event sources
	fnCfg    aws.Config        // the functions' clients are made from it
	streams  *dynamodbstreams.Client
}

// New provisions the resources and builds the engine without starting it.
func New(ctx context.Context, awsCfg aws.Config, cfg Config) (*Engine, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	if cfg.Schedulers < 1 {
		cfg.Schedulers = 1
	}
	if err := cfg.Timing.Validate(); err != nil {
		return nil, fmt.Errorf("engine timing: %w", err)
	}
	// The servers act without authentication: loopback only, checked
	// before the stage is provisioned.
	for _, l := range []struct {
		name, addr string
		used       bool
	}{
		{"API", cfg.APIAddr, true},
		{"console", cfg.ConsoleAddr, cfg.ConsoleAddr != ""},
		{"simulator", cfg.SimulatorAddr, cfg.RemoteURL == ""},
	} {
		if err := localrun.CheckLoopback(l.addr); l.used && err != nil {
			return nil, fmt.Errorf("engine: the %s: %w", l.name, err)
		}
	}
	// Its EventBridge client provisions only: the recorder's publisher is
	// made from fnCfg.
	e := &Engine{cfg: cfg, clients: provision.NewClients(awsCfg), streams: dynamodbstreams.NewFromConfig(awsCfg)}
	e.fnCfg = awsCfg.Copy()
	e.fnCfg.APIOptions = append(slices.Clone(e.fnCfg.APIOptions), cfg.APIOptions...)

	if len(cfg.Workflows.Known()) == 0 {
		shipped, err := definition.Shipped(cfg.Timing)
		if err != nil {
			return nil, fmt.Errorf("engine: %w", err)
		}
		cfg.Workflows = shipped
	}
	e.cfg.Workflows = cfg.Workflows
	workflows := cfg.Workflows
	// Every service's configuration is checked before anything is
	// provisioned; the simulator's port is known only later.
	fallback := cfg.RemoteURL
	if fallback == "" {
		fallback = "http://" + cfg.SimulatorAddr
	}
	if _, err := cfg.Services.Resolve(workflows.Agents(), fallback, "services", "the remote URL"); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := checkSimulated(cfg); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := checkLocalSecrets(ctx, awsCfg, cfg); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	catalog := resources.New(cfg.Stage, workflows.Agents())
	if cfg.WithoutTableTTL {
		catalog = catalog.WithoutTableTTL()
	}
	for _, s := range cfg.StatusEvents {
		catalog.StatusEvents = append(catalog.StatusEvents, string(s))
	}
	if cfg.QueueVisibility > 0 {
		catalog.ResponseQueue.VisibilityTimeout = cfg.QueueVisibility
		for a, q := range catalog.RequestQueues {
			q.VisibilityTimeout = cfg.QueueVisibility
			catalog.RequestQueues[a] = q
		}
	}
	stack, err := provision.Create(ctx, e.clients, catalog)
	if err != nil {
		return nil, fmt.Errorf("provision stage %s: %w", cfg.Stage, err)
	}
	e.Stack = stack
	fns := e.functionClients("")
	e.Store = e.store(fns)
	e.History = dynamo.NewHistory(fns.DynamoDB, catalog.History.Name)
	submit := e.functionClients(resources.FunctionSubmit)
	// The submission function reads its page token key as in AWS: at its
	// first search.
	pages := pagetoken.Loaded(func(ctx context.Context) ([]byte, error) {
		return secret.Key(ctx, submit.SecretsManager, catalog.PageTokenSecret, pagetoken.MinKeyBytes)
	})
	if e.API, err = api.NewService(api.Config{
		InstanceID: "submit-local-" + rand.Text()[:6], Store: e.store(submit).As("submit"),
		Controls:   control.New(e.store(submit).As(control.ByClientCancel), e.store(submit).As(control.ByOperatorRedrive), workflows, time.Now),
		History:    dynamo.NewHistory(submit.DynamoDB, catalog.History.Name),
		Dispatcher: e.dispatcher(submit, "submit"), Workflows: workflows, Now: time.Now,
		Log: cfg.Log.With("service", "submit"), Metrics: e.metrics("submit"), PageTokens: pages,
	}); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}

	if e.apiLn, err = localrun.ListenLoopback(cfg.APIAddr); err != nil {
		return nil, fmt.Errorf("listen for the API on %s: %w", cfg.APIAddr, err)
	}
	if cfg.ConsoleAddr != "" {
		if e.conLn, err = localrun.ListenLoopback(cfg.ConsoleAddr); err != nil {
			e.apiLn.Close()
			return nil, fmt.Errorf("listen for the console on %s: %w", cfg.ConsoleAddr, err)
		}
	}
	closeAll := func() {
		e.apiLn.Close()
		if e.conLn != nil {
			e.conLn.Close()
		}
	}
	e.remote = cfg.RemoteURL
	if e.remote == "" {
		if e.simLn, err = localrun.ListenLoopback(cfg.SimulatorAddr); err != nil {
			closeAll()
			return nil, fmt.Errorf("listen for the simulator on %s: %w", cfg.SimulatorAddr, err)
		}
		opts := []simulator.Option{simulator.WithLogger(cfg.Log.With("service", "simulator"))}
		if cfg.SimulatorLedger != "" {
			opts = append(opts, simulator.WithLedger(cfg.SimulatorLedger))
		}
		for _, o := range cfg.Outages {
			opts = append(opts, simulator.WithOutage(o))
		}
		required, err := e.simulatorCredentials(ctx, awsCfg, cfg)
		if err != nil {
			closeAll()
			e.simLn.Close()
			return nil, err
		}
		opts = append(opts, required...)
		sim, err := simulator.New(opts...)
		if err != nil {
			closeAll()
			e.simLn.Close()
			return nil, fmt.Errorf("simulator: %w", err)
		}
		e.Sim = sim
		e.remote = "http://" + e.simLn.Addr().String()
	}
	if e.services, err = cfg.Services.Resolve(workflows.Agents(), e.remote, "services", "the remote URL"); err != nil {
		closeAll()
		if e.simLn != nil {
			e.simLn.Close()
		}
		return nil, fmt.Errorf("engine: %w", err)
	}
	return e, nil
}

// URL is the base URL of the API.
func (e *Engine) URL() string { return "http://" + e.apiLn.Addr().String() }

// ConsoleURL is the base URL of the web console; empty without one.
func (e *Engine) ConsoleURL() string {
	if e.conLn == nil {
		return ""
	}
	return "http://" + e.conLn.Addr().String() + "/"
}

// RemoteURL is the base URL of the remote services (the simulator's).
func (e *Engine) RemoteURL() string { return e.remote }

// Clients returns the SDK clients the engine uses.
func (e *Engine) Clients() provision.Clients { return e.clients }

// functionClients are the SDK clients of one function (resources'
// Function names; empty for the engine's own reads), with the middleware
// the configuration adds to the functions' and to that one's.
func (e *Engine) functionClients(function string) provision.Clients {
	cfg := e.functionConfig(function)
	return provision.NewClients(cfg)
}

// functionConfig is the SDK configuration of one function's clients.
func (e *Engine) functionConfig(function string) aws.Config {
	cfg := e.fnCfg.Copy()
	if function != "" && e.cfg.FunctionAPIOptions != nil {
		cfg.APIOptions = append(slices.Clone(cfg.APIOptions), e.cfg.FunctionAPIOptions(function)...)
	}
	return cfg
}

// remoteClient is an agent's client of its one service, as the agent
// Lambda builds it: the service's secret read and its calls signed with
// the agent function's own SDK configuration.
func (e *Engine) remoteClient(agentName string) *remote.Client {
	function := resources.AgentFunction(agentName)
	hc := &http.Client{}
	if e.cfg.FunctionHTTP != nil {
		hc.Transport = e.cfg.FunctionHTTP(function)(http.DefaultTransport)
	}
	own := services.Config{agentName: e.services[agentName]}
	return remote.NewClientFor(remote.ServicesFrom(own, e.functionConfig(function)), hc, e.cfg.Workflows)
}

// store is the orders table through a function's clients.
func (e *Engine) store(c provision.Clients) *dynamo.Store {
	return dynamo.NewStore(c.DynamoDB, e.Stack.Catalog.Orders.Name).Retain(e.cfg.Retention)
}

// dispatcher sends claimed steps' requests on behalf of a function.
func (e *Engine) dispatcher(c provision.Clients, service string) *dispatch.Dispatcher {
	requests := sqs.NewRequests(c.SQS, e.Stack.RequestQueueURLs())
	return dispatch.New(requests, e.store(c).As(service), e.cfg.Timing.ClaimWithin, time.Now,
		e.cfg.Log.With("service", service), e.metrics(service))
}

func (e *Engine) metrics(service string) *metrics.Recorder {
	if e.cfg.Metrics == nil {
		return metrics.Discard()
	}
	return metrics.New(e.cfg.Metrics, service).In(metrics.StageNamespace(e.cfg.Stage))
}

// Run starts every component and blocks until ctx is cancelled or one of
// them fails.
func (e *Engine) Run(ctx context.Context) error {
	// Build every component first, so a construction error leaves nothing
	// running; then start them all.
	type component struct {
		name string
		run  func(context.Context) error
	}
	var components []component
	add := func(name string, run func(context.Context) error) {
		components = append(components, component{name, run})
	}
	workflows := e.cfg.Workflows

	// API Gateway in front of the submission function, with the API's
	// own routing table.
	var routes []localrun.Route
	for _, r := range api.Routes() {
		routes = append(routes, localrun.Route{Method: r.Method, Resource: r.Resource})
	}
	gateway := localrun.NewAPIGateway(e.API.Handle, routes, e.cfg.Log.With("service", "apigateway"))
	// The API's description is served beside it, as API Gateway can export
	// a stage's.
	// (Not a ServeMux, which would redirect paths the gateway answers.)
	doc := openapi.JSON(workflows)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/openapi.json" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
			return
		}
		gateway.ServeHTTP(w, r)
	})
	apiServer := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	add("api", serve(apiServer, e.apiLn))
	if e.conLn != nil {
		// The operator's console, over the stage as the CLI opens it.
		stage := ops.Open(e.cfg.Stage, e.clients.DynamoDB, e.clients.SQS, e.cfg.Workflows)
		conServer := &http.Server{Handler: console.New(e.cfg.Stage, stage, e.cfg.Log.With("service", "console")).WithHosts(e.cfg.ConsoleHosts...), ReadHeaderTimeout: 5 * time.Second}
		add("console", serve(conServer, e.conLn))
	}
	if e.Sim != nil {
		// The simulated services outlive the engine's own components: a
		// call in flight when it stops is answered, as a real service
		// would answer it, instead of failing (and tripping the agent's
		// circuit breaker, which holds the request back).
		simServer := &http.Server{Handler: e.Sim, ReadHeaderTimeout: 5 * time.Second}
		simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
		simDone := make(chan error, 1)
		go func() { simDone <- serve(simServer, e.simLn)(simCtx) }()
		defer func() {
			stopSim()
			<-simDone
			e.Sim.Close()
		}()
	}

	// The recorder: the orders table's stream, unfiltered, into the
	// history and the event bus.
	recClients := e.functionClients(resources.FunctionRecorder)
	rec := recorder.New(dynamo.NewHistory(recClients.DynamoDB, e.Stack.Catalog.History.Name), orderlyeb.NewPublisher(recClients.EventBridge, e.Stack.Catalog.EventBus),
		e.cfg.Log.With("service", "recorder"), e.metrics("recorder")).Retain(e.cfg.Retention)
	recCfg := localrun.StreamConfig{StreamARN: e.Stack.StreamARN, Timeout: resources.RecorderTimeout}
	if e.cfg.StateDir != "" {
		checkpoints, err := localrun.NewFileCheckpoints(filepath.Join(e.cfg.StateDir, e.cfg.Stage+"-recorder-stream.json"), e.Stack.StreamARN)
		if err != nil {
			return fmt.Errorf("recorder stream checkpoints: %w", err)
		}
		recCfg.Checkpoints = checkpoints
	}
	recStream, err := localrun.NewStreamPoller(e.streams, recCfg, rec.HandleStream, e.cfg.Log.With("service", "stream", "consumer", "recorder"))
	if err != nil {
		return fmt.Errorf("recorder stream poller: %w", err)
	}
	add("recorder", recStream.Run)

	// Schedulers: each consumes the orders table's stream and the
	// response queue.
	schedClients := e.functionClients(resources.FunctionScheduler)
	notifier := alerting.NewNotifier(sns.NewAlerter(schedClients.SNS, e.Stack.AlertTopicARN), e.store(schedClients).As("scheduler"), time.Now)
	for i := range e.cfg.Schedulers {
		now := e.clock(i, e.cfg.Schedulers)
		id := fmt.Sprintf("scheduler-local-%d-%s", i, rand.Text()[:6])
		sched := scheduler.New(scheduler.Config{
			InstanceID: id, Store: e.store(schedClients).As("scheduler " + id), Dispatcher: e.dispatcher(schedClients, "scheduler "+id), Notifier: notifier,
			Workflows: workflows, Now: now, Log: e.cfg.Log.With("service", "scheduler", "clock_offset", time.Until(now()).Round(time.Millisecond).String()), Metrics: e.metrics("scheduler"),
		})
		streamCfg := localrun.StreamConfig{StreamARN: e.Stack.StreamARN, Timeout: resources.SchedulerTimeout}
		if e.cfg.StateDir != "" {
			path := filepath.Join(e.cfg.StateDir, fmt.Sprintf("%s-scheduler-%d-stream.json", e.cfg.Stage, i))
			checkpoints, err := localrun.NewFileCheckpoints(path, e.Stack.StreamARN)
			if err != nil {
				return fmt.Errorf("stream checkpoints: %w", err)
			}
			streamCfg.Checkpoints = checkpoints
		}
		stream, err := localrun.NewStreamPoller(e.streams, streamCfg, sched.HandleStream,
			e.cfg.Log.With("service", "stream", "scheduler", id))
		if err != nil {
			return fmt.Errorf("stream poller: %w", err)
		}
		add("stream poller", stream.Run)
		replies, err := localrun.NewSQSPoller(e.clients.SQS, localrun.SQSConfig{
			QueueURL: e.Stack.ResponseQueue.URL, QueueARN: e.Stack.ResponseQueue.ARN, Timeout: resources.SchedulerTimeout,
			Concurrency: e.cfg.SQSPollers,
		}, sched.HandleReplies, e.cfg.Log.With("service", "responses"))
		if err != nil {
			return fmt.Errorf("response poller: %w", err)
		}
		add("response poller", replies.Run)
	}

	// Agents: one per request queue, each calling its remote service.
	agentNames := slices.Sorted(maps.Keys(e.Stack.RequestQueues))
	for i, name := range agentNames {
		q := e.Stack.RequestQueues[name]
		c := e.functionClients(resources.AgentFunction(name))
		replier := sqs.NewReplies(c.SQS, e.Stack.ResponseQueue.URL)
		holder := sqs.NewRequests(c.SQS, e.Stack.RequestQueueURLs())
		ag := agent.New(agent.Config{
			Name: name, Remote: e.remoteClient(name), Replies: replier, Backoff: e.cfg.AgentBackoff, ReplyMargin: agent.DefaultReplyMargin,
			TryTimeout: agent.DefaultTryTimeout, Deadlines: e.store(c).As("agent " + name), Workflows: workflows, Holder: holder, Breaker: e.cfg.Breaker,
			Now: e.clock(i, len(agentNames)), Log: e.cfg.Log.With("service", "agent"), Metrics: e.metrics(name + "-agent"),
		})
		var handle SQSHandler = ag.Handle
		if e.cfg.WrapAgent != nil {
			handle = e.cfg.WrapAgent(name, handle)
		}
		poller, err := localrun.NewSQSPoller(e.clients.SQS, localrun.SQSConfig{
			QueueURL: q.URL, QueueARN: q.ARN, Timeout: resources.AgentTimeout, Concurrency: e.cfg.SQSPollers,
		}, handle, e.cfg.Log.With("service", name+"-requests"))
		if err != nil {
			return fmt.Errorf("%s poller: %w", name, err)
		}
		add(name+" poller", poller.Run)
	}

	// Supervisors, each on a ticker as EventBridge would invoke one.
	supervisors := max(e.cfg.Supervisors, 1)
	supClients := e.functionClients(resources.FunctionSupervisor)
	supAlerter := sns.NewAlerter(supClients.SNS, e.Stack.AlertTopicARN)
	for i := range supervisors {
		now := e.clock(i, supervisors)
		log := e.cfg.Log.With("service", "supervisor", "clock_offset", time.Until(now()).Round(time.Millisecond).String())
		sup := supervisor.New(supervisor.Config{
			Store: e.store(supClients).As("supervisor"), Notifier: alerting.NewNotifier(supAlerter, e.store(supClients).As("supervisor"), now),
			Backlogs: sqs.NewBacklogs(supClients.SQS, e.Stack.RequestQueueURLs(), e.Stack.ResponseQueue.URL), Workflows: workflows, ParkFor: e.cfg.ParkFor,
			Now: now, Log: log, Metrics: e.metrics("supervisor"),
		})
		add(fmt.Sprintf("supervisor %d", i), func(ctx context.Context) error {
			t := time.NewTicker(e.cfg.SupervisorEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
					if _, err := sup.Run(ctx); err != nil && ctx.Err() == nil {
						log.Error("supervisor run failed", "error", err)
					}
				}
			}
		})
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for _, c := range components {
		wg.Go(func() {
			if err := c.run(ctx); err != nil && ctx.Err() == nil {
				cancel(fmt.Errorf("%s: %w", c.name, err))
			}
		})
	}
	e.cfg.Log.Info("orderly running", "api", e.URL(), "console", e.ConsoleURL(), "remote", e.remote, "stage", e.cfg.Stage)
	<-ctx.Done()
	shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
	defer stop()
	apiServer.Shutdown(shutdown)
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func serve(srv *http.Server, ln net.Listener) func(context.Context) error {
	return func(ctx context.Context) error {
		go func() {
			<-ctx.Done()
			srv.Close()
		}()
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// clock is the clock of instance i of n of one kind: the machine's, moved
// by an offset spread evenly over [-ClockSkew, +ClockSkew].
func (e *Engine) clock(i, n int) func() time.Time {
	if e.cfg.ClockSkew <= 0 {
		return time.Now
	}
	offset := e.cfg.ClockSkew // a lone instance runs ahead by all of it
	if n > 1 {
		offset = time.Duration(float64(e.cfg.ClockSkew) * (2*float64(i)/float64(n-1) - 1))
	}
	return func() time.Time { return time.Now().Add(offset) }
}

// simulatorCredentials makes the simulator check the credential of every
// service with header authentication that Services points at it (at
// SimulatorAddr): it answers 401 unless the header holds the secret's
// value, which the agent reads from Secrets Manager as in AWS. With
// LocalSecrets a secret that does not exist yet is created, with a random
// value: `make run` needs no set-up, and the whole path (fetch, cache,
// header) runs locally. The value is never logged.
func (e *Engine) simulatorCredentials(ctx context.Context, awsCfg aws.Config, cfg Config) ([]simulator.Option, error) {
	var opts []simulator.Option
	client := secretsmanager.NewFromConfig(awsCfg)
	for name, svc := range cfg.Services {
		u, err := url.Parse(svc.URL)
		if err != nil || svc.Auth.Type != services.AuthHeader {
			continue
		}
		if u.Host != cfg.SimulatorAddr {
			continue // checkLocalSecrets did
		}
		value, err := localSecret(ctx, client, svc.Auth.Secret, cfg.LocalSecrets)
		if err != nil {
			return nil, fmt.Errorf("service %s: the simulator's credential: %w", name, err)
		}
		cfg.Log.Info("the simulator requires the service's credential", "service", name, "header", svc.Auth.Header, "secret", svc.Auth.Secret)
		opts = append(opts, simulator.WithRequiredHeader(name, svc.Auth.Header, value))
	}
	return opts, nil
}

// checkLocalSecrets, with LocalSecrets, stops a local run whose team
// service (header authentication, not at the simulator) has no secret in
// the Secrets Manager the run reaches: every call would fail to read it.
// It runs before anything is provisioned.
func checkLocalSecrets(ctx context.Context, awsCfg aws.Config, cfg Config) error {
	if !cfg.LocalSecrets {
		return nil
	}
	client := secretsmanager.NewFromConfig(awsCfg)
	for name, svc := range cfg.Services {
		u, err := url.Parse(svc.URL)
		if err != nil || svc.Auth.Type != services.AuthHeader || u.Host == cfg.SimulatorAddr {
			continue
		}
		if _, err := client.DescribeSecret(ctx, &secretsmanager.DescribeSecretInput{SecretId: aws.String(svc.Auth.Secret)}); err != nil {
			return fmt.Errorf("service %s: its secret %s is not in the Secrets Manager at this run's endpoint: create it there first "+
				"(aws --endpoint-url \"$AWS_ENDPOINT_URL\" secretsmanager create-secret --name %s --secret-string ...): %w",
				name, svc.Auth.Secret, svc.Auth.Secret, err)
		}
	}
	return nil
}

// checkSimulated stops a run whose workflows send an agent's calls to
// the engine's simulator (no service of its own in Services, no
// RemoteURL) at a path the simulator does not serve: each call would be
// answered 404, and the agent's circuit breaker would hold the orders
// with nothing on them to say why.
func checkSimulated(cfg Config) error {
	if cfg.RemoteURL != "" {
		return nil
	}
	var problems []string
	for _, wf := range cfg.Workflows.Workflows() {
		for _, st := range wf.Steps {
			if _, own := cfg.Services[st.Agent]; own {
				continue
			}
			for _, c := range []order.Endpoint{st.Call, st.UndoCall} {
				if c.Path != "" && !simulator.Serves(c.Method, c.Path) {
					problems = append(problems, fmt.Sprintf("workflow %s version %s, step %s: %s %s", wf.Name, wf.Version, st.Name, c.Method, c.Path))
				}
			}
		}
	}
	if len(problems) == 0 {
		return nil
	}
	slices.Sort(problems)
	return fmt.Errorf("no service is configured for these calls, and the simulator does not serve them: %s; "+
		"give their agents a service in ORDERLY_SERVICES (docs/remote-services.md#services-and-credentials)",
		strings.Join(slices.Compact(problems), "; "))
}

// localSecret reads a secret's value, creating the secret with a random
// one first when create is set and it does not exist.
func localSecret(ctx context.Context, client *secretsmanager.Client, id string, create bool) (string, error) {
	out, err := client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	var missing *smtypes.ResourceNotFoundException
	if errors.As(err, &missing) && create {
		value := "Bearer local-" + rand.Text()
		if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretString: aws.String(value)}); err != nil {
			return "", fmt.Errorf("create secret %s: %w", id, err)
		}
		return value, nil
	}
	if err != nil {
		return "", fmt.Errorf("read secret %s: %w", id, err)
	}
	return aws.ToString(out.SecretString), nil
}
