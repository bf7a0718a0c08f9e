// Package compose builds each of orderly's functions from its settings and
// AWS configuration: the one place every actor is put together with its
// adapters. The Lambda mains, the local engine (`make run`) and the test
// world all build their actors here, so what runs locally and in tests is
// wired exactly as what runs in Lambda.
package compose

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	awseventbridge "github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	awssns "github.com/aws/aws-sdk-go-v2/service/sns"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/agent"
	"orderly/internal/actor/alerting"
	"orderly/internal/actor/api"
	"orderly/internal/actor/control"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/recorder"
	"orderly/internal/actor/scheduler"
	"orderly/internal/actor/supervisor"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/eventbridge"
	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/secret"
	"orderly/internal/adapter/services"
	"orderly/internal/adapter/sns"
	"orderly/internal/adapter/sqs"
	"orderly/internal/callbacktoken"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/pagetoken"
	"orderly/internal/tracing"
)

// Stage is what a function knows of the stage it runs in: its resources'
// names and the workflows it runs. In Lambda it comes from the
// environment the stack sets (FromEnv); locally, from what was
// provisioned. A function reads only the fields it uses.
type Stage struct {
	OrdersTable, HistoryTable string
	// RequestQueues maps agents to their request queue URLs: every
	// agent's for the Scheduler and the Supervisor, the first steps'
	// agents' for submission, its own for an agent.
	RequestQueues map[string]string
	ResponseQueue string
	AlertTopicARN string
	EventBus      string
	// PageTokenSecret names the key that seals the search's cursors.
	PageTokenSecret string
	// CallbackSecret names the key of callback tokens: the submission
	// function opens them, the agents of steps that call back seal them.
	// A submission function whose workflows have no such step is given
	// none, and takes no callback.
	CallbackSecret string
	// CallbackURL is where services that call back call (the stage API's
	// POST /callbacks): the agents of steps that call back send it.
	CallbackURL string
	// AnonymousCaller names unsigned API callers (LocalStack only; empty
	// in AWS, where the IAM authorizer names every caller).
	AnonymousCaller string
	// Retention is how long ended orders and their history are kept.
	Retention time.Duration
	Workflows order.Versions
}

// Function is one running copy of a function: its stage, who it is in
// the claims it makes (ID), how it logs, measures, traces and tells time,
// and the AWS configuration its clients are made from.
type Function struct {
	Stage   Stage
	ID      string
	Log     *slog.Logger
	Metrics *metrics.Recorder
	// Tracing is flushed after each invocation (tracing.Flushing); nil or
	// its zero value is tracing off. Spans start in the provider it made
	// current (tracing.Use).
	Tracing *tracing.Provider
	Now     func() time.Time
	AWS     aws.Config
}

// orders is the orders table as the actor named by writes it.
func (f Function) orders(by string) *dynamo.Store {
	return f.ordersThrough(dynamodb.NewFromConfig(f.AWS), by)
}

// ordersThrough is orders through a DynamoDB client the function also
// reads its history with: one client, one pool of connections.
func (f Function) ordersThrough(db *dynamodb.Client, by string) *dynamo.Store {
	return dynamo.NewStore(db, f.Stage.OrdersTable).As(by).Retain(f.Stage.Retention)
}

// Dispatcher sends the requests of the steps f claims, releasing a claim
// it cannot send as by.
func Dispatcher(f Function, by string) *dispatch.Dispatcher {
	return f.dispatcher(f.orders(by))
}

func (f Function) dispatcher(orders *dynamo.Store) *dispatch.Dispatcher {
	requests := sqs.NewRequests(awssqs.NewFromConfig(f.AWS), f.Stage.RequestQueues)
	return dispatch.New(requests, orders, f.Stage.Workflows.Latest().ClaimWithin, f.Now, f.Log, f.Metrics)
}

// notifier alerts operators on the stage's topic, recording each alert
// as sent through orders.
func (f Function) notifier(orders *dynamo.Store) *alerting.Notifier {
	return alerting.NewNotifier(sns.NewAlerter(awssns.NewFromConfig(f.AWS), f.Stage.AlertTopicARN), orders, f.Now)
}

// Submit is the submission API behind API Gateway. Its page token key is
// read from Secrets Manager at the first search, its callback key at the
// first callback: a key that cannot be read fails those alone (503),
// never a submission.
func Submit(f Function, tweaks ...func(*api.Config)) (*api.Service, error) {
	secrets := secretsmanager.NewFromConfig(f.AWS)
	db := dynamodb.NewFromConfig(f.AWS)
	orders := f.ordersThrough(db, "submit")
	cfg := api.Config{
		InstanceID: f.ID,
		Store:      orders,
		Controls:   Controls(orders, control.ByClientCancel, f.Stage.Workflows, f.Now),
		History:    dynamo.NewHistory(db, f.Stage.HistoryTable),
		Dispatcher: f.dispatcher(orders),
		Workflows:  f.Stage.Workflows,
		Now:        f.Now,
		Log:        f.Log,
		Metrics:    f.Metrics,
		PageTokens: pagetoken.Loaded(func(ctx context.Context) ([]byte, error) {
			return secret.Key(ctx, secrets, f.Stage.PageTokenSecret, pagetoken.MinKeyBytes)
		}),
		AnonymousCaller: f.Stage.AnonymousCaller,
		Pauses:          orders,
	}
	if f.Stage.CallbackSecret != "" {
		// A stage whose steps never call back takes no callback (503).
		cfg.CallbackTokens = f.callbackTokens(secrets)
	}
	return api.NewService(tweaked(cfg, tweaks))
}

// Controls is the cancel and redrive of orders and the events sent to
// them, a cancel written as by canceller (control.ByClientCancel or an
// operator's), a redrive as by an operator, and an event as by its sender.
func Controls(orders *dynamo.Store, canceller string, workflows order.Versions, now func() time.Time) *control.Service {
	return control.New(orders.As(canceller), orders.As(control.ByOperatorRedrive), workflows, now).
		TakingEvents(orders.As(control.ByClientEvent), orders.As(control.ByOperatorEvent)).
		TakingCallbacks(orders.As(control.ByServiceCallback))
}

// Scheduler is one Scheduler instance: it applies agents' replies and
// claims the steps announced on the orders table's stream. Tweaks, for
// tests, change its configuration before it is built.
func Scheduler(f Function, tweaks ...func(*scheduler.Config)) *scheduler.Service {
	orders := f.orders("scheduler " + f.ID)
	cfg := scheduler.Config{
		InstanceID: f.ID,
		Store:      orders,
		Dispatcher: f.dispatcher(orders),
		Notifier:   f.notifier(orders),
		Workflows:  f.Stage.Workflows,
		Now:        f.Now,
		Log:        f.Log,
		Metrics:    f.Metrics,
	}
	return scheduler.New(tweaked(cfg, tweaks))
}

// Supervisor is one Supervisor: it asks the agents' queues for their
// backlog, to tell queue wait from a timeout. Tweaks, for tests and the
// local engine, change its configuration before it is built.
func Supervisor(f Function, tweaks ...func(*supervisor.Config)) *supervisor.Service {
	orders := f.orders("supervisor")
	cfg := supervisor.Config{
		Store:     orders,
		Notifier:  f.notifier(orders),
		Backlogs:  sqs.NewBacklogs(awssqs.NewFromConfig(f.AWS), f.Stage.RequestQueues, f.Stage.ResponseQueue),
		Workflows: f.Stage.Workflows,
		Requests:  sqs.NewRequests(awssqs.NewFromConfig(f.AWS), f.Stage.RequestQueues),
		Pauses:    orders,
		Now:       f.Now,
		Log:       f.Log,
		Metrics:   f.Metrics,
	}
	return supervisor.New(tweaked(cfg, tweaks))
}

// Recorder writes each order's history and publishes its status events,
// from the orders table's stream; a Waiting order's event says what its
// step waits for, from the stage's workflows.
func Recorder(f Function) *recorder.Service {
	return recorder.New(
		dynamo.NewHistory(dynamodb.NewFromConfig(f.AWS), f.Stage.HistoryTable).Knowing(f.Stage.Workflows),
		eventbridge.NewPublisher(awseventbridge.NewFromConfig(f.AWS), f.Stage.EventBus),
		f.Log, f.Metrics).Retain(f.Stage.Retention)
}

// AgentSettings are what one agent function is told besides its stage:
// its name, its remote service and how it calls it.
type AgentSettings struct {
	Name    string
	Service services.Service
	// ReplyMargin and TryTimeout: see agent.Config.
	ReplyMargin, TryTimeout time.Duration
	// Backoff and Breaker tune its retries and its circuit breaker; zero
	// uses the defaults, as in Lambda.
	Backoff agent.Backoff
	Breaker agent.Breaker
	// PausedHold is how long a paused service's requests are held each
	// time (agent.Config.PausedHold); zero uses the default, as in Lambda.
	PausedHold time.Duration
	// Transport, when set, wraps the HTTP transport its calls go
	// through, under the service's authentication (the local role check
	// records signed calls this way).
	Transport func(http.RoundTripper) http.RoundTripper
}

// Agent is an agent: it calls its one service with its credential
// (a header's secret, or SigV4 with f's own role), replies on the
// response queue, moves its attempts' deadlines on, and while its circuit
// is open holds requests back in its own queue. The agent of a step that
// calls back also sends, with that step's call, the stage's callback URL
// and a token sealed with its callback key, read at its first such call.
func Agent(f Function, a AgentSettings) *agent.Service {
	hc := &http.Client{}
	if a.Transport != nil {
		hc.Transport = a.Transport(http.DefaultTransport)
	}
	own := services.Config{a.Name: a.Service}
	client := remote.NewClientFor(remote.ServicesFrom(own, f.AWS), hc, f.Stage.Workflows)
	if CallsBack(f.Stage.Workflows, a.Name) {
		client = client.CallingBack(remote.Callbacks{URL: f.Stage.CallbackURL,
			Tokens: f.callbackTokens(secretsmanager.NewFromConfig(f.AWS)), Now: f.Now})
	}
	sqsClient := awssqs.NewFromConfig(f.AWS)
	orders := f.orders("agent " + a.Name) // one client, one connection pool
	return agent.New(agent.Config{
		Name:        a.Name,
		Remote:      client,
		Replies:     sqs.NewReplies(sqsClient, f.Stage.ResponseQueue),
		Backoff:     a.Backoff,
		ReplyMargin: a.ReplyMargin,
		TryTimeout:  a.TryTimeout,
		Deadlines:   orders,
		Workflows:   f.Stage.Workflows,
		Holder:      sqs.NewRequests(sqsClient, f.Stage.RequestQueues),
		Breaker:     a.Breaker,
		Pauses:      orders,
		PausedHold:  a.PausedHold,
		Now:         f.Now,
		Log:         f.Log,
		Metrics:     f.Metrics,
	})
}

// callbackTokens is the stage's callback key, read through secrets when
// first needed.
func (f Function) callbackTokens(secrets secret.Reader) callbacktoken.Source {
	return callbacktoken.Loaded(func(ctx context.Context) ([]byte, error) {
		return secret.Key(ctx, secrets, f.Stage.CallbackSecret, callbacktoken.MinKeyBytes)
	})
}

// CallsBack reports whether agent does a step, in any of workflows'
// versions, whose service calls back: only such an agent is given the
// callback key and URL.
func CallsBack(workflows order.Versions, agent string) bool {
	return workflows.HasStep(func(d order.StepDef) bool { return d.Agent == agent && d.Callback != nil })
}

// Polled reports whether any version has a step of agent whose service
// is polled: only then does the Supervisor send checks to its queue.
func Polled(workflows order.Versions, agent string) bool {
	return workflows.HasStep(func(d order.StepDef) bool { return d.Agent == agent && d.Poll != nil })
}

// tweaked is cfg with each tweak applied, in order.
func tweaked[C any](cfg C, tweaks []func(*C)) C {
	for _, tweak := range tweaks {
		tweak(&cfg)
	}
	return cfg
}
