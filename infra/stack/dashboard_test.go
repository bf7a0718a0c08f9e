package stack_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/metrics"
	"orderly/internal/resources"
)

const stage = "dev" // infra/cdk.json's

// dashboardBody joins the dashboard's body, its tokens (queue and function
// names, the region) replaced by TOKEN, and parses it.
func dashboardBody(t *testing.T) (string, []map[string]any) {
	t.Helper()
	ds := ofType("AWS::CloudWatch::Dashboard")
	if len(ds) != 1 {
		t.Fatalf("%d dashboards, want 1", len(ds))
	}
	var p map[string]any
	for _, d := range ds {
		p = props(d)
	}
	if p["DashboardName"] != "orderly-"+stage {
		t.Errorf("dashboard named %v, want orderly-%s", p["DashboardName"], stage)
	}
	var body strings.Builder
	parts := list(list(p["DashboardBody"].(map[string]any)["Fn::Join"])[1])
	for _, part := range parts {
		if s, ok := part.(string); ok {
			body.WriteString(s)
		} else {
			body.WriteString("TOKEN")
		}
	}
	var doc struct{ Widgets []map[string]any }
	if err := json.Unmarshal([]byte(body.String()), &doc); err != nil {
		t.Fatalf("dashboard body is not JSON: %v\n%s", err, body.String())
	}
	return body.String(), doc.Widgets
}

// The dashboard shows what the issue asks an operator to see, from the
// metrics the code emits in the stage's namespace.
func TestDashboardShowsTheEngine(t *testing.T) {
	body, widgets := dashboardBody(t)
	var titles []string
	for _, w := range widgets {
		if title, ok := w["properties"].(map[string]any)["title"].(string); ok {
			titles = append(titles, title)
		}
	}
	for _, want := range []string{"Alarms", "Orders by status", "End-to-end latency", "Step latency", "Retries and timeouts",
		"Races and duplicates", "Compensations", "Circuit breakers", "Queue depth", "Oldest message age", "Dead-letter queues",
		"Lambda errors", "Lambda throttles", "Estimated cost per million orders"} {
		if !slices.ContainsFunc(titles, func(t string) bool { return strings.HasPrefix(t, want) }) {
			t.Errorf("no %q widget among %q", want, titles)
		}
	}
	// Every EMF metric searched for is in the stage's namespace, and the
	// ones the panels need are there, with the percentiles asked for.
	searched := regexp.MustCompile(`SEARCH\('\{([^,}]+),[^}]*\} MetricName=\\"(\w+)\\"[^']*', '(\w+)'`).FindAllStringSubmatch(body, -1)
	seen := map[string]bool{}
	for _, m := range searched {
		if m[1] != metrics.StageNamespace(stage) {
			t.Errorf("searches namespace %s, want the stage's %s", m[1], metrics.StageNamespace(stage))
		}
		seen[m[2]+" "+m[3]] = true
	}
	for _, want := range []string{
		metrics.OrdersSubmitted + " Sum", metrics.OrdersProcessed + " Sum", metrics.OrdersFailed + " Sum", metrics.OrdersCancelled + " Sum",
		metrics.OrdersInError + " Sum", metrics.OrderLatency + " p50", metrics.OrderLatency + " p99",
		metrics.StepLatency + " p50", metrics.StepLatency + " p99", metrics.StepsRetried + " Sum", metrics.RepliesWithheld + " Sum",
		metrics.ClaimsLost + " Sum", metrics.StaleReplies + " Sum", metrics.CompensationsStarted + " Sum", metrics.StepsUndone + " Sum",
		metrics.CircuitOpened + " Sum", metrics.RequestsHeld + " Sum", metrics.ConfigurationFaults + " Sum",
	} {
		if !seen[want] {
			t.Errorf("the dashboard does not show %s", want)
		}
	}
	// One line per queue for depth and age, per dead-letter queue, per
	// function for errors and throttles.
	functions := len(ofType("AWS::Lambda::Function"))
	for metric, want := range map[string]int{
		"ApproximateAgeOfOldestMessage":      4,
		"ApproximateNumberOfMessagesVisible": 4 + 6, // the queues, then their 4 DLQs and the 2 failure queues
		`"Errors"`:                           functions,
		`"Throttles"`:                        functions,
	} {
		if n := strings.Count(body, metric); n != want {
			t.Errorf("%s appears %d times, want %d", metric, n, want)
		}
	}
	// The cost estimate divides every priced usage by the orders submitted;
	// CDK warns of an identifier the expression uses but does not define.
	if !strings.Contains(body, `/ orders, 0)`) || !strings.Contains(body, "ConsumedWriteCapacityUnits") || !strings.Contains(body, "NumberOfEmptyReceives") {
		t.Error("the cost estimate lacks the orders, DynamoDB or SQS terms")
	}
	warnings := assertions.Annotations_FromStack(synthesized.Stack).FindWarning(jsii.String("*"), assertions.Match_StringLikeRegexp(jsii.String("Math expression")))
	if len(*warnings) > 0 {
		t.Errorf("math expression warnings: %v", describe(*warnings))
	}
}

// Every alarm links the dashboard and names its runbook entry, and every
// function writes its metrics in the stage's namespace, which the alarms
// and the dashboard read.
func TestAlarmsLinkTheDashboardAndRunbook(t *testing.T) {
	for id, a := range ofType("AWS::CloudWatch::Alarm") {
		raw, _ := json.Marshal(props(a)["AlarmDescription"])
		d := string(raw)
		if !strings.Contains(d, "#dashboards:name=orderly-"+stage) || !strings.Contains(d, "Runbook: docs/operations.md#") || strings.Contains(d, "none-add-one") {
			t.Errorf("alarm %s: description %s lacks the dashboard or its runbook entry", logicalName(id), d)
		}
	}
	for id, fn := range ofType("AWS::Lambda::Function") {
		vars, _ := props(fn)["Environment"].(map[string]any)["Variables"].(map[string]any)
		if vars[resources.EnvMetricsNamespace] != metrics.StageNamespace(stage) {
			t.Errorf("function %s writes metrics in %v, want %s", logicalName(id), vars[resources.EnvMetricsNamespace], metrics.StageNamespace(stage))
		}
	}
	raw, _ := json.Marshal(ofType("AWS::CloudWatch::Alarm"))
	if strings.Contains(string(raw), `"Namespace":"orderly"`) {
		t.Error("an alarm reads the shared namespace orderly instead of the stage's")
	}
}

// The dashboard shows paused services and workflows: how many are paused
// and how many are past the end their operator gave, as the Supervisor
// counts them each run (the largest count of a period, whatever the
// Supervisor's rate), and each agent's requests held by a pause.
func TestDashboardShowsPauses(t *testing.T) {
	body, widgets := dashboardBody(t)
	var pauses map[string]any
	for _, w := range widgets {
		p, _ := w["properties"].(map[string]any)
		if title, _ := p["title"].(string); strings.HasPrefix(title, "Pauses") {
			pauses = p
		}
	}
	if pauses == nil {
		t.Fatal("no Pauses widget")
	}
	raw, _ := json.Marshal(pauses["metrics"])
	for _, metric := range []string{metrics.PausesOn, metrics.PausesOverrun} {
		want := `["` + metrics.StageNamespace(stage) + `","` + metric + `","Service","supervisor",{`
		if !strings.Contains(string(raw), want) {
			t.Errorf("the Pauses widget's metrics %s lack the Supervisor's %s", raw, metric)
		}
	}
	if n := strings.Count(string(raw), `"stat":"Maximum"`); n != 2 {
		t.Errorf("the Pauses widget's metrics %s: %d with the statistic Maximum, want 2 (a run's count, not a sum of runs)", raw, n)
	}
	perAgent := regexp.MustCompile(`SEARCH\('\{` + regexp.QuoteMeta(metrics.StageNamespace(stage)) + `,Service\} MetricName=\\"` + metrics.RequestsPaused + `\\"', 'Sum', 60\)`)
	if !perAgent.MatchString(body) {
		t.Errorf("the dashboard does not show each agent's %s", metrics.RequestsPaused)
	}
}
