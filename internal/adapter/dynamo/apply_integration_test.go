package dynamo_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}

// The property behind every write of the state machine: a write lands
// exactly when the domain says its guard holds (Guard.Holds, on the order
// as stored, or, for a write the domain makes again another way, the
// guard of the write it makes again), and leaves the order as the domain
// says (Transition.Applied for one record's transitions; the status and
// the active record for a success, the start of an undo and a redrive).
// Otherwise it changes nothing and reports order.ErrStale. Random
// interleavings drive it on real DynamoDB: records found stale (an older
// or newer attempt, another state, another claim's owner, another record,
// another version), clocks before and after deadlines, Schedulers
// claiming, clients cancelling, replies late and duplicated, timeouts and
// redrives; the walk goes on until every kind of write has both landed
// and been refused.
func TestWritesLandExactlyWhenTheDomainSaysTheyHold(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	submit := func() string {
		return w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	}
	ids := []string{submit(), submit(), submit(), submit()}
	landed, refused := map[string]int{}, map[string]int{}
	tried := func() bool {
		for _, name := range kinds {
			if landed[name] == 0 || refused[name] == 0 {
				return false
			}
		}
		return true
	}
	read := func(id string) order.Found {
		f, err := w.Store.Found(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	// At least 600 steps, and on until every kind has both landed and
	// been refused (a random walk takes a while to land some).
	for i := 0; i < 5000 && (i < 600 || !tried()); i++ {
		k := rng.IntN(len(ids))
		f := read(ids[k])
		cur, ok := f.Record()
		if !ok || cur.ProcessState == order.Error && rng.IntN(3) == 0 {
			ids[k] = submit()
			continue
		}
		// The world moves on now and then: time passes, a Scheduler
		// claims a waiting record, a client cancels.
		switch rng.IntN(12) {
		case 0, 1:
			w.Clock.Advance(time.Duration(rng.IntN(int(2 * timing.Allowance))))
		case 2:
			if _, err := w.Scheduler("s1").HandleStream(ctx, w.StreamEvent(t, ids[k])); err != nil {
				t.Fatal(err)
			}
		case 3, 4:
			if cur.ProcessState == order.Processing && !cur.Undo {
				_, _, _ = w.Store.Apply(ctx, order.Cancel(cur, w.Clock.Now()))
			}
		}
		if f = read(ids[k]); f.Active < 0 {
			continue
		}
		cur, _ = f.Record()
		now := w.Clock.Now().Add(time.Duration(rng.IntN(int(timing.Allowance))) - timing.Allowance/2).Truncate(time.Millisecond)
		wr := randomWrite(rng, w.Workflow, f, found(rng, cur), now)
		holds := wr.holds(f)
		o, err := wr.do(ctx, w)
		if wr.cancelled {
			// A workflow step's success after the client's cancel is
			// not written: its replier starts undoing instead.
			if !errors.Is(err, order.ErrCancelRequested) {
				t.Fatalf("step %d: %s after a cancel: %v, want ErrCancelRequested", i, wr.name, err)
			}
			refused[wr.name]++
			continue
		}
		if holds != (err == nil) || err != nil && !errors.Is(err, order.ErrStale) {
			t.Fatalf("step %d: %s on %s: the domain says holds %v, the write: %v\nrecord %+v", i, wr.name, cur.ProcessState, holds, err, cur)
		}
		after := read(ids[k])
		if !holds {
			refused[wr.name]++
			if !slices.EqualFunc(after.Steps, f.Steps, func(a, b order.StepState) bool { return fields(a) == fields(b) }) || after.Status != f.Status {
				t.Fatalf("step %d: %s was refused and changed the order", i, wr.name)
			}
			continue
		}
		landed[wr.name]++
		if msg := wr.left(f, after); msg != "" {
			t.Fatalf("step %d: %s landed and %s", i, wr.name, msg)
		}
		if o.ID != ids[k] {
			t.Fatalf("step %d: %s returned order %q, want %q", i, wr.name, o.ID, ids[k])
		}
	}
	t.Logf("landed %v; refused %v", landed, refused)
	for _, name := range kinds {
		if landed[name] == 0 || refused[name] == 0 {
			t.Errorf("%s landed %d and was refused %d times: the walk did not try both", name, landed[name], refused[name])
		}
	}
}

// kinds are the writes the walk must see both land and be refused.
var kinds = []string{"fail", "release", "record the agent gave up", "park", "defer", "retry", "give up", "nudge",
	"claim", "cancel", "heartbeat", "lease alert", "clear alert", "reschedule", "move version",
	"complete", "start undoing", "redrive"}

// write is one write an actor decided, with what the domain says of it.
type write struct {
	name string
	// holds is the domain's guard on the order as stored.
	holds func(order.Found) bool
	do    func(context.Context, *testenv.World) (order.Order, error)
	// left says how the landed write left the order, if not as the
	// domain says ("" when it did).
	left func(before, after order.Found) string
	// cancelled: a workflow step's success on a cancelled order, whose
	// write the domain answers with ErrCancelRequested (its record as
	// the reply found it, but the order cancelled).
	cancelled bool
}

// transition is a write of one record: it leaves the record as Applied
// says.
func transition(tr order.Transition) write {
	return write{name: tr.Name, holds: tr.Holds,
		do: func(ctx context.Context, w *testenv.World) (order.Order, error) {
			o, _, err := w.Store.Apply(ctx, tr)
			return o, err
		},
		left: func(before, after order.Found) string {
			was, _ := before.Record()
			now, _ := after.Record()
			if got, want := fields(now), fields(tr.Applied(was)); got != want {
				return fmt.Sprintf("left\n%+v\nwant\n%+v", got, want)
			}
			return ""
		}}
}

// found is the record as an actor found it: the stored one, or a stale
// or mistaken view of it.
func found(rng *rand.Rand, cur order.StepState) order.StepState {
	f := cur
	switch rng.IntN(20) { // half of them as stored
	case 0:
		f.Attempt--
	case 1:
		f.Attempt++
	case 2:
		f.ProcessState = []order.ProcessState{order.Pending, order.Processing, order.Error}[rng.IntN(3)]
	case 3:
		f.LockedBy = "another"
	case 4:
		f.Index++
	case 5:
		f.Version = "9"
	case 6:
		f.FailureCount++
	case 7:
		f.DueAt = f.DueAt.Add(time.Second)
	case 8:
		f.UndoFloor++
	case 9:
		f.CompleteBy = f.CompleteBy.Add(time.Second)
	}
	return f
}

// randomWrite is any write an actor may decide about fence, the record as
// it found it, at now, in an order stored as f.
func randomWrite(rng *rand.Rand, wf order.Workflow, f order.Found, fence order.StepState, now time.Time) write {
	later := now.Add(timing.ClaimWithin)
	recovery := func(r order.Recovery) write {
		tr, _ := r.Transition(fence, now)
		return transition(tr)
	}
	// Half the time a write that fits the record as stored, so that
	// each lands often enough to meet its stale views too.
	pick := rng.IntN(18)
	if cur, _ := f.Record(); rng.IntN(2) == 0 {
		fits := map[order.ProcessState][]int{
			order.Pending:    {3, 6, 7, 8, 8, 13, 16},
			order.Processing: {0, 1, 2, 3, 3, 5, 9, 10, 15, 16},
			order.Error:      {11, 12, 14, 16, 17, 17},
		}[cur.ProcessState]
		if cur.AlertPending {
			fits = append(fits, 11, 11, 12)
		}
		if len(fits) > 0 {
			pick = fits[rng.IntN(len(fits))]
		}
	}
	switch pick {
	case 0:
		return transition(order.FailReply(fence, "card declined", now))
	case 1:
		return transition(order.Release(fence, later, "not sent", rng.IntN(2) == 0, now))
	case 2:
		return transition(order.GaveUp(fence, now))
	case 3:
		return transition(order.Park(fence, later, rng.IntN(2) == 0, "not in this build", now))
	case 4:
		return recovery(order.Recovery{Action: order.Defer, CompleteBy: later, Reason: "backlog"})
	case 5:
		return recovery(order.Recovery{Action: order.Retry, CompleteBy: later, Reason: "timed out", NotAFailure: rng.IntN(2) == 0})
	case 6:
		kind := order.AlertStepTimedOut
		if fence.ProcessState == order.Pending {
			kind = order.AlertStepAbandoned
		}
		return recovery(order.Recovery{Action: order.Fail, AlertKind: kind, Reason: "given up"})
	case 7:
		return recovery(order.Recovery{Action: order.Nudge, CompleteBy: later, Reason: "unclaimed", AlertOperators: rng.IntN(2) == 0})
	case 8:
		return transition(order.Claim(fence, "s2", now.Add(timing.Allowance), now))
	case 9:
		return transition(order.Cancel(fence, now))
	case 10:
		return transition(order.Heartbeat(fence, now.Add(time.Duration(rng.IntN(int(2*timing.Allowance)))), 1+rng.IntN(2), now))
	case 11:
		return transition(order.LeaseAlert(fence, later, now))
	case 12:
		return transition(order.ClearAlert(fence, now))
	case 13:
		return transition(order.Reschedule(fence, fence.CompleteBy, now))
	case 14:
		return transition(order.MoveVersion(order.Order{ID: fence.OrderID, Version: fence.Version}, &fence, f.Version, now))
	case 15:
		return completion(rng, wf, f, fence, now)
	case 16:
		if fence.Index >= len(wf.Steps) {
			// Only a workflow step starts undoing: the write says so
			// (order.ErrInvalid) and makes none.
			return completion(rng, wf, f, fence, now)
		}
		return undoing(rng, wf, fence, now)
	default:
		return resume(wf, f, fence, later, now)
	}
}

// completion is a success reply of fence's attempt, as the Scheduler
// applies it: the next record claimed at once, or the order ended.
func completion(rng *rand.Rand, wf order.Workflow, f order.Found, fence order.StepState, now time.Time) write {
	c := wf.Completion(fence, "ref-1", nil, "s2", now)
	c.Cancelled = fence.Undo && rng.IntN(2) == 0 // the replier's view of the cancel may be wrong
	if c.Next != nil {
		// A deadline before or after the order's DueAt.
		c.NextCompleteBy = now.Add(time.Duration(rng.IntN(int(2 * timing.Allowance))))
	}
	// The write made: c's, or the one the domain makes again after a
	// refusal.
	made := func(f order.Found) (order.Completion, bool) {
		if c.Guard().Holds(fence, now, f) {
			return c, true
		}
		again, err := c.Again(&order.StaleWrite{Found: f}, now)
		return again, err == nil && again.Guard().Holds(fence, now, f)
	}
	cur, _ := f.Record()
	stale := order.Guard{State: order.Processing}
	return write{name: "complete",
		cancelled: !fence.Undo && cur.CancelRequested && stale.Holds(fence, now, f),
		holds:     func(f order.Found) bool { _, ok := made(f); return ok },
		do: func(ctx context.Context, w *testenv.World) (order.Order, error) {
			o, _, err := w.Store.CompleteStep(ctx, c, now)
			return o, err
		},
		left: func(before, after order.Found) string {
			c, _ := made(before)
			if c.Next == nil {
				want := order.StatusProcessed
				if c.Step.Undo {
					want = map[bool]order.Status{false: order.StatusFailed, true: order.StatusCancelled}[c.Cancelled]
				}
				return ended(after, want)
			}
			if msg := activeIs(after, c.NextIndex, order.Processing, c.Owner, before.Steps[c.NextIndex].Attempt+1); msg != "" {
				return msg
			}
			// DueAt stays unless it was later than the next deadline.
			was, _ := before.Record()
			now, _ := after.Record()
			if want := map[bool]time.Time{false: was.DueAt, true: c.NextCompleteBy}[c.MoveDue]; now.DueAt.UnixMilli() != want.UnixMilli() {
				return fmt.Sprintf("left DueAt %s, want %s", now.DueAt, want)
			}
			return ""
		}}
}

// undoing is the write that starts undoing the order's work from fence,
// for any of the events that start it: a permanent fault, a success after
// a cancel, a cancel of a waiting step (the client's own, or one a
// Scheduler finds), the Supervisor's compensation, an operator's.
func undoing(rng *rand.Rand, wf order.Workflow, fence order.StepState, now time.Time) write {
	var u order.Undoing
	switch rng.IntN(5) {
	case 0:
		u = wf.UndoFault(fence, "declined", now)
	case 1:
		u = wf.UndoCancelledSuccess(fence, "ref-1", nil, now)
	case 2:
		u = wf.UndoWaiting(fence, rng.IntN(2) == 0, now)
	case 3:
		u = wf.UndoRecovery(fence, order.Recovery{Action: order.Compensate, MayHaveRun: rng.IntN(2) == 0, Reason: "timed out"}, now)
	default:
		u = wf.UndoFromError(fence, "redriven", now)
	}
	if rng.IntN(2) == 0 {
		u = u.ClaimedBy("s2", now)
	}
	// The actor's view of the cancel may be wrong.
	u.Cancelled = !u.CancelNow && rng.IntN(2) == 0
	made := func(f order.Found) (order.Undoing, bool) {
		if u.Guard().Holds(fence, now, f) {
			return u, true
		}
		again, err := u.Again(&order.StaleWrite{Found: f}, now)
		return again, err == nil && again.Guard().Holds(again.Step, now, f)
	}
	return write{name: "start undoing",
		holds: func(f order.Found) bool { _, ok := made(f); return ok },
		do: func(ctx context.Context, w *testenv.World) (order.Order, error) {
			o, _, err := w.Store.StartUndo(ctx, u, now)
			return o, err
		},
		left: func(before, after order.Found) string {
			u, _ := made(before)
			cancelled := u.Cancelled || u.CancelNow
			if len(u.Plan) == 0 {
				return ended(after, map[bool]order.Status{false: order.StatusFailed, true: order.StatusCancelled}[cancelled])
			}
			if want := map[bool]order.Status{false: order.StatusCompensating, true: order.StatusCancelling}[cancelled]; after.Status != want {
				return fmt.Sprintf("left the order %s, want %s", after.Status, want)
			}
			// The undo records' attempts count on from the order's floor.
			if u.Owner != "" {
				return activeIs(after, u.Steps, order.Processing, u.Owner, u.Step.UndoFloor+1)
			}
			return activeIs(after, u.Steps, order.Pending, "", u.Step.UndoFloor)
		}}
}

// resume is an operator's redrive of the order, as PlanRedrive decides it
// on the order as stored, fenced on the record as found.
func resume(wf order.Workflow, f order.Found, fence order.StepState, claimBy, now time.Time) write {
	r := order.Resume{Step: fence, Status: order.StatusProcessing, ClaimBy: claimBy, Reason: "redriven", Records: len(f.Steps)}
	if p, err := order.PlanRedrive(f.Status, f.Steps, order.RedriveRetry); err == nil && p.Move == order.RunForward {
		forward := p.Forward
		r.Forward, r.Steps, r.UndoFloor = &forward, len(wf.Steps), p.UndoFloor
	}
	target := fence.Index
	if r.Forward != nil {
		target = r.Forward.Index
	}
	return write{name: "redrive",
		holds: func(f order.Found) bool { return r.Guard().Holds(fence, now, f) },
		do: func(ctx context.Context, w *testenv.World) (order.Order, error) {
			o, _, err := w.Store.Redrive(ctx, r, now)
			return o, err
		},
		left: func(before, after order.Found) string {
			if after.Status != r.Status {
				return fmt.Sprintf("left the order %s, want %s", after.Status, r.Status)
			}
			if msg := activeIs(after, target, order.Pending, "", before.Steps[target].Attempt); msg != "" {
				return msg
			}
			if st, _ := after.Record(); st.FailureCount != 0 {
				return fmt.Sprintf("left %d failures on the redriven record, want a fresh count", st.FailureCount)
			}
			return ""
		}}
}

// ended says how f differs from an order ended in status.
func ended(f order.Found, status order.Status) string {
	if f.Status != status || f.Active >= 0 {
		return fmt.Sprintf("left the order %s with active record %d, want it ended %s", f.Status, f.Active, status)
	}
	return ""
}

// activeIs says how f differs from an order whose active record is index,
// in state, claimed by owner, on attempt.
func activeIs(f order.Found, index int, state order.ProcessState, owner string, attempt int) string {
	st, ok := f.Record()
	if !ok || st.Index != index || st.ProcessState != state || st.LockedBy != owner || st.Attempt != attempt {
		return fmt.Sprintf("left active record %d (%s, claimed by %q, attempt %d), want %d (%s, claimed by %q, attempt %d)",
			f.Active, st.ProcessState, st.LockedBy, st.Attempt, index, state, owner, attempt)
	}
	return ""
}

// record is what a write may change of a record, times as stored (to
// the millisecond).
type record struct {
	State                                        order.ProcessState
	LockedBy, LastError, Parked, Version         string
	CompleteBy, DueAt, Updated                   int64
	Failures, Nudges, Releases, Deferrals, Index int
	Attempt, Heartbeats                          int
	AlertPending, CancelRequested                bool
	AlertKind                                    order.AlertKind
}

func fields(s order.StepState) record {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return record{State: s.ProcessState, LockedBy: s.LockedBy, LastError: s.LastError, Parked: s.Parked, Version: s.Version,
		CompleteBy: ms(s.CompleteBy), DueAt: ms(s.DueAt), Updated: ms(s.UpdatedAt),
		Failures: s.FailureCount, Nudges: s.Nudges, Releases: s.Releases, Deferrals: s.Deferrals, Index: s.Index,
		Attempt: s.Attempt, Heartbeats: s.Heartbeats,
		AlertPending: s.AlertPending, CancelRequested: s.CancelRequested, AlertKind: s.AlertKind}
}
