package ordertest

import (
	"slices"
	"time"

	"orderly/internal/order"
)

// StepCoolOff is the step that waits in a Timed workflow.
const StepCoolOff = "cool-off"

// Timed is wf with a step that waits, a durable timer of d named
// StepCoolOff, at index at: for tests of waiting orders. wf keeps its
// name and version, so a test world provisioned for wf's agents runs it.
func Timed(wf order.Workflow, at int, d time.Duration) order.Workflow {
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), at, order.StepDef{Name: StepCoolOff, Wait: &order.Wait{For: d}})
	return wf
}
