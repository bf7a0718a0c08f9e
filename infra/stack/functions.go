package stack

import (
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// functions holds the Lambda functions, keyed for alarms and tests.
type functions struct {
	submit, scheduler, supervisor, recorder awslambda.Function
	agents                                  map[string]awslambda.Function
	// all lists every function with a short name, in a stable order.
	all []named
}

type named struct {
	name     string
	fn       awslambda.Function
	memoryMB float64 // for the dashboard's cost estimate
}

// A failing stream batch is split to isolate the bad record, retried,
// then sent to the stream-failures queue (the Supervisor also notices the
// step then). Batch sizes and parallelism are in internal/resources, which
// the cost model reads too.
const streamRetryAttempts = 10

// SupervisorRetryAttempts is how often Lambda retries a failed Supervisor
// run that EventBridge invoked asynchronously.
const SupervisorRetryAttempts = 1

// SupervisorMaxEventAge is how long Lambda keeps trying to deliver one
// scheduled Supervisor run: two periods of the schedule (Lambda's minimum
// is a minute), after which the newer runs have taken its place.
func SupervisorMaxEventAge(rate time.Duration) time.Duration {
	return max(2*rate, time.Minute)
}

func newFunctions(s *Stack) *functions {
	f := &functions{agents: map[string]awslambda.Function{}}
	d, m := s.data, s.msg
	tables := map[string]*string{
		resources.EnvOrdersTable: jsii.String(s.cat.Orders.Name),
	}
	// Every function runs exactly the workflows the stack deployed.
	timing := map[string]*string{
		config.EnvWorkflows:        jsii.String(strings.Join(s.props.Workflows.Names(), ",")),
		config.EnvDefaultWorkflow:  jsii.String(s.props.Workflows.Default()),
		config.EnvWorkflowsDigest:  jsii.String(s.props.WorkflowsDigest),
		config.EnvAllowance:        jsii.String(s.props.Timing.Allowance.String()),
		config.EnvMaxAllowance:     jsii.String(s.props.Timing.MaxAllowance.String()),
		config.EnvFailureThreshold: jsii.String(strconv.Itoa(s.props.Timing.FailureThreshold)),
		config.EnvClaimWithin:      jsii.String(s.props.Timing.ClaimWithin.String()),
		config.EnvSkewGrace:        jsii.String(s.props.Timing.SkewGrace.String()),
		config.EnvMaxHeartbeats:    jsii.String(strconv.Itoa(s.props.Timing.MaxHeartbeats)),
	}

	// Submission: stores each order with its first step claimed and sends
	// that step's request; reads orders back. A request it cannot send is
	// released (UpdateItem) for the Scheduler to claim through the stream.
	// Submission sends only the first step of each workflow's latest
	// version. It reads an order's history for GET /orders/{id}/history.
	// It searches orders on the search indexes, reading the status of the
	// running ones it lists (BatchGetItem), and seals the search pages'
	// cursors with the stage's key, read once at start. When a step's
	// service calls back, it opens the tokens of callbacks with the
	// stage's callback key.
	firsts := s.props.Workflows.FirstAgents()
	submitEnv := map[string]*string{resources.EnvHistoryTable: jsii.String(s.cat.History.Name),
		resources.EnvPageTokenSecret: jsii.String(s.cat.PageTokenSecret)}
	if s.props.Workflows.CallsBack() {
		submitEnv[resources.EnvCallbackSecret] = jsii.String(s.cat.CallbackSecret)
	}
	for _, first := range firsts {
		submitEnv[resources.EnvRequestQueueURL(first)] = m.requests[first].QueueUrl()
	}
	if s.props.AnonymousCaller != "" {
		submitEnv[resources.EnvAnonymousCaller] = jsii.String(s.props.AnonymousCaller)
	}
	f.submit = f.lambda(s, "Submit", resources.FunctionSubmit, resources.SubmitTimeout, resources.SubmitMemoryMB, merge(tables, timing, submitEnv))
	allow(f.submit, d.orders.TableArn(), "dynamodb:PutItem", "dynamodb:GetItem", "dynamodb:UpdateItem", "dynamodb:BatchGetItem")
	allow(f.submit, d.history.TableArn(), "dynamodb:Query")
	f.submit.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{Actions: jsii.Strings("dynamodb:Query"),
		Resources: &[]*string{jsii.String(*d.orders.TableArn() + "/index/" + resources.CreatedIndexName),
			jsii.String(*d.orders.TableArn() + "/index/" + resources.EndedIndexName)}}))
	allow(f.submit, s.secretARN(s.cat.PageTokenSecret), "secretsmanager:GetSecretValue")
	if s.props.Workflows.CallsBack() {
		allow(f.submit, s.secretARN(s.cat.CallbackSecret), "secretsmanager:GetSecretValue")
	}
	for _, first := range firsts {
		allow(f.submit, m.requests[first].QueueArn(), "sqs:SendMessage")
	}

	// Scheduler: applies replies and claims each next step in one
	// UpdateItem, claims re-announced steps from the stream, sends
	// requests. It never reads an item: the write returns what it needs.
	env := merge(tables, timing, map[string]*string{resources.EnvAlertTopicARN: m.topic.TopicArn()})
	for _, agent := range s.agents() {
		env[resources.EnvRequestQueueURL(agent)] = m.requests[agent].QueueUrl()
	}
	f.scheduler = f.lambda(s, "Scheduler", resources.FunctionScheduler, resources.SchedulerTimeout, resources.SchedulerMemoryMB, env)
	allow(f.scheduler, d.orders.TableArn(), "dynamodb:UpdateItem")
	// It reads an order's item only to start a step on the order's data
	// (a condition, a timer until a time), or to bound a polled step's
	// next check by its wait's deadline.
	if s.props.Workflows.ReadsOrders() || s.props.Workflows.Polls() {
		allow(f.scheduler, d.orders.TableArn(), "dynamodb:GetItem")
	}
	for _, agent := range s.agents() {
		allow(f.scheduler, m.requests[agent].QueueArn(), "sqs:SendMessage")
	}
	f.publishAlerts(s, f.scheduler)
	f.scheduler.AddEventSource(awslambdaeventsources.NewDynamoEventSource(d.orders, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(resources.StreamBatchSize),
		ParallelizationFactor:   jsii.Number(resources.StreamParallelization),
		BisectBatchOnError:      jsii.Bool(true),
		RetryAttempts:           jsii.Number(streamRetryAttempts),
		MaxRecordAge:            awscdk.Duration_Hours(jsii.Number(1)),
		ReportBatchItemFailures: jsii.Bool(true),
		OnFailure:               awslambdaeventsources.NewSqsDlq(m.streamFailures),
		// Only an order whose active step waits for a claim invokes the
		// Scheduler; every other change (submissions, completions that
		// claim the next step themselves) is filtered out before it
		// costs an invocation.
		Filters: &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(&map[string]interface{}{
			"eventName": awslambda.FilterRule_Or(jsii.String("INSERT"), jsii.String("MODIFY")),
			"dynamodb":  map[string]interface{}{"NewImage": present(s.cat.Orders.StreamFilter.Present)},
		})},
	}))
	f.scheduler.AddEventSource(awslambdaeventsources.NewSqsEventSource(m.responses, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(resources.ReplyBatchSize),
		MaxConcurrency:          jsii.Number(s.props.ReplyMaxConcurrency),
		ReportBatchItemFailures: jsii.Bool(true),
	}))

	// Agents: their queue in, the response queue out, their service's
	// credential (see grantService). They write to the orders table only
	// with UpdateItem, fenced on the attempt: a heartbeat that moves a
	// step's deadline on when a request waited or a call runs long, the
	// mark of an attempt given up at its deadline, and the park of an
	// order whose workflow version their build lacks. While the circuit
	// breaker is open, requests go back to their own queue.
	for _, agent := range s.agents() {
		fn := f.lambdaFrom(s, "Agent"+title(agent), resources.AgentFunction(agent), "agent", resources.AgentTimeout, resources.AgentMemoryMB, merge(tables, timing, map[string]*string{
			"AGENT_NAME":                        jsii.String(agent),
			resources.EnvResponseQueueURL:       m.responses.QueueUrl(),
			resources.EnvRequestQueueURL(agent): m.requests[agent].QueueUrl(),
		}, serviceEnv(s.services[agent])))
		allow(fn, m.requests[agent].QueueArn(), "sqs:SendMessage")
		allow(fn, m.responses.QueueArn(), "sqs:SendMessage")
		allow(fn, d.orders.TableArn(), "dynamodb:UpdateItem")
		// It reads whether an operator paused its service: that one item
		// of the orders table, and no order.
		fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Actions: jsii.Strings("dynamodb:GetItem"), Resources: &[]*string{d.orders.TableArn()},
			Conditions: &map[string]interface{}{"ForAllValues:StringEquals": map[string]interface{}{
				"dynamodb:LeadingKeys": order.PauseKey(order.PauseService, agent)}},
		}))
		// Its remote service's secret or invoke permission, and no other's.
		f.grantService(s, fn, agent, s.services[agent])
		// The agent of a step that calls back seals its calls' tokens
		// with the stage's callback key; no other agent reads it. The
		// callback URL is the API's, added once the API is built.
		if compose.CallsBack(s.props.Workflows, agent) {
			fn.AddEnvironment(jsii.String(resources.EnvCallbackSecret), jsii.String(s.cat.CallbackSecret), nil)
			allow(fn, s.secretARN(s.cat.CallbackSecret), "secretsmanager:GetSecretValue")
		}
		fn.AddEventSource(awslambdaeventsources.NewSqsEventSource(m.requests[agent], &awslambdaeventsources.SqsEventSourceProps{
			BatchSize:               jsii.Number(resources.RequestBatchSize),
			MaxConcurrency:          jsii.Number(s.props.AgentMaxConcurrency),
			ReportBatchItemFailures: jsii.Bool(true),
		}))
		f.agents[agent] = fn
	}

	// Supervisor: queries the due index, recovers with conditional writes.
	// EventBridge invokes it asynchronously. A failed run is retried once
	// (a throttle or a cold start's hiccup should not page anyone), and an
	// invocation is worth nothing once the next scheduled run has started:
	// its event expires after two periods. A run that still fails, or
	// expires, lands in the schedule-failures queue, which alarms.
	supEnv := merge(tables, timing, map[string]*string{
		resources.EnvAlertTopicARN: m.topic.TopicArn(), resources.EnvResponseQueueURL: m.responses.QueueUrl(),
	})
	for _, agent := range s.agents() {
		supEnv[resources.EnvRequestQueueURL(agent)] = m.requests[agent].QueueUrl()
	}
	f.supervisor = f.lambda(s, "Supervisor", resources.FunctionSupervisor, resources.SupervisorTimeout, resources.SupervisorMemoryMB,
		supEnv, func(p *awslambda.FunctionProps) {
			p.DeadLetterQueue = m.scheduleFailures
			p.RetryAttempts = jsii.Number(SupervisorRetryAttempts)
			p.MaxEventAge = seconds(SupervisorMaxEventAge(s.props.SupervisorRate))
		})
	// It reads the queues' backlogs to tell queue wait from a timeout,
	// and sends the checks of polled steps to their agents' queues only.
	for _, agent := range s.agents() {
		allow(f.supervisor, m.requests[agent].QueueArn(), "sqs:GetQueueAttributes")
		if compose.Polled(s.props.Workflows, agent) {
			allow(f.supervisor, m.requests[agent].QueueArn(), "sqs:SendMessage")
		}
	}
	allow(f.supervisor, m.responses.QueueArn(), "sqs:GetQueueAttributes")
	allow(f.supervisor, jsii.String(*d.orders.TableArn()+"/index/"+resources.DueIndexName), "dynamodb:Query")
	allow(f.supervisor, d.orders.TableArn(), "dynamodb:BatchGetItem", "dynamodb:UpdateItem")
	// It reads an order's item only to start the step after an ended
	// wait on the order's data.
	if s.props.Workflows.ReadsOrders() {
		allow(f.supervisor, d.orders.TableArn(), "dynamodb:GetItem")
	}
	f.publishAlerts(s, f.supervisor)

	// Recorder: every change of every order, from the stream, into the
	// history table and, for a status change, onto the event bus. The
	// stream is its outbox: a record is retried until both are done, and
	// never dropped for age while the stream keeps it (24 hours). It runs
	// the stage's workflows to name what a Waiting order waits for.
	f.recorder = f.lambda(s, "Recorder", resources.FunctionRecorder, resources.RecorderTimeout, resources.RecorderMemoryMB, merge(timing, map[string]*string{
		resources.EnvHistoryTable: jsii.String(s.cat.History.Name),
		resources.EnvEventBus:     m.bus.EventBusName(),
	}))
	// It writes each change's history item, and on an order's end or
	// Error reads its history items back to restamp or pin their expiry.
	allow(f.recorder, d.history.TableArn(), "dynamodb:PutItem", "dynamodb:Query", "dynamodb:UpdateItem")
	allow(f.recorder, m.bus.EventBusArn(), "events:PutEvents")
	f.recorder.AddEventSource(awslambdaeventsources.NewDynamoEventSource(d.orders, &awslambdaeventsources.DynamoEventSourceProps{
		StartingPosition:        awslambda.StartingPosition_TRIM_HORIZON,
		BatchSize:               jsii.Number(resources.RecorderBatchSize),
		ParallelizationFactor:   jsii.Number(resources.StreamParallelization),
		BisectBatchOnError:      jsii.Bool(true),
		ReportBatchItemFailures: jsii.Bool(true),
		// Retries and record age are left unbounded (the defaults), so a
		// record is retried while the stream keeps it; its Errors alarm
		// says when it is stuck, and one that expires is reported to the
		// stream-failures queue, which alarms too.
		OnFailure: awslambdaeventsources.NewSqsDlq(m.streamFailures),
		Filters: &[]*map[string]interface{}{awslambda.FilterCriteria_Filter(&map[string]interface{}{
			"eventName": awslambda.FilterRule_Or(jsii.String("INSERT"), jsii.String("MODIFY")),
		})},
	}))
	return f
}

// lambda builds a function whose asset directory matches its name.
func (f *functions) lambda(s *Stack, id, name string, timeout time.Duration, memory float64, env map[string]*string, opts ...func(*awslambda.FunctionProps)) awslambda.Function {
	return f.lambdaFrom(s, id, name, name, timeout, memory, env, opts...)
}

// lambdaFrom builds a function from bin/<asset>/bootstrap with its own role
// (no managed policies: log writing is granted on its own log group only)
// and its own log group with a set retention.
func (f *functions) lambdaFrom(s *Stack, id, name, asset string, timeout time.Duration, memory float64, env map[string]*string, opts ...func(*awslambda.FunctionProps)) awslambda.Function {
	fullName := "orderly-" + s.props.Stage + "-" + name
	env = merge(env, map[string]*string{resources.EnvMetricsNamespace: jsii.String(s.namespace()),
		resources.EnvRetention: jsii.String(s.props.Retention.String())}, s.tracingEnv())
	role := awsiam.NewRole(s.Stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("orderly " + name + " function"),
	})
	logs := awslogs.NewLogGroup(s.Stack, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String("/aws/lambda/" + fullName),
		Retention:     s.props.LogRetention,
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
	logs.Grant(role, jsii.String("logs:CreateLogStream"), jsii.String("logs:PutLogEvents"))
	props := &awslambda.FunctionProps{
		FunctionName:          jsii.String(fullName),
		Description:           jsii.String("orderly " + name),
		Runtime:               awslambda.Runtime_PROVIDED_AL2023(),
		Architecture:          awslambda.Architecture_ARM_64(),
		Handler:               jsii.String("bootstrap"),
		Code:                  awslambda.Code_FromAsset(jsii.String(filepath.Join(s.props.AssetsDir, asset)), nil),
		Timeout:               seconds(timeout),
		MemorySize:            jsii.Number(memory),
		Role:                  role,
		LogGroup:              logs,
		LoggingFormat:         awslambda.LoggingFormat_JSON,
		ApplicationLogLevelV2: awslambda.ApplicationLogLevel_INFO,
		Tracing:               awslambda.Tracing_ACTIVE,
		Environment:           &env,
	}
	for _, opt := range opts {
		opt(props)
	}
	fn := awslambda.NewFunction(s.Stack, jsii.String(id), props)
	f.all = append(f.all, named{name: name, fn: fn, memoryMB: memory})
	return fn
}

// publishAlerts lets fn publish to the alert topic, which needs the topic's
// key as well.
func (f *functions) publishAlerts(s *Stack, fn awslambda.Function) {
	allow(fn, s.msg.topic.TopicArn(), "sns:Publish")
	allow(fn, s.msg.topicKey.KeyArn(), "kms:GenerateDataKey", "kms:Decrypt")
}

// allow adds one least-privilege statement: these actions on this resource.
// secretARN is the ARN of the stage's secret name by its name, so that a
// grant on it is the secret's whichever ARN suffix Secrets Manager gave
// it.
func (s *Stack) secretARN(name string) *string {
	return s.Stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
		ResourceName: jsii.String(name + "-??????"), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
}

func allow(fn awslambda.Function, resource *string, actions ...string) {
	fn.AddToRolePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Actions:   jsii.Strings(actions...),
		Resources: &[]*string{resource},
	}))
}

// present is a filter pattern requiring every named string attribute.
// Exists matches leaves only, so it goes under the attribute's type.
func present(names []string) map[string]interface{} {
	pattern := map[string]interface{}{}
	for _, n := range names {
		pattern[n] = map[string]interface{}{"S": awslambda.FilterRule_Exists()}
	}
	return pattern
}

func merge(maps ...map[string]*string) map[string]*string {
	out := map[string]*string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
