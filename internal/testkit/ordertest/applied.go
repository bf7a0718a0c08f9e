package ordertest

import (
	"slices"
	"time"

	"orderly/internal/order"
)

// AppliedTo is f, the order as stored, as t's write leaves it when its
// guard holds: every record, the order's status and its active record. It
// is the model the store's writes are tested against
// (TestWritesLandExactlyWhenTheDomainSaysTheyHold).
func AppliedTo(t order.Transition, f order.Found) order.Found {
	c := t.Change
	steps := slices.Clone(f.Steps)
	active := f.Active
	// The order's own attributes, as its active record carries them (and,
	// but for its alert and DueAt, every record).
	o, ok := f.Record()
	if !ok && len(steps) > 0 {
		o = steps[0]
	}
	switch {
	case c.Forward != nil:
		r := steps[c.Forward.Index]
		r.AlertPending, r.AlertKind, r.DueAt = o.AlertPending, o.AlertKind, o.DueAt
		o, active = t.Applied(r), c.Forward.Index
		steps[active] = o
	case t.Record.Index >= 0:
		o = t.Applied(o)
		steps[o.Index] = o
	}
	for _, i := range c.Undone {
		steps[i].ProcessState, steps[i].UpdatedAt = order.Undone, t.At
	}
	for _, i := range c.Skip {
		steps[i].ProcessState, steps[i].UpdatedAt = order.Skipped, t.At
	}
	if n := c.Next; n != nil {
		r := steps[n.Index]
		r.ProcessState, r.LockedBy, r.CompleteBy, r.UpdatedAt = n.State, n.Owner, n.CompleteBy, t.At
		switch n.State {
		case order.Processing:
			r.Attempt, r.Deferrals, r.Heartbeats = r.Attempt+1, 0, 0
			o.Parked = ""
		case order.Waiting:
			r.Attempt, r.Since = r.Attempt+1, t.At
		}
		steps[n.Index], active = r, n.Index
	}
	if len(c.Append) > 0 {
		active = len(steps)
		steps = append(steps, c.Append...)
	}
	steps = slices.DeleteFunc(steps, func(r order.StepState) bool { return slices.Contains(c.Drop, r.Index) })
	status := f.Status
	switch {
	case c.End != "":
		status, active = c.End, -1
	case c.Status != "":
		status = c.Status
	case c.Error:
		status = order.StatusError
	}
	version := f.Version
	if c.Version != "" {
		version = c.Version
	}
	// The order's own attributes are on every record; its alert and
	// DueAt on the active one alone, with the undo records done so far.
	var undone []string
	for i := range steps {
		r := &steps[i]
		r.Index, r.Version = i, version
		r.CancelRequested, r.UndoFloor, r.Parked = o.CancelRequested, o.UndoFloor, o.Parked
		r.AlertPending, r.AlertKind, r.DueAt, r.Undone = false, "", time.Time{}, nil
		if r.Undo && r.ProcessState == order.Processed {
			undone = append(undone, r.Step)
		}
	}
	if active >= 0 {
		r := &steps[active]
		r.AlertPending, r.AlertKind, r.DueAt, r.Undone = o.AlertPending, o.AlertKind, o.DueAt, undone
	}
	return order.Found{Status: status, Version: version, Active: active, Steps: steps}
}
