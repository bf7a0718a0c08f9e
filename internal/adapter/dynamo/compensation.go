package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"orderly/internal/order"
)

// StartUndo makes the order.Undoing write. It returns the order as written and
// its first undo record (zero when there was nothing to undo and the order
// ended). A step that moved on returns order.ErrStale. The undo records'
// attempts count on from the order's UndoFloor (u.Step's, as read; the
// write holds only while it is the stored one).
func (s *Store) StartUndo(ctx context.Context, u order.Undoing, now time.Time) (order.Order, order.StepState, error) {
	o, first, err := s.startUndo(ctx, u, now)
	var stale *staleError
	if !errors.As(err, &stale) || !undoFenceHolds(stale.old, u, now) || (u.CancelNow && stale.old.Cancel) {
		return o, first, err
	}
	// Only the cancel or the floor was other than the caller knew (a
	// reply's step carries neither): the write is made as they are.
	again := false
	if !u.CancelNow && stale.old.Cancel != u.Cancelled {
		u.Cancelled, again = stale.old.Cancel, true
	}
	if stale.old.UndoFloor != u.Step.UndoFloor {
		u.Step.UndoFloor, again = stale.old.UndoFloor, true
	}
	if again {
		return s.startUndo(ctx, u, now)
	}
	return o, first, err
}

func (s *Store) startUndo(ctx context.Context, u order.Undoing, now time.Time) (order.Order, order.StepState, error) {
	i, st := u.Step.Index, u.Step
	cond := on(st, u.From).And(expression.Size(expression.Name(attrSteps)).Equal(expression.Value(u.Steps)))
	if u.Expired {
		cond = cond.And(expression.Name(stepAttr(i, "CompleteBy")).LessThan(msValue(now)))
	}
	if u.From == order.Pending {
		cond = cond.And(expression.AttributeNotExists(expression.Name(stepAttr(i, "LockedBy"))))
	}
	cancelled := u.Cancelled || u.CancelNow
	cond = cond.And(cancelIs(u.Cancelled && !u.CancelNow))
	floor := u.Step.UndoFloor
	if floor == 0 {
		cond = cond.And(expression.AttributeNotExists(expression.Name(attrUndoFloor)))
	} else {
		cond = cond.And(expression.Name(attrUndoFloor).Equal(expression.Value(floor)))
	}

	upd := expression.Set(expression.Name(stepAttr(i, "State")), expression.Value(u.Ends)).
		Remove(expression.Name(stepAttr(i, "LockedBy"))).
		Remove(expression.Name(stepAttr(i, "CompleteBy"))).
		Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind))
	if u.From == order.Error {
		upd = outOfErrorIndex(upd) // an operator's redrive into compensation
	}
	if u.Reference != "" {
		upd = upd.Set(expression.Name(stepAttr(i, "Ref")), expression.Value(u.Reference))
	}
	if len(u.Result) > 0 {
		upd = upd.Set(expression.Name(stepAttr(i, "Result")), expression.Value(string(u.Result)))
	}
	if u.Reason != "" {
		upd = upd.Set(expression.Name(stepAttr(i, "LastError")), expression.Value(u.Reason)).
			Set(expression.Name(attrLastError), expression.Value(fmt.Sprintf("step %s: %s", st.Step, u.Reason)))
	}
	if u.CancelNow {
		upd = upd.Set(expression.Name(attrCancel), expression.Value(true))
	}
	if u.Expired {
		// A timeout: it counts like one that is retried.
		upd = upd.Set(expression.Name(stepAttr(i, "Failures")), expression.Name(stepAttr(i, "Failures")).Plus(expression.Value(1)))
	}
	upd = touched(upd, i, now)

	status, final := order.StatusCompensating, order.StatusFailed
	if cancelled {
		status, final = order.StatusCancelling, order.StatusCancelled
	}
	if len(u.Plan) == 0 {
		upd = upd.Set(expression.Name(attrStatus), expression.Value(final)).
			Set(expression.Name(attrExpiresAt), s.expiresAt(now)).
			Remove(expression.Name(attrActive)).
			Remove(expression.Name(attrUnclaimed)).
			Remove(expression.Name(attrDueShard)).
			Remove(expression.Name(attrDueAt))
		o, _, err := s.transition(ctx, "end", st, i, cond, upd)
		return o, order.StepState{}, err
	}
	// Setting list elements past the end appends them, in index order.
	// Their attempts count on from the floor: claims add one, as to any
	// record.
	first := u.Steps
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
	return s.transition(ctx, "start undoing at", st, first, cond, upd)
}

// undoFenceHolds reports whether old satisfies u's fence, apart from the
// cancel.
func undoFenceHolds(old orderRecord, u order.Undoing, now time.Time) bool {
	if len(old.Steps) != u.Steps || !holds(old, u.Step, u.From) {
		return false
	}
	r := old.Steps[u.Step.Index]
	return (!u.Expired || r.CompleteBy < millis(now)) && (u.From != order.Pending || r.LockedBy == "")
}

// RequestCancel records a client's cancel of an order whose active
// workflow step is in flight (Processing, as st was found): the step may
// finish or time out, then the work done is undone and the order ends
// Cancelled. The order shows Cancelling from now on.
func (s *Store) RequestCancel(ctx context.Context, st order.StepState, now time.Time) (order.Order, error) {
	cond := on(st, order.Processing).And(expression.AttributeNotExists(expression.Name(attrCancel)))
	upd := expression.Set(expression.Name(attrCancel), expression.Value(true)).
		Set(expression.Name(attrStatus), expression.Value(order.StatusCancelling)).
		Set(expression.Name(attrUpdated), msValue(now))
	o, _, err := s.transition(ctx, "cancel at", st, st.Index, cond, upd)
	return o, err
}

// Redrive makes the order.Resume write. A record that moved on returns
// order.ErrStale.
func (s *Store) Redrive(ctx context.Context, r order.Resume, now time.Time) (order.Order, order.StepState, error) {
	st := r.Step
	cond := on(st, order.Error).
		And(expression.Name(attrStatus).Equal(expression.Value(order.StatusError))).
		And(expression.Size(expression.Name(attrSteps)).Equal(expression.Value(r.Records)))
	target := st
	upd := expression.Set(expression.Name(attrStatus), expression.Value(r.Status)).
		Set(expression.Name(attrUpdated), msValue(now)).
		Set(expression.Name(attrLastError), expression.Value(r.Reason)).
		Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind))
	upd = outOfErrorIndex(upd)
	if r.Forward != nil {
		target = *r.Forward
		cond = cond.And(expression.Name(stepAttr(target.Index, "State")).Equal(expression.Value(order.Failed))).
			And(expression.AttributeNotExists(expression.Name(attrCancel)))
		for k := r.Steps; k < r.Records; k++ {
			upd = upd.Remove(expression.Name(stepPath(k)))
		}
		if r.UndoFloor > st.UndoFloor {
			upd = upd.Set(expression.Name(attrUndoFloor), expression.Value(r.UndoFloor))
		}
		upd = upd.Set(expression.Name(attrActive), expression.Value(target.Index))
	}
	i := target.Index
	if target.FailureCount > 0 {
		// Added as stored: the record in Error keeps its count until
		// this write.
		upd = upd.Set(expression.Name(stepAttr(i, "PastFailures")), expression.Plus(
			expression.Name(stepAttr(i, "PastFailures")).IfNotExists(expression.Value(0)), expression.Name(stepAttr(i, "Failures"))))
	}
	upd = upd.Set(expression.Name(stepAttr(i, "State")), expression.Value(order.Pending)).
		Set(expression.Name(stepAttr(i, "Failures")), expression.Value(0)).
		Set(expression.Name(stepAttr(i, "Nudges")), expression.Value(0)).
		Remove(expression.Name(stepAttr(i, "Deferrals"))).
		Remove(expression.Name(stepAttr(i, "Heartbeats"))).
		Remove(expression.Name(stepAttr(i, "LockedBy"))).
		Set(expression.Name(stepAttr(i, "CompleteBy")), msValue(r.ClaimBy)).
		Set(expression.Name(stepAttr(i, "LastError")), expression.Value(r.Reason)).
		Set(expression.Name(stepAttr(i, "Updated")), msValue(now)).
		Set(expression.Name(attrUnclaimed), expression.Value(target.Step)).
		Set(expression.Name(attrDueShard), expression.Value(shardOf(st.OrderID, s.shards))).
		Set(expression.Name(attrDueAt), msValue(r.ClaimBy))
	return s.transition(ctx, "redrive", st, i, cond, upd)
}
