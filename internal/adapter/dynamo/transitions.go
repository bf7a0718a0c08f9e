package dynamo

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"orderly/internal/order"
)

// on is the fence every transition is conditional on: the order is on step
// i, step i is the named step, and it is in state on attempt.
func on(st order.StepState, state order.ProcessState) expression.ConditionBuilder {
	i := st.Index
	return expression.Name(attrActive).Equal(expression.Value(i)).
		And(expression.Name(stepAttr(i, "Step")).Equal(expression.Value(st.Step))).
		And(expression.Name(stepAttr(i, "State")).Equal(expression.Value(state))).
		And(expression.Name(stepAttr(i, "Attempt")).Equal(expression.Value(st.Attempt)))
}

func touched(upd expression.UpdateBuilder, i int, now time.Time) expression.UpdateBuilder {
	return upd.Set(expression.Name(stepAttr(i, "Updated")), msValue(now)).
		Set(expression.Name(attrUpdated), msValue(now))
}

// transition runs one conditional UpdateItem and returns the order and the
// state of step i as written.
func (s *Store) transition(ctx context.Context, what string, st order.StepState, i int, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (order.Order, order.StepState, error) {
	rec, err := s.update(ctx, st.OrderID, cond, upd)
	if err != nil {
		return order.Order{}, order.StepState{}, fmt.Errorf("%s step %s of order %s on attempt %d: %w", what, st.Step, st.OrderID, st.Attempt, err)
	}
	o, steps := rec.order()
	if i < 0 || i >= len(steps) {
		return o, order.StepState{}, fmt.Errorf("%s step %s of order %s: the order has no step %d", what, st.Step, st.OrderID, i)
	}
	return o, steps[i], nil
}

// ClaimStep is the Scheduler's exclusive claim of a Pending, unlocked step
// (seen, from the stream): it locks the step to owner, marks it Processing
// until completeBy and increments the attempt. The caller derives
// completeBy from seen's failure count, so the claim only holds while the
// stored count is the same: a stale image (a redelivered old record)
// claims nothing, and the record of the latest change claims instead. A
// lost race or a stale image returns order.ErrStale. The returned order
// carries what the agent's request needs.
func (s *Store) ClaimStep(ctx context.Context, seen order.StepState, owner string, completeBy, now time.Time) (order.Order, order.StepState, error) {
	i := seen.Index
	cond := expression.Name(attrActive).Equal(expression.Value(i)).
		And(expression.Name(stepAttr(i, "Step")).Equal(expression.Value(seen.Step))).
		And(expression.Name(stepAttr(i, "State")).Equal(expression.Value(order.Pending))).
		And(expression.Name(stepAttr(i, "Failures")).Equal(expression.Value(seen.FailureCount))).
		And(expression.AttributeNotExists(expression.Name(stepAttr(i, "LockedBy"))))
	if !seen.Undo {
		// A cancelled order starts no step.
		cond = cond.And(expression.AttributeNotExists(expression.Name(attrCancel)))
	}
	upd := claim(expression.UpdateBuilder{}, i, owner, completeBy).
		Set(expression.Name(stepAttr(i, "Attempt")), expression.Name(stepAttr(i, "Attempt")).Plus(expression.Value(1))).
		Remove(expression.Name(stepAttr(i, "Deferrals"))).
		Remove(expression.Name(stepAttr(i, "Heartbeats"))).
		Remove(expression.Name(attrUnclaimed)).
		// A Pending step's only alert is StepUnclaimed, which the claim
		// answers: it is not sent any more.
		Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind)).
		// The claim's deadline becomes the Supervisor's: DueAt may
		// never be later than the active step's CompleteBy.
		Set(expression.Name(attrDueAt), msValue(completeBy))
	return s.transition(ctx, "claim", seen, i, cond, touched(upd, i, now))
}

func claim(upd expression.UpdateBuilder, i int, owner string, completeBy time.Time) expression.UpdateBuilder {
	return upd.Set(expression.Name(stepAttr(i, "State")), expression.Value(order.Processing)).
		Set(expression.Name(stepAttr(i, "LockedBy")), expression.Value(owner)).
		Set(expression.Name(stepAttr(i, "CompleteBy")), msValue(completeBy)).
		// A claim is made by a build that knows the order's version: a
		// later rollback alerts again.
		Remove(expression.Name(attrParked))
}

// CompleteStep applies a success reply in one conditional UpdateItem: the
// step becomes Processed only if it is still Processing on the reply's
// attempt (so stale and duplicate replies change nothing), and in the same
// write either the next record is claimed for c.Owner or the order ends:
// Processed after the last workflow step, Failed or Cancelled after the
// last undo. It returns the order and the claimed next record, whose
// request the caller sends. A stale reply returns order.ErrStale; a
// workflow step's success for an order the client has cancelled returns
// order.ErrCancelRequested, and the caller starts undoing instead.
func (s *Store) CompleteStep(ctx context.Context, c order.Completion, now time.Time) (order.Order, order.StepState, error) {
	o, st, err := s.complete(ctx, c, now, false)
	var stale *staleError
	if !errors.As(err, &stale) || !holds(stale.old, c.Step, order.Processing) {
		return o, st, err
	}
	old := stale.old
	switch {
	case !c.Step.Undo && old.Cancel:
		return o, st, fmt.Errorf("complete step %s of order %s: %w", c.Step.Step, c.Step.OrderID, order.ErrCancelRequested)
	case c.Step.Undo && c.Next == nil && old.Cancel != c.Cancelled:
		c.Cancelled = old.Cancel
		return s.complete(ctx, c, now, false)
	case c.Next != nil && c.NextIndex < len(old.Steps) && old.Steps[c.NextIndex].Step == c.Next.Name &&
		old.Steps[c.NextIndex].State == string(order.NotStarted) && old.DueAt > millis(c.NextCompleteBy):
		// Only DueAt was later than the new deadline (after a retry
		// with a longer allowance): the write sets it too.
		return s.complete(ctx, c, now, true)
	}
	return o, st, err
}

func (s *Store) complete(ctx context.Context, c order.Completion, now time.Time, setDue bool) (order.Order, order.StepState, error) {
	i := c.Step.Index
	cond := on(c.Step, order.Processing)
	if !c.Step.Undo {
		// A cancelled order's success starts its compensation instead.
		cond = cond.And(expression.AttributeNotExists(expression.Name(attrCancel)))
	}
	upd := expression.Set(expression.Name(stepAttr(i, "State")), expression.Value(order.Processed)).
		Remove(expression.Name(stepAttr(i, "LockedBy"))).
		Remove(expression.Name(stepAttr(i, "CompleteBy")))
	if c.Reference != "" {
		upd = upd.Set(expression.Name(stepAttr(i, "Ref")), expression.Value(c.Reference))
	}
	if len(c.Result) > 0 {
		upd = upd.Set(expression.Name(stepAttr(i, "Result")), expression.Value(string(c.Result)))
	}
	if c.Step.Undo {
		upd = upd.Set(expression.Name(stepAttr(c.Undid, "State")), expression.Value(order.Undone)).
			Set(expression.Name(stepAttr(c.Undid, "Updated")), msValue(now))
	}
	upd = upd.Set(expression.Name(stepAttr(i, "Updated")), msValue(now)).
		Set(expression.Name(attrUpdated), msValue(now))
	if c.Next == nil {
		status := order.StatusProcessed
		if c.Step.Undo {
			status = order.StatusFailed
			if c.Cancelled {
				status = order.StatusCancelled
			}
			cond = cond.And(cancelIs(c.Cancelled))
		}
		upd = upd.Set(expression.Name(attrStatus), expression.Value(status)).
			Set(expression.Name(attrExpiresAt), s.expiresAt(now)).
			Remove(expression.Name(attrActive)).
			Remove(expression.Name(attrDueShard)).
			Remove(expression.Name(attrDueAt))
		return s.transition(ctx, "complete", c.Step, i, cond, upd)
	}
	j := c.NextIndex
	cond = cond.And(expression.Name(stepAttr(j, "Step")).Equal(expression.Value(c.Next.Name))).
		And(expression.Name(stepAttr(j, "State")).Equal(expression.Value(order.NotStarted)))
	upd = claim(upd, j, c.Owner, c.NextCompleteBy).
		Set(expression.Name(stepAttr(j, "Attempt")), expression.Name(stepAttr(j, "Attempt")).Plus(expression.Value(1))).
		Set(expression.Name(stepAttr(j, "Updated")), msValue(now)).
		Set(expression.Name(attrActive), expression.Value(j))
	if !c.Step.Undo {
		upd = upd.Set(expression.Name(attrStatus), expression.Value(order.StatusProcessing))
	}
	if setDue {
		upd = upd.Set(expression.Name(attrDueAt), msValue(c.NextCompleteBy))
	} else {
		// DueAt stays where it is, which costs no index write, as long
		// as it is not later than the new deadline.
		cond = cond.And(expression.AttributeNotExists(expression.Name(attrDueAt)).
			Or(expression.Name(attrDueAt).LessThanEqual(msValue(c.NextCompleteBy))))
	}
	return s.transition(ctx, "complete", c.Step, j, cond, upd)
}

// holds reports whether old still satisfies the fence on(st, state): the
// order is on st's record, in state, on st's attempt.
func holds(old orderRecord, st order.StepState, state order.ProcessState) bool {
	i := st.Index
	if old.Active == nil || *old.Active != i || i < 0 || i >= len(old.Steps) {
		return false
	}
	r := old.Steps[i]
	return r.Step == st.Step && r.State == string(state) && r.Attempt == st.Attempt
}

// cancelIs is the condition that the order was cancelled, or was not.
func cancelIs(cancelled bool) expression.ConditionBuilder {
	if cancelled {
		return expression.Name(attrCancel).Equal(expression.Value(true))
	}
	return expression.AttributeNotExists(expression.Name(attrCancel))
}

// intoErrorIndex adds the order to the sparse error index (the write puts
// it in Error); outOfErrorIndex takes it out (a redrive). Its keys go
// together: the order's shard, and when it went into Error.
func (s *Store) intoErrorIndex(upd expression.UpdateBuilder, orderID string, now time.Time) expression.UpdateBuilder {
	return upd.Set(expression.Name(attrInError), expression.Value(shardOf(orderID, s.shards))).
		Set(expression.Name(attrInErrorSince), msValue(now))
}

func outOfErrorIndex(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(attrInError)).Remove(expression.Name(attrInErrorSince))
}

// ExtendDeadline is an agent's heartbeat: it moves the deadline of a
// Processing step on to completeBy, fenced on the attempt, so a heartbeat
// of an attempt the Supervisor has already retried changes nothing and
// returns order.ErrStale. A deadline only moves later, and at most
// maxHeartbeats times per attempt (then order.ErrHeartbeatLimit, with the step as
// stored). It returns the step as stored; DueAt stays, since it may lag the
// deadline (the Supervisor moves it on when it finds the step in time).
func (s *Store) ExtendDeadline(ctx context.Context, st order.StepState, completeBy time.Time, maxHeartbeats int, now time.Time) (order.StepState, error) {
	i := st.Index
	beats := expression.Name(stepAttr(i, "Heartbeats"))
	cond := on(st, order.Processing).
		And(expression.Name(stepAttr(i, "CompleteBy")).LessThan(msValue(completeBy))).
		And(expression.AttributeNotExists(beats).Or(beats.LessThan(expression.Value(maxHeartbeats))))
	upd := expression.Set(expression.Name(stepAttr(i, "CompleteBy")), msValue(completeBy)).
		Set(beats, expression.Plus(beats.IfNotExists(expression.Value(0)), expression.Value(1)))
	_, out, err := s.transition(ctx, "extend deadline of", st, i, cond, touched(upd, i, now))
	var stale *staleError
	if !errors.As(err, &stale) {
		return out, err
	}
	// Only the attempt's fence is a reason to stop: a deadline already as
	// late (another heartbeat, a Supervisor's deferral) is as good, and at
	// the limit the attempt goes on until the deadline it has.
	_, steps := stale.old.order()
	if i >= len(steps) || stale.old.Active == nil || *stale.old.Active != i {
		return order.StepState{}, err
	}
	if cur := steps[i]; cur.Step == st.Step && cur.ProcessState == order.Processing && cur.Attempt == st.Attempt {
		if !cur.CompleteBy.Before(completeBy) {
			return cur, nil
		}
		return cur, fmt.Errorf("extend deadline of step %s of order %s: %d heartbeats used: %w", st.Step, st.OrderID, cur.Heartbeats, order.ErrHeartbeatLimit)
	}
	return order.StepState{}, err
}

// MoveVersion moves an order from workflow version from to version to,
// while it is still on from and its active record is as read: an
// operator's explicit move of an order parked under a version the build
// lacks. The Supervisor looks at a running order at once (DueAt now).
func (s *Store) MoveVersion(ctx context.Context, o order.Order, active *order.StepState, to string, now time.Time) (order.Order, error) {
	cond := expression.Name(attrVersion).Equal(expression.Value(o.Version))
	upd := expression.Set(expression.Name(attrVersion), expression.Value(to)).
		Remove(expression.Name(attrParked)).
		Set(expression.Name(attrUpdated), msValue(now))
	if active != nil {
		cond = cond.And(on(*active, active.ProcessState))
		if active.ProcessState != order.Error {
			upd = upd.Set(expression.Name(attrDueAt), msValue(now))
		}
	}
	rec, err := s.update(ctx, o.ID, cond, upd)
	if err != nil {
		return order.Order{}, fmt.Errorf("move order %s from version %s to %s: %w", o.ID, o.Version, to, err)
	}
	moved, _ := rec.order()
	return moved, nil
}

// LeaseAlert takes an unsent alert for the caller to send: it moves the
// order's DueAt to until, only while the alert is pending and DueAt is
// where the caller found it, so of two Supervisors that found the same
// alert one sends it and the other gets order.ErrStale.
func (s *Store) LeaseAlert(ctx context.Context, st order.StepState, until time.Time) error {
	cond := on(st, st.ProcessState).And(expression.Name(attrAlertPending).Equal(expression.Value(true))).
		And(expression.Name(attrDueAt).Equal(msValue(st.DueAt)))
	_, err := s.update(ctx, st.OrderID, cond, expression.Set(expression.Name(attrDueAt), msValue(until)))
	if err != nil {
		return fmt.Errorf("lease alert of step %s of order %s: %w", st.Step, st.OrderID, err)
	}
	return nil
}

// ClearAlert records that operators were alerted, as st recorded the
// alert (its kind and attempt). A failed step's order then leaves the due
// index; a step still Pending stays watched.
func (s *Store) ClearAlert(ctx context.Context, st order.StepState, now time.Time) error {
	kind := expression.Name(attrAlertKind).Equal(expression.Value(st.AlertKind))
	if st.AlertKind == "" {
		kind = expression.AttributeNotExists(expression.Name(attrAlertKind))
	}
	cond := on(st, st.ProcessState).And(expression.Name(attrAlertPending).Equal(expression.Value(true))).And(kind)
	upd := expression.Remove(expression.Name(attrAlertPending)).
		Remove(expression.Name(attrAlertKind)).
		Set(expression.Name(attrUpdated), msValue(now))
	if st.ProcessState == order.Error {
		upd = upd.Remove(expression.Name(attrDueShard)).Remove(expression.Name(attrDueAt))
	}
	_, err := s.update(ctx, st.OrderID, cond, upd)
	if err != nil {
		return fmt.Errorf("clear alert of step %s of order %s: %w", st.Step, st.OrderID, err)
	}
	return nil
}

// Reschedule moves the Supervisor's next look at an order to dueAt, when
// it found the active step still inside its window (DueAt lags behind
// deadlines on the happy path, to save index writes). It only applies while
// the step is as the Supervisor saw it.
func (s *Store) Reschedule(ctx context.Context, st order.StepState, dueAt time.Time) error {
	cond := on(st, st.ProcessState).
		And(expression.Name(stepAttr(st.Index, "CompleteBy")).Equal(msValue(st.CompleteBy)))
	_, err := s.update(ctx, st.OrderID, cond, expression.Set(expression.Name(attrDueAt), msValue(dueAt)))
	if err != nil {
		return fmt.Errorf("reschedule order %s: %w", st.OrderID, err)
	}
	return nil
}
