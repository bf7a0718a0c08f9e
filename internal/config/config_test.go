package config_test

import (
	"strings"
	"testing"
	"time"

	"orderly/internal/config"
	"orderly/internal/order"
)

func TestRequiredReportsEveryMissingVariable(t *testing.T) {
	env := config.FromMap(map[string]string{
		"ORDERS_TABLE": "orders",
		"STATE_TABLE":  "",
		"ALERT_TOPIC":  "   ",
	})
	got := map[string]string{}
	for _, name := range []string{"ORDERS_TABLE", "STATE_TABLE", "ALERT_TOPIC", "REQUEST_QUEUE"} {
		got[name] = env.Required(name)
	}
	if got["ORDERS_TABLE"] != "orders" {
		t.Errorf("Required(ORDERS_TABLE) = %q, want %q", got["ORDERS_TABLE"], "orders")
	}
	err := env.Err()
	if err == nil {
		t.Fatalf("Err() = nil, want an error naming every missing variable")
	}
	for _, name := range []string{"STATE_TABLE", "ALERT_TOPIC", "REQUEST_QUEUE"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("Err() = %q, want it to name %s", err, name)
		}
	}
	if strings.Contains(err.Error(), "ORDERS_TABLE") {
		t.Errorf("Err() = %q, want it not to name ORDERS_TABLE, which is set", err)
	}
}

func TestErrNilWhenAllIsWell(t *testing.T) {
	env := config.FromMap(map[string]string{"A": "1", "D": "45s", "N": "7"})
	env.Required("A")
	if got := env.Duration("D", time.Second); got != 45*time.Second {
		t.Errorf("Duration(D) = %s, want 45s", got)
	}
	if got := env.Int("N", 1); got != 7 {
		t.Errorf("Int(N) = %d, want 7", got)
	}
	if got := env.String("S", "fallback"); got != "fallback" {
		t.Errorf("String(S) = %q, want the default %q", got, "fallback")
	}
	env.Timing()
	if err := env.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
}

func TestString(t *testing.T) {
	env := config.FromMap(map[string]string{"SET": "value", "EMPTY": ""})
	tests := []struct{ name, want string }{
		{"SET", "value"},
		{"EMPTY", "default"},
		{"UNSET", "default"},
	}
	for _, tt := range tests {
		if got := env.String(tt.name, "default"); got != tt.want {
			t.Errorf("String(%s) = %q, want %q", tt.name, got, tt.want)
		}
	}
}

func TestDuration(t *testing.T) {
	const def = 30 * time.Second
	tests := []struct {
		name      string
		value     string
		set       bool
		want      time.Duration
		wantProbl bool
	}{
		{"unset", "", false, def, false},
		{"empty", "", true, def, false},
		{"valid", "90s", true, 90 * time.Second, false},
		{"compound", "1m30s", true, 90 * time.Second, false},
		{"no unit", "30", true, def, true},
		{"garbage", "soon", true, def, true},
		{"zero", "0s", true, def, true},
		{"negative", "-5s", true, def, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			if tt.set {
				m["D"] = tt.value
			}
			env := config.FromMap(m)
			if got := env.Duration("D", def); got != tt.want {
				t.Errorf("Duration(D=%q) = %s, want %s", tt.value, got, tt.want)
			}
			err := env.Err()
			if gotProbl := err != nil; gotProbl != tt.wantProbl {
				t.Fatalf("after Duration(D=%q), Err() = %v, want a problem: %t", tt.value, err, tt.wantProbl)
			}
			if err != nil && !strings.Contains(err.Error(), "D=") {
				t.Errorf("Err() = %q, want it to name D and its value", err)
			}
		})
	}
}

// A span that may be none (a clock skew, which the local runtime
// documents as 0 by default) takes 0 and refuses a negative one.
func TestSpan(t *testing.T) {
	const def = time.Second
	tests := []struct {
		value     string
		want      time.Duration
		wantProbl bool
	}{
		{"0", 0, false},
		{"0s", 0, false},
		{"250ms", 250 * time.Millisecond, false},
		{"-1s", def, true},
		{"soon", def, true},
	}
	for _, tt := range tests {
		env := config.FromMap(map[string]string{"S": tt.value})
		if got := env.Span("S", def); got != tt.want || (env.Err() != nil) != tt.wantProbl {
			t.Errorf("Span(S=%q) = %s, problem %v; want %s, a problem %t", tt.value, got, env.Err(), tt.want, tt.wantProbl)
		}
	}
	if got := config.FromMap(nil).Span("S", def); got != def {
		t.Errorf("Span(unset) = %s, want %s", got, def)
	}
}

func TestInt(t *testing.T) {
	const def = 3
	tests := []struct {
		name      string
		value     string
		set       bool
		want      int
		wantProbl bool
	}{
		{"unset", "", false, def, false},
		{"empty", "", true, def, false},
		{"valid", "5", true, 5, false},
		{"one", "1", true, 1, false},
		{"zero", "0", true, def, true},
		{"negative", "-1", true, def, true},
		{"fraction", "1.5", true, def, true},
		{"garbage", "three", true, def, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := map[string]string{}
			if tt.set {
				m["N"] = tt.value
			}
			env := config.FromMap(m)
			if got := env.Int("N", def); got != tt.want {
				t.Errorf("Int(N=%q) = %d, want %d", tt.value, got, tt.want)
			}
			err := env.Err()
			if gotProbl := err != nil; gotProbl != tt.wantProbl {
				t.Fatalf("after Int(N=%q), Err() = %v, want a problem: %t", tt.value, err, tt.wantProbl)
			}
			if err != nil && !strings.Contains(err.Error(), "N=") {
				t.Errorf("Err() = %q, want it to name N and its value", err)
			}
		})
	}
}

func TestTiming(t *testing.T) {
	d := order.DefaultTiming
	// A short allowance alone keeps the default max/allowance ratio.
	scaled := func(a time.Duration) time.Duration {
		return time.Duration(float64(a) * float64(d.MaxAllowance) / float64(d.Allowance))
	}
	tests := []struct {
		name string
		env  map[string]string
		want order.Timing
		// wantProblems are fragments the error must contain; none means
		// no error.
		wantProblems []string
	}{
		{"defaults", nil, d, nil},
		{"allowance alone keeps the default ratio",
			map[string]string{config.EnvAllowance: "2s"},
			order.Timing{Allowance: 2 * time.Second, MaxAllowance: scaled(2 * time.Second),
				FailureThreshold: d.FailureThreshold, ClaimWithin: d.ClaimWithin, SkewGrace: d.SkewGrace, MaxHeartbeats: d.MaxHeartbeats}, nil},
		{"every variable",
			map[string]string{config.EnvAllowance: "2s", config.EnvMaxAllowance: "5s",
				config.EnvFailureThreshold: "4", config.EnvClaimWithin: "3s", config.EnvSkewGrace: "1500ms", config.EnvMaxHeartbeats: "2"},
			order.Timing{Allowance: 2 * time.Second, MaxAllowance: 5 * time.Second, FailureThreshold: 4, ClaimWithin: 3 * time.Second,
				SkewGrace: 1500 * time.Millisecond, MaxHeartbeats: 2}, nil},
		{"heartbeats off (docs/configuration.md: 0 turns them off)",
			map[string]string{config.EnvMaxHeartbeats: "0"},
			order.Timing{Allowance: d.Allowance, MaxAllowance: d.MaxAllowance, FailureThreshold: d.FailureThreshold,
				ClaimWithin: d.ClaimWithin, SkewGrace: d.SkewGrace, MaxHeartbeats: 0}, nil},
		{"max below allowance",
			map[string]string{config.EnvAllowance: "1m", config.EnvMaxAllowance: "30s"},
			order.Timing{Allowance: time.Minute, MaxAllowance: 30 * time.Second,
				FailureThreshold: d.FailureThreshold, ClaimWithin: d.ClaimWithin, SkewGrace: d.SkewGrace, MaxHeartbeats: d.MaxHeartbeats},
			[]string{"max allowance"}},
		{"every variable malformed",
			map[string]string{config.EnvAllowance: "fast", config.EnvMaxAllowance: "-1m",
				config.EnvFailureThreshold: "0", config.EnvClaimWithin: "1", config.EnvMaxHeartbeats: "-1"},
			d,
			[]string{config.EnvAllowance, config.EnvMaxAllowance, config.EnvFailureThreshold, config.EnvClaimWithin, config.EnvMaxHeartbeats}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := config.FromMap(tt.env)
			if got := env.Timing(); got != tt.want {
				t.Errorf("Timing() = %+v, want %+v", got, tt.want)
			}
			err := env.Err()
			if len(tt.wantProblems) == 0 {
				if err != nil {
					t.Errorf("Err() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Err() = nil, want problems %q", tt.wantProblems)
			}
			for _, p := range tt.wantProblems {
				if !strings.Contains(err.Error(), p) {
					t.Errorf("Err() = %q, want it to mention %q", err, p)
				}
			}
		})
	}
}

func TestErrCollectsProblemsOfEveryKind(t *testing.T) {
	env := config.FromMap(map[string]string{"D": "later", "N": "-2"})
	env.Required("TABLE")
	env.Duration("D", time.Second)
	env.Int("N", 1)
	env.Required("TOPIC")
	err := env.Err()
	if err == nil {
		t.Fatal("Err() = nil, want four problems")
	}
	for _, want := range []string{"TABLE", `D="later"`, `N="-2"`, "TOPIC"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("Err() = %q, want it to mention %s", err, want)
		}
	}
}

func TestFromOS(t *testing.T) {
	t.Setenv("ORDERLY_TEST_VAR", "from-os")
	env := config.FromOS()
	if got := env.Required("ORDERLY_TEST_VAR"); got != "from-os" {
		t.Errorf("Required(ORDERLY_TEST_VAR) = %q, want %q", got, "from-os")
	}
	if err := env.Err(); err != nil {
		t.Errorf("Err() = %v, want nil", err)
	}
}
