package stack_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

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
		for _, status := range order.ConfigurationStatuses {
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
				`Runbook: README, Runbook, "A remote service refuses the agent's configuration"`} {
				if !strings.Contains(d.String(), want) {
					t.Errorf("alarm %s: description %q, want it to contain %q", name, d.String(), want)
				}
			}
		}
	}
}
