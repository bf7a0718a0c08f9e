package stack

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/metrics"
	"orderly/internal/resources"
)

// dashboardName is the stage's CloudWatch dashboard.
func (s *Stack) dashboardName() string { return "orderly-" + s.props.Stage }

// dashboardURL opens the stage's dashboard in the console of the stack's
// region; alarms carry it.
func (s *Stack) dashboardURL() string {
	return "https://" + *awscdk.Aws_REGION() + ".console.aws.amazon.com/cloudwatch/home?region=" + *awscdk.Aws_REGION() +
		"#dashboards:name=" + s.dashboardName()
}

// search sums one of orderly's EMF metrics over every service that emits
// it (the Service dimension), with a statistic, per minute.
func (s *Stack) search(metric, stat, label string) awscloudwatch.IMetric {
	return expression("SUM("+s.searchOf(metric, stat, "Service", "")+")", label)
}

// each is one line per emitting service (per agent, say) of an EMF metric.
func (s *Stack) each(metric, stat, dims, filter, label string) awscloudwatch.IMetric {
	return expression(s.searchOf(metric, stat, dims, filter), label)
}

// searchOf is the SEARCH of an EMF metric of the stage by its dimensions,
// narrowed by filter.
func (s *Stack) searchOf(metric, stat, dims, filter string) string {
	return fmt.Sprintf(`SEARCH('{%s,%s} MetricName="%s"%s', '%s', 60)`, s.namespace(), dims, metric, filter, stat)
}

func expression(expr, label string) awscloudwatch.IMetric {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression: jsii.String(expr), Label: jsii.String(label), Period: minute(),
	})
}

// workQueues are the queues functions consume: the response queue and
// every agent's request queue.
func (s *Stack) workQueues() []awssqs.Queue {
	queues := []awssqs.Queue{s.msg.responses}
	for _, agent := range s.agents() {
		queues = append(queues, s.msg.requests[agent])
	}
	return queues
}

// namespace is the stage's metrics namespace, which its functions write.
func (s *Stack) namespace() string { return metrics.StageNamespace(s.props.Stage) }

func minute() awscdk.Duration { return awscdk.Duration_Minutes(jsii.Number(1)) }

func graph(title string, width float64, lines ...awscloudwatch.IMetric) awscloudwatch.IWidget {
	return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{Title: jsii.String(title), Width: jsii.Number(width),
		Height: jsii.Number(6), Left: &lines})
}

// newDashboard builds the stage's dashboard: what an operator woken by an
// alarm looks at first. Every row answers one question: are orders
// flowing and how fast, are steps failing or racing, is a service paused,
// are queues backing up, are the functions healthy, what does an order
// cost.
func newDashboard(s *Stack, alarms []awscloudwatch.IAlarm) awscloudwatch.Dashboard {
	refs := make([]interfacesawscloudwatch.IAlarmRef, len(alarms))
	for i, a := range alarms {
		refs[i] = a
	}
	d := awscloudwatch.NewDashboard(s.Stack, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DashboardName:   jsii.String(s.dashboardName()),
		DefaultInterval: awscdk.Duration_Hours(jsii.Number(3)),
	})
	d.AddWidgets(
		awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Width: jsii.Number(24), Height: jsii.Number(2), Markdown: jsii.String(
			"# orderly " + s.props.Stage + "\n" +
				"Each alarm and alert kind has a runbook entry: docs/operations.md#runbook. Orders in Error: `orderly --stage " + s.props.Stage +
				" list --status Error`; one order's timeline: `orderly --stage " + s.props.Stage + " console`. Metrics: namespace `" + s.namespace() + "`.")}),
		awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{Title: jsii.String("Alarms"), Width: jsii.Number(24),
			Height: jsii.Number(3), Alarms: &refs}),
	)
	d.AddWidgets(
		graph("Orders by status (per minute)", 12,
			s.search(metrics.OrdersSubmitted, "Sum", "submitted"),
			s.search(metrics.OrdersProcessed, "Sum", "Processed"),
			s.search(metrics.OrdersFailed, "Sum", "Failed"),
			s.search(metrics.OrdersCancelled, "Sum", "Cancelled"),
			s.search(metrics.OrdersInError, "Sum", "Error (operator needed)"),
		),
		graph("End-to-end latency, submission to end (ms)", 12,
			s.each(metrics.OrderLatency, "p50", "Service,"+metrics.DimStatus, ` Status="Processed"`, "Processed p50"),
			s.each(metrics.OrderLatency, "p99", "Service,"+metrics.DimStatus, ` Status="Processed"`, "Processed p99"),
			s.each(metrics.OrderLatency, "p99", "Service,"+metrics.DimStatus, ` Status="Failed"`, "Failed p99"),
		),
	)
	d.AddWidgets(
		graph("Step latency, claim to reply, per agent (ms)", 12,
			s.each(metrics.StepLatency, "p50", "Service", "", "p50"),
			s.each(metrics.StepLatency, "p99", "Service", "", "p99"),
			s.each(metrics.UndoLatency, "p99", "Service", "", "undo p99"),
		),
		graph("Retries and timeouts (per minute)", 12,
			s.search(metrics.StepsRetried, "Sum", "timed out, retried (Supervisor)"),
			s.search(metrics.RepliesWithheld, "Sum", "agent gave up at the deadline"),
			s.search(metrics.StepsNudged, "Sum", "unclaimed, re-announced"),
			s.search(metrics.StepsDeferred, "Sum", "deadline deferred (backlog)"),
			s.search(metrics.Heartbeats, "Sum", "heartbeats"),
		),
	)
	d.AddWidgets(
		graph("Races and duplicates (per minute)", 8,
			s.search(metrics.ClaimsLost, "Sum", "claims lost"),
			s.search(metrics.StaleReplies, "Sum", "stale replies"),
			s.search(metrics.StaleRequests, "Sum", "stale requests"),
			s.search(metrics.ClaimsReleased, "Sum", "claims released"),
			s.search(metrics.PoisonMessages, "Sum", "poison messages"),
		),
		graph("Compensations (per minute)", 8,
			s.search(metrics.CompensationsStarted, "Sum", "compensations started"),
			s.search(metrics.StepsUndone, "Sum", "undos done"),
			s.search(metrics.AlertsSent, "Sum", "alerts sent"),
		),
		graph("Circuit breakers, per agent (per minute)", 8,
			s.each(metrics.CircuitOpened, "Sum", "Service", "", "opened"),
			s.each(metrics.RequestsHeld, "Sum", "Service", "", "requests held"),
			s.each(metrics.ConfigurationFaults, "Sum", "Service,"+metrics.DimStatus, "", "configuration faults"),
		),
	)
	// Pauses, as the Supervisor counts them each run: the largest count
	// of a period is a run's, whatever the Supervisor's rate.
	pauses := func(metric, label string) awscloudwatch.IMetric {
		return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
			Namespace: jsii.String(s.namespace()), MetricName: jsii.String(metric),
			DimensionsMap: &map[string]*string{"Service": jsii.String(resources.FunctionSupervisor)},
			Period:        seconds(s.props.SupervisorRate), Statistic: jsii.String("Maximum"), Label: jsii.String(label),
		})
	}
	d.AddWidgets(
		graph("Pauses (services and workflows an operator paused)", 12,
			pauses(metrics.PausesOn, "paused"),
			pauses(metrics.PausesOverrun, "past their stated end (alarms)"),
		),
		graph("Requests held by a pause, per agent (per minute)", 12,
			s.each(metrics.RequestsPaused, "Sum", "Service", "", "held (paused)"),
		),
	)
	var depth, age, dead []awscloudwatch.IMetric
	for _, q := range s.workQueues() {
		name := *q.Node().Id()
		depth = append(depth, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Maximum"), Label: jsii.String(name)}))
		age = append(age, q.MetricApproximateAgeOfOldestMessage(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Maximum"), Label: jsii.String(name)}))
	}
	for _, q := range s.msg.deadLetters {
		dead = append(dead, q.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Maximum"), Label: jsii.String(*q.Node().Id())}))
	}
	d.AddWidgets(
		graph("Queue depth (messages waiting)", 8, depth...),
		graph("Oldest message age per queue (s)", 8, age...),
		graph("Dead-letter queues (messages)", 8, dead...),
	)
	var errs, throttles, durations []awscloudwatch.IMetric
	for _, f := range s.fns.all {
		errs = append(errs, f.fn.MetricErrors(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Sum"), Label: jsii.String(f.name)}))
		throttles = append(throttles, f.fn.MetricThrottles(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("Sum"), Label: jsii.String(f.name)}))
		durations = append(durations, f.fn.MetricDuration(&awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String("p99"), Label: jsii.String(f.name)}))
	}
	d.AddWidgets(
		graph("Lambda errors", 8, errs...),
		graph("Lambda throttles", 8, throttles...),
		graph("Lambda duration p99 (ms)", 8, durations...),
	)
	d.AddWidgets(
		graph("Estimated cost per million orders ($, from the metrics)", 12, s.costPerMillionOrders()),
		awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{Width: jsii.Number(12), Height: jsii.Number(6), Markdown: jsii.String(
			"## How the cost is estimated\n" +
				"Each period's usage, priced with the table in `cost/prices.json` (" + s.props.Prices.Region + ", " + s.props.Prices.Date +
				"), divided by the orders submitted: Lambda requests and GB-seconds (each function's memory), DynamoDB write and read units " +
				"(tables and indexes), SQS messages sent, received and deleted and empty receives (an upper bound: batches are billed per request), " +
				"API Gateway requests, EventBridge status events and SNS alerts. Not included: CloudWatch Logs and X-Ray. " +
				"`make cost` measures the same per scenario on the emulators.")}),
	)
	return d
}

// costPerMillionOrders prices each minute's usage and divides it by the
// orders submitted in it. Usage times dollars per million units is the
// cost in millionths of a dollar, which per order is dollars per million
// orders.
func (s *Stack) costPerMillionOrders() awscloudwatch.IMetric {
	p := s.props.Prices.DollarsPerMillion
	per := func(perMillion float64) string { return strconv.FormatFloat(perMillion, 'f', -1, 64) }
	sum := func(stat string) *awscloudwatch.MetricOptions {
		return &awscloudwatch.MetricOptions{Period: minute(), Statistic: jsii.String(stat)}
	}
	using := map[string]awscloudwatch.IMetric{}
	var lambda, dynamo, sqs []string
	for i, f := range s.fns.all {
		inv, dur := fmt.Sprintf("inv%d", i), fmt.Sprintf("dur%d", i)
		using[inv], using[dur] = f.fn.MetricInvocations(sum("Sum")), f.fn.MetricDuration(sum("Sum"))
		lambda = append(lambda, fmt.Sprintf("FILL(%s,0)*%s + FILL(%s,0)/1000*%s*%s", inv, per(p.LambdaRequests), dur, per(f.memoryMB/1024), per(p.LambdaGBSeconds)))
	}
	ddb := func(id, metricName string, dims map[string]*string) {
		using[id] = awscloudwatch.NewMetric(&awscloudwatch.MetricProps{Namespace: jsii.String("AWS/DynamoDB"), MetricName: jsii.String(metricName),
			DimensionsMap: &dims, Period: minute(), Statistic: jsii.String("Sum")})
		price := p.DynamoDBWrites
		if strings.Contains(metricName, "Read") {
			price = p.DynamoDBReads
		}
		dynamo = append(dynamo, fmt.Sprintf("FILL(%s,0)*%s", id, per(price)))
	}
	for ti, t := range s.cat.Tables() {
		ddb(fmt.Sprintf("wt%d", ti), "ConsumedWriteCapacityUnits", map[string]*string{"TableName": jsii.String(t.Name)})
		ddb(fmt.Sprintf("rt%d", ti), "ConsumedReadCapacityUnits", map[string]*string{"TableName": jsii.String(t.Name)})
		for xi, ix := range t.Indexes {
			ddb(fmt.Sprintf("wi%d_%d", ti, xi), "ConsumedWriteCapacityUnits",
				map[string]*string{"TableName": jsii.String(t.Name), "GlobalSecondaryIndexName": jsii.String(ix.Name)})
		}
	}
	for qi, q := range s.workQueues() {
		for mi, m := range []awscloudwatch.Metric{q.MetricNumberOfMessagesSent(sum("Sum")), q.MetricNumberOfMessagesReceived(sum("Sum")),
			q.MetricNumberOfMessagesDeleted(sum("Sum")), q.MetricNumberOfEmptyReceives(sum("Sum"))} {
			id := fmt.Sprintf("q%d_%d", qi, mi)
			using[id] = m
			sqs = append(sqs, fmt.Sprintf("FILL(%s,0)", id))
		}
	}
	using["api"] = s.api.MetricCount(sum("Sum"))
	using["events"] = s.emf(metrics.StatusEvents, "recorder")
	using["alerts"] = s.emf(metrics.AlertsSent, "scheduler")
	using["alertsSup"] = s.emf(metrics.AlertsSent, "supervisor")
	using["orders"] = s.emf(metrics.OrdersSubmitted, "submit")
	total := strings.Join([]string{
		strings.Join(lambda, " + "),
		strings.Join(dynamo, " + "),
		"(" + strings.Join(sqs, " + ") + ")*" + per(p.SQSRequests),
		"FILL(api,0)*" + per(p.RESTRequests),
		"FILL(events,0)*" + per(p.EventBridgeEvents),
		"(FILL(alerts,0) + FILL(alertsSup,0))*" + per(p.SNSPublishes),
	}, " + ")
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String("IF(FILL(orders,0) > 0, (" + total + ") / orders, 0)"),
		UsingMetrics: &using,
		Label:        jsii.String("$ per million orders"),
		Period:       minute(),
	})
}

// emf is one of orderly's EMF metrics as one service emits it.
func (s *Stack) emf(metric, service string) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(s.namespace()), MetricName: jsii.String(metric),
		DimensionsMap: &map[string]*string{"Service": jsii.String(service)},
		Period:        minute(), Statistic: jsii.String("Sum"),
	})
}

// emfBy is the per-minute sum of a count the service emits with a second
// dimension (metrics.Recorder.CountBy), for one value of it.
func (s *Stack) emfBy(metric, service, dimension, value string) awscloudwatch.IMetric {
	return awscloudwatch.NewMetric(&awscloudwatch.MetricProps{
		Namespace: jsii.String(s.namespace()), MetricName: jsii.String(metric),
		DimensionsMap: &map[string]*string{"Service": jsii.String(service), dimension: jsii.String(value)},
		Period:        minute(), Statistic: jsii.String("Sum"),
	})
}
