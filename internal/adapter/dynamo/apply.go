package dynamo

import (
	"context"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"orderly/internal/order"
)

// Apply persists a transition the domain decided in one conditional
// UpdateItem: its guard becomes the write's condition, its change the
// update. It returns the record as written; a guard that no longer holds
// returns order.ErrStale and changes nothing.
func (s *Store) Apply(ctx context.Context, t order.Transition) (order.StepState, error) {
	_, out, err := s.transition(ctx, t.Name, t.Record, t.Record.Index, guard(t), s.change(t))
	return out, err
}

// guard is the condition of t's write.
func guard(t order.Transition) expression.ConditionBuilder {
	st, g, i := t.Record, t.Guard, t.Record.Index
	cond := on(st, g.State)
	if g.Expired {
		cond = cond.And(expression.Name(stepAttr(i, "CompleteBy")).LessThan(msValue(t.At)))
	}
	if g.Unlocked {
		cond = cond.And(expression.AttributeNotExists(expression.Name(stepAttr(i, "LockedBy"))))
	}
	if g.LockedBy != "" {
		cond = cond.And(expression.Name(stepAttr(i, "LockedBy")).Equal(expression.Value(g.LockedBy)))
	}
	if g.NotCancelled {
		cond = cond.And(expression.AttributeNotExists(expression.Name(attrCancel)))
	}
	if g.NotParkedFor != "" {
		cond = cond.And(expression.Or(expression.AttributeNotExists(expression.Name(attrParked)),
			expression.Name(attrParked).NotEqual(expression.Value(g.NotParkedFor)))).
			And(expression.AttributeNotExists(expression.Name(attrAlertPending)))
	}
	return cond
}

// change is the update of t's write.
func (s *Store) change(t order.Transition) expression.UpdateBuilder {
	st, c, i := t.Record, t.Change, t.Record.Index
	upd := expression.Set(expression.Name(attrUpdated), msValue(t.At))
	if c.State != "" {
		upd = upd.Set(expression.Name(stepAttr(i, "State")), expression.Value(c.State)).
			Remove(expression.Name(stepAttr(i, "LockedBy")))
	}
	if !c.CompleteBy.IsZero() {
		upd = upd.Set(expression.Name(stepAttr(i, "CompleteBy")), msValue(c.CompleteBy))
	}
	if !c.DueAt.IsZero() {
		upd = upd.Set(expression.Name(attrDueAt), msValue(c.DueAt))
	}
	if c.Announce {
		upd = upd.Set(expression.Name(attrUnclaimed), expression.Value(st.Step))
	}
	if c.Reason != "" {
		upd = upd.Set(expression.Name(stepAttr(i, "LastError")), expression.Value(c.Reason))
	}
	if c.CountFailure {
		upd = upd.Set(expression.Name(stepAttr(i, "Failures")), expression.Name(stepAttr(i, "Failures")).Plus(expression.Value(1)))
	}
	if c.CountNudge {
		upd = upd.Set(expression.Name(stepAttr(i, "Nudges")), expression.Name(stepAttr(i, "Nudges")).Plus(expression.Value(1)))
	}
	if c.Releases > 0 {
		upd = upd.Set(expression.Name(stepAttr(i, "Releases")), expression.Value(c.Releases))
	}
	if c.Deferrals > 0 {
		upd = upd.Set(expression.Name(stepAttr(i, "Deferrals")), expression.Value(c.Deferrals))
	}
	if c.Alert != "" {
		upd = upd.Set(expression.Name(attrAlertPending), expression.Value(true)).
			Set(expression.Name(attrAlertKind), expression.Value(c.Alert))
	}
	if c.Error {
		upd = upd.Set(expression.Name(attrStatus), expression.Value(order.StatusError)).
			Set(expression.Name(attrLastError), expression.Value(fmt.Sprintf("step %s: %s", st.Step, c.Reason))).
			Remove(expression.Name(attrUnclaimed))
		upd = s.intoErrorIndex(upd, st.OrderID, t.At)
	}
	if c.Parked != "" {
		upd = upd.Set(expression.Name(attrParked), expression.Value(c.Parked))
	}
	if c.TouchesRecord() {
		upd = upd.Set(expression.Name(stepAttr(i, "Updated")), msValue(t.At))
	}
	return upd
}
