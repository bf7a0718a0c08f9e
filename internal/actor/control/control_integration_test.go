package control_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/actor/control"
	"orderly/internal/actor/dispatch"
	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/sqs"
	"orderly/internal/metrics"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var (
	timing    = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}
	someOrder = ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}}
	caller    = order.Principal{ID: testenv.Caller} // who testenv.World submits as
)

func world(t *testing.T) *testenv.World {
	t.Helper()
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	return testenv.NewWorld(t, timing)
}

func reply(t *testing.T, s *scheduler.Service, replies ...order.StepReply) {
	t.Helper()
	bodies := make([]any, len(replies))
	for i, r := range replies {
		bodies[i] = r
	}
	resp, err := s.HandleReplies(context.Background(), testenv.ReplyEvent(bodies...))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
}

func ok(id, step string, attempt int) order.StepReply {
	return order.StepReply{OrderID: id, Step: step, Attempt: attempt, Outcome: order.OutcomeSucceeded}
}

func undid(id, step string, record int) order.StepReply {
	return order.StepReply{OrderID: id, Step: step, Undo: true, Record: record, Attempt: 1, Outcome: order.OutcomeSucceeded}
}

// A cancel and the in-flight step's success reply, in either order: the
// success is applied, then undone with the steps before it, and the order
// ends Cancelled.
func TestCancelRacingTheStepsSuccess(t *testing.T) {
	tests := []struct {
		name         string
		cancelFirst  bool
		wantRecords  []string
		wantUndoneAt []int // records (undo) replied to, in order
	}{
		{"cancel, then the success reply", true,
			[]string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:NotStarted",
				"undo charge-payment:Processed", "undo reserve-inventory:Processed"}, []int{3, 4}},
		{"the success reply, then cancel", false,
			[]string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:NotStarted",
				"undo charge-payment:Processed", "undo reserve-inventory:Processed"}, []int{3, 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := world(t)
			s := w.Scheduler("s1")
			c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
			id := w.Submit(t, someOrder)
			reply(t, s, ok(id, ordertest.StepReserveInventory, 1)) // step 2 in flight
			if tt.cancelFirst {
				if o, err := c.Cancel(context.Background(), caller, id); err != nil || o.Status != order.StatusCancelling {
					t.Fatalf("cancel: %s, %v; want Cancelling", o.Status, err)
				}
				reply(t, s, ok(id, ordertest.StepChargePayment, 1))
			} else {
				reply(t, s, ok(id, ordertest.StepChargePayment, 1)) // step 3 now in flight
				if _, err := c.Cancel(context.Background(), caller, id); err != nil {
					t.Fatalf("cancel: %v", err)
				}
				reply(t, s, ok(id, ordertest.StepArrangeShipping, 1))
				tt.wantRecords = []string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:Undone",
					"undo arrange-shipping:Processed", "undo charge-payment:Processed", "undo reserve-inventory:Processed"}
				tt.wantUndoneAt = []int{3, 4, 5}
			}
			_, steps := w.Records(t, id)
			for _, rec := range tt.wantUndoneAt {
				reply(t, s, undid(id, steps[rec].Step, rec))
			}
			o, steps := w.Records(t, id)
			if got := testenv.States(steps); o.Status != order.StatusCancelled || !slices.Equal(got, tt.wantRecords) {
				t.Errorf("got %s %v, want Cancelled %v", o.Status, got, tt.wantRecords)
			}
		})
	}
}

// racingStore claims the step a cancel found Pending just before the
// cancel's write, as a Scheduler on the stream would.
type racingStore struct {
	control.Store
	claim func()
	done  bool
}

func (r *racingStore) Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error) {
	if !r.done && t.Name == "start undoing" {
		r.done = true
		r.claim()
	}
	return r.Store.Apply(ctx, t)
}

// A cancel that finds the step waiting for a claim, while a Scheduler
// claims it: the cancel's write fails its condition, the cancel reads the
// order again and records the cancel on the step now in flight.
func TestCancelRacingAClaim(t *testing.T) {
	w := world(t)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	// Attempt 1 times out and is retried: the step waits for a claim.
	w.Requests(t, ordertest.AgentInventory) // an agent took it and went silent
	_, steps := w.Records(t, id)
	w.Clock.Advance(steps[0].CompleteBy.Sub(w.Clock.Now()) + time.Second)
	if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
		t.Fatalf("supervisor: %+v, %v; want one retry", r, err)
	}
	race := &racingStore{Store: w.Store, claim: func() {
		if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
			t.Errorf("claim: %+v, %v", resp, err)
		}
	}}
	o, err := control.New(race, race, w.Versions(), w.Clock.Now).Cancel(context.Background(), caller, id)
	if err != nil || o.Status != order.StatusCancelling {
		t.Fatalf("cancel: %s, %v; want Cancelling once the claim won", o.Status, err)
	}
	reply(t, s, ok(id, ordertest.StepReserveInventory, 2))
	reply(t, s, undid(id, ordertest.StepReserveInventory, 3))
	o, steps = w.Records(t, id)
	if want := []string{"reserve-inventory:Undone", "charge-payment:NotStarted", "arrange-shipping:NotStarted",
		"undo reserve-inventory:Processed"}; o.Status != order.StatusCancelled || !slices.Equal(testenv.States(steps), want) {
		t.Errorf("got %s %v, want Cancelled %v", o.Status, testenv.States(steps), want)
	}
}

// A cancel of a step that waits for a claim after an earlier attempt (it
// timed out and the Supervisor made it Pending again) does not run it
// again, but undoes it with the steps before it: the earlier attempt's
// request went out and may have done the work, and its reply may still
// come. The late reply is dropped; the undo does the refund.
func TestCancelOfAStepWaitingAfterAnAttemptUndoesIt(t *testing.T) {
	tests := []struct {
		name        string
		step        string
		agent       string
		wantPlanned []string // the records right after the cancel
		wantEnd     []string
	}{
		{"the first step", ordertest.StepReserveInventory, ordertest.AgentInventory,
			[]string{"reserve-inventory:Cancelled", "charge-payment:NotStarted", "arrange-shipping:NotStarted",
				"undo reserve-inventory:Pending"},
			[]string{"reserve-inventory:Undone", "charge-payment:NotStarted", "arrange-shipping:NotStarted",
				"undo reserve-inventory:Processed"}},
		{"the second step", ordertest.StepChargePayment, ordertest.AgentPayment,
			[]string{"reserve-inventory:Processed", "charge-payment:Cancelled", "arrange-shipping:NotStarted",
				"undo charge-payment:Pending", "undo reserve-inventory:NotStarted"},
			[]string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:NotStarted",
				"undo charge-payment:Processed", "undo reserve-inventory:Processed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := world(t)
			s := w.Scheduler("s1")
			id := w.Submit(t, someOrder)
			if tt.step == ordertest.StepChargePayment {
				reply(t, s, ok(id, ordertest.StepReserveInventory, 1))
			}
			// Attempt 1 went out; its agent is slow and says nothing in time.
			if reqs := w.Requests(t, tt.agent); len(reqs) != 1 || reqs[0].Step != tt.step || reqs[0].Attempt != 1 {
				t.Fatalf("requests to %s: %s, want attempt 1 of %s", tt.agent, testenv.Describe(reqs), tt.step)
			}
			st := w.Step(t, id, tt.step)
			w.Clock.Advance(st.CompleteBy.Sub(w.Clock.Now()) + time.Second)
			if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
				t.Fatalf("supervisor: %+v, %v; want one retry", r, err)
			}
			if st := w.Step(t, id, tt.step); st.ProcessState != order.Pending || st.Attempt != 1 {
				t.Fatalf("before the cancel: %s on attempt %d, want Pending on attempt 1", st.ProcessState, st.Attempt)
			}

			o, err := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now).Cancel(context.Background(), caller, id)
			if err != nil || o.Status != order.StatusCancelling {
				t.Fatalf("cancel: %s, %v; want Cancelling: attempt 1 may have done the work, which is undone", o.Status, err)
			}
			_, steps := w.Records(t, id)
			if got := testenv.States(steps); !slices.Equal(got, tt.wantPlanned) {
				t.Fatalf("after the cancel: %v, want %v", got, tt.wantPlanned)
			}
			// Attempt 1's success arrives late: the step was cancelled, so
			// it changes nothing; the undo takes the work back.
			reply(t, s, ok(id, tt.step, 1))
			// The stream announces the undo; a Scheduler claims it, and
			// no request to do the step's work goes out again.
			if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("stream: %+v, %v", resp, err)
			}
			reqs := w.Requests(t, tt.agent)
			if len(reqs) != 1 || !reqs[0].Undo || reqs[0].Step != tt.step {
				t.Fatalf("requests to %s after the cancel: %s, want only the undo of %s", tt.agent, testenv.Describe(reqs), tt.step)
			}
			for rec := 3; rec < len(tt.wantEnd); rec++ {
				_, steps = w.Records(t, id)
				reply(t, s, undid(id, steps[rec].Step, rec))
			}
			o, steps = w.Records(t, id)
			if got := testenv.States(steps); o.Status != order.StatusCancelled || !slices.Equal(got, tt.wantEnd) {
				t.Errorf("got %s %v, want Cancelled %v", o.Status, got, tt.wantEnd)
			}
		})
	}
}

// Another caller's order is not found, and nothing is written.
func TestCancelOfAnotherCallersOrder(t *testing.T) {
	w := world(t)
	id := w.Submit(t, someOrder)
	before, _ := w.Records(t, id)
	if _, err := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now).Cancel(context.Background(), order.Principal{ID: "AIDAOTHERCALLER"}, id); err == nil {
		t.Fatal("cancel of another caller's order succeeded")
	}
	if after, _ := w.Records(t, id); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("the order changed: %s at %s, was %s at %s", after.Status, after.UpdatedAt, before.Status, before.UpdatedAt)
	}
}

// A workflow that stops on failure leaves a step refused for good in
// Error; the operator's redrive runs it again (by default, or asked to
// retry) or undoes the work done, the failed step included, in reverse.
// Either way the attempt counter goes on, so the old attempt's reply is
// dropped.
func TestRedriveOfAStoppedWorkflowStep(t *testing.T) {
	tests := []struct {
		action      string
		wantStatus  order.Status
		wantRecords []string
	}{
		{"", order.StatusProcessed,
			[]string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Processed"}},
		{order.RedriveRetry, order.StatusProcessed,
			[]string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Processed"}},
		{order.RedriveCompensate, order.StatusFailed,
			[]string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:Undone",
				"undo arrange-shipping:Processed", "undo charge-payment:Processed", "undo reserve-inventory:Processed"}},
	}
	for _, tt := range tests {
		t.Run("action "+cmp.Or(tt.action, "(none)"), func(t *testing.T) {
			w := world(t)
			w.Workflow.StopOnFailure = true
			s := w.Scheduler("s1")
			c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
			id := w.Submit(t, someOrder)
			reply(t, s, ok(id, ordertest.StepReserveInventory, 1))
			reply(t, s, ok(id, ordertest.StepChargePayment, 1))
			reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: 1,
				Outcome: order.OutcomeFailed, Reason: "address undeliverable"})
			o, steps := w.Records(t, id)
			if o.Status != order.StatusError || steps[2].ProcessState != order.Error {
				t.Fatalf("before the redrive: %s %v, want Error at the failed step", o.Status, testenv.States(steps))
			}
			if _, err := c.Cancel(context.Background(), caller, id); !errors.Is(err, order.ErrNotAllowed) {
				t.Errorf("cancel of an order in Error: %v, want ErrNotAllowed", err)
			}
			inError := func() int {
				ls, err := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions()).InError(context.Background(), 10)
				if err != nil {
					t.Fatal(err)
				}
				return len(ls)
			}
			if n := inError(); n != 1 {
				t.Errorf("%d orders listed in Error, want this one", n)
			}

			o, err := c.Redrive(context.Background(), id, tt.action)
			if err != nil {
				t.Fatalf("redrive: %v", err)
			}
			if tt.wantStatus == order.StatusProcessed {
				if o.Status != order.StatusProcessing {
					t.Errorf("redriven forward: %s, want Processing", o.Status)
				}
				// The stream announces the step; a Scheduler claims attempt 2.
				if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("claim: %+v, %v", resp, err)
				}
				if st := w.Step(t, id, ordertest.StepArrangeShipping); st.ProcessState != order.Processing || st.Attempt != 2 || st.FailureCount != 0 {
					t.Fatalf("after the claim: %s attempt %d failures %d, want Processing attempt 2 failures 0",
						st.ProcessState, st.Attempt, st.FailureCount)
				}
				reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed}) // stale
				reply(t, s, ok(id, ordertest.StepArrangeShipping, 2))
			} else {
				if o.Status != order.StatusCompensating {
					t.Errorf("redriven into compensation: %s, want Compensating", o.Status)
				}
				// The stream announces the first undo; a Scheduler claims it.
				if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("claim: %+v, %v", resp, err)
				}
				for rec := 3; rec <= 5; rec++ {
					_, steps = w.Records(t, id)
					reply(t, s, undid(id, steps[rec].Step, rec))
				}
			}
			o, steps = w.Records(t, id)
			if got := testenv.States(steps); o.Status != tt.wantStatus || !slices.Equal(got, tt.wantRecords) {
				t.Errorf("got %s %v, want %s %v", o.Status, got, tt.wantStatus, tt.wantRecords)
			}
			if _, err := c.Redrive(context.Background(), id, tt.action); !errors.Is(err, order.ErrNotAllowed) {
				t.Errorf("second redrive of a %s order: %v, want ErrNotAllowed", o.Status, err)
			}
			if n := inError(); n != 0 {
				t.Errorf("%d orders listed in Error after the redrive, want none", n)
			}
			// Nor is it left in the index (the listing skips orders with no
			// running record, so look at the item itself).
			item, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(w.Stack.Catalog.Orders.Name),
				Key: map[string]dbtypes.AttributeValue{resources.AttrOrderID: &dbtypes.AttributeValueMemberS{Value: id}}})
			if err != nil || item.Item[resources.AttrInError] != nil {
				t.Errorf("after the redrive the order still carries %s: %v, %v", resources.AttrInError, item.Item[resources.AttrInError], err)
			}
		})
	}
}

// A forward redrive drops the undo records; when the order is undone again
// later, the new undo records sit at the same indexes. Their attempts go on
// from the dropped ones', so a late reply of a dropped undo attempt (the
// agent acted on a redelivered copy of its request) is stale and changes
// nothing.
func TestUndoAttemptsGoOnAcrossAForwardRedrive(t *testing.T) {
	w := world(t)
	s := w.Scheduler("s1")
	c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
	id := w.Submit(t, someOrder)
	shipRefused := func(attempt int) order.StepReply {
		return order.StepReply{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: attempt, Outcome: order.OutcomeFailed, Reason: "address undeliverable"}
	}
	reply(t, s, ok(id, ordertest.StepReserveInventory, 1))
	reply(t, s, ok(id, ordertest.StepChargePayment, 1))
	reply(t, s, shipRefused(1))
	// The refund (record 3, attempt 1) is refused: nothing was undone, so
	// the operator runs the order forward again.
	dropped := order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Undo: true, Record: 3, Attempt: 1}
	refused := dropped
	refused.Outcome, refused.Reason = order.OutcomeFailed, "refund refused"
	reply(t, s, refused)
	if o, err := c.Redrive(context.Background(), id, order.RedriveRetry); err != nil || o.Status != order.StatusProcessing {
		t.Fatalf("forward redrive: %s, %v; want Processing", o.Status, err)
	}
	if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("claim: %+v, %v", resp, err)
	}
	// Shipping is refused again: the order is undone again, from record 3.
	reply(t, s, shipRefused(2))
	_, steps := w.Records(t, id)
	if len(steps) != 5 || !steps[3].Undo || steps[3].Step != ordertest.StepChargePayment || steps[3].ProcessState != order.Processing {
		t.Fatalf("after the second refusal: %v, want the refund in flight at record 3", testenv.States(steps))
	}
	if steps[3].Attempt <= dropped.Attempt {
		t.Errorf("the new refund is on attempt %d, which the dropped one used (%d)", steps[3].Attempt, dropped.Attempt)
	}
	// The dropped attempt's success arrives late.
	late := dropped
	late.Outcome, late.Reference = order.OutcomeSucceeded, "rf_late"
	reply(t, s, late)
	_, after := w.Records(t, id)
	if got := after[3]; got.ProcessState != order.Processing || got.Attempt != steps[3].Attempt || got.Reference != "" {
		t.Fatalf("the dropped attempt's reply was applied: record 3 is %s on attempt %d (ref %q), want Processing on attempt %d",
			got.ProcessState, got.Attempt, got.Reference, steps[3].Attempt)
	}
	// The new attempt's own reply goes on as usual.
	current := dropped
	current.Attempt, current.Outcome = steps[3].Attempt, order.OutcomeSucceeded
	reply(t, s, current)
	_, after = w.Records(t, id)
	if after[4].ProcessState != order.Processing || after[4].Attempt <= 0 {
		t.Fatalf("after the refund: %v, want the release in flight", testenv.States(after))
	}
	release := order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Undo: true, Record: 4, Attempt: after[4].Attempt, Outcome: order.OutcomeSucceeded}
	reply(t, s, release)
	o, after := w.Records(t, id)
	if want := []string{"reserve-inventory:Undone", "charge-payment:Undone", "arrange-shipping:Failed",
		"undo charge-payment:Processed", "undo reserve-inventory:Processed"}; o.Status != order.StatusFailed || !slices.Equal(testenv.States(after), want) {
		t.Errorf("got %s %v, want Failed %v", o.Status, testenv.States(after), want)
	}
}

// cancellingReleaser records the client's cancel just before it gives a
// claim back, so the step waits for a claim again on an order the client
// has cancelled: the state the Scheduler's stream path and the Supervisor
// decide on.
type cancellingReleaser struct {
	*dynamo.Store
	cancel func()
}

func (r cancellingReleaser) Apply(ctx context.Context, t order.Transition) (order.Order, order.StepState, error) {
	r.cancel()
	return r.Store.Apply(ctx, t)
}

// A cancelled order's step that waits to be claimed again, found by a
// Scheduler on the stream or by the Supervisor, is undone: attempt 1 went
// out before it timed out.
func TestCancelledStepWaitingAfterAnAttemptIsUndoneByEveryActor(t *testing.T) {
	for _, actor := range []string{"scheduler", "supervisor"} {
		t.Run(actor, func(t *testing.T) {
			w := world(t)
			s := w.Scheduler("s1")
			id := w.Submit(t, someOrder)
			w.Requests(t, ordertest.AgentInventory) // attempt 1 went out; its agent went silent
			_, steps := w.Records(t, id)
			w.Clock.Advance(steps[0].CompleteBy.Sub(w.Clock.Now()) + time.Second)
			if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
				t.Fatalf("supervisor: %+v, %v; want one retry", r, err)
			}
			// Attempt 2 is claimed, but its request cannot be sent; the
			// client cancels before the claim is given back.
			c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
			release := cancellingReleaser{Store: w.Store, cancel: func() {
				if o, err := c.Cancel(context.Background(), caller, id); err != nil || o.Status != order.StatusCancelling {
					t.Errorf("cancel: %s, %v; want Cancelling", o.Status, err)
				}
			}}
			broken := w.Scheduler("s2", func(cfg *scheduler.Config) {
				cfg.Dispatcher = dispatch.New(sqs.NewRequests(w.Clients.SQS, nil), release, w.Workflow.ClaimWithin, w.Clock.Now, w.Log, metrics.Discard())
			})
			if resp, err := broken.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
				t.Fatalf("claim: %+v, %v", resp, err)
			}
			if st := w.Step(t, id, ordertest.StepReserveInventory); st.ProcessState != order.Pending || !st.CancelRequested || st.Attempt != 2 {
				t.Fatalf("before the decision: %s on attempt %d, cancelled %t; want Pending on attempt 2, cancelled", st.ProcessState, st.Attempt, st.CancelRequested)
			}

			switch actor {
			case "scheduler":
				if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("stream: %+v, %v", resp, err)
				}
			case "supervisor":
				// It looks once the released claim's window has passed.
				w.Clock.Advance(w.Workflow.ClaimWithin + time.Second)
				if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Compensated != 1 {
					t.Fatalf("supervisor: %+v, %v; want one compensation", r, err)
				}
				if resp, err := s.HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
					t.Fatalf("stream: %+v, %v", resp, err)
				}
			}
			o, steps := w.Records(t, id)
			if want := []string{"reserve-inventory:Cancelled", "charge-payment:NotStarted", "arrange-shipping:NotStarted",
				"undo reserve-inventory:Processing"}; o.Status != order.StatusCancelling || !slices.Equal(testenv.States(steps), want) {
				t.Fatalf("after the %s: %s %v, want Cancelling %v", actor, o.Status, testenv.States(steps), want)
			}
			reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Undo: true, Record: 3, Attempt: steps[3].Attempt, Outcome: order.OutcomeSucceeded})
			if o, steps = w.Records(t, id); o.Status != order.StatusCancelled || steps[0].ProcessState != order.Undone {
				t.Errorf("got %s %v, want Cancelled with the reservation undone", o.Status, testenv.States(steps))
			}
		})
	}
}

// What `orderly workflow diff` says of an undo the new version adds below
// the undo an order is at: Move accepts the order (its undo records all
// name steps the new version undoes), but its compensation was planned
// under the old version, without that undo, and the new version names it
// as the next: the running undo's success cannot claim it and is dropped
// as stale, so the order stalls Compensating where the old version would
// have ended it Failed. definition.Compare reports such a position as one
// that cannot move; if Move comes to refuse it, this test becomes a
// refusal.
func TestMoveOntoAVersionThatAddsAnUndoBelowIsRefused(t *testing.T) {
	w := world(t)
	shipped := w.Workflow
	// Version 9, which a rolled-back build had: reserve-inventory without undo.
	nine := shipped
	nine.Version = "9"
	nine.Steps = slices.Clone(shipped.Steps)
	nine.Steps[0].Undo, nine.Steps[0].UndoCall = "", order.Endpoint{}
	w.Workflow = nine
	w.API = w.NewAPI(t)
	s9 := w.Scheduler("s9")
	// Replies carry their order's version, as agents copy it.
	under := func(version string, r order.StepReply) order.StepReply { r.Version = version; return r }
	compensating := func() string {
		id := w.Submit(t, someOrder)
		reply(t, s9, under("9", ok(id, ordertest.StepReserveInventory, 1)))
		reply(t, s9, under("9", ok(id, ordertest.StepChargePayment, 1)))
		reply(t, s9, order.StepReply{OrderID: id, Version: "9", Step: ordertest.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "address undeliverable"})
		// Under version 9 the plan is the charge's undo alone (record 3).
		o, steps := w.Records(t, id)
		if o.Version != "9" || o.Status != order.StatusCompensating || len(steps) != 4 || steps[3].Step != ordertest.StepChargePayment {
			t.Fatalf("order %s under version %s %v, want compensating under 9 with one undo", o.Status, o.Version, testenv.States(steps))
		}
		return id
	}
	stays, moved := compensating(), compensating()
	// Under its own version the refund ends the order.
	reply(t, s9, under("9", undid(stays, ordertest.StepChargePayment, 3)))
	if o, steps := w.Records(t, stays); o.Status != order.StatusFailed {
		t.Errorf("unmoved order: %s %v, want Failed", o.Status, testenv.States(steps))
	}

	// The build now has version 1 only. Under it the refund's success
	// would claim the release, which the order has no record for: the
	// move is refused, and the order is left as it was.
	w.Workflow = shipped
	c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
	_, err := c.Move(context.Background(), moved, "1")
	if !errors.Is(err, order.ErrNotAllowed) || !strings.Contains(err.Error(), "reserve-inventory") {
		t.Fatalf("move: %v, want it refused naming the undo version 1 would add", err)
	}
	if o, _ := w.Records(t, moved); o.Version != "9" || o.Status != order.StatusCompensating {
		t.Errorf("refused move left the order %s under %s, want it untouched", o.Status, o.Version)
	}
}

// An order of a workflow that stops on failure, whose event did not come
// by its timeout, is in Error with an alert; an operator's redrive starts
// the wait again, on a new attempt with a fresh timeout, and the event
// then moves the order on.
func TestRedriveOfAWaitThatTimedOut(t *testing.T) {
	w := world(t)
	wf := ordertest.Reviewed(w.Workflow, 1, time.Hour)
	wf.StopOnFailure = true
	w.Run(t, wf)
	id := w.Submit(t, someOrder)
	reply(t, w.Scheduler("s1"), ok(id, ordertest.StepReserveInventory, 1))
	w.Clock.Advance(time.Hour + time.Second)
	if _, err := w.Supervisor().Run(context.Background()); err != nil {
		t.Fatal(err)
	}
	o, steps := w.Records(t, id)
	if o.Status != order.StatusError || steps[1].ProcessState != order.Error || steps[1].FailureCount != 1 {
		t.Fatalf("after the timeout: %s %s, want Error in the review", o.Status, testenv.Describe(testenv.States(steps)))
	}
	if a := w.Alerts.Await(t, id, 10*time.Second); a.Kind != order.AlertStepTimedOut || !strings.Contains(a.Reason, `no event "review"`) {
		t.Errorf("alert %+v, want StepTimedOut saying which event did not come", a)
	}
	c := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now)
	if _, err := c.Redrive(context.Background(), id, ""); err != nil {
		t.Fatal(err)
	}
	resp, err := w.Scheduler("s1").HandleStream(context.Background(), w.StreamEvent(t, id))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleStream: %+v, %v", resp, err)
	}
	o, steps = w.Records(t, id)
	if want := w.Clock.Now().Truncate(time.Millisecond).Add(time.Hour); o.Status != order.StatusWaiting || steps[1].ProcessState != order.Waiting ||
		steps[1].Attempt != 2 || !steps[1].CompleteBy.Equal(want) {
		t.Fatalf("after the redrive: %s %+v, want Waiting on attempt 2 until %s", o.Status, steps[1], want)
	}
	if o, err = c.SendEvent(context.Background(), caller, false, id, ordertest.EventReview, json.RawMessage(`{"decision":"approve"}`)); err != nil ||
		o.Status != order.StatusProcessing {
		t.Errorf("the event after the redrive: %s, %v; want Processing", o.Status, err)
	}
}
