package definition

import (
	"fmt"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// CheckStage reports a stage's timing that cdk synth refuses: one that
// Timing.Validate refuses, or a maximum allowance that leaves the agents'
// invocation no margin to reply (every step that sets no maxAllowance of
// its own runs under it). workflow validate and diff check the stage
// they apply with it too, so they refuse what synth refuses, in its words.
func CheckStage(t order.Timing) error {
	if limit := resources.AgentTimeout - agentMargin; t.MaxAllowance > limit {
		return fmt.Errorf("max allowance %s leaves the agents' %s timeout no margin: keep it at most %s", t.MaxAllowance, resources.AgentTimeout, limit)
	}
	return t.Validate()
}
