package order

import "time"

// WaitingFor is what a Waiting step waits for, since when and until when: one
// object for the order's views (GET /orders/{id}, the operators' view)
// and its Waiting status events, so a client reads the same either way.
type WaitingFor struct {
	// For is the kind of wait (StepDef.WaitKind: "timer", "event",
	// "callback"), from the step's definition; empty when the order's
	// workflow version is not known where it is read.
	For string `json:"for,omitempty"`
	// Event is the name of the event the step waits for (For "event"):
	// what a client or an operator sends to move the order on.
	Event string    `json:"event,omitempty"`
	Since time.Time `json:"since,omitzero"`
	// Until is when the wait ends: the record's CompleteBy.
	Until time.Time `json:"until"`
	// NextCheck, for a step whose service is polled (For "poll"), is
	// when its status is checked next (at the Supervisor's first run
	// after it).
	NextCheck time.Time `json:"nextCheck,omitzero"`
}

// WaitOf is st's wait, nil unless st is Waiting. w is the order's
// workflow version; the zero Workflow (a version this build lacks) gives
// the times alone.
func (w Workflow) WaitOf(st StepState) *WaitingFor {
	if st.ProcessState != Waiting {
		return nil
	}
	v := &WaitingFor{Since: st.Since, Until: st.CompleteBy}
	if d, ok := w.Step(st.Step); ok && !st.Undo {
		v.For = d.WaitKind()
		if d.Wait != nil {
			v.Event = d.Wait.Event
		}
		if d.Poll != nil {
			v.NextCheck = st.DueAt
		}
	}
	return v
}
