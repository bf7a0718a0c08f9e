package ordertest

import (
	"encoding/json"
	"slices"
	"time"

	"orderly/internal/order"
)

// The step that waits for an event in a Reviewed workflow, and its event.
const (
	StepReview  = "manual-review"
	EventReview = "review"
)

// ReviewSchema is the schema of a review's data: a decision, approve or
// reject, and an optional note.
var ReviewSchema = json.RawMessage(`{"type":"object","required":["decision"],"additionalProperties":false,` +
	`"properties":{"decision":{"enum":["approve","reject"]},"note":{"type":"string","maxLength":200}}}`)

// Reviewed is wf with a step that waits up to timeout for the event
// EventReview (data of ReviewSchema), named StepReview, at index at: for
// tests of events. wf keeps its name and version, so a test world
// provisioned for wf's agents runs it.
func Reviewed(wf order.Workflow, at int, timeout time.Duration) order.Workflow {
	wf.Steps = slices.Insert(slices.Clone(wf.Steps), at, order.StepDef{Name: StepReview, Wait: &order.Wait{
		Event: EventReview, Timeout: timeout, Schema: ReviewSchema,
	}})
	return wf
}
