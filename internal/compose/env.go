package compose

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/services"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/tracing"
)

// FromEnv reads what a Lambda function is built from out of the
// environment the stack sets (infra/stack/functions.go), each function
// only the variables it is given: its stage, with the workflows built into
// the binary, and its AWS configuration. Every missing or malformed
// variable is reported in one error, before anything is built.
//
// function names the function as the stack does (resources.FunctionSubmit,
// FunctionScheduler, FunctionSupervisor or FunctionRecorder); agents have
// AgentFromEnv.
func FromEnv(ctx context.Context, log *slog.Logger, env *config.Env, function string) (Function, error) {
	f := Function{ID: config.InstanceID(function), Log: log, Now: time.Now,
		Metrics: env.Metrics(os.Stdout, function)}
	st := &f.Stage
	st.Retention = env.Retention()
	workflows, err := deployed(env)
	if err != nil {
		return Function{}, err
	}
	st.Workflows = workflows
	if function == resources.FunctionRecorder {
		// It reads no order, but names what a Waiting order's step
		// waits for from its workflow's definition.
		st.HistoryTable = env.Required(resources.EnvHistoryTable)
		st.EventBus = env.Required(resources.EnvEventBus)
		return load(ctx, env, f, function)
	}
	st.OrdersTable = env.Required(resources.EnvOrdersTable)
	switch function {
	case resources.FunctionSubmit:
		st.HistoryTable = env.Required(resources.EnvHistoryTable)
		st.PageTokenSecret = env.Required(resources.EnvPageTokenSecret)
		if workflows.CallsBack() {
			st.CallbackSecret = env.Required(resources.EnvCallbackSecret)
		}
		st.AnonymousCaller = env.String(resources.EnvAnonymousCaller, "")
		// Submission only ever sends a first step's request.
		st.RequestQueues = env.RequestQueueURLs(workflows.FirstAgents())
	case resources.FunctionScheduler:
		st.AlertTopicARN = env.Required(resources.EnvAlertTopicARN)
		st.RequestQueues = env.RequestQueueURLs(workflows.Agents())
	case resources.FunctionSupervisor:
		st.AlertTopicARN = env.Required(resources.EnvAlertTopicARN)
		st.ResponseQueue = env.Required(resources.EnvResponseQueueURL)
		st.RequestQueues = env.RequestQueueURLs(workflows.Agents())
	default:
		return Function{}, fmt.Errorf("function %q: orderly has no such function (agents: AgentFromEnv)", function)
	}
	return load(ctx, env, f, function)
}

// AgentFromEnv reads what an agent function is built from: FromEnv's,
// and its name (AGENT_NAME), its remote service's base URL and
// authentication, and how long it calls for; the agent of a step that
// calls back, the callback key's name and the callback URL too. Its only
// request queue is its own, where it holds requests back while its
// circuit is open.
func AgentFromEnv(ctx context.Context, log *slog.Logger, env *config.Env) (Function, AgentSettings, error) {
	name := env.Required("AGENT_NAME")
	f := Function{ID: config.InstanceID("agent"), Log: log, Now: time.Now,
		Metrics: env.Metrics(os.Stdout, name+"-agent")}
	a := AgentSettings{
		Name:        name,
		ReplyMargin: env.Duration(config.EnvReplyMargin, agent.DefaultReplyMargin),
		TryTimeout:  env.Duration(config.EnvTryTimeout, agent.DefaultTryTimeout),
	}
	serviceURL, serviceAuth := env.Required(services.EnvURL), env.Required(services.EnvAuth)
	st := &f.Stage
	st.Retention = env.Retention()
	st.OrdersTable = env.Required(resources.EnvOrdersTable)
	st.ResponseQueue = env.Required(resources.EnvResponseQueueURL)
	st.RequestQueues = map[string]string{name: env.Required(resources.EnvRequestQueueURL(name))}
	workflows, err := deployed(env)
	if err != nil {
		return Function{}, AgentSettings{}, err
	}
	st.Workflows = workflows
	if CallsBack(workflows, name) {
		// Only the agents of steps that call back are given the key.
		st.CallbackSecret = env.Required(resources.EnvCallbackSecret)
		st.CallbackURL = env.Required(resources.EnvCallbackURL)
	}
	if f, err = load(ctx, env, f, name+"-agent"); err != nil {
		return Function{}, AgentSettings{}, err
	}
	if a.Service, err = services.ParseService(serviceURL, serviceAuth); err != nil {
		return Function{}, AgentSettings{}, fmt.Errorf("remote service: %w", err)
	}
	return f, a, nil
}

// traced is the function's tracing: on when OTEL_EXPORTER_OTLP_ENDPOINT
// or ORDERLY_TRACE_XRAY is set (package tracing), X-Ray's signed with
// the function's own AWS configuration.
func traced(ctx context.Context, env *config.Env, service string, cfg aws.Config) (*tracing.Provider, error) {
	return tracing.FromEnv(ctx, service, func(name string) string { return env.String(name, "") }, cfg)
}

// deployed is the workflows the stack deployed (config.EnvWorkflows and
// the timing variables), from the definitions built into the binary.
func deployed(env *config.Env) (order.Versions, error) {
	names, def := env.Workflows()
	workflows, err := definition.Deployed(env.Timing(), names, def, env.String(config.EnvWorkflowsDigest, ""))
	if err != nil {
		// The workflows' files are built in: a broken build, or the
		// stage's timing at odds with a step's own.
		return order.Versions{}, fmt.Errorf("workflows: %w", err)
	}
	return workflows, nil
}

// load reports env's problems, if any, and otherwise loads f's AWS
// configuration and its tracing as service: the last step of every
// function's start-up.
func load(ctx context.Context, env *config.Env, f Function, service string) (Function, error) {
	cfg, err := config.Load(ctx, env)
	if err != nil {
		return Function{}, err
	}
	f.AWS = cfg
	if f.Tracing, err = traced(ctx, env, service, cfg); err != nil {
		return Function{}, err
	}
	return f, nil
}
