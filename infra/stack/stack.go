// Package stack is orderly's CDK stack: every resource of the engine, built
// from the single declaration in internal/resources, secure by default.
package stack

import (
	"orderly/internal/prices"

	"debug/buildinfo"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigateway"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	apiactor "orderly/internal/actor/api"
	"orderly/internal/adapter/services"
	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// Props tunes the stack; every field has a context key (see FromContext).
type Props struct {
	awscdk.StackProps
	// Stage names the deployment: resources are named orderly-<stage>-….
	Stage string
	// AssetsDir holds one directory per function with its bootstrap binary
	// (make build writes bin/<function>/bootstrap).
	AssetsDir string
	// Services is how the agents reach the services the workflows call:
	// base URL and authentication (package services). A service it does
	// not list is at RemoteURL, without a credential: so only a loopback
	// URL will do (LocalStack, tests).
	Services  services.Config
	RemoteURL string
	// AlarmEmail, when set, subscribes that address to the alert topic.
	AlarmEmail string
	// SupervisorRate is how often EventBridge invokes the Supervisor.
	SupervisorRate time.Duration
	// LogRetention is how long function and access logs are kept.
	LogRetention awslogs.RetentionDays
	// API stage throttling: steady requests per second and burst.
	APIRateLimit, APIBurstLimit float64
	// AgentMaxConcurrency caps concurrent invocations per agent, which caps
	// the load each remote service sees.
	AgentMaxConcurrency float64
	// ReplyMaxConcurrency caps concurrent Scheduler invocations on the
	// response queue, each applying up to 10 replies in parallel.
	ReplyMaxConcurrency float64
	// Timing is the workflow timing passed to the functions.
	Timing order.Timing
	// Retention is how long ended orders and their history are kept
	// (DynamoDB TTL): RETENTION of every function.
	Retention time.Duration
	// Prices is the price table the dashboard's cost estimate uses
	// (cost/prices.json, as `make cost` does).
	Prices prices.Prices
	// AnonymousCaller, for LocalStack only, is the caller the API gives
	// requests that name none: LocalStack's API Gateway enforces no IAM
	// and passes no caller identity. Leave it empty in AWS.
	AnonymousCaller string
	// CallbackURL, when set, is where the agents of steps that call back
	// tell services to call back, in place of the API's own POST
	// /callbacks URL: for an API reached by path, as LocalStack's is
	// (its own URL names a host that does not resolve), or at a domain of
	// its own. {apiId} and {stage} in it stand for the REST API's id and
	// stage. It must be https, or http on a loopback host: the callback
	// token travels in it.
	CallbackURL string
	// Workflows are the workflow versions the stack deploys agents and
	// queues for. FromContext reads them from the repository's workflows/
	// directory with the functions' own loader, so synth refuses an
	// invalid definition with the messages `orderly workflow validate`
	// prints; left empty, New takes the ones built into this binary.
	Workflows order.Versions
	// WorkflowsDigest is the digest of Workflows' definitions
	// (definition.Digest): each function refuses to start when its own
	// embedded definitions differ (a deploy without `make build`). Empty
	// skips the check.
	WorkflowsDigest string
	// Tracing, when set, has every function export its spans to X-Ray
	// (CtxTracing); nil is off.
	Tracing *Tracing
}

// Context keys and their defaults.
const (
	CtxStage = config.CtxStage
	// CtxServices is the services configuration: a JSON object in
	// cdk.json, or a JSON string from -c services='{...}'.
	CtxServices            = "services"
	CtxRemoteURL           = "remoteUrl"
	CtxAlarmEmail          = "alarmEmail"
	CtxSupervisorRate      = "supervisorRateMinutes"
	CtxLogRetentionDays    = "logRetentionDays"
	CtxAPIRateLimit        = "apiRateLimit"
	CtxAPIBurstLimit       = "apiBurstLimit"
	CtxAgentMaxConcurrency = "agentMaxConcurrency"
	CtxReplyMaxConcurrency = "replyMaxConcurrency"
	CtxAssetsDir           = "assetsDir"
	CtxAnonymousCaller     = "anonymousCaller"
	CtxCallbackURL         = "callbackUrl"
	CtxPricesFile          = "pricesFile"
	CtxRetentionDays       = "retentionDays"
	// CtxWorkflowsDir is the directories of workflow definitions, comma
	// separated (default ../workflows, from infra/; the LocalStack
	// end-to-end test adds ../examples/workflows, and builds the functions
	// with the examples). Every workflow in them
	// is deployed; CtxDefaultWorkflow is the one POST /orders submits to.
	CtxWorkflowsDir    = "workflowsDir"
	CtxDefaultWorkflow = "defaultWorkflow"
	// The workflow's timing (docs/configuration.md): Go durations, and a
	// count that may be 0 (package config reads them).
	CtxStepAllowance    = config.CtxStepAllowance
	CtxStepMaxAllowance = config.CtxStepMaxAllowance
	CtxMaxHeartbeats    = config.CtxMaxHeartbeats
)

// FromContext reads Props from CDK context (cdk.json or -c key=value).
func FromContext(scope constructs.Construct) (Props, error) {
	node := scope.Node()
	str := func(key, def string) string {
		if v, ok := node.TryGetContext(jsii.String(key)).(string); ok && v != "" {
			return v
		}
		return def
	}
	var errs []error
	num := func(key string, def float64) float64 {
		switch v := node.TryGetContext(jsii.String(key)).(type) {
		case nil:
			return def
		case float64:
			return v
		case string: // -c key=value arrives as a string
			if f, err := strconv.ParseFloat(v, 64); err == nil && f > 0 {
				return f
			}
		}
		errs = append(errs, fmt.Errorf("context %s=%v: want a positive number", key, node.TryGetContext(jsii.String(key))))
		return def
	}
	// The workflow's timing is read by the functions' own parser, from
	// the context keys that stand for their variables; the CLI's
	// workflow validate and diff read cdk.json with the same reader.
	timing, _, err := config.TimingFromContext(func(key string) any { return node.TryGetContext(jsii.String(key)) })
	if err != nil {
		errs = append(errs, err)
	}
	prices, err := prices.Load(str(CtxPricesFile, filepath.Join("..", "cost", "prices.json")))
	if err != nil {
		errs = append(errs, fmt.Errorf("context %s: %w", CtxPricesFile, err))
	}
	workflows, digest, err := loadWorkflows(str(CtxWorkflowsDir, filepath.Join("..", "workflows")), str(CtxDefaultWorkflow, definition.ShippedWorkflow),
		str(CtxAssetsDir, filepath.Join("..", "bin")), timing)
	if err != nil {
		errs = append(errs, fmt.Errorf("workflow definitions (context %s, %s):\n%w", CtxWorkflowsDir, CtxDefaultWorkflow, err))
	}
	tracing, err := tracingFromContext(node.TryGetContext(jsii.String(CtxTracing)))
	if err != nil {
		errs = append(errs, err)
	}
	var svcs services.Config
	switch v := node.TryGetContext(jsii.String(CtxServices)).(type) {
	case nil:
	case string: // -c services='{...}' arrives as a string
		if svcs, err = services.Parse("context "+CtxServices, []byte(v)); err != nil {
			errs = append(errs, err)
		}
	default: // cdk.json's object
		raw, _ := json.Marshal(v)
		if svcs, err = services.Parse("context "+CtxServices, raw); err != nil {
			errs = append(errs, err)
		}
	}
	p := Props{
		Services:            svcs,
		Tracing:             tracing,
		Workflows:           workflows,
		WorkflowsDigest:     digest,
		Prices:              prices,
		Retention:           time.Duration(num(CtxRetentionDays, resources.DefaultRetention.Hours()/24) * float64(24*time.Hour)),
		Stage:               str(CtxStage, config.DefaultStage),
		RemoteURL:           str(CtxRemoteURL, ""),
		AlarmEmail:          str(CtxAlarmEmail, ""),
		AssetsDir:           str(CtxAssetsDir, filepath.Join("..", "bin")),
		SupervisorRate:      time.Duration(num(CtxSupervisorRate, 1)) * time.Minute,
		LogRetention:        retention(num(CtxLogRetentionDays, 30)),
		APIRateLimit:        num(CtxAPIRateLimit, 50),
		APIBurstLimit:       num(CtxAPIBurstLimit, 100),
		AgentMaxConcurrency: num(CtxAgentMaxConcurrency, 5),
		ReplyMaxConcurrency: num(CtxReplyMaxConcurrency, 20),
		Timing:              timing,
		AnonymousCaller:     str(CtxAnonymousCaller, ""),
		CallbackURL:         str(CtxCallbackURL, ""),
	}
	if err := errors.Join(errs...); err != nil {
		return Props{}, err
	}
	return p, p.Validate()
}

// loadWorkflows reads every definition in dirs (comma separated), each
// file named as it is found, and builds the workflows with def the
// default. Each one must be built into the functions in assets too (under
// workflows/, or examples/workflows/ when they were built with the
// examples: make build EXAMPLES=1), since they run what they embed.
//
// Its digest is the definitions' (definition.Digest), which the functions
// check against the ones they embed.
func loadWorkflows(dirs, def, assets string, timing order.Timing) (order.Versions, string, error) {
	var defs []definition.Definition
	for _, dir := range strings.Split(dirs, ",") {
		dir = strings.TrimSpace(dir)
		found, err := definition.Load(os.DirFS(dir), dir)
		if err != nil {
			return order.Versions{}, "", err
		}
		defs = append(defs, found...)
	}
	shipped, examples, err := definition.Embedded()
	if err != nil {
		return order.Versions{}, "", err
	}
	// The functions' build decides whether they have the examples: read
	// only when an example is deployed, so a stage without any needs no
	// binaries to synth (the tests' stacks).
	var ps definition.Problems
	examplesRead, examplesBuilt := false, false
	for _, d := range defs {
		same := func(b definition.Definition) bool { return b.Same(d) }
		if slices.ContainsFunc(shipped, same) {
			continue
		}
		if !slices.ContainsFunc(examples, same) {
			ps = append(ps, definition.Problem{Source: d.File, Rule: "is not the definition the functions are built with: keep it under workflows/ and run make build"})
			continue
		}
		if !examplesRead {
			if examplesBuilt, err = functionsHaveExamples(assets); err != nil {
				return order.Versions{}, "", err
			}
			examplesRead = true
		}
		if !examplesBuilt {
			ps = append(ps, definition.Problem{Source: d.File, Rule: fmt.Sprintf("is an example, and the functions in %s were built without the examples: "+
				"build them with make build EXAMPLES=1 (for LocalStack make build-host EXAMPLES=1)", assets)})
		}
	}
	if len(ps) > 0 {
		return order.Versions{}, "", ps
	}
	wfs, err := definition.Build(defs, def, timing)
	return wfs, definition.Digest(defs), err
}

// functionsHaveExamples reports whether every function in assets
// (<function>/bootstrap) embeds the examples: make build leaves them out
// (-tags noexamples, which Go records in each binary's build information)
// unless EXAMPLES=1.
func functionsHaveExamples(assets string) (bool, error) {
	bins, err := filepath.Glob(filepath.Join(assets, "*", "bootstrap"))
	if err != nil || len(bins) == 0 {
		return false, fmt.Errorf("context %s %s: no function binaries (<function>/bootstrap): run make build EXAMPLES=1 first", CtxAssetsDir, assets)
	}
	for _, bin := range bins {
		info, err := buildinfo.ReadFile(bin)
		if err != nil {
			return false, fmt.Errorf("context %s: read the build of %s: %w", CtxAssetsDir, bin, err)
		}
		for _, s := range info.Settings {
			if s.Key == "-tags" && slices.Contains(strings.Split(s.Value, ","), definition.NoExamplesTag) {
				return false, nil
			}
		}
	}
	return true, nil
}

// Validate checks the props against the limits AWS imposes.
func (p Props) Validate() error {
	switch {
	case p.SupervisorRate < time.Minute:
		return fmt.Errorf("supervisor rate %s: EventBridge schedules run at most once a minute", p.SupervisorRate)
	case p.AgentMaxConcurrency < 2 || p.AgentMaxConcurrency > 1000:
		return fmt.Errorf("agent max concurrency %v: Lambda allows 2 to 1000", p.AgentMaxConcurrency)
	case p.ReplyMaxConcurrency < 2 || p.ReplyMaxConcurrency > 1000:
		return fmt.Errorf("reply max concurrency %v: Lambda allows 2 to 1000", p.ReplyMaxConcurrency)
	}
	if err := checkCallbackURL(p.CallbackURL); err != nil {
		return err
	}
	// The stage's timing, as workflow validate and diff check it.
	if err := definition.CheckStage(p.Timing); err != nil {
		return err
	}
	// A step's own timing too: an attempt longer than the agent's
	// invocation would be cut short every time.
	for _, w := range p.Workflows.Workflows() {
		for i, d := range w.Steps {
			if d.MaxAllowance+10*time.Second > resources.AgentTimeout {
				return fmt.Errorf("workflow %s version %s: steps[%d] (%s): max allowance %s (allowance %s doubled up to it) leaves the agents' %s timeout no margin: keep it at most %s",
					w.Name, w.Version, i, d.Name, d.MaxAllowance, d.Allowance, resources.AgentTimeout, resources.AgentTimeout-10*time.Second)
			}
		}
	}
	return nil
}

// callbackURLPlaceholders are what CallbackURL may name, replaced by the
// API's id and stage.
var callbackURLPlaceholders = []string{"{apiId}", "{stage}"}

// checkCallbackURL says what is wrong with a CallbackURL, if anything.
func checkCallbackURL(raw string) error {
	if raw == "" {
		return nil
	}
	bare := raw
	for _, p := range callbackURLPlaceholders {
		bare = strings.ReplaceAll(bare, p, "x")
	}
	u, err := url.Parse(bare)
	switch {
	case strings.ContainsAny(bare, "{}"):
		return fmt.Errorf("context %s %q: only %s stand for the API's id and stage", CtxCallbackURL, raw, strings.Join(callbackURLPlaceholders, " and "))
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		return fmt.Errorf("context %s %q: want an absolute http or https URL, e.g. https://orders.example.com/callbacks", CtxCallbackURL, raw)
	case u.Scheme == "http" && !loopback(u.Hostname()):
		// The callback token would cross a network in the clear.
		return fmt.Errorf("context %s %q: use https; plain http only on a loopback host (LocalStack)", CtxCallbackURL, raw)
	}
	return nil
}

// loopback reports whether host names this machine.
func loopback(host string) bool {
	if ip := net.ParseIP(host); ip != nil {
		return ip.IsLoopback()
	}
	return host == "localhost"
}

// callbackURL is where the agents of steps that call back tell services
// to call back: CallbackURL with the API's id and stage, or the API's
// own URL.
func (s *Stack) callbackURL() *string {
	if s.props.CallbackURL == "" {
		return s.api.UrlForPath(jsii.String(apiactor.ResourceCallbacks))
	}
	// The API's id is a token: CloudFormation joins the parts.
	return jsii.String(strings.NewReplacer("{apiId}", *s.api.RestApiId(), "{stage}", s.props.Stage).Replace(s.props.CallbackURL))
}

// retention maps days to the nearest allowed retention at or above it.
func retention(days float64) awslogs.RetentionDays {
	for _, r := range []struct {
		days float64
		rd   awslogs.RetentionDays
	}{
		{1, awslogs.RetentionDays_ONE_DAY}, {3, awslogs.RetentionDays_THREE_DAYS},
		{5, awslogs.RetentionDays_FIVE_DAYS}, {7, awslogs.RetentionDays_ONE_WEEK},
		{14, awslogs.RetentionDays_TWO_WEEKS}, {30, awslogs.RetentionDays_ONE_MONTH},
		{60, awslogs.RetentionDays_TWO_MONTHS}, {90, awslogs.RetentionDays_THREE_MONTHS},
		{180, awslogs.RetentionDays_SIX_MONTHS}, {365, awslogs.RetentionDays_ONE_YEAR},
	} {
		if days <= r.days {
			return r.rd
		}
	}
	return awslogs.RetentionDays_TEN_YEARS
}

// Stack is the deployed engine, with handles the tests and outputs use.
type Stack struct {
	awscdk.Stack
	props Props
	cat   resources.Catalog
	// services is each agent's service, as the stage configures it.
	services services.Config
	data     *data
	msg      *messaging
	fns      *functions
	api      awsapigateway.RestApi
	// clientPolicy and operatorPolicy grant what callers and operators may
	// invoke; attach them to the roles that use the API.
	clientPolicy, operatorPolicy awsiam.ManagedPolicy
	// callbacks is POST /callbacks, when a workflow's service calls back;
	// callbackPolicy then lets a service's role call back on POST
	// /callbacks/iam instead.
	callbacks      awsapigateway.Method
	callbackPolicy awsiam.ManagedPolicy

	suppressions []Suppression
}

// New builds the stack.
func New(scope constructs.Construct, id string, props Props) (*Stack, error) {
	if err := props.Validate(); err != nil {
		return nil, err
	}
	sp := props.StackProps
	if sp.Description == nil {
		sp.Description = jsii.String("orderly " + props.Stage + ": order processing with the Scheduler Agent Supervisor pattern")
	}
	if len(props.Workflows.Known()) == 0 {
		shipped, err := definition.Deployed(props.Timing, nil, definition.ShippedWorkflow, "")
		if err != nil {
			return nil, err
		}
		props.Workflows = shipped
	}
	// Every agent's service, or the synth is refused naming what is wrong.
	svcs, err := props.Services.Resolve(props.Workflows.Agents(), props.RemoteURL, "context "+CtxServices, "context "+CtxRemoteURL)
	if err != nil {
		return nil, err
	}
	s := &Stack{
		Stack:    awscdk.NewStack(scope, jsii.String(id), &sp),
		props:    props,
		cat:      resources.New(props.Stage, props.Workflows.Agents()),
		services: svcs,
	}
	awscdk.Tags_Of(s.Stack).Add(jsii.String("app"), jsii.String("orderly"), nil)
	awscdk.Tags_Of(s.Stack).Add(jsii.String("stage"), jsii.String(props.Stage), nil)

	s.data = newData(s)
	s.msg = newMessaging(s)
	s.fns = newFunctions(s)
	s.api = newAPI(s)
	// Services that call back call the stage's API. The API integrates
	// the submission function alone, so an agent that names it makes no
	// cycle.
	for agent, fn := range s.fns.agents {
		if compose.CallsBack(s.props.Workflows, agent) {
			fn.AddEnvironment(jsii.String(resources.EnvCallbackURL), s.callbackURL(), nil)
		}
	}
	operatorTools := newOperatorTools(s)
	newSchedule(s)
	newDashboard(s, newAlarms(s))
	suppress(s)

	out := func(name, value, desc string) {
		awscdk.NewCfnOutput(s.Stack, jsii.String(name), &awscdk.CfnOutputProps{Value: jsii.String(value), Description: jsii.String(desc)})
	}
	awscdk.NewCfnOutput(s.Stack, jsii.String("ApiUrl"), &awscdk.CfnOutputProps{Value: s.api.Url(), Description: jsii.String("base URL of the orders API (SigV4-signed requests)")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("ClientPolicyArn"), &awscdk.CfnOutputProps{Value: s.clientPolicy.ManagedPolicyArn(), Description: jsii.String("attach to roles that submit and read their own orders")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("OperatorPolicyArn"), &awscdk.CfnOutputProps{Value: s.operatorPolicy.ManagedPolicyArn(), Description: jsii.String("attach to operators' roles: read any order on /ops/orders/{id}")})
	if s.callbackPolicy != nil {
		awscdk.NewCfnOutput(s.Stack, jsii.String("CallbackPolicyArn"), &awscdk.CfnOutputProps{Value: s.callbackPolicy.ManagedPolicyArn(),
			Description: jsii.String("attach to the roles of services inside AWS that call back signed (POST /callbacks/iam)")})
	}
	awscdk.NewCfnOutput(s.Stack, jsii.String("OperatorToolsPolicyArn"), &awscdk.CfnOutputProps{Value: operatorTools.ManagedPolicyArn(), Description: jsii.String("attach to operators' roles for the orderly CLI and console")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("AlertTopicArn"), &awscdk.CfnOutputProps{Value: s.msg.topic.TopicArn(), Description: jsii.String("operator alerts and alarms")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("EventBusName"), &awscdk.CfnOutputProps{Value: s.msg.bus.EventBusName(), Description: jsii.String("order status events (source orderly, detail-type \"Order <status>\"): add a rule to your own target")})
	awscdk.NewCfnOutput(s.Stack, jsii.String("DashboardUrl"), &awscdk.CfnOutputProps{Value: jsii.String(s.dashboardURL()), Description: jsii.String("the stage's CloudWatch dashboard")})
	out("OrdersTableName", s.cat.Orders.Name, "orders table: each order with its steps' states")
	out("ResponseQueueName", s.cat.ResponseQueue.Name, "agents' replies")
	for _, agent := range s.agents() {
		out("RequestQueueName"+title(agent), s.cat.RequestQueues[agent].Name, agent+" agent's requests")
	}
	return s, nil
}

// agents are every workflow version's: an order of an older version still
// needs its agents' queues.
func (s *Stack) agents() []string { return s.props.Workflows.Agents() }

func title(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Seconds()))
}
