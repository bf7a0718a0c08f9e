package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"orderly/internal/order"
)

// The writes below change more than one record (see order.Completion,
// Undoing and Resume). Their guards are the domain's, made conditions by
// condition like any transition's; a write the domain says to make again
// another way (Completion.Again, Undoing.Again) is made once more.

// CompleteStep makes the order.Completion write: the replied record
// becomes Processed, and in the same write either the next record is
// claimed for c.Owner or the order ends (Processed after the last
// workflow step, Failed or Cancelled after the last undo). It returns the
// order and the claimed next record, whose request the caller sends. A
// stale reply returns order.ErrStale; a workflow step's success for an
// order the client cancelled returns order.ErrCancelRequested.
func (s *Store) CompleteStep(ctx context.Context, c order.Completion, now time.Time) (order.Order, order.StepState, error) {
	o, st, err := s.complete(ctx, c, now)
	if err == nil {
		return o, st, nil
	}
	if c, err = c.Again(err, now); err != nil {
		return o, st, err
	}
	return s.complete(ctx, c, now)
}

func (s *Store) complete(ctx context.Context, c order.Completion, now time.Time) (order.Order, order.StepState, error) {
	i := c.Step.Index
	field := func(j int, name string) expression.NameBuilder { return expression.Name(stepAttr(j, name)) }
	upd := expression.Set(field(i, "State"), expression.Value(order.Processed)).
		Remove(field(i, "LockedBy")).
		Remove(field(i, "CompleteBy"))
	if c.Reference != "" {
		upd = upd.Set(field(i, "Ref"), expression.Value(c.Reference))
	}
	if len(c.Result) > 0 {
		upd = upd.Set(field(i, "Result"), expression.Value(string(c.Result)))
	}
	if c.Step.Undo {
		upd = upd.Set(field(c.Undid, "State"), expression.Value(order.Undone)).
			Set(field(c.Undid, "Updated"), msValue(now))
	}
	upd = upd.Set(field(i, "Updated"), msValue(now)).
		Set(expression.Name(attrUpdated), msValue(now))
	cond := condition(c.Step, c.Guard(), now)
	if c.Next == nil {
		status := order.StatusProcessed
		if c.Step.Undo {
			status = order.StatusFailed
			if c.Cancelled {
				status = order.StatusCancelled
			}
		}
		return s.write(ctx, "complete", c.Step, i, cond, s.ended(upd, status, now))
	}
	j := c.NextIndex
	upd = claimed(upd, j).
		Set(field(j, "State"), expression.Value(order.Processing)).
		Set(field(j, "LockedBy"), expression.Value(c.Owner)).
		Set(field(j, "CompleteBy"), msValue(c.NextCompleteBy)).
		Set(field(j, "Updated"), msValue(now)).
		Set(expression.Name(attrActive), expression.Value(j))
	if !c.Step.Undo {
		upd = upd.Set(expression.Name(attrStatus), expression.Value(order.StatusProcessing))
	}
	if c.MoveDue {
		upd = upd.Set(expression.Name(attrDueAt), msValue(c.NextCompleteBy))
	}
	return s.write(ctx, "complete", c.Step, j, cond, upd)
}

// ended ends the order in status: it has no active record any more, leaves
// the due index, joins the search's ended orders and expires after the
// retention period.
func (s *Store) ended(upd expression.UpdateBuilder, status order.Status, now time.Time) expression.UpdateBuilder {
	return outcome(upd, status, now).Set(expression.Name(attrStatus), expression.Value(status)).
		Set(expression.Name(attrExpiresAt), s.expiresAt(now)).
		Remove(expression.Name(attrActive)).
		Remove(expression.Name(attrDueShard)).
		Remove(expression.Name(attrDueAt))
}

// StartUndo makes the order.Undoing write. It returns the order as written
// and its first undo record (zero when there was nothing to undo and the
// order ended). A record that moved on returns order.ErrStale. The undo
// records' attempts count on from the order's undo floor.
func (s *Store) StartUndo(ctx context.Context, u order.Undoing, now time.Time) (order.Order, order.StepState, error) {
	if u.Step.Index < 0 || u.Step.Index >= u.Steps {
		// Its undo records would be written over it.
		return order.Order{}, order.StepState{}, fmt.Errorf("start undoing order %s at record %d: only one of the workflow's %d steps starts undoing: %w",
			u.Step.OrderID, u.Step.Index, u.Steps, order.ErrInvalid)
	}
	o, first, err := s.startUndo(ctx, u, now)
	if err == nil {
		return o, first, nil
	}
	if u, err = u.Again(err, now); err != nil {
		return o, first, err
	}
	return s.startUndo(ctx, u, now)
}

func (s *Store) startUndo(ctx context.Context, u order.Undoing, now time.Time) (order.Order, order.StepState, error) {
	i, st := u.Step.Index, u.Step
	field := func(name string) expression.NameBuilder { return expression.Name(stepAttr(i, name)) }
	upd := expression.Set(field("State"), expression.Value(u.Ends)).
		Remove(field("LockedBy")).
		Remove(field("CompleteBy")).
		Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind))
	if u.From == order.Error {
		upd = outOfErrorIndex(upd) // an operator's redrive into compensation
		if len(u.Plan) > 0 {
			upd = runningAgain(upd) // with nothing to undo, the write ends it again
		}
	}
	if u.Reference != "" {
		upd = upd.Set(field("Ref"), expression.Value(u.Reference))
	}
	if len(u.Result) > 0 {
		upd = upd.Set(field("Result"), expression.Value(string(u.Result)))
	}
	if u.Reason != "" {
		upd = upd.Set(field("LastError"), expression.Value(u.Reason)).
			Set(expression.Name(attrLastError), expression.Value(fmt.Sprintf("step %s: %s", st.Step, u.Reason)))
	}
	if u.CancelNow {
		upd = upd.Set(expression.Name(attrCancel), expression.Value(true))
	}
	if u.Expired {
		// A timeout: it counts like one that is retried.
		upd = upd.Set(field("Failures"), field("Failures").Plus(expression.Value(1)))
	}
	upd = upd.Set(field("Updated"), msValue(now)).Set(expression.Name(attrUpdated), msValue(now))
	cond := condition(st, u.Guard(), now)

	status, final := order.StatusCompensating, order.StatusFailed
	if u.Cancelled || u.CancelNow {
		status, final = order.StatusCancelling, order.StatusCancelled
	}
	if len(u.Plan) == 0 {
		upd = s.ended(upd, final, now).Remove(expression.Name(attrUnclaimed))
		return s.write(ctx, "end", st, -1, cond, upd)
	}
	// Setting list elements past the end appends them, in index order.
	// Their attempts count on from the floor: claims add one, as to any
	// record.
	floor, first := u.Step.UndoFloor, u.Steps
	for k, def := range u.Plan {
		rec := stepRecord{Step: def.Name, Undo: true, Agent: def.Agent, State: string(order.NotStarted), Attempt: floor, UpdatedAt: millis(now)}
		if k == 0 {
			if u.Owner != "" {
				rec.State, rec.LockedBy, rec.Attempt, rec.CompleteBy = string(order.Processing), u.Owner, floor+1, millis(u.CompleteBy)
			} else {
				rec.State, rec.CompleteBy = string(order.Pending), millis(u.ClaimBy)
			}
		}
		upd = upd.Set(expression.Name(stepPath(first+k)), expression.Value(rec))
	}
	due := u.ClaimBy
	if u.Owner != "" {
		due = u.CompleteBy
		upd = upd.Remove(expression.Name(attrUnclaimed))
	} else {
		upd = upd.Set(expression.Name(attrUnclaimed), expression.Value(u.Plan[0].Name))
	}
	upd = upd.Set(expression.Name(attrStatus), expression.Value(status)).
		Set(expression.Name(attrActive), expression.Value(first)).
		Set(expression.Name(attrDueShard), expression.Value(shardOf(st.OrderID, s.shards))).
		Set(expression.Name(attrDueAt), msValue(due))
	return s.write(ctx, "start undoing", st, first, cond, upd)
}

// Redrive makes the order.Resume write. A record that moved on returns
// order.ErrStale.
func (s *Store) Redrive(ctx context.Context, r order.Resume, now time.Time) (order.Order, order.StepState, error) {
	st, target := r.Step, r.Step
	upd := expression.Set(expression.Name(attrStatus), expression.Value(r.Status)).
		Set(expression.Name(attrUpdated), msValue(now)).
		Set(expression.Name(attrLastError), expression.Value(r.Reason)).
		Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind))
	upd = runningAgain(outOfErrorIndex(upd))
	if r.Forward != nil {
		target = *r.Forward
		for k := r.Steps; k < r.Records; k++ {
			upd = upd.Remove(expression.Name(stepPath(k)))
		}
		if r.UndoFloor > st.UndoFloor {
			upd = upd.Set(expression.Name(attrUndoFloor), expression.Value(r.UndoFloor))
		}
		upd = upd.Set(expression.Name(attrActive), expression.Value(target.Index))
	}
	i := target.Index
	field := func(name string) expression.NameBuilder { return expression.Name(stepAttr(i, name)) }
	if target.FailureCount > 0 {
		// Added as stored: the record in Error keeps its count until
		// this write.
		upd = upd.Set(field("PastFailures"), expression.Plus(field("PastFailures").IfNotExists(expression.Value(0)), field("Failures")))
	}
	upd = upd.Set(field("State"), expression.Value(order.Pending)).
		Set(field("Failures"), expression.Value(0)).
		Set(field("Nudges"), expression.Value(0)).
		Remove(field("Deferrals")).
		Remove(field("Heartbeats")).
		Remove(field("LockedBy")).
		Set(field("CompleteBy"), msValue(r.ClaimBy)).
		Set(field("LastError"), expression.Value(r.Reason)).
		Set(field("Updated"), msValue(now)).
		Set(expression.Name(attrUnclaimed), expression.Value(target.Step)).
		Set(expression.Name(attrDueShard), expression.Value(shardOf(st.OrderID, s.shards))).
		Set(expression.Name(attrDueAt), msValue(r.ClaimBy))
	return s.write(ctx, "redrive", st, i, condition(st, r.Guard(), now), upd)
}
