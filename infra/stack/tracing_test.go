package stack_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"orderly/infra/stack"
	"orderly/internal/order"
	"orderly/internal/tracing"
)

// Tracing on sets every function's X-Ray endpoint and sample and adds no
// grant: the one action X-Ray's OTLP endpoint authorizes an export as,
// xray:PutTraceSegments, is every function role's already, for Lambda's
// active tracing. Off, no function has a tracing variable.
func TestTracingSetsEveryFunctionsExportAndNoGrant(t *testing.T) {
	off := synthVariant(t, "Orderly-untraced", map[string]any{stack.CtxStage: "traces"}, func(*order.Workflow) {})
	on := synthVariant(t, "Orderly-traced", map[string]any{stack.CtxStage: "traces", stack.CtxTracing: map[string]any{"sample": 0.1}},
		func(*order.Workflow) {})
	on.nagErrors(t)

	wantEndpoint := `{"Fn::Sub":"https://xray.${AWS::Region}.${AWS::URLSuffix}/v1/traces"}`
	for _, tt := range []struct {
		name string
		v    variant
		want map[string]string // variable: value ("" absent)
	}{
		{"off", off, map[string]string{tracing.EnvXRay: "", tracing.EnvSample: "", tracing.EnvEndpoint: ""}},
		{"on", on, map[string]string{tracing.EnvXRay: wantEndpoint, tracing.EnvSample: "0.1", tracing.EnvEndpoint: ""}},
	} {
		fns := tt.v.ofType("AWS::Lambda::Function")
		if len(fns) == 0 {
			t.Fatalf("%s: no functions", tt.name)
		}
		for id, fn := range fns {
			env, _ := props(fn)["Environment"].(map[string]any)
			vars, _ := env["Variables"].(map[string]any)
			for name, want := range tt.want {
				got := ""
				if v, ok := vars[name]; ok {
					got = describe(v)
				}
				if got != want {
					t.Errorf("tracing %s: function %s has %s=%s, want %q", tt.name, logicalName(id), name, got, want)
				}
			}
		}
	}

	offGrants, onGrants := grantsOf(t, off.ofType("AWS::IAM::Policy")), grantsOf(t, on.ofType("AWS::IAM::Policy"))
	for role, gs := range onGrants {
		if !slices.Equal(gs, offGrants[role]) {
			t.Errorf("tracing on changes role %s's grants:\n on  %v\n off %v", role, gs, offGrants[role])
		}
	}
	for id, fn := range on.ofType("AWS::Lambda::Function") {
		role := logicalName(describe(props(fn)["Role"]))
		if !slices.Contains(onGrants[role], "xray:PutTraceSegments on *") {
			t.Errorf("function %s's role %s may not send spans (xray:PutTraceSegments): %v", logicalName(id), role, onGrants[role])
		}
	}
}

func TestTracingFromContext(t *testing.T) {
	for _, tt := range []struct {
		name    string
		value   any // nil: the key is absent
		want    *stack.Tracing
		wantErr string
	}{
		{name: "absent: off", value: nil, want: nil},
		{name: "a share", value: map[string]any{"sample": 0.1}, want: &stack.Tracing{Sample: 0.1}},
		{name: "every order by default", value: map[string]any{}, want: &stack.Tracing{Sample: 1}},
		{name: "from -c, a string", value: `{"sample": 0.25}`, want: &stack.Tracing{Sample: 0.25}},
		{name: "none sampled", value: map[string]any{"sample": 0}, wantErr: "sample 0 is not a share of orders"},
		{name: "more than all", value: map[string]any{"sample": 2}, wantErr: "sample 2 is not a share of orders"},
		{name: "a misspelt field", value: map[string]any{"samples": 0.1}, wantErr: `unknown field "samples"`},
		{name: "not an object", value: "yes", wantErr: "context tracing: want an object"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := map[string]any{}
			if tt.value != nil {
				extra[stack.CtxTracing] = tt.value
			}
			p, _, err := variantContext(extra)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one saying %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(p.Tracing) != fmt.Sprint(tt.want) {
				t.Errorf("tracing %+v, want %+v", p.Tracing, tt.want)
			}
		})
	}
}
