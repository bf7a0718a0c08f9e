package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode/utf8"

	"orderly/infra/stack"
	"orderly/internal/adapter/remote"
	"orderly/internal/docslug"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// A remote service that refuses an agent's configuration (a redirect, 401,
// 403, 404, 405, 407, 415) holds every order of that agent until someone
// fixes it, and operators get one alert about it, naming the service and
// the status: an alarm per agent and status on ConfigurationFaults, which
// the agent counts with its Status. It fires on the first fault and stays
// in alarm while faults keep coming (the agent probes every OpenFor, so
// at least once every two minutes while orders wait), so one episode is
// one alert, and it clears five quiet minutes after the last.
func TestConfigurationFaultAlarmsNameTheServiceAndStatus(t *testing.T) {
	alarms := ofType("AWS::CloudWatch::Alarm")
	for _, agent := range ordertest.OrderWorkflows(order.DefaultTiming).Agents() {
		for _, status := range remote.ConfigurationStatuses {
			name := "ConfigFault" + strings.ToUpper(agent[:1]) + agent[1:] + status
			id := findID(alarms, name)
			if id == "" {
				t.Errorf("no %s alarm", name)
				continue
			}
			p := props(alarms[id])
			dims, _ := json.Marshal(p["Dimensions"])
			wantDims := fmt.Sprintf(`[{"Name":"Service","Value":"%s-agent"},{"Name":"Status","Value":"%s"}]`, agent, status)
			if p["MetricName"] != metrics.ConfigurationFaults || p["Namespace"] != metrics.StageNamespace(stage) || string(dims) != wantDims ||
				p["Statistic"] != "Sum" || p["Period"] != 60.0 || p["Threshold"] != 1.0 ||
				p["EvaluationPeriods"] != 5.0 || p["DatapointsToAlarm"] != 1.0 || p["TreatMissingData"] != "notBreaching" {
				t.Errorf("alarm %s: %s %s %s, %v of %v periods of %vs, threshold %v, missing data %v; want %s of %s, 1 of 5 minutes, threshold 1, not breaching",
					name, p["Namespace"], p["MetricName"], dims, p["DatapointsToAlarm"], p["EvaluationPeriods"], p["Period"], p["Threshold"], p["TreatMissingData"],
					metrics.ConfigurationFaults, wantDims)
			}
			var d strings.Builder // the description's text, its tokens left out
			for _, part := range list(list(p["AlarmDescription"].(map[string]any)["Fn::Join"])[1]) {
				if text, ok := part.(string); ok {
					d.WriteString(text)
				}
			}
			for _, want := range []string{"the " + agent + " agent's remote service", "answers " + status + " (", "configuration fault", "No order fails",
				"Runbook: docs/operations.md#configuration-fault"} {
				if !strings.Contains(d.String(), want) {
					t.Errorf("alarm %s: description %q, want it to contain %q", name, d.String(), want)
				}
			}
		}
	}
}

// Every alarm's description links its runbook entry by a stable anchor,
// and the anchor is a heading of docs/operations.md: a renamed entry fails
// here, not for an operator woken by the alarm. Each description stays
// within CloudWatch's 1,024 characters, the region's tokens counted at 20.
func TestAlarmsLinkARunbookEntryThatExists(t *testing.T) {
	raw, err := os.ReadFile("../../docs/operations.md")
	if err != nil {
		t.Fatal(err)
	}
	anchors := docslug.Anchors(string(raw))
	runbook := regexp.MustCompile(`Runbook: docs/operations\.md#([^\s.]+)`)
	alarms := ofType("AWS::CloudWatch::Alarm")
	for id, a := range alarms {
		var d strings.Builder
		length := 0
		switch desc := props(a)["AlarmDescription"].(type) {
		case string:
			d.WriteString(desc)
		case map[string]any:
			for _, part := range list(list(desc["Fn::Join"])[1]) {
				if text, ok := part.(string); ok {
					d.WriteString(text)
				} else {
					length += 20 // a token: the region
				}
			}
		}
		length += utf8.RuneCountInString(d.String())
		if length > 1024 {
			t.Errorf("alarm %s: description of about %d characters, CloudWatch takes 1024", logicalName(id), length)
		}
		m := runbook.FindStringSubmatch(d.String())
		if m == nil {
			t.Errorf("alarm %s: description %q links no runbook entry", logicalName(id), d.String())
			continue
		}
		if !anchors[m[1]] {
			t.Errorf("alarm %s: links docs/operations.md#%s, which is no heading there", logicalName(id), m[1])
		}
	}
	if len(alarms) == 0 {
		t.Fatal("no alarm in the template")
	}
}

// A pause on past the end its operator gave (the Supervisor counts such
// pauses each run as PausesOverrun) raises one alarm, which says what to
// do. Its period is the Supervisor's rate, so every period holds a run's
// count; one breaching period of two is enough, so one missed run
// neither clears nor fires it again, and two runs after the resume it
// clears. No data (a stage that never paused) is no overrun.
func TestPauseOverrunAlarmSaysWhatToDo(t *testing.T) {
	for _, tc := range []struct {
		name       string
		alarms     func(t *testing.T) map[string]map[string]any
		wantPeriod float64
	}{
		{"the Supervisor every minute", func(*testing.T) map[string]map[string]any { return ofType("AWS::CloudWatch::Alarm") }, 60},
		{"the Supervisor every 5 minutes", func(t *testing.T) map[string]map[string]any {
			v := synthVariant(t, "Orderly-supervisor-every-5", map[string]any{stack.CtxSupervisorRate: 5.0}, func(*order.Workflow) {})
			return v.ofType("AWS::CloudWatch::Alarm")
		}, 300},
	} {
		t.Run(tc.name, func(t *testing.T) {
			alarms := tc.alarms(t)
			id := findID(alarms, "PauseOverrun")
			if id == "" {
				t.Fatal("no PauseOverrun alarm")
			}
			p := props(alarms[id])
			dims, _ := json.Marshal(p["Dimensions"])
			const wantDims = `[{"Name":"Service","Value":"supervisor"}]`
			if p["MetricName"] != metrics.PausesOverrun || p["Namespace"] != metrics.StageNamespace(stage) || string(dims) != wantDims ||
				p["Statistic"] != "Maximum" || p["Period"] != tc.wantPeriod || p["Threshold"] != 1.0 || p["ComparisonOperator"] != "GreaterThanOrEqualToThreshold" ||
				p["EvaluationPeriods"] != 2.0 || p["DatapointsToAlarm"] != 1.0 || p["TreatMissingData"] != "notBreaching" {
				t.Errorf("alarm PauseOverrun: %s %s %s %v, %v of %v periods of %vs, %s %v, missing data %v; "+
					"want %s of %s Maximum, 1 of 2 periods of %vs (the Supervisor's rate), >= 1, not breaching",
					p["Namespace"], p["MetricName"], dims, p["Statistic"], p["DatapointsToAlarm"], p["EvaluationPeriods"], p["Period"],
					p["ComparisonOperator"], p["Threshold"], p["TreatMissingData"], metrics.PausesOverrun, wantDims, tc.wantPeriod)
			}
			var d strings.Builder
			for _, part := range list(list(p["AlarmDescription"].(map[string]any)["Fn::Join"])[1]) {
				if text, ok := part.(string); ok {
					d.WriteString(text)
				}
			}
			for _, want := range []string{"longer than its operator said", "orderly pauses", "orderly resume", "--for", "No order fails",
				"Runbook: docs/operations.md#pause-overrun"} {
				if !strings.Contains(d.String(), want) {
					t.Errorf("alarm PauseOverrun: description %q, want it to contain %q", d.String(), want)
				}
			}
		})
	}
}
