package ops_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/actor/control"
	"orderly/internal/actor/scheduler"
	"orderly/internal/adapter/dynamo"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

var (
	timing    = order.Timing{Allowance: 10 * time.Second, MaxAllowance: 40 * time.Second, FailureThreshold: 3, ClaimWithin: 5 * time.Second}
	someOrder = ordertest.Submission{CustomerID: "c-1", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}
)

func world(t *testing.T) (*testenv.World, *ops.Stage) {
	t.Helper()
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	return w, ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
}

func reply(t *testing.T, s *scheduler.Service, r order.StepReply) {
	t.Helper()
	resp, err := s.HandleReplies(context.Background(), testenv.ReplyEvent(r))
	if err != nil || len(resp.BatchItemFailures) > 0 {
		t.Fatalf("HandleReplies: %+v, %v", resp, err)
	}
}

// An operator finds an order in Error, reads it and its history, and
// redrives it; the history names the operator.
func TestShowHistoryAndRedrive(t *testing.T) {
	w, stage := world(t)
	s := w.Scheduler("s1")
	id := w.Submit(t, someOrder)
	ok := func(step string) order.StepReply {
		return order.StepReply{OrderID: id, Step: step, Attempt: 1, Outcome: order.OutcomeSucceeded}
	}
	reply(t, s, ok(ordertest.StepReserveInventory))
	reply(t, s, ok(ordertest.StepChargePayment))
	reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepArrangeShipping, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "no such address"})
	// The first undo (of the payment) is refused for good: Error.
	reply(t, s, order.StepReply{OrderID: id, Step: ordertest.StepChargePayment, Undo: true, Record: 3, Attempt: 1, Outcome: order.OutcomeFailed, Reason: "refund refused"})

	v, err := stage.Show(context.Background(), id)
	if err != nil || v.Status != order.StatusError || len(v.Steps) != 5 || v.Steps[3].State != string(order.Error) {
		t.Fatalf("show: %+v, %v; want Error at the payment's undo", v, err)
	}
	// It is listed in Error, with the undo that stopped it; another
	// order, in flight, is not.
	other := w.Submit(t, someOrder)
	ls, err := stage.InError(context.Background(), 100)
	if err != nil || len(ls) != 1 || ls[0].OrderID != id || ls[0].Step != ordertest.StepChargePayment || !ls[0].Undo || ls[0].State != string(order.Error) ||
		!ls[0].CompleteBy.IsZero() || ls[0].Late != 0 { // in Error, no deadline is watched
		t.Fatalf("list -status Error: %+v, %v; want %s's payment undo only (not %s)", ls, err, id, other)
	}
	o, err := stage.Redrive(context.Background(), id, "")
	if err != nil || o.Status != order.StatusCompensating {
		t.Fatalf("redrive: %s, %v; want Compensating", o.Status, err)
	}
	if _, err := stage.Redrive(context.Background(), id, ""); err == nil {
		t.Error("a second redrive of an order no longer in Error succeeded")
	}
	if ls, err := stage.InError(context.Background(), 100); err != nil || len(ls) != 0 {
		t.Errorf("after the redrive, listed in Error: %+v, %v", ls, err)
	}
	// The write is stamped with the operator as its actor, which the
	// recorder copies into the history.
	item, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(w.Stack.Catalog.Orders.Name),
		Key: map[string]dbtypes.AttributeValue{resources.AttrOrderID: &dbtypes.AttributeValueMemberS{Value: id}}})
	if by, _ := item.Item["By"].(*dbtypes.AttributeValueMemberS); err != nil || by == nil || by.Value != ops.ByOperatorRedrive {
		t.Errorf("the redrive's write is stamped %v, want %q", item.Item["By"], ops.ByOperatorRedrive)
	}
	// The history is read from the stage's history table.
	want := []order.HistoryEntry{{At: time.Now().UTC().Truncate(time.Millisecond), Record: -1, Event: "status", From: "Error", To: "Compensating", By: ops.ByOperatorRedrive}}
	if err := dynamo.NewHistory(w.Clients.DynamoDB, w.Stack.Catalog.History.Name).Record(context.Background(), id, "1", want, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	status, ts, err := stage.History(context.Background(), id)
	if err != nil || len(ts) != 1 || !ts[0].At.Equal(want[0].At) || ts[0].By != want[0].By || status != order.StatusCompensating {
		t.Errorf("history %s %+v, %v; want Compensating %+v", status, ts, err, want)
	}
}

// An operator cancels an order for its client; another order is not
// touched.
func TestCancelForTheClient(t *testing.T) {
	w, stage := world(t)
	id := w.Submit(t, someOrder) // step 1 in flight
	o, err := stage.Cancel(context.Background(), id)
	if err != nil || o.Status != order.StatusCancelling {
		t.Fatalf("cancel: %s, %v; want Cancelling", o.Status, err)
	}
	if _, err := stage.Cancel(context.Background(), "NOSUCHORDER0000000000000000"); err == nil {
		t.Error("cancel of an order that does not exist succeeded")
	}
}

// Dead letters are listed with their depth and moved back to their queue;
// a dry run moves nothing.
func TestDeadLetters(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	q := w.Stack.Catalog.RequestQueues[ordertest.AgentPayment]
	dlq, err := w.Clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.DeadLetterName)})
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b", "c"} {
		if _, err := w.Clients.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: dlq.QueueUrl, MessageBody: aws.String(body),
			MessageAttributes: map[string]sqstypes.MessageAttributeValue{"kind": {DataType: aws.String("String"), StringValue: aws.String(body)}}}); err != nil {
			t.Fatal(err)
		}
	}
	qs, err := stage.DeadLetters(ctx)
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	got := map[string]int{}
	for _, d := range qs {
		got[d.Name] = d.Messages
		if strings.HasSuffix(d.Name, "stream-failures") {
			t.Errorf("listed %s, which only a deployed stack has", d.Name)
		}
	}
	if got[q.DeadLetterName] != 3 || len(qs) != 4 {
		t.Fatalf("dead-letter queues %v, want 4 with 3 in %s", got, q.DeadLetterName)
	}
	// Showing them leaves them where they are.
	letters, err := stage.PeekDeadLetters(ctx, q.DeadLetterName, 10)
	var shown []string
	for _, l := range letters {
		shown = append(shown, l.Body)
		if l.Sent.IsZero() || l.Receives < 1 || l.ID == "" {
			t.Errorf("letter %+v lacks its id, time or receive count", l)
		}
	}
	slices.Sort(shown)
	if err != nil || !slices.Equal(shown, []string{"a", "b", "c"}) {
		t.Fatalf("show: %v, %v; want a, b, c", shown, err)
	}
	if _, err := stage.PeekDeadLetters(ctx, q.Name, 10); err == nil {
		t.Error("showing a queue that is not a dead-letter queue succeeded")
	}
	if m, err := stage.RedriveDeadLetters(ctx, q.DeadLetterName, 10, true); err != nil || m.Moved != 3 || !m.DryRun {
		t.Fatalf("dry run: %+v, %v; want 3 counted", m, err)
	}
	if m, err := stage.RedriveDeadLetters(ctx, q.DeadLetterName, 2, false); err != nil || m.Moved != 2 {
		t.Fatalf("redrive -max 2: %+v, %v", m, err)
	}
	if m, err := stage.RedriveDeadLetters(ctx, q.DeadLetterName, 10, false); err != nil || m.Moved != 1 {
		t.Fatalf("redrive the rest: %+v, %v; want the last one", m, err)
	}
	src, _ := w.Clients.SQS.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
	var bodies []string
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		out, err := w.Clients.SQS.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{QueueUrl: src.QueueUrl, MaxNumberOfMessages: 10,
			MessageAttributeNames: []string{"All"}, WaitTimeSeconds: 1})
		if err != nil {
			return false, err.Error()
		}
		for _, m := range out.Messages {
			if m.MessageAttributes["kind"].StringValue == nil || *m.MessageAttributes["kind"].StringValue != aws.ToString(m.Body) {
				t.Errorf("message %s lost its attributes: %v", aws.ToString(m.Body), m.MessageAttributes)
			}
			bodies = append(bodies, aws.ToString(m.Body))
		}
		return len(bodies) >= 3, strings.Join(bodies, ",")
	})
	// A send the SDK resent after a busy moto lost its answer may queue a
	// body twice (SQS delivers at least once); each must arrive.
	slices.Sort(bodies)
	if got := slices.Compact(slices.Clone(bodies)); !slices.Equal(got, []string{"a", "b", "c"}) {
		t.Errorf("source queue got %v, want a, b and c", bodies)
	}
	if _, err := stage.RedriveDeadLetters(ctx, q.Name, 10, false); err == nil {
		t.Error("a redrive of a queue that is not a dead-letter queue succeeded")
	}
}

// Orders in flight are listed from the due index; with -late, only those
// whose deadline passed at least that long ago.
func TestInFlight(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	a, b := w.Submit(t, someOrder), w.Submit(t, someOrder)
	ids := func(ls []ops.Listed) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.OrderID)
		}
		slices.Sort(out)
		return out
	}
	want := []string{a, b}
	slices.Sort(want)
	tests := []struct {
		name  string
		after time.Duration // the clock moved on by
		late  time.Duration
		want  []string
	}{
		{"every order in flight", 0, 0, want},
		{"none late yet", 0, time.Minute, nil},
		{"both late by a minute and more", timing.Allowance + 2*time.Minute, time.Minute, want},
		{"not late by an hour", timing.Allowance + 2*time.Minute, time.Hour, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := time.Now().Add(tt.after)
			ls, err := stage.WithClock(func() time.Time { return now }).InFlight(ctx, tt.late, 100)
			if err != nil {
				t.Fatal(err)
			}
			if got := ids(ls); !slices.Equal(got, tt.want) {
				t.Errorf("listed %v, want %v", got, tt.want)
			}
			for _, l := range ls {
				if l.Step != ordertest.StepReserveInventory || l.State != string(order.Processing) || (tt.late > 0 && l.Late < tt.late) {
					t.Errorf("listed %+v", l)
				}
			}
		})
	}
	if ls, err := stage.InFlight(ctx, 0, 1); err != nil || len(ls) != 1 {
		t.Errorf("-max 1: %d listed, %v", len(ls), err)
	}
}

// Orders are listed by status from the indexes: the statuses in flight
// from the due index, Error from the error index; an ended status is
// refused rather than scanned for.
func TestInStatus(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	pending := w.Submit(t, someOrder)
	cancelled := w.Submit(t, someOrder)
	if _, err := stage.Cancel(ctx, cancelled); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		status order.Status
		want   []string
	}{
		{order.StatusPending, []string{pending}},
		{order.StatusCancelling, []string{cancelled}},
		{order.StatusProcessing, nil},
		{order.StatusCompensating, nil},
		{order.StatusError, nil},
	} {
		ls, err := stage.InStatus(ctx, tt.status, 100)
		var got []string
		for _, l := range ls {
			got = append(got, l.OrderID)
			if l.Status != tt.status {
				t.Errorf("%s: listed %+v", tt.status, l)
			}
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, %v; want %v", tt.status, got, err, tt.want)
		}
	}
	if _, err := stage.InStatus(ctx, order.StatusProcessed, 100); !errors.Is(err, ops.ErrNotListed) {
		t.Errorf("Processed: %v, want ErrNotListed", err)
	}
}

// A waiting order is listed as Waiting, in flight and by its status, from
// the due index; shown with what it waits for and until when; and
// cancelled at once for its client, nothing being in flight.
func TestAWaitingOrder(t *testing.T) {
	w, _ := world(t)
	ctx := context.Background()
	pending := w.Submit(t, someOrder)
	w.Run(t, ordertest.Timed(w.Workflow, 0, time.Hour))
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	waiting := w.Submit(t, someOrder)
	ids := func(ls []ops.Listed) []string {
		var out []string
		for _, l := range ls {
			out = append(out, l.OrderID)
		}
		return out
	}
	for _, tt := range []struct {
		status order.Status
		want   []string
	}{
		{order.StatusWaiting, []string{waiting}},
		{order.StatusPending, []string{pending}},
	} {
		ls, err := stage.InStatus(ctx, tt.status, 100)
		if got := ids(ls); err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, %v; want %v", tt.status, got, err, tt.want)
		}
		for _, l := range ls {
			if l.Status != tt.status {
				t.Errorf("%s: listed %+v", tt.status, l)
			}
		}
	}
	flying, err := stage.InFlight(ctx, 0, 100)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range flying {
		if l.OrderID == waiting && (l.Status != order.StatusWaiting || l.State != string(order.Waiting) || l.Step != ordertest.StepCoolOff || l.Late != 0) {
			t.Errorf("in flight: %+v, want it Waiting at %s, not late", l, ordertest.StepCoolOff)
		}
	}
	v, err := stage.Show(ctx, waiting)
	if err != nil {
		t.Fatal(err)
	}
	if wt := v.Steps[0].Waiting; v.Status != order.StatusWaiting || wt == nil || wt.For != order.WaitTimer ||
		wt.Since.IsZero() || !wt.Until.Equal(wt.Since.Add(time.Hour)) || !wt.Until.Equal(*v.Steps[0].CompleteBy) {
		t.Errorf("shown: %s, step %+v waiting %+v; want a timer of an hour", v.Status, v.Steps[0], v.Steps[0].Waiting)
	}
	o, err := stage.Cancel(ctx, waiting)
	if err != nil || o.Status != order.StatusCancelled {
		t.Fatalf("cancel: %s, %v; want Cancelled at once: nothing ran, nothing to undo", o.Status, err)
	}
	if ls, err := stage.InStatus(ctx, order.StatusWaiting, 100); err != nil || len(ls) != 0 {
		t.Errorf("Waiting after the cancel: %v, %v; want none", ids(ls), err)
	}
}

// An operator's event moves on an order that waits for it, and its
// history names the operator's event; an event that cannot be taken gets
// the domain's error, naming what is wrong, and writes nothing.
func TestSendEvent(t *testing.T) {
	w, _ := world(t)
	ctx := context.Background()
	w.Run(t, ordertest.Reviewed(w.Workflow, 1, time.Hour))
	stage := ops.Open(w.Stack.Catalog.Stage, w.Clients.DynamoDB, w.Clients.SQS, w.Versions())
	id := w.Submit(t, someOrder)
	rec := w.Follow(id)
	rec.Record(t)
	approve := json.RawMessage(`{"decision":"approve","note":"checked by phone"}`)
	refused := func(t *testing.T, name string, data json.RawMessage, want error, says string) {
		t.Helper()
		before, _ := w.Records(t, id)
		_, err := stage.SendEvent(ctx, id, name, data)
		if !errors.Is(err, want) || !strings.Contains(fmt.Sprint(err), says) {
			t.Errorf("%s %s: %v, want %v saying %q", name, data, err, want, says)
		}
		if after, _ := w.Records(t, id); after.Status != before.Status || !after.UpdatedAt.Equal(before.UpdatedAt) {
			t.Errorf("%s %s: the order changed: %s at %s, was %s at %s", name, data, after.Status, after.UpdatedAt, before.Status, before.UpdatedAt)
		}
	}

	refused(t, ordertest.EventReview, approve, order.ErrNotAllowed, "not waiting for event review yet")
	reply(t, w.Scheduler("s1"), order.StepReply{OrderID: id, Step: ordertest.StepReserveInventory, Attempt: 1, Outcome: order.OutcomeSucceeded})
	rec.Record(t)
	if o, _ := w.Records(t, id); o.Status != order.StatusWaiting {
		t.Fatalf("after the first step: %s, want Waiting for the review", o.Status)
	}
	for _, tt := range []struct {
		name, event string
		data        json.RawMessage
		want        error
		says        string
	}{
		{"data its schema refuses", ordertest.EventReview, json.RawMessage(`{"decision":"maybe"}`), order.ErrInvalid, "decision"},
		{"data that is not an object", ordertest.EventReview, json.RawMessage(`["approve"]`), order.ErrInvalid, "JSON object"},
		{"a repeated key", ordertest.EventReview, json.RawMessage(`{"decision":"approve","decision":"reject"}`), order.ErrInvalid, "decision"},
		{"an event the workflow has not", "approval", approve, order.ErrInvalid, "approval"},
	} {
		t.Run(tt.name, func(t *testing.T) { refused(t, tt.event, tt.data, tt.want, tt.says) })
	}

	o, err := stage.SendEvent(ctx, id, ordertest.EventReview, approve)
	if err != nil || o.Status != order.StatusProcessing {
		t.Fatalf("send the review: %s, %v; want Processing", o.Status, err)
	}
	_, steps := w.Records(t, id)
	if steps[1].ProcessState != order.Processed || !order.SameJSON(steps[1].Result, approve) || steps[2].ProcessState != order.Pending {
		t.Errorf("after the review: %s, result %s; want the review Processed with its data, the next step Pending", testenv.Describe(testenv.States(steps)), steps[1].Result)
	}
	rec.Record(t)
	_, history, err := stage.History(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	var byEvent []order.HistoryEntry
	for _, e := range history {
		if e.By == control.ByOperatorEvent {
			byEvent = append(byEvent, e)
		}
	}
	if len(byEvent) == 0 || !slices.ContainsFunc(byEvent, func(e order.HistoryEntry) bool {
		return e.Event == "status" && e.From == string(order.StatusWaiting) && e.To == string(order.StatusProcessing)
	}) {
		t.Errorf("history: %+v; want Waiting → Processing by %q", history, control.ByOperatorEvent)
	}
}

// The alerts the recorder keeps are listed newest first, by kind, within
// the period asked for.
func TestAlerts(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	history := dynamo.NewHistory(w.Clients.DynamoDB, w.Stack.Catalog.History.Name)
	now := time.Now().UTC().Truncate(time.Millisecond)
	sent := []order.Alert{
		{Kind: order.AlertUndoFailed, OrderID: "A", Step: ordertest.StepChargePayment, Undo: true, Reason: "refund refused", At: now.Add(-time.Minute)},
		{Kind: order.AlertStepTimedOut, OrderID: "B", Step: ordertest.StepArrangeShipping, Attempt: 2, At: now.Add(-2 * time.Hour)},
		{Kind: order.AlertUndoFailed, OrderID: "C", Step: ordertest.StepReserveInventory, Undo: true, At: now.Add(-50 * time.Hour)}, // two days back
	}
	for i, a := range sent {
		tr := []order.HistoryEntry{{At: a.At, Record: 3, Event: "alert sent", Reason: string(a.Kind)}}
		if err := history.Record(ctx, a.OrderID, fmt.Sprint(i+1), tr, &a, time.Time{}); err != nil {
			t.Fatal(err)
		}
	}
	// A change with no alert is not listed.
	if err := history.Record(ctx, "A", "9", []order.HistoryEntry{{At: now, Record: -1, Event: "status", To: "Failed"}}, nil, time.Time{}); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		since time.Duration
		kind  order.AlertKind
		want  []string
	}{
		{time.Hour, "", []string{"A"}},
		{3 * time.Hour, "", []string{"A", "B"}},
		{72 * time.Hour, "", []string{"A", "B", "C"}},
		{72 * time.Hour, order.AlertUndoFailed, []string{"A", "C"}},
	} {
		got, err := stage.Alerts(ctx, now.Add(-tt.since), tt.kind, 100)
		var ids []string
		for _, a := range got {
			ids = append(ids, a.OrderID)
		}
		if err != nil || !slices.Equal(ids, tt.want) {
			t.Errorf("alerts since %s of kind %q: %v, %v; want %v", tt.since, tt.kind, ids, err, tt.want)
		}
	}
	got, err := stage.Alerts(ctx, now.Add(-time.Hour), "", 100)
	if err != nil || len(got) != 1 || !got[0].At.Equal(sent[0].At) || got[0].Reason != "refund refused" || !got[0].Undo {
		t.Errorf("the alert as listed: %+v, %v; want %+v", got, err, sent[0])
	}
}

// The orders that have not ended are counted per workflow version, from
// the indexes, with the versions this build has; an order of a version
// the build lacks is counted too.
func TestVersions(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	w.Submit(t, someOrder)
	w.Submit(t, someOrder)
	// An order a newer build submitted, under version 9.
	now := time.Now().UTC().Truncate(time.Millisecond)
	newer := order.Order{ID: order.NewID(), Version: "9", Status: order.StatusPending,
		RequestHash: "h", KeyNonce: order.NewKeyNonce(), Caller: testenv.Caller, CreatedAt: now, UpdatedAt: now}.WithInput(order.LegacyInput("c-1", someOrder.Lines, ""))
	if _, err := w.Store.CreateOrder(ctx, newer, w.Workflow.NewStates(newer.ID, "", now)); err != nil {
		t.Fatal(err)
	}
	use, err := stage.Versions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []ops.VersionUse{{Workflow: "order", Version: "1", InFlight: 2, Known: true, Latest: true}, {Workflow: "order", Version: "9", InFlight: 1}}
	if !slices.Equal(use, want) {
		t.Errorf("versions %+v, want %+v", use, want)
	}
}

// An order parked under a version the build lacks is moved onto one it
// has when its steps fit, and only then.
func TestMove(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	now := time.Now().UTC().Truncate(time.Millisecond)
	newer := func(rename string) string {
		o := order.Order{ID: order.NewID(), Version: "9", Status: order.StatusPending,
			RequestHash: "h", KeyNonce: order.NewKeyNonce(), Caller: testenv.Caller, CreatedAt: now, UpdatedAt: now}.WithInput(order.LegacyInput("c-1", someOrder.Lines, ""))
		steps := w.Workflow.NewStates(o.ID, "", now)
		if rename != "" {
			steps[0].Step = rename
		}
		if _, err := w.Store.CreateOrder(ctx, o, steps); err != nil {
			t.Fatal(err)
		}
		return o.ID
	}
	fits, renamed, current := newer(""), newer("reserve-stock"), w.Submit(t, someOrder)
	for _, tt := range []struct {
		name, id, to string
		ok           bool
	}{
		{"a version the build lacks", fits, "7", false},
		{"an order whose first step version 1 does not have", renamed, "1", false},
		{"an order of a version the build has", current, "1", false},
		{"an order whose steps fit version 1", fits, "1", true},
	} {
		o, err := stage.Move(ctx, tt.id, tt.to)
		if tt.ok != (err == nil) || (!tt.ok && !errors.Is(err, order.ErrNotAllowed)) {
			t.Errorf("%s: %v; want ok %t (else not allowed)", tt.name, err, tt.ok)
			continue
		}
		if tt.ok && o.Version != tt.to {
			t.Errorf("%s: moved to version %q, want %s", tt.name, o.Version, tt.to)
		}
	}
	// Under version 1 now, the order is the Supervisor's to look at again.
	st := w.Step(t, fits, ordertest.StepReserveInventory)
	if st.Version != "1" || st.DueAt.Before(now) {
		t.Errorf("moved order: version %s, due %s; want 1, due now", st.Version, st.DueAt)
	}
	if ls, err := stage.InStatus(ctx, order.StatusPending, 100); err != nil || !slices.ContainsFunc(ls, func(l ops.Listed) bool { return l.OrderID == fits && l.Version == "1" }) {
		t.Errorf("the moved order is not listed under version 1: %+v, %v", ls, err)
	}
}

// An operator finds yesterday's orders of one customer, newest first,
// ended ones with them, and no more than asked for.
func TestSearch(t *testing.T) {
	w, stage := world(t)
	ctx := context.Background()
	yesterday, from := seedYesterday(t, w, stage, 4)
	q := order.Query{CustomerID: "c-1", CreatedFrom: from, CreatedTo: from.Add(24 * time.Hour)}
	found, more, err := stage.Search(ctx, q, 100)
	var got []string
	for _, o := range found {
		got = append(got, o.ID)
	}
	slices.Reverse(yesterday) // newest first
	if err != nil || more || !slices.Equal(got, yesterday) {
		t.Fatalf("yesterday's orders of c-1: %v, %v; want %v", got, err, yesterday)
	}
	if found, more, err := stage.Search(ctx, q, 3); err != nil || len(found) != 3 || found[0].ID != yesterday[0] || !more {
		t.Errorf("at most 3: %+v, more %v, %v; want the newest 3, and more", found, more, err)
	}
}

// seedYesterday submits, yesterday from 06:00 one an hour, n orders of
// customer c-1 (cancelling the first) and n of other customers, then one
// of c-1 today. It returns c-1's of yesterday, oldest first, and
// yesterday's midnight (UTC).
func seedYesterday(t *testing.T, w *testenv.World, stage *ops.Stage, n int) ([]string, time.Time) {
	t.Helper()
	day := w.Clock.Now().UTC().Truncate(24 * time.Hour)
	w.Clock.Advance(day.Add(30 * time.Hour).Sub(w.Clock.Now())) // yesterday, 06:00, if today is day+1
	var yesterday []string
	for i := range n {
		yesterday = append(yesterday, w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: someOrder.Lines}))
		w.Submit(t, ordertest.Submission{CustomerID: fmt.Sprintf("other-%d", i), Lines: someOrder.Lines})
		w.Clock.Advance(time.Hour)
	}
	if _, err := stage.Cancel(context.Background(), yesterday[0]); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(24 * time.Hour) // today
	w.Submit(t, ordertest.Submission{CustomerID: "c-1", Lines: someOrder.Lines})
	return yesterday, day.Add(24 * time.Hour)
}
