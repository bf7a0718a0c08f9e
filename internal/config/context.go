package config

import (
	"fmt"

	"orderly/internal/order"
)

// Context keys of the CDK app (infra/cdk.json's "context", or cdk -c
// key=value) that set a stage's workflow timing. Each stands for the
// functions' variable, so that synth, the functions and the CLI read
// them with one parser (Env.Timing).
const (
	CtxStepAllowance    = "stepAllowance"
	CtxStepMaxAllowance = "stepMaxAllowance"
	CtxMaxHeartbeats    = "maxHeartbeats"
)

// The stage's context key, and the stage a deploy makes when it is unset
// (or not a name).
const (
	CtxStage     = "stage"
	DefaultStage = "dev"
)

// timingContext maps each timing context key to the variable it sets.
var timingContext = map[string]string{
	CtxStepAllowance:    EnvAllowance,
	CtxStepMaxAllowance: EnvMaxAllowance,
	CtxMaxHeartbeats:    EnvMaxHeartbeats,
}

// TimingFromContext reads a stage's timing from CDK context, as cdk
// synth deploys it: value returns a key's value (a string from -c, a
// string or a number from cdk.json), nil when the key is unset. set is
// the variables the context sets. The timing is the defaults' where a
// value is wrong, and the error names every such value.
func TimingFromContext(value func(key string) any) (t order.Timing, set map[string]string, err error) {
	set = map[string]string{}
	for key, name := range timingContext {
		if v := value(key); v != nil {
			set[name] = fmt.Sprint(v)
		}
	}
	env := FromMap(set)
	t = env.Timing()
	if err := env.Err(); err != nil {
		return t, set, fmt.Errorf("context %s, %s or %s: %w", CtxStepAllowance, CtxStepMaxAllowance, CtxMaxHeartbeats, err)
	}
	return t, set, nil
}
