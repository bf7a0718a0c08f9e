package dynamo_test

import (
	"context"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var timing = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}

// The property behind every transition: Store.Apply's write lands
// exactly when the domain says its guard holds (Transition.Holds, on the
// record as stored), and leaves the record as the domain says
// (Transition.Applied); otherwise it changes nothing and reports
// order.ErrStale. Random interleavings drive it: records found stale (an
// older or newer attempt, another state, another claim's owner), clocks
// before and after deadlines, Schedulers claiming, clients cancelling,
// every kind of transition, on real DynamoDB; the walk goes on until each
// kind has both landed and been refused.
func TestApplyLandsExactlyWhenTheDomainSaysItHolds(t *testing.T) {
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 0))
	ids := make([]string, 4)
	for i := range ids {
		ids[i] = w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
	}
	landed, refused := map[string]int{}, map[string]int{}
	kinds := []string{"fail", "retry", "defer", "nudge", "park"}
	tried := func() bool {
		for _, name := range kinds {
			if landed[name] == 0 || refused[name] == 0 {
				return false
			}
		}
		return true
	}
	// At least 300 steps, and on until every kind has both landed and
	// been refused (a random walk may take longer to land some).
	for i := 0; i < 3000 && (i < 300 || !tried()); i++ {
		k := rng.IntN(len(ids))
		cur, ok, err := w.Store.Active(ctx, ids[k])
		if err != nil {
			t.Fatal(err)
		}
		if !ok || cur.ProcessState == order.Error && rng.IntN(4) == 0 {
			ids[k] = w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}})
			continue
		}
		// The world moves on now and then: time passes, a Scheduler
		// claims a waiting record, a client cancels.
		switch rng.IntN(6) {
		case 0:
			w.Clock.Advance(time.Duration(rng.IntN(int(2 * timing.Allowance))))
		case 1:
			if _, err := w.Scheduler("s1").HandleStream(ctx, w.StreamEvent(t, ids[k])); err != nil {
				t.Fatal(err)
			}
		case 2:
			if cur.ProcessState == order.Processing && !cur.Undo {
				_, _ = w.Store.RequestCancel(ctx, cur, w.Clock.Now())
			}
		}
		if cur, ok, err = w.Store.Active(ctx, ids[k]); err != nil || !ok {
			continue
		}
		tr := randomTransition(rng, found(rng, cur), w.Clock.Now().Add(time.Duration(rng.IntN(int(timing.Allowance)))-timing.Allowance/2).Truncate(time.Millisecond))
		holds, want := tr.Holds(cur), tr.Applied(cur)
		_, err = w.Store.Apply(ctx, tr)
		if holds != (err == nil) || err != nil && !errors.Is(err, order.ErrStale) {
			t.Fatalf("step %d: %s on %s: the domain says holds %v, the write: %v\nrecord %+v\nguard %+v", i, tr.Name, cur.ProcessState, holds, err, cur, tr.Guard)
		}
		after, _, err := w.Store.Active(ctx, ids[k])
		if err != nil {
			t.Fatal(err)
		}
		if !holds {
			refused[tr.Name]++
			want = cur
		} else {
			landed[tr.Name]++
		}
		if got, wanted := fields(after), fields(want); got != wanted {
			t.Fatalf("step %d: %s (holds %v) left\n%+v\nwant\n%+v", i, tr.Name, holds, got, wanted)
		}
	}
	t.Logf("landed %v; refused %v", landed, refused)
	for _, name := range kinds {
		if landed[name] == 0 || refused[name] == 0 {
			t.Errorf("%s landed %d and was refused %d times: the walk did not try both", name, landed[name], refused[name])
		}
	}
}

// found is the record as an actor found it: the stored one, or a stale
// or mistaken view of it.
func found(rng *rand.Rand, cur order.StepState) order.StepState {
	f := cur
	switch rng.IntN(8) {
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
	}
	return f
}

// randomTransition is any transition an actor may decide about f at now.
func randomTransition(rng *rand.Rand, f order.StepState, now time.Time) order.Transition {
	later := now.Add(timing.ClaimWithin)
	recovery := func(r order.Recovery) order.Transition {
		tr, _ := r.Transition(f, now)
		return tr
	}
	switch rng.IntN(9) {
	case 0:
		return order.FailReply(f, "card declined", now)
	case 1:
		return order.Release(f, later, "not sent", rng.IntN(2) == 0, now)
	case 2:
		return order.GaveUp(f, now)
	case 3:
		return order.Park(f, later, rng.IntN(2) == 0, "not in this build", now)
	case 4:
		return recovery(order.Recovery{Action: order.Defer, CompleteBy: later, Reason: "backlog"})
	case 5:
		return recovery(order.Recovery{Action: order.Retry, CompleteBy: later, Reason: "timed out", NotAFailure: rng.IntN(2) == 0})
	case 6:
		kind := order.AlertStepTimedOut
		if f.ProcessState == order.Pending {
			kind = order.AlertStepAbandoned
		}
		return recovery(order.Recovery{Action: order.Fail, AlertKind: kind, Reason: "given up"})
	default:
		return recovery(order.Recovery{Action: order.Nudge, CompleteBy: later, Reason: "unclaimed", AlertOperators: rng.IntN(2) == 0})
	}
}

// record is what a transition may change of a record, times as stored
// (to the millisecond).
type record struct {
	State                                        order.ProcessState
	LockedBy, LastError, Parked                  string
	CompleteBy, DueAt, Updated                   int64
	Failures, Nudges, Releases, Deferrals, Index int
	AlertPending                                 bool
	AlertKind                                    order.AlertKind
}

func fields(s order.StepState) record {
	ms := func(t time.Time) int64 {
		if t.IsZero() {
			return 0
		}
		return t.UnixMilli()
	}
	return record{State: s.ProcessState, LockedBy: s.LockedBy, LastError: s.LastError, Parked: s.Parked,
		CompleteBy: ms(s.CompleteBy), DueAt: ms(s.DueAt), Updated: ms(s.UpdatedAt),
		Failures: s.FailureCount, Nudges: s.Nudges, Releases: s.Releases, Deferrals: s.Deferrals, Index: s.Index,
		AlertPending: s.AlertPending, AlertKind: s.AlertKind}
}
