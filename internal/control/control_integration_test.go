package control_test

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/control"
	"orderly/internal/dynamo"
	"orderly/internal/ops"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/scheduler"
	"orderly/internal/testenv"
)

var (
	timing    = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}
	someOrder = order.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 2}}}
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
			reply(t, s, ok(id, order.StepReserveInventory, 1)) // step 2 in flight
			if tt.cancelFirst {
				if o, err := c.Cancel(context.Background(), caller, id); err != nil || o.Status != order.StatusCancelling {
					t.Fatalf("cancel: %s, %v; want Cancelling", o.Status, err)
				}
				reply(t, s, ok(id, order.StepChargePayment, 1))
			} else {
				reply(t, s, ok(id, order.StepChargePayment, 1)) // step 3 now in flight
				if _, err := c.Cancel(context.Background(), caller, id); err != nil {
					t.Fatalf("cancel: %v", err)
				}
				reply(t, s, ok(id, order.StepArrangeShipping, 1))
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

func (r *racingStore) StartUndo(ctx context.Context, u dynamo.Undoing, now time.Time) (order.Order, order.StepState, error) {
	if !r.done {
		r.done = true
		r.claim()
	}
	return r.Store.StartUndo(ctx, u, now)
}

// A cancel that finds the step waiting for a claim, while a Scheduler
// claims it: the cancel's write fails its condition, the cancel reads the
// order again and records the cancel on the step now in flight.
func TestCancelRacingAClaim(t *testing.T) {
	w := world(t)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	// Attempt 1 times out and is retried: the step waits for a claim.
	w.Requests(t, order.AgentInventory) // an agent took it and went silent
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
	reply(t, s, ok(id, order.StepReserveInventory, 2))
	reply(t, s, undid(id, order.StepReserveInventory, 3))
	o, steps = w.Records(t, id)
	if want := []string{"reserve-inventory:Undone", "charge-payment:NotStarted", "arrange-shipping:NotStarted",
		"undo reserve-inventory:Processed"}; o.Status != order.StatusCancelled || !slices.Equal(testenv.States(steps), want) {
		t.Errorf("got %s %v, want Cancelled %v", o.Status, testenv.States(steps), want)
	}
}

// A cancel of a step nobody claimed yet ends it at once: it never runs.
func TestCancelOfAnUnclaimedFirstStepEndsAtOnce(t *testing.T) {
	w := world(t)
	id := w.Submit(t, someOrder)
	w.Requests(t, order.AgentInventory) // an agent took it and went silent
	_, steps := w.Records(t, id)
	w.Clock.Advance(steps[0].CompleteBy.Sub(w.Clock.Now()) + time.Second)
	if r, err := w.Supervisor().Run(context.Background()); err != nil || r.Retried != 1 {
		t.Fatalf("supervisor: %+v, %v; want one retry", r, err)
	}
	o, err := control.New(w.Store, w.Store, w.Versions(), w.Clock.Now).Cancel(context.Background(), caller, id)
	if err != nil || o.Status != order.StatusCancelled {
		t.Fatalf("cancel: %s, %v; want Cancelled at once", o.Status, err)
	}
	// The claim the stream would have made finds nothing to claim.
	if resp, err := w.Scheduler("s1").HandleStream(context.Background(), w.StreamEvent(t, id)); err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("stream: %+v, %v", resp, err)
	}
	if _, steps = w.Records(t, id); steps[0].ProcessState != order.Cancelled || steps[0].Attempt != 1 {
		t.Errorf("got %s on attempt %d, want Cancelled, never claimed again", steps[0].ProcessState, steps[0].Attempt)
	}
	if reqs := w.Requests(t, order.AgentInventory); len(reqs) != 0 {
		t.Errorf("inventory requests %s, want none after the cancel", testenv.Describe(reqs))
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
			reply(t, s, ok(id, order.StepReserveInventory, 1))
			reply(t, s, ok(id, order.StepChargePayment, 1))
			reply(t, s, order.StepReply{OrderID: id, Step: order.StepArrangeShipping, Attempt: 1,
				Outcome: order.OutcomeFailed, Reason: "address undeliverable"})
			o, steps := w.Records(t, id)
			if o.Status != order.StatusError || steps[2].ProcessState != order.Error {
				t.Fatalf("before the redrive: %s %v, want Error at the failed step", o.Status, testenv.States(steps))
			}
			if _, err := c.Cancel(context.Background(), caller, id); !errors.Is(err, order.ErrNotAllowed) {
				t.Errorf("cancel of an order in Error: %v, want ErrNotAllowed", err)
			}
			inError := func() int {
				ls, err := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS).InError(context.Background(), 10)
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
				if st := w.Step(t, id, order.StepArrangeShipping); st.ProcessState != order.Processing || st.Attempt != 2 || st.FailureCount != 0 {
					t.Fatalf("after the claim: %s attempt %d failures %d, want Processing attempt 2 failures 0",
						st.ProcessState, st.Attempt, st.FailureCount)
				}
				reply(t, s, order.StepReply{OrderID: id, Step: order.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed}) // stale
				reply(t, s, ok(id, order.StepArrangeShipping, 2))
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
