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
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sts"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/api"
	"orderly/internal/actor/api/openapi"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/services"
	"orderly/internal/compose"
	"orderly/internal/definition"
	"orderly/internal/local/localrun"
	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/metrics"
	"orderly/internal/operator/console"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
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
	// CallbackDelay is how long the simulator's services that call back
	// take before each callback; zero is simulator.DefaultCallbackDelay.
	CallbackDelay time.Duration
	// Parties, when set, play the people and partners of the fulfilment
	// example against the API (the fraud analyst's review, the carrier's
	// delivery): see simulator.Parties. `make run` sets it; tests that
	// send those events themselves leave it nil.
	Parties *simulator.PartyConfig
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
	// Clock, when set, is the machine's clock as every function reads it
	// (ClockSkew spreads around it); nil is time.Now. The cost run moves
	// it on through a day of waiting without waiting a day.
	Clock func() time.Time
	// QueueVisibility overrides the catalog's visibility timeouts, so a
	// failed message comes back quickly when running locally. 0 keeps them.
	QueueVisibility time.Duration
	// AgentBackoff is the agents' retry backoff; zero uses the default.
	AgentBackoff agent.Backoff
	// Breaker tunes the agents' circuit breakers; zero uses the default.
	Breaker agent.Breaker
	// PausedHold is about how long an agent holds a request of a paused
	// service before it looks again; zero uses the default (a minute).
	PausedHold time.Duration
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
	// sts says who the console's operator is (the emulator's own user
	// locally), as orderly pause asks it.
	sts *sts.Client
}

// New provisions the resources and builds the engine without starting it.
func New(ctx context.Context, awsCfg aws.Config, cfg Config) (*Engine, error) {
	cfg, err := cfg.complete()
	if err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// Everything is checked before the stage is provisioned.
	if err := cfg.check(ctx, awsCfg); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	// Its EventBridge client provisions only: the recorder's publisher is
	// made from fnCfg.
	e := &Engine{cfg: cfg, clients: provision.NewClients(awsCfg), streams: dynamodbstreams.NewFromConfig(awsCfg),
		sts: sts.NewFromConfig(awsCfg)}
	e.fnCfg = awsCfg.Copy()
	e.fnCfg.APIOptions = append(slices.Clone(e.fnCfg.APIOptions), cfg.APIOptions...)
	if e.Stack, err = provision.Create(ctx, e.clients, cfg.catalog()); err != nil {
		return nil, fmt.Errorf("provision stage %s: %w", cfg.Stage, err)
	}
	// The engine's own reads, with the functions' middleware.
	fns := dynamodb.NewFromConfig(e.functionConfig(""))
	e.Store = dynamo.NewStore(fns, e.Stack.Catalog.Orders.Name).Retain(cfg.Retention)
	e.History = dynamo.NewHistory(fns, e.Stack.Catalog.History.Name)
	// The submission function reads its page token key as in AWS: at its
	// first search.
	if e.API, err = compose.Submit(e.function(resources.FunctionSubmit, "submit", "submit-local-"+rand.Text()[:6], e.cfg.Clock)); err != nil {
		return nil, fmt.Errorf("engine: %w", err)
	}
	if err := e.listen(ctx, awsCfg); err != nil {
		return nil, err
	}
	return e, nil
}

// complete fills in the defaults: a JSON logger, one Scheduler, the
// shipped workflows with the configured timing.
func (cfg Config) complete() (Config, error) {
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.NewJSONHandler(os.Stdout, nil))
	}
	cfg.Schedulers = max(cfg.Schedulers, 1)
	if cfg.Clock == nil {
		cfg.Clock = time.Now
	}
	if err := cfg.Timing.Validate(); err != nil {
		return cfg, fmt.Errorf("timing: %w", err)
	}
	if len(cfg.Workflows.Known()) == 0 {
		shipped, err := definition.Deployed(cfg.Timing, nil, definition.ShippedWorkflow, "")
		if err != nil {
			return cfg, err
		}
		cfg.Workflows = shipped
	}
	return cfg, nil
}

// check stops a configuration that cannot run: a server on an address
// other than loopback (they act without authentication), a service
// configuration that does not fit the workflows (the simulator's port is
// known only later), calls the simulator does not serve, a team
// service's secret that is missing.
func (cfg Config) check(ctx context.Context, awsCfg aws.Config) error {
	for _, l := range []struct {
		name, addr string
		used       bool
	}{
		{"API", cfg.APIAddr, true},
		{"console", cfg.ConsoleAddr, cfg.ConsoleAddr != ""},
		{"simulator", cfg.SimulatorAddr, cfg.RemoteURL == ""},
	} {
		if err := localrun.CheckLoopback(l.addr); l.used && err != nil {
			return fmt.Errorf("the %s: %w", l.name, err)
		}
	}
	fallback := cfg.RemoteURL
	if fallback == "" {
		fallback = "http://" + cfg.SimulatorAddr
	}
	if _, err := cfg.Services.Resolve(cfg.Workflows.Agents(), fallback, "services", "the remote URL"); err != nil {
		return err
	}
	if err := checkSimulated(cfg); err != nil {
		return err
	}
	return checkLocalSecrets(ctx, awsCfg, cfg)
}

// catalog is the stage's resources, tuned for a local run.
func (cfg Config) catalog() resources.Catalog {
	catalog := resources.New(cfg.Stage, cfg.Workflows.Agents())
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
	return catalog
}

// listen opens the servers' listeners and builds the simulator (unless
// the services are elsewhere), whose address the agents' services
// resolve to. On an error it closes every listener it opened.
func (e *Engine) listen(ctx context.Context, awsCfg aws.Config) (err error) {
	cfg := e.cfg
	defer func() {
		if err != nil {
			for _, ln := range []net.Listener{e.apiLn, e.conLn, e.simLn} {
				if ln != nil {
					ln.Close()
				}
			}
		}
	}()
	if e.apiLn, err = localrun.ListenLoopback(cfg.APIAddr); err != nil {
		return fmt.Errorf("listen for the API on %s: %w", cfg.APIAddr, err)
	}
	if cfg.ConsoleAddr != "" {
		if e.conLn, err = localrun.ListenLoopback(cfg.ConsoleAddr); err != nil {
			return fmt.Errorf("listen for the console on %s: %w", cfg.ConsoleAddr, err)
		}
	}
	e.remote = cfg.RemoteURL
	if e.remote == "" {
		if e.simLn, err = localrun.ListenLoopback(cfg.SimulatorAddr); err != nil {
			return fmt.Errorf("listen for the simulator on %s: %w", cfg.SimulatorAddr, err)
		}
		if e.Sim, err = e.simulator(ctx, awsCfg); err != nil {
			return err
		}
		e.remote = "http://" + e.simLn.Addr().String()
	}
	if e.services, err = cfg.Services.Resolve(cfg.Workflows.Agents(), e.remote, "services", "the remote URL"); err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	return nil
}

// simulator is the simulated remote services, with the configured
// ledger, outages and the credentials of the services pointed at it.
func (e *Engine) simulator(ctx context.Context, awsCfg aws.Config) (*simulator.Server, error) {
	cfg := e.cfg
	opts := []simulator.Option{simulator.WithLogger(cfg.Log.With("service", "simulator"))}
	if cfg.SimulatorLedger != "" {
		opts = append(opts, simulator.WithLedger(cfg.SimulatorLedger))
	}
	for _, o := range cfg.Outages {
		opts = append(opts, simulator.WithOutage(o))
	}
	opts = append(opts, simulator.WithCallbackDelay(cfg.CallbackDelay))
	required, err := e.simulatorCredentials(ctx, awsCfg, cfg)
	if err != nil {
		return nil, err
	}
	sim, err := simulator.New(append(opts, required...)...)
	if err != nil {
		return nil, fmt.Errorf("simulator: %w", err)
	}
	return sim, nil
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

// functionConfig is the SDK configuration of one function's clients.
func (e *Engine) functionConfig(function string) aws.Config {
	cfg := e.fnCfg.Copy()
	if function != "" && e.cfg.FunctionAPIOptions != nil {
		cfg.APIOptions = append(slices.Clone(cfg.APIOptions), e.cfg.FunctionAPIOptions(function)...)
	}
	return cfg
}

// function is one running copy of a function, named as the stack names
// it (resources.FunctionSubmit and so on), as its Lambda builds it
// (package compose) over what the engine provisioned, with clients of its
// own: service names its logs and metrics, id its claims, and now is its
// clock.
func (e *Engine) function(name, service, id string, now func() time.Time) compose.Function {
	stage := e.Stack.Stage(e.cfg.Workflows, e.cfg.Retention)
	if e.apiLn != nil {
		// Services that call back call the local API, as in AWS the
		// stage's.
		stage.CallbackURL = e.URL() + api.ResourceCallbacks
	}
	return compose.Function{
		Stage: stage,
		ID:    id, Log: e.cfg.Log.With("service", service), Metrics: e.metrics(service), Now: now, AWS: e.functionConfig(name),
	}
}

func (e *Engine) metrics(service string) *metrics.Recorder {
	if e.cfg.Metrics == nil {
		return metrics.Discard()
	}
	return metrics.New(e.cfg.Metrics, service).In(metrics.StageNamespace(e.cfg.Stage))
}

// component is one of the engine's parts that runs until its context
// ends: a server, a poller, a ticker.
type component struct {
	name string
	run  func(context.Context) error
}

// Run starts every component and blocks until ctx is cancelled or one of
// them fails.
func (e *Engine) Run(ctx context.Context) error {
	// Build every component first, so a construction error leaves nothing
	// running; then start them all.
	var components []component
	for _, build := range []func() ([]component, error){e.front, e.recorder, e.schedulers, e.agents, e.supervisors} {
		cs, err := build()
		if err != nil {
			return err
		}
		components = append(components, cs...)
	}
	if e.cfg.Parties != nil {
		pc := *e.cfg.Parties
		if pc.Log == nil {
			pc.Log = e.cfg.Log.With("service", "parties")
		}
		components = append(components, component{"parties", simulator.NewParties(e.URL(), pc).Run})
	}
	if e.Sim != nil {
		defer e.serveSimulator(ctx)()
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
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// front is what callers reach over HTTP: API Gateway in front of the
// submission function, with the API's own routing table and its
// description beside it (as API Gateway can export a stage's), and the
// operator's console.
func (e *Engine) front() ([]component, error) {
	var routes []localrun.Route
	for _, r := range api.Routes() {
		routes = append(routes, localrun.Route{Method: r.Method, Resource: r.Resource})
	}
	gateway := localrun.NewAPIGateway(e.API.Handle, routes, e.cfg.Log.With("service", "apigateway"))
	// Not a ServeMux, which would redirect paths the gateway answers.
	doc := openapi.JSON(e.cfg.Workflows)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/openapi.json" {
			w.Header().Set("Content-Type", "application/json")
			w.Write(doc)
			return
		}
		gateway.ServeHTTP(w, r)
	})
	apiServer := &http.Server{Handler: handler, ReadHeaderTimeout: 5 * time.Second}
	cs := []component{{"api", serve(apiServer, e.apiLn)}}
	if e.conLn != nil {
		// The operator's console, over the stage as the CLI opens it.
		stage := ops.Open(e.cfg.Stage, e.clients.DynamoDB, e.clients.SQS, e.cfg.Workflows)
		conServer := &http.Server{Handler: console.New(e.cfg.Stage, stage, e.cfg.Log.With("service", "console")).WithHosts(e.cfg.ConsoleHosts...).WithWho(e.operator), ReadHeaderTimeout: 5 * time.Second}
		cs = append(cs, component{"console", serve(conServer, e.conLn)})
	}
	return cs, nil
}

// operator is who pauses and resumes on the console: the identity of the
// engine's AWS credentials, as orderly pause records it.
func (e *Engine) operator(ctx context.Context) (string, error) {
	out, err := e.sts.GetCallerIdentity(ctx, &sts.GetCallerIdentityInput{})
	if err != nil {
		return "", fmt.Errorf("STS GetCallerIdentity: %w", err)
	}
	return aws.ToString(out.Arn), nil
}

// serveSimulator serves the simulated services until the returned stop is
// called. They outlive the engine's own components: a call in flight when
// it stops is answered, as a real service would answer it, instead of
// failing (and tripping the agent's circuit breaker, which holds the
// request back).
func (e *Engine) serveSimulator(ctx context.Context) (stop func()) {
	simServer := &http.Server{Handler: e.Sim, ReadHeaderTimeout: 5 * time.Second}
	simCtx, stopSim := context.WithCancel(context.WithoutCancel(ctx))
	simDone := make(chan error, 1)
	go func() { simDone <- serve(simServer, e.simLn)(simCtx) }()
	return func() {
		stopSim()
		<-simDone
		e.Sim.Close()
	}
}

// recorder is the orders table's stream, unfiltered, into the history
// and the event bus.
func (e *Engine) recorder() ([]component, error) {
	rec := compose.Recorder(e.function(resources.FunctionRecorder, "recorder", "recorder", e.cfg.Clock))
	stream, err := e.streamPoller("recorder", "recorder", resources.RecorderTimeout, rec.HandleStream)
	if err != nil {
		return nil, err
	}
	return []component{{"recorder", stream.Run}}, nil
}

// schedulers each consume the orders table's stream and the response
// queue.
func (e *Engine) schedulers() ([]component, error) {
	var cs []component
	for i := range e.cfg.Schedulers {
		now := e.clock(i, e.cfg.Schedulers)
		id := fmt.Sprintf("scheduler-local-%d-%s", i, rand.Text()[:6])
		f := e.function(resources.FunctionScheduler, "scheduler", id, now)
		f.Log = f.Log.With("clock_offset", time.Until(now()).Round(time.Millisecond).String())
		sched := compose.Scheduler(f)
		stream, err := e.streamPoller(fmt.Sprintf("scheduler-%d", i), id, resources.SchedulerTimeout, sched.HandleStream)
		if err != nil {
			return nil, err
		}
		replies, err := localrun.NewSQSPoller(e.clients.SQS, localrun.SQSConfig{
			QueueURL: e.Stack.ResponseQueue.URL, QueueARN: e.Stack.ResponseQueue.ARN, Timeout: resources.SchedulerTimeout,
			Concurrency: e.cfg.SQSPollers,
		}, sched.HandleReplies, e.cfg.Log.With("service", "responses"))
		if err != nil {
			return nil, fmt.Errorf("response poller: %w", err)
		}
		cs = append(cs, component{"stream poller", stream.Run}, component{"response poller", replies.Run})
	}
	return cs, nil
}

// streamPoller invokes handle with the orders table's stream, as Lambda's
// event source mapping does; with a StateDir it keeps its place in the
// stream in a file named after key.
func (e *Engine) streamPoller(key, consumer string, timeout time.Duration, handle func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)) (*localrun.StreamPoller, error) {
	cfg := localrun.StreamConfig{StreamARN: e.Stack.StreamARN, Timeout: timeout}
	if e.cfg.StateDir != "" {
		path := filepath.Join(e.cfg.StateDir, e.cfg.Stage+"-"+key+"-stream.json")
		checkpoints, err := localrun.NewFileCheckpoints(path, e.Stack.StreamARN)
		if err != nil {
			return nil, fmt.Errorf("%s stream checkpoints: %w", key, err)
		}
		cfg.Checkpoints = checkpoints
	}
	stream, err := localrun.NewStreamPoller(e.streams, cfg, handle, e.cfg.Log.With("service", "stream", "consumer", consumer))
	if err != nil {
		return nil, fmt.Errorf("%s stream poller: %w", key, err)
	}
	return stream, nil
}

// agents are one per request queue, each calling its remote service.
func (e *Engine) agents() ([]component, error) {
	var cs []component
	names := slices.Sorted(maps.Keys(e.Stack.RequestQueues))
	for i, name := range names {
		function := resources.AgentFunction(name)
		settings := compose.AgentSettings{Name: name, Service: e.services[name],
			ReplyMargin: agent.DefaultReplyMargin, TryTimeout: agent.DefaultTryTimeout, Backoff: e.cfg.AgentBackoff, Breaker: e.cfg.Breaker,
			PausedHold: e.cfg.PausedHold}
		if e.cfg.FunctionHTTP != nil {
			settings.Transport = e.cfg.FunctionHTTP(function)
		}
		f := e.function(function, name+"-agent", "agent-"+name, e.clock(i, len(names)))
		f.Log = e.cfg.Log.With("service", "agent") // as the Lambda logs; its metrics are the agent's own
		ag := compose.Agent(f, settings)
		var handle SQSHandler = ag.Handle
		if e.cfg.WrapAgent != nil {
			handle = e.cfg.WrapAgent(name, handle)
		}
		q := e.Stack.RequestQueues[name]
		poller, err := localrun.NewSQSPoller(e.clients.SQS, localrun.SQSConfig{
			QueueURL: q.URL, QueueARN: q.ARN, Timeout: resources.AgentTimeout, Concurrency: e.cfg.SQSPollers,
		}, handle, e.cfg.Log.With("service", name+"-requests"))
		if err != nil {
			return nil, fmt.Errorf("%s poller: %w", name, err)
		}
		cs = append(cs, component{name + " poller", poller.Run})
	}
	return cs, nil
}

// supervisors each run on a ticker, as EventBridge would invoke one.
func (e *Engine) supervisors() ([]component, error) {
	var cs []component
	n := max(e.cfg.Supervisors, 1)
	for i := range n {
		now := e.clock(i, n)
		f := e.function(resources.FunctionSupervisor, "supervisor", fmt.Sprintf("supervisor-%d", i), now)
		f.Log = f.Log.With("clock_offset", time.Until(now()).Round(time.Millisecond).String())
		sup := compose.Supervisor(f, func(c *supervisor.Config) { c.ParkFor = e.cfg.ParkFor })
		cs = append(cs, component{fmt.Sprintf("supervisor %d", i), func(ctx context.Context) error {
			t := time.NewTicker(e.cfg.SupervisorEvery)
			defer t.Stop()
			for {
				select {
				case <-ctx.Done():
					return nil
				case <-t.C:
					if _, err := sup.Run(ctx); err != nil && ctx.Err() == nil {
						f.Log.Error("supervisor run failed", "error", err)
					}
				}
			}
		}})
	}
	return cs, nil
}

func serve(srv *http.Server, ln net.Listener) func(context.Context) error {
	return func(ctx context.Context) error {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			return err
		case <-ctx.Done():
		}
		// Requests in flight get a few seconds to finish.
		shutdown, stop := context.WithTimeout(context.Background(), 5*time.Second)
		defer stop()
		if srv.Shutdown(shutdown) != nil {
			srv.Close()
		}
		if err := <-served; !errors.Is(err, http.ErrServerClosed) {
			return err
		}
		return nil
	}
}

// clock is the clock of instance i of n of one kind: the machine's (or
// Clock), moved by an offset spread evenly over [-ClockSkew, +ClockSkew].
func (e *Engine) clock(i, n int) func() time.Time {
	if e.cfg.ClockSkew <= 0 {
		return e.cfg.Clock
	}
	offset := e.cfg.ClockSkew // a lone instance runs ahead by all of it
	if n > 1 {
		offset = time.Duration(float64(e.cfg.ClockSkew) * (2*float64(i)/float64(n-1) - 1))
	}
	return func() time.Time { return e.cfg.Clock().Add(offset) }
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
