package stack

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/actor/agent"
	"orderly/internal/adapter/remote"
	"orderly/internal/metrics"
	"orderly/internal/resources"
)

// newSchedule invokes the Supervisor on a fixed rate. Failed deliveries
// are retried, then kept in a dead-letter queue (which alarms).
func newSchedule(s *Stack) {
	awsevents.NewRule(s.Stack, jsii.String("SupervisorSchedule"), &awsevents.RuleProps{
		RuleName:    jsii.String("orderly-" + s.props.Stage + "-supervisor"),
		Description: jsii.String("runs the orderly Supervisor"),
		Schedule:    awsevents.Schedule_Rate(seconds(s.props.SupervisorRate)),
		Targets: &[]awsevents.IRuleTarget{awseventstargets.NewLambdaFunction(s.fns.supervisor, &awseventstargets.LambdaFunctionProps{
			RetryAttempts:   jsii.Number(2),
			MaxEventAge:     awscdk.Duration_Minutes(jsii.Number(5)),
			DeadLetterQueue: s.msg.scheduleFailures,
		})},
	})
}

// Alarm thresholds.
const (
	// A request waits at most the claim window plus an allowance in a
	// healthy system; five minutes of age means nobody is consuming.
	oldestMessageSeconds = 300
	// A configuration fault's alarm clears after five minutes with none:
	// its episode is over.
	configurationQuietPeriods = 5
)

// configurationCauses says what each configuration fault status
// (remote.ConfigurationStatuses) most likely means, for its alarm.
var configurationCauses = map[string]string{
	"3xx": "a redirect: the configured base URL is not where the service answers",
	"401": "Unauthorized: the agent's credential is missing, expired or rotated",
	"403": "Forbidden: a WAF, a network rule or a permission blocks the agent",
	"404": "Not Found: the base URL or the service's paths are wrong",
	"405": "Method Not Allowed: the base URL points at something that does not take the service's POSTs",
	"407": "Proxy Authentication Required: a proxy between the agent and the service wants credentials",
	"415": "Unsupported Media Type: the service does not take the JSON the agent sends",
}

// newAlarms wires every alarm to the alert topic: anything in a
// dead-letter queue, messages waiting too long, function errors and
// throttles, and orders entering Error.
// Each links its runbook entry in docs/operations.md and the stage's
// dashboard.
func newAlarms(s *Stack) []awscloudwatch.IAlarm {
	action := awscloudwatchactions.NewSnsAction(s.msg.topic)
	var alarms []awscloudwatch.IAlarm
	// alarmOver alarms when one of the last periods breaches, and clears
	// after that many quiet periods.
	alarmOver := func(id, description string, metric awscloudwatch.IMetric, threshold float64, periods int) {
		a := awscloudwatch.NewAlarm(s.Stack, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmName: jsii.String("orderly-" + s.props.Stage + "-" + id),
			AlarmDescription: jsii.String(description + ". Runbook: docs/operations.md#" + runbookAnchor(id) +
				". Dashboard: " + s.dashboardURL()),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			EvaluationPeriods:  jsii.Number(float64(periods)),
			DatapointsToAlarm:  jsii.Number(1),
			ComparisonOperator: awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD,
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		a.AddAlarmAction(action)
		a.AddOkAction(action)
		alarms = append(alarms, a)
	}
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64) {
		alarmOver(id, description, metric, threshold, 1)
	}
	for _, q := range s.msg.deadLetters {
		alarm(*q.Node().Id()+"NotEmpty", "messages in a dead-letter queue: something failed for good and needs an operator",
			q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Maximum")}), 1)
	}
	for _, q := range s.workQueues() {
		alarm(*q.Node().Id()+"OldestMessage", "messages wait too long: their consumer is failing, throttled or stopped",
			q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Maximum")}), oldestMessageSeconds)
	}
	for _, f := range s.fns.all {
		id := *f.fn.Node().Id()
		alarm(id+"Errors", "the "+f.name+" function fails",
			f.fn.MetricErrors(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Sum")}), 1)
		alarm(id+"Throttles", "the "+f.name+" function is throttled",
			f.fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Sum")}), 1)
	}
	// Orders entering Error, where an operator must act: the Scheduler (an
	// undo refused) and the Supervisor (an undo timing out, a step nobody
	// claims) emit OrdersInError as Embedded Metric Format. Orders that
	// end Failed or Cancelled, their work undone, need nobody.
	// An agent's circuit breaker opened: its remote service failed call
	// after call, and its requests wait in their queue until it answers.
	for _, agent := range s.agents() {
		alarm("CircuitOpen"+title(agent), "the "+agent+" agent's circuit breaker opened: its remote service is failing, requests are held in its queue",
			s.emf(metrics.CircuitOpened, agent+"-agent"), 1)
	}
	// A remote service refuses an agent's configuration: every order of
	// that agent waits, none fails, until someone fixes it. One alarm per
	// agent and status, so the one alert names both. A fault opens the
	// agent's circuit, and each probe the same fault answers counts again
	// (at least every two minutes while orders wait), so the alarm stays
	// in alarm for the whole episode and clears after five quiet minutes.
	probeEvery := agent.DefaultBreaker.OpenFor
	for _, agent := range s.agents() {
		for _, status := range remote.ConfigurationStatuses {
			alarmOver("ConfigFault"+title(agent)+status, fmt.Sprintf(
				"the %s agent's remote service answers %s (%s): a configuration fault, the same for every order. No order fails: "+
					"the agent holds its requests in its queue and probes the service every %s; they go on by themselves once it answers. Fix the configuration",
				agent, status, configurationCauses[status], probeEvery),
				s.emfBy(metrics.ConfigurationFaults, agent+"-agent", metrics.DimStatus, status), 1, configurationQuietPeriods)
		}
	}
	// A pause on past the end its operator gave. The Supervisor counts
	// such pauses each run; a period of its rate holds a run's count
	// (its Maximum), and one breaching period of two fires the alarm, so
	// a missed run neither clears it nor fires it again. It clears two
	// runs after the resume, with an OK message.
	//
	// A pause raises no other alarm: its agent holds each request as a
	// new message delayed 30-60 s, so no request queue's oldest message
	// nears oldestMessageSeconds and none is received often enough to
	// reach a dead-letter queue; no call fails, so no circuit opens; the
	// Supervisor moves a held step's deadline on, so no order enters
	// Error.
	alarmOver("PauseOverrun", "a pause has lasted longer than its operator said it would. No order fails for it: the paused service's "+
		"or workflow's orders are held. Run orderly pauses to see which pause, who made it and why; then orderly resume "+
		"if its work is over, or pause it again with a new --for",
		awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(s.namespace()), MetricName: jsii.String(metrics.PausesOverrun),
			DimensionsMap: &map[string]*string{"Service": jsii.String(resources.FunctionSupervisor)},
			Period:        seconds(s.props.SupervisorRate), Statistic: jsii.String("Maximum"),
		}), 1, 2)
	alarm("OrdersInError", "orders entered Error and need an operator; each also sent an alert naming the order and the stuck step or undo",
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String("FILL(scheduler, 0) + FILL(supervisor, 0)"),
			UsingMetrics: &map[string]awscloudwatch.IMetric{"scheduler": s.emf(metrics.OrdersInError, "scheduler"), "supervisor": s.emf(metrics.OrdersInError, "supervisor")},
			Period:       minute(),
			Label:        jsii.String("orders in Error"),
		}), 1)
	return alarms
}

// runbookAnchor is the anchor of an alarm's runbook entry in
// docs/operations.md (the GitHub slug of the entry's heading), by the kind
// of alarm its id shows. A test holds every one to a heading of that page.
func runbookAnchor(id string) string {
	for _, k := range []struct{ suffix, anchor string }{
		{"NotEmpty", "dead-letter-queue-not-empty"},
		{"OldestMessage", "messages-wait-too-long"},
		{"Errors", "function-fails-or-is-throttled"},
		{"Throttles", "function-fails-or-is-throttled"},
	} {
		if strings.HasSuffix(id, k.suffix) {
			return k.anchor
		}
	}
	switch {
	case strings.HasPrefix(id, "CircuitOpen"):
		return "circuit-breaker-opened"
	case strings.HasPrefix(id, "ConfigFault"):
		return "configuration-fault"
	case id == "OrdersInError":
		return "orders-in-error"
	case id == "PauseOverrun":
		return "pause-overrun"
	}
	return "none-add-one"
}
