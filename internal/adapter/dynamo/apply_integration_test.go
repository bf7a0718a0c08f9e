package dynamo_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}

// The property behind every write of the state machine: a write lands
// exactly when the domain says its guard holds (Transition.Holds, on the
// order as stored), and leaves the order as the domain says
// (ordertest.AppliedTo: every record, the status, the active record).
// Otherwise it changes nothing and reports order.ErrStale, with the order
// as found, from which the domain decides (Completion.Again,
// Undoing.Again) whether its actor makes the write once more another way,
// as the actors do. Random interleavings drive it on real DynamoDB:
// records found stale (an older or newer attempt, another state, another
// claim's owner, another record, another version), clocks before and
// after deadlines, Schedulers claiming, clients cancelling, replies late
// and duplicated, timeouts and redrives; the walk goes on until every
// kind of write has both landed and been refused, and each of the
// writes that move an order on has landed in each of its forms.
func TestWritesLandExactlyWhenTheDomainSaysTheyHold(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	// The shipped steps with a timer and a wait for an event between the
	// second and the third, so that waits start, end, take events and are
	// cancelled too.
	waits := w.Workflow
	waits.Steps = slices.Clone(waits.Steps)
	// and the second step's service calls back, the first's is polled.
	waits.Steps[1].Callback = &order.CallbackWait{Timeout: timing.Allowance, MaxTimeout: 3 * timing.Allowance}
	waits.Steps[0].Poll = &order.PollWait{Timeout: timing.Allowance, Every: timing.Allowance / 4}
	waits.Steps = slices.Insert(waits.Steps, 2, order.StepDef{Name: "cool-off", Wait: &order.Wait{For: timing.Allowance}},
		order.StepDef{Name: "manual-review", Wait: &order.Wait{Event: "review", Timeout: timing.Allowance}})
	w.Run(t, waits)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	submit := func() string {
		return w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	}
	ids := []string{submit(), submit(), submit(), submit()}
	landed, refused, forms := map[string]int{}, map[string]int{}, map[string]int{}
	tried := func() bool {
		for _, name := range kinds {
			if landed[name] == 0 || refused[name] == 0 {
				return false
			}
		}
		for _, f := range allForms {
			if forms[f] == 0 {
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
	steps := 0
	for i := 0; i < 8000 && (i < 600 || !tried()); i++ {
		steps++
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
			// The first two orders' clients never cancel, so that
			// some orders run to their end or fail forward.
			if cur.ProcessState == order.Processing && !cur.Undo && k >= 2 {
				_, _, _ = w.Store.Apply(ctx, order.Cancel(cur, w.Clock.Now()))
			}
		}
		if f = read(ids[k]); f.Active < 0 {
			continue
		}
		cur, _ = f.Record()
		now := w.Clock.Now().Add(time.Duration(rng.IntN(int(timing.Allowance))) - timing.Allowance/2).Truncate(time.Millisecond)
		wr := randomWrite(rng, w.Workflow, f, found(rng, cur), now)
		if k == 0 && cur.ProcessState == order.Processing && rng.IntN(2) == 0 {
			// The first order mostly succeeds, to its end, its service
			// that calls back often accepting the call first.
			wr = completion(rng, w.Workflow, f, cur, now)
			switch d, _ := w.Workflow.Step(cur.Step); {
			case d.Callback != nil && !cur.Undo && rng.IntN(2) == 0:
				wr = transition(w.Workflow.CallAccepted(cur, now))
			case d.Poll != nil && !cur.Undo && rng.IntN(2) == 0:
				wr = transition(w.Workflow.PollAccepted(cur, "https://svc.example/status/1", time.Duration(rng.IntN(int(timing.Allowance))), now))
			}
		}
		if k == 0 && cur.ProcessState == order.Waiting && rng.IntN(2) == 0 {
			// and its waits mostly end, or take their event or callback,
			// or a callback that its service is still working.
			switch d, _ := w.Workflow.Step(cur.Step); {
			case d.Poll != nil:
				// Its service is checked when due, says it is working,
				// and is done.
				wr = []write{transition(w.Workflow.PollSent(cur, now)), pollWorking(rng, w.Workflow, cur, now), receivePoll(w.Workflow, cur, now)}[rng.IntN(3)]
			case d.Callback != nil && rng.IntN(2) == 0:
				wr = transition(order.Heartbeat(cur, now, 1, now)) // refused: a callback's is not an agent's
				// Its service says it is still working just inside the
				// wait, so that the wait moves on.
				if t, ok := w.Workflow.CallbackWorking(cur, cur.CompleteBy.Add(-time.Millisecond)); ok {
					wr = transition(t)
				}
			case d.Callback != nil:
				wr = receiveCallback(w.Workflow, cur, now)
			case rng.IntN(4) == 0:
				// Its wait is made to wait for a claim again, as after an
				// operator's redrive, so that a Scheduler starts it again.
				tr, _ := order.Recovery{Action: order.Retry, CompleteBy: now.Add(timing.ClaimWithin), Reason: "again"}.Transition(cur, cur.CompleteBy.Add(time.Millisecond))
				wr = transition(tr)
			case rng.IntN(2) == 0:
				wr = receiveEvent(w.Workflow, cur, now)
			default:
				wr = endWait(w.Workflow, cur, now)
			}
		}
		if k == 1 && i >= 300 && forms["redrive: forward"] == 0 {
			// The rarest form: when the walk has not landed it by
			// itself, the second order is steered to it.
			if next, ok := towardForward(rng, w.Workflow, f, cur, now); ok {
				wr = next
			}
		}
		// The write, and at most once more the one the domain decides
		// after its refusal.
		for tr, again := wr.tr, true; ; again = false {
			holds := tr.Holds(f)
			o, _, err := w.Store.Apply(ctx, tr)
			if holds != (err == nil) || err != nil && !errors.Is(err, order.ErrStale) {
				t.Fatalf("step %d: %s on %s: the domain says holds %v, the write: %v\nrecord %+v", i, wr.name, cur.ProcessState, holds, err, cur)
			}
			after := read(ids[k])
			if holds {
				landed[wr.name]++
				for _, form := range formsOf(tr) {
					forms[form]++
				}
				if msg := left(ordertest.AppliedTo(tr, f), after); msg != "" {
					t.Fatalf("step %d: %s landed and %s", i, wr.name, msg)
				}
				if o.ID != ids[k] {
					t.Fatalf("step %d: %s returned order %q, want %q", i, wr.name, o.ID, ids[k])
				}
				break
			}
			refused[wr.name]++
			if msg := left(f, after); msg != "" {
				t.Fatalf("step %d: %s was refused and %s", i, wr.name, msg)
			}
			if !again || wr.again == nil {
				break
			}
			next, err := wr.again(err)
			if wr.cancelled != errors.Is(err, order.ErrCancelRequested) {
				// A workflow step's success after the client's cancel is
				// not written: its replier starts undoing instead.
				t.Fatalf("step %d: %s refused on an order cancelled %v: %v", i, wr.name, wr.cancelled, err)
			}
			if err != nil {
				break
			}
			tr = next
		}
	}
	t.Logf("%d steps: landed %v; refused %v; forms %v", steps, landed, refused, forms)
	for _, name := range kinds {
		if landed[name] == 0 || refused[name] == 0 {
			t.Errorf("%s landed %d and was refused %d times: the walk did not try both", name, landed[name], refused[name])
		}
	}
	for _, f := range allForms {
		if forms[f] == 0 {
			t.Errorf("%s never landed", f)
		}
	}
}

// kinds are the writes the walk must see both land and be refused.
var kinds = []string{"fail", "release", "record the agent gave up", "park", "defer", "retry", "give up", "nudge",
	"claim", "cancel", "heartbeat", "lease alert", "clear alert", "reschedule", "move version",
	"complete", "start undoing", "redrive", "start wait", "end wait", "receive event", "await callback", "callback working", "receive callback",
	"await poll", "poll", "poll working", "receive poll", "keep held", "release hold"}

// allForms are the forms of the writes that move an order on, which the
// walk must see land.
var allForms = []string{
	"complete: next claimed", "complete: next waits", "complete: ended Processed", "complete: ended Failed", "complete: ended Cancelled",
	"complete: an undo's step Undone",
	"start undoing: undo records appended", "start undoing: nothing to undo", "start undoing: first undo claimed",
	"start undoing: first undo announced", "start undoing: from Error", "start undoing: the client's cancel",
	"start undoing: timed out", "start undoing: a wait cancelled", "start undoing: a callback failed",
	"redrive: in place", "redrive: forward",
	"end wait: next announced", "receive event: next announced", "receive callback: next announced",
	"receive poll: next claimed",
}

// formsOf names the forms of tr, a write that moves an order on.
func formsOf(tr order.Transition) []string {
	c := tr.Change
	var forms []string
	add := func(ok bool, form string) {
		if ok {
			forms = append(forms, tr.Name+": "+form)
		}
	}
	switch tr.Name {
	case "complete":
		add(c.Next != nil && c.Next.State == order.Processing, "next claimed")
		add(c.Next != nil && c.Next.State == order.Waiting, "next waits")
		add(c.End != "", "ended "+string(c.End))
		add(len(c.Undone) > 0, "an undo's step Undone")
	case "start undoing":
		add(len(c.Append) > 0, "undo records appended")
		add(c.End != "", "nothing to undo")
		add(len(c.Append) > 0 && c.Append[0].LockedBy != "", "first undo claimed")
		add(c.Announce, "first undo announced")
		add(c.OutOfError, "from Error")
		add(c.Cancel, "the client's cancel")
		add(c.CountFailure, "timed out")
		add(tr.Guard.State == order.Waiting && c.Cancel, "a wait cancelled")
		add(tr.Guard.State == order.Waiting && tr.Guard.InTime, "a callback failed")
	case "end wait", "receive event", "receive callback":
		add(c.Next != nil && c.Next.State == order.Pending, "next announced")
	case "receive poll":
		add(c.Next != nil && c.Next.State == order.Processing, "next claimed")
	case "redrive":
		add(c.Forward == nil, "in place")
		add(c.Forward != nil, "forward")
	}
	return forms
}

// write is one write an actor decided, with what the domain says of it.
type write struct {
	name string
	tr   order.Transition
	// again is the write the domain decides after the refusal err, as
	// its actor asks (nil: none is made again).
	again func(err error) (order.Transition, error)
	// cancelled: a workflow step's success on a cancelled order, whose
	// refusal the domain answers with ErrCancelRequested (its record as
	// the reply found it, but the order cancelled).
	cancelled bool
}

// transition is a write of one record, which is not made again.
func transition(tr order.Transition) write { return write{name: tr.Name, tr: tr} }

// left says how after differs from want, the order as the domain says a
// write leaves it ("" when it does not).
func left(want, after order.Found) string {
	if after.Status != want.Status || after.Active != want.Active || len(after.Steps) != len(want.Steps) {
		return fmt.Sprintf("left the order %s with active record %d of %d, want %s with %d of %d",
			after.Status, after.Active, len(after.Steps), want.Status, want.Active, len(want.Steps))
	}
	for j := range want.Steps {
		if got, want := fields(after.Steps[j]), fields(want.Steps[j]); got != want {
			return fmt.Sprintf("left record %d\n%+v\nwant\n%+v", j, got, want)
		}
	}
	return ""
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
		f.ProcessState = []order.ProcessState{order.Pending, order.Processing, order.Error, order.Waiting}[rng.IntN(4)]
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
	case 10:
		f.StatusURL = "https://svc.example/status/old"
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
	pick := rng.IntN(28)
	if cur, _ := f.Record(); rng.IntN(2) == 0 {
		fits := map[order.ProcessState][]int{
			order.Pending:    {3, 6, 7, 8, 8, 13, 16},
			order.Processing: {0, 1, 2, 3, 3, 5, 9, 10, 15, 16, 20, 23},
			order.Error:      {11, 12, 14, 16, 17, 17},
			order.Waiting:    {3, 13, 16, 18, 18, 19, 19, 21, 22, 22, 24, 25, 26, 27},
		}[cur.ProcessState]
		if cur.AlertPending {
			fits = append(fits, 11, 11, 12)
		}
		// The path to a forward redrive, the rarest form: a first undo
		// refused, then retried (weighted twice as much since the walk
		// also tries holds and releases, which missed it now and then).
		if cur.Undo && cur.Index == len(wf.Steps) && !cur.CancelRequested {
			fits = append(fits, map[order.ProcessState][]int{order.Processing: {0, 0, 0, 0, 0, 0}, order.Error: {17, 17, 17, 17, 17, 17}}[cur.ProcessState]...)
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
		if rng.IntN(3) == 0 { // a held order's, its workflow resumed
			return recovery(order.Recovery{Action: order.Nudge, Release: true, CompleteBy: later, Reason: "released"})
		}
		return recovery(order.Recovery{Action: order.Nudge, CompleteBy: later, Reason: "unclaimed", AlertOperators: rng.IntN(2) == 0})
	case 8:
		if d, ok := wf.Step(fence.Step); ok && d.Waits() {
			return transition(order.StartWait(fence, now.Add(d.Wait.For), now))
		}
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
	case 17:
		return resume(wf, f, fence, later, now)
	case 18:
		return endWait(wf, fence, now)
	case 19:
		return receiveEvent(wf, fence, now)
	case 20:
		return transition(wf.CallAccepted(fence, now))
	case 21:
		if t, ok := wf.CallbackWorking(fence, now); ok {
			return transition(t)
		}
		return transition(wf.CallAccepted(fence, now))
	case 23:
		return transition(wf.PollAccepted(fence, "https://svc.example/status/1", time.Duration(rng.IntN(int(timing.Allowance))), now))
	case 24:
		return transition(wf.PollSent(fence, now))
	case 25:
		return pollWorking(rng, wf, fence, now)
	case 26:
		return receivePoll(wf, fence, now)
	case 27:
		return transition(order.PollFailed(fence, "card declined", now))
	default:
		return receiveCallback(wf, fence, now)
	}
}

// pollWorking is the Scheduler's write of a check that says the work
// goes on, sometimes at a new status URL.
func pollWorking(rng *rand.Rand, wf order.Workflow, fence order.StepState, now time.Time) write {
	url := []string{"", "https://svc.example/status/2"}[rng.IntN(2)]
	return transition(wf.PollWorking(fence, url, time.Duration(rng.IntN(int(timing.Allowance))), now))
}

// receivePoll is the Scheduler's write of a check that says the work is
// done, the next step claimed by it.
func receivePoll(wf order.Workflow, fence order.StepState, now time.Time) write {
	return write{name: "receive poll", tr: wf.PollDone(fence, "rs-1", json.RawMessage(`{"id":"rs-1"}`), "s1", now).Transition(now)}
}

// receiveCallback is the API's write of a success callback for fence, as
// it decides it (whatever the step).
func receiveCallback(wf order.Workflow, fence order.StepState, now time.Time) write {
	return write{name: "receive callback", tr: wf.CallbackArrived(fence, "ch-1", json.RawMessage(`{"id":"ch-1"}`), now).Transition(now)}
}

// receiveEvent is the API's write of an event for fence, as it decides
// it (whatever the step).
func receiveEvent(wf order.Workflow, fence order.StepState, now time.Time) write {
	return write{name: "receive event", tr: wf.EventArrived(fence, json.RawMessage(`{"decision":"approve"}`), now).Transition(now)}
}

// endWait is the Supervisor's end of fence's wait, as it decides it
// (whatever the step; a write on a record that is not a wait is refused
// like any stale one).
func endWait(wf order.Workflow, fence order.StepState, now time.Time) write {
	return write{name: "end wait", tr: wf.WaitEnded(fence, now).Transition(now)}
}

// completion is a success reply of fence's attempt, as the Scheduler
// applies it: the next record claimed at once, or the order ended; after
// a refusal, the write Completion.Again decides.
func completion(rng *rand.Rand, wf order.Workflow, f order.Found, fence order.StepState, now time.Time) write {
	c := wf.Completion(fence, "ref-1", json.RawMessage(`{"n":1}`), "s2", now)
	c.Cancelled = fence.Undo && rng.IntN(2) == 0 // the replier's view of the cancel may be wrong
	if c.Next != nil {
		// A deadline before or after the order's DueAt.
		c.NextCompleteBy = now.Add(time.Duration(rng.IntN(int(2 * timing.Allowance))))
	}
	cur, _ := f.Record()
	stale := order.Guard{State: order.Processing}
	return write{name: "complete", tr: c.Transition(now),
		cancelled: !fence.Undo && cur.CancelRequested && stale.Holds(fence, now, f),
		again: func(err error) (order.Transition, error) {
			c, err := c.Again(err, now)
			return c.Transition(now), err
		}}
}

// undoing is the write that starts undoing the order's work from fence,
// for any of the events that start it: a permanent fault, a success after
// a cancel, a cancel of a waiting step (the client's own, or one a
// Scheduler finds), the Supervisor's compensation, an operator's; after a
// refusal, the write Undoing.Again decides.
func undoing(rng *rand.Rand, wf order.Workflow, fence order.StepState, now time.Time) write {
	var u order.Undoing
	switch rng.IntN(9) {
	case 8:
		u = wf.UndoPollFailed(fence, "declined", now)
	case 5:
		u = wf.UndoCancelledWait(fence, now)
	case 6:
		u = wf.UndoCallbackFailed(fence, "declined", now)
	case 7:
		u = wf.UndoAcceptedAfterCancel(fence, now)
	case 0:
		u = wf.UndoFault(fence, "declined", now)
	case 1:
		u = wf.UndoCancelledSuccess(fence, "ref-1", json.RawMessage(`{"n":2}`), now)
	case 2:
		u = wf.UndoUnclaimed(fence, rng.IntN(2) == 0, now)
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
	decide := func(u order.Undoing) order.Transition {
		tr, err := u.Transition(now)
		if err != nil {
			panic(err) // only a workflow step's undoing is decided here
		}
		return tr
	}
	return write{name: "start undoing", tr: decide(u),
		again: func(err error) (order.Transition, error) {
			u, err := u.Again(err, now)
			return decide(u), err
		}}
}

// towardForward is the next write on the path to a forward redrive, for
// an order the walk steers there: its first step succeeds, its second
// fails for good, the first undo fails into Error, and an operator
// redrives it, which runs the failed step again. It has no write for a
// record off that path.
func towardForward(rng *rand.Rand, wf order.Workflow, f order.Found, cur order.StepState, now time.Time) (write, bool) {
	first := len(wf.Steps) // the first undo record's index
	switch {
	case cur.ProcessState == order.Pending:
		return transition(order.Claim(cur, "s2", now.Add(timing.Allowance), now)), true
	case cur.ProcessState == order.Processing && !cur.Undo && cur.Index == 0:
		return completion(rng, wf, f, cur, now), true
	case cur.ProcessState == order.Processing && !cur.Undo:
		tr, err := wf.UndoFault(cur, "declined", now).ClaimedBy("s2", now).Transition(now)
		return write{name: "start undoing", tr: tr}, err == nil
	case cur.ProcessState == order.Processing && cur.Index == first:
		return transition(order.FailReply(cur, "refund refused", now)), true
	case cur.ProcessState == order.Error && cur.Index == first:
		return resume(wf, f, cur, now.Add(timing.ClaimWithin), now), true
	}
	return write{}, false
}

// resume is an operator's redrive of the order, as PlanRedrive decides it
// on the order as stored, fenced on the record as found.
func resume(wf order.Workflow, f order.Found, fence order.StepState, claimBy, now time.Time) write {
	r := order.Resume{Step: fence, Status: order.StatusProcessing, ClaimBy: claimBy, Reason: "redriven", Records: len(f.Steps)}
	if p, err := order.PlanRedrive(f.Status, f.Steps, order.RedriveRetry); err == nil && p.Move == order.RunForward {
		forward := p.Forward
		r.Forward, r.Steps, r.UndoFloor = &forward, len(wf.Steps), p.UndoFloor
	}
	return write{name: "redrive", tr: r.Transition(now)}
}

// record is what a write may change of a record, times as stored (to
// the millisecond).
type record struct {
	Step, Reference, Result, Undone, StatusURL   string
	State                                        order.ProcessState
	LockedBy, LastError, Parked, Version         string
	CompleteBy, DueAt, Updated, Since            int64
	Failures, Nudges, Releases, Deferrals, Index int
	Attempt, Heartbeats, PastFailures, UndoFloor int
	Undo, AlertPending, CancelRequested          bool
	AlertKind                                    order.AlertKind
}

func fields(s order.StepState) record {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return record{Step: s.Step, Reference: s.Reference, Result: string(s.Result), Undone: strings.Join(s.Undone, ","), StatusURL: s.StatusURL,
		PastFailures: s.PastFailures, UndoFloor: s.UndoFloor, Undo: s.Undo,
		State: s.ProcessState, LockedBy: s.LockedBy, LastError: s.LastError, Parked: s.Parked, Version: s.Version,
		CompleteBy: ms(s.CompleteBy), DueAt: ms(s.DueAt), Updated: ms(s.UpdatedAt), Since: ms(s.Since),
		Failures: s.FailureCount, Nudges: s.Nudges, Releases: s.Releases, Deferrals: s.Deferrals, Index: s.Index,
		Attempt: s.Attempt, Heartbeats: s.Heartbeats,
		AlertPending: s.AlertPending, CancelRequested: s.CancelRequested, AlertKind: s.AlertKind}
}
