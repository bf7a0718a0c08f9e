package dynamo

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"

	"orderly/internal/order"
)

// Apply persists a transition the domain decided in one conditional
// UpdateItem: its guard becomes the write's condition, its change the
// update. It returns the order and the record the write leaves active
// (order.Transition.Active) as written (for a write with no fence, no
// record); a guard that no longer holds returns an *order.StaleWrite
// (order.ErrStale) with the order as it was, and changes nothing. It
// never makes a write again: after a refusal the actor asks the domain.
func (s *Store) Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error) {
	return s.write(ctx, t.Name, t.Record, t.Active(), condition(t.Record, t.Guard, t.At), s.change(t))
}

// write runs one conditional UpdateItem and returns the order and the
// state of its record i as written (none for a negative i).
func (s *Store) write(ctx context.Context, what string, st order.StepState, i int, cond expression.ConditionBuilder, upd expression.UpdateBuilder) (order.Order, order.StepState, error) {
	rec, err := s.update(ctx, st.OrderID, cond, upd)
	if err != nil {
		return order.Order{}, order.StepState{}, fmt.Errorf("%s: step %s of order %s on attempt %d: %w", what, st.Step, st.OrderID, st.Attempt, err)
	}
	o, steps := rec.order()
	if i < 0 {
		return o, order.StepState{}, nil
	}
	if i >= len(steps) {
		return o, order.StepState{}, fmt.Errorf("%s: step %s of order %s: the order has no record %d", what, st.Step, st.OrderID, i)
	}
	return o, steps[i], nil
}

// condition is guard g, with its fence, as a write's condition: it holds
// exactly when g.Holds does (see order.Guard).
func condition(fence order.StepState, g order.Guard, at time.Time) expression.ConditionBuilder {
	var conds []expression.ConditionBuilder
	add := func(c expression.ConditionBuilder) { conds = append(conds, c) }
	i := fence.Index
	field := func(name string) expression.NameBuilder { return expression.Name(stepAttr(i, name)) }
	if g.State != "" {
		add(expression.Name(attrActive).Equal(expression.Value(i)))
		add(field("Step").Equal(expression.Value(fence.Step)))
		add(field("State").Equal(expression.Value(g.State)))
		add(field("Attempt").Equal(expression.Value(fence.Attempt)))
	}
	if g.Expired {
		add(field("CompleteBy").LessThan(msValue(at)))
	}
	if g.InTime {
		add(field("CompleteBy").GreaterThanEqual(msValue(at)))
	}
	if !g.EarlierThan.IsZero() {
		add(field("CompleteBy").LessThan(msValue(g.EarlierThan)))
	}
	if g.SameCompleteBy {
		add(field("CompleteBy").Equal(msValue(fence.CompleteBy)))
	}
	if g.Unlocked {
		add(expression.AttributeNotExists(field("LockedBy")))
	}
	if g.LockedBy != "" {
		add(field("LockedBy").Equal(expression.Value(g.LockedBy)))
	}
	if g.SameFailures {
		add(field("Failures").Equal(expression.Value(fence.FailureCount)))
	}
	if g.BeatsBelow > 0 {
		add(expression.AttributeNotExists(field("Heartbeats")).Or(field("Heartbeats").LessThan(expression.Value(g.BeatsBelow))))
	}
	if g.NotCancelled {
		add(expression.AttributeNotExists(expression.Name(attrCancel)))
	}
	if g.Cancelled {
		add(expression.Name(attrCancel).Equal(expression.Value(true)))
	}
	if g.NotParkedFor != "" {
		add(expression.Or(expression.AttributeNotExists(expression.Name(attrParked)),
			expression.Name(attrParked).NotEqual(expression.Value(g.NotParkedFor))))
	}
	if g.NoAlertPending {
		add(expression.AttributeNotExists(expression.Name(attrAlertPending)))
	}
	if g.AlertPending {
		add(expression.Name(attrAlertPending).Equal(expression.Value(true)))
	}
	if g.SameAlertKind {
		if fence.AlertKind == "" {
			add(expression.AttributeNotExists(expression.Name(attrAlertKind)))
		} else {
			add(expression.Name(attrAlertKind).Equal(expression.Value(fence.AlertKind)))
		}
	}
	if g.SameDueAt {
		add(expression.Name(attrDueAt).Equal(msValue(fence.DueAt)))
	}
	if g.SameStatusURL {
		if fence.StatusURL == "" {
			add(expression.AttributeNotExists(field("StatusURL")))
		} else {
			add(field("StatusURL").Equal(expression.Value(fence.StatusURL)))
		}
	}
	if !g.DueBy.IsZero() {
		add(expression.AttributeNotExists(expression.Name(attrDueAt)).Or(expression.Name(attrDueAt).LessThanEqual(msValue(g.DueBy))))
	}
	if g.Records > 0 {
		add(expression.Size(expression.Name(attrSteps)).Equal(expression.Value(g.Records)))
	}
	if g.SameUndoFloor {
		if fence.UndoFloor == 0 {
			add(expression.AttributeNotExists(expression.Name(attrUndoFloor)))
		} else {
			add(expression.Name(attrUndoFloor).Equal(expression.Value(fence.UndoFloor)))
		}
	}
	if g.Status != "" {
		add(expression.Name(attrStatus).Equal(expression.Value(g.Status)))
	}
	if g.Version != "" {
		add(expression.Name(attrVersion).Equal(expression.Value(g.Version)))
	}
	for _, j := range g.Processed {
		add(expression.Name(stepAttr(j, "State")).Equal(expression.Value(order.Processed)))
	}
	if o := g.Other; o != nil {
		add(expression.Name(stepAttr(o.Index, "State")).Equal(expression.Value(o.State)))
		if o.Step != "" {
			add(expression.Name(stepAttr(o.Index, "Step")).Equal(expression.Value(o.Step)))
		}
	}
	// Every write is conditional: one with no condition at all only
	// updates an order that exists.
	if len(conds) == 0 {
		return expression.AttributeExists(expression.Name(attrOrderID))
	}
	if len(conds) == 1 {
		return conds[0]
	}
	return expression.And(conds[0], conds[1], conds[2:]...)
}

// change is the update of t's write: the one place a decided transition
// becomes an update. The record fields change the fenced record (a
// forward redrive's step instead); the others the order and its other
// records.
func (s *Store) change(t order.Transition) expression.UpdateBuilder {
	st, c, i := t.Record, t.Change, t.Record.Index
	rec := st
	if c.Forward != nil {
		rec, i = *c.Forward, c.Forward.Index
	}
	field := func(name string) expression.NameBuilder { return expression.Name(stepAttr(i, name)) }
	var upd expression.UpdateBuilder
	if !c.Bookkeeping() {
		upd = upd.Set(expression.Name(attrUpdated), msValue(t.At))
	}
	switch {
	case c.Claim != "":
		upd = claimed(upd.Set(field("State"), expression.Value(c.State)).Set(field("LockedBy"), expression.Value(c.Claim)), i)
	case c.State != "":
		upd = upd.Set(field("State"), expression.Value(c.State)).Remove(field("LockedBy"))
	}
	switch {
	case c.StatusURL != "":
		upd = upd.Set(field("StatusURL"), expression.Value(c.StatusURL))
	case c.State != "" && c.State != order.Waiting:
		// Kept only while the step waits: it may carry the service's
		// token, and nothing reads it after.
		upd = upd.Remove(field("StatusURL"))
	}
	if c.Wait {
		upd = waits(upd, i, t.At)
	}
	if c.Await {
		upd = upd.Set(field("Since"), msValue(t.At)).Remove(expression.Name(attrUnclaimed))
	}
	if !c.CompleteBy.IsZero() {
		upd = upd.Set(field("CompleteBy"), msValue(c.CompleteBy))
	}
	if c.Settle {
		upd = upd.Remove(field("CompleteBy"))
	}
	if c.Reference != "" {
		upd = upd.Set(field("Ref"), expression.Value(c.Reference))
	}
	if len(c.Result) > 0 {
		upd = upd.Set(field("Result"), expression.Value(string(c.Result)))
	}
	if c.Fresh {
		if rec.FailureCount > 0 {
			// Added as stored: the record keeps its count until this
			// write.
			upd = upd.Set(field("PastFailures"), expression.Plus(field("PastFailures").IfNotExists(expression.Value(0)), field("Failures")))
		}
		upd = upd.Set(field("Failures"), expression.Value(0)).Set(field("Nudges"), expression.Value(0)).
			Remove(field("Deferrals")).Remove(field("Heartbeats"))
	}
	if !c.DueAt.IsZero() {
		upd = upd.Set(expression.Name(attrDueAt), msValue(c.DueAt))
	}
	if c.Announce {
		upd = upd.Set(expression.Name(attrUnclaimed), expression.Value(activeStep(t)))
	}
	if c.Release {
		upd = upd.Remove(expression.Name(attrHeld))
	}
	if c.Reason != "" {
		upd = upd.Set(field("LastError"), expression.Value(c.Reason))
	}
	if c.CountFailure {
		upd = upd.Set(field("Failures"), field("Failures").Plus(expression.Value(1)))
	}
	if c.CountNudge {
		upd = upd.Set(field("Nudges"), field("Nudges").Plus(expression.Value(1)))
	}
	if c.CountHeartbeat {
		upd = upd.Set(field("Heartbeats"), expression.Plus(field("Heartbeats").IfNotExists(expression.Value(0)), expression.Value(1)))
	}
	if c.Releases > 0 {
		upd = upd.Set(field("Releases"), expression.Value(c.Releases))
	}
	if c.Deferrals > 0 {
		upd = upd.Set(field("Deferrals"), expression.Value(c.Deferrals))
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
	if c.Claim != "" || c.ClearAlert {
		upd = upd.Remove(expression.Name(attrAlertPending)).Remove(expression.Name(attrAlertKind))
	}
	if c.Cancel {
		upd = upd.Set(expression.Name(attrCancel), expression.Value(true))
	}
	if c.Version != "" {
		upd = upd.Set(expression.Name(attrVersion), expression.Value(c.Version)).Remove(expression.Name(attrParked))
	}
	if c.Unwatch {
		upd = upd.Remove(expression.Name(attrDueShard)).Remove(expression.Name(attrDueAt))
	}
	if c.TouchesRecord() {
		upd = upd.Set(field("Updated"), msValue(t.At))
	}
	return s.moved(upd, t)
}

// moved adds to upd the changes of t's write beyond its record's: the
// order's status, its error index and due index, and the records it
// marks, claims, appends or drops.
func (s *Store) moved(upd expression.UpdateBuilder, t order.Transition) expression.UpdateBuilder {
	c, id := t.Change, t.Record.OrderID
	field := func(j int, name string) expression.NameBuilder { return expression.Name(stepAttr(j, name)) }
	for _, j := range c.Undone {
		upd = upd.Set(field(j, "State"), expression.Value(order.Undone)).Set(field(j, "Updated"), msValue(t.At))
	}
	for _, j := range c.Skip {
		upd = upd.Set(field(j, "State"), expression.Value(order.Skipped)).Set(field(j, "Updated"), msValue(t.At))
	}
	if n := c.Next; n != nil {
		upd = upd.Set(field(n.Index, "State"), expression.Value(n.State)).
			Set(field(n.Index, "CompleteBy"), msValue(n.CompleteBy)).
			Set(field(n.Index, "Updated"), msValue(t.At))
		switch n.State {
		case order.Processing:
			upd = claimed(upd, n.Index).Set(field(n.Index, "LockedBy"), expression.Value(n.Owner))
		case order.Waiting:
			upd = waits(upd, n.Index, t.At)
		case order.Pending:
			upd = upd.Set(expression.Name(attrUnclaimed), expression.Value(n.Step))
		}
	}
	// Setting list elements past the end appends them, in index order.
	for _, r := range c.Append {
		upd = upd.Set(expression.Name(stepPath(r.Index)), expression.Value(newStepRecord(r)))
	}
	for _, j := range c.Drop {
		upd = upd.Remove(expression.Name(stepPath(j)))
	}
	if c.UndoFloor > 0 {
		upd = upd.Set(expression.Name(attrUndoFloor), expression.Value(c.UndoFloor))
	}
	if a := t.Active(); a != t.Record.Index && c.End == "" {
		upd = upd.Set(expression.Name(attrActive), expression.Value(a))
	}
	if c.Status != "" {
		upd = upd.Set(expression.Name(attrStatus), expression.Value(c.Status))
	}
	if c.OrderReason != "" {
		upd = upd.Set(expression.Name(attrLastError), expression.Value(c.OrderReason))
	}
	if c.OutOfError {
		upd = outOfErrorIndex(upd)
		if c.End == "" {
			upd = runningAgain(upd)
		}
	}
	if c.Watch {
		upd = upd.Set(expression.Name(attrDueShard), expression.Value(shardOf(id, s.shards)))
	}
	if c.Unannounce {
		upd = upd.Remove(expression.Name(attrUnclaimed))
	}
	if c.End != "" {
		upd = s.ended(upd, c.End, t.At)
	}
	return upd
}

// activeStep is the step of the record t's write leaves active.
func activeStep(t order.Transition) string {
	c := t.Change
	switch {
	case c.Next != nil:
		return c.Next.Step
	case len(c.Append) > 0:
		return c.Append[0].Step
	case c.Forward != nil:
		return c.Forward.Step
	}
	return t.Record.Step
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

// claimed is the rest of a claim of record i (see order.Change.Claim):
// the attempt goes up by one, its deferrals and heartbeats start again,
// the order is announced no more and its park is cleared.
func claimed(upd expression.UpdateBuilder, i int) expression.UpdateBuilder {
	return upd.Set(expression.Name(stepAttr(i, "Attempt")), expression.Name(stepAttr(i, "Attempt")).Plus(expression.Value(1))).
		Remove(expression.Name(stepAttr(i, "Deferrals"))).
		Remove(expression.Name(stepAttr(i, "Heartbeats"))).
		Remove(expression.Name(attrUnclaimed)).
		Remove(expression.Name(attrParked))
}

// waits is the rest of record i starting to wait at now (see
// order.Change.Wait): its attempt goes up by one, it waits since now, and
// the order is announced no more.
func waits(upd expression.UpdateBuilder, i int, now time.Time) expression.UpdateBuilder {
	return upd.Set(expression.Name(stepAttr(i, "Attempt")), expression.Name(stepAttr(i, "Attempt")).Plus(expression.Value(1))).
		Set(expression.Name(stepAttr(i, "Since")), msValue(now)).
		Remove(expression.Name(attrUnclaimed))
}

// intoErrorIndex adds the order to the sparse error index (the write puts
// it in Error) and, as ended in Error, to the search's ended orders;
// outOfErrorIndex takes it out of the error index (a redrive), and
// runningAgain out of the ended orders (unless the same write ends it
// again). The error index's keys go together: the order's shard, and when
// it went into Error.
func (s *Store) intoErrorIndex(upd expression.UpdateBuilder, orderID string, now time.Time) expression.UpdateBuilder {
	return outcome(upd.Set(expression.Name(attrInError), expression.Value(shardOf(orderID, s.shards))).
		Set(expression.Name(attrInErrorSince), msValue(now)), order.StatusError, now)
}

func outOfErrorIndex(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(attrInError)).Remove(expression.Name(attrInErrorSince))
}

func runningAgain(upd expression.UpdateBuilder) expression.UpdateBuilder {
	return upd.Remove(expression.Name(attrEnded)).Remove(expression.Name(attrOutcome))
}

// outcome records that the order ended in status at now, for a search
// (resources.EndedIndexName).
func outcome(upd expression.UpdateBuilder, status order.Status, now time.Time) expression.UpdateBuilder {
	return upd.Set(expression.Name(attrEnded), msValue(now)).Set(expression.Name(attrOutcome), expression.Value(status))
}
