package config_test

import (
	"strings"
	"testing"
	"time"

	"orderly/internal/config"
	"orderly/internal/order"
)

// A stage's timing from CDK context: each key as its variable, numbers
// (cdk.json) and strings (-c key=value) alike, a maximum not set keeping
// the default ratio, and every wrong value named.
func TestTimingFromContext(t *testing.T) {
	timing := func(change func(*order.Timing)) order.Timing {
		d := order.DefaultTiming
		change(&d)
		return d
	}
	tests := []struct {
		name    string
		ctx     map[string]any
		want    order.Timing
		wantSet map[string]string
		wantErr string
	}{
		{"none", nil, order.DefaultTiming, map[string]string{}, ""},
		{"an allowance keeps the ratio; heartbeats from a number", map[string]any{config.CtxStepAllowance: "5s", config.CtxMaxHeartbeats: float64(0)},
			timing(func(d *order.Timing) { d.Allowance, d.MaxAllowance, d.MaxHeartbeats = 5*time.Second, 20*time.Second, 0 }),
			map[string]string{config.EnvAllowance: "5s", config.EnvMaxHeartbeats: "0"}, ""},
		{"both allowances", map[string]any{config.CtxStepAllowance: "10s", config.CtxStepMaxAllowance: "15s"},
			timing(func(d *order.Timing) { d.Allowance, d.MaxAllowance = 10*time.Second, 15*time.Second }),
			map[string]string{config.EnvAllowance: "10s", config.EnvMaxAllowance: "15s"}, ""},
		{"wrong values", map[string]any{config.CtxStepAllowance: "fast", config.CtxMaxHeartbeats: "-1"}, order.DefaultTiming, nil,
			`context stepAllowance, stepMaxAllowance or maxHeartbeats: configuration: `},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, set, err := config.TimingFromContext(func(key string) any { return tt.ctx[key] })
			if tt.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), `STEP_ALLOWANCE="fast"`) ||
					!strings.Contains(err.Error(), `STEP_MAX_HEARTBEATS="-1"`) {
					t.Errorf("error %v, want one naming both values, starting %q", err, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want || len(set) != len(tt.wantSet) {
				t.Fatalf("TimingFromContext = %+v, %v, %v; want %+v, %v", got, set, err, tt.want, tt.wantSet)
			}
			for k, v := range tt.wantSet {
				if set[k] != v {
					t.Errorf("set[%s] = %q, want %q", k, set[k], v)
				}
			}
		})
	}
}
