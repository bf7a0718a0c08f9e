package stack_test

import (
	"context"
	"errors"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/measure/callrecord"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// operatorTools names the operators' CLI and console as the check knows
// their calls.
const operatorTools = "operator-tools"

// The operators' tools (the orderly CLI and its console, package ops) work
// on a stage's tables and queues with the operator's own credentials.
// Every call they make, recorded while they run each command against a
// running stage (listings, searches, show, history, alerts, versions, cancel,
// redrive, pause and resume, move, a bulk redrive, and the dead-letter queues' list, show and
// redrive), must
// be allowed by the stack's OperatorToolsPolicy, and every grant of it used.
func TestOperatorToolsPolicyAllowsExactlyTheToolsCalls(t *testing.T) {
	if testing.Short() {
		t.Skip("drives the whole engine")
	}
	// The running order hangs at its shipping for longer than the
	// commands take on a busy machine, so that it is still running, and
	// may be cancelled, when cancel comes (with the fast timing's 1 s
	// allowance it had failed for good by then).
	e := enginetest.Start(t, func(cfg *engine.Config) {
		cfg.Timing.Allowance, cfg.Timing.MaxAllowance = 30*time.Second, time.Minute
	})
	stuck := submitOrder(t, e, "TEST-PAYMENT-PERMANENT", "TEST-INVENTORY-UNDO-PERMANENT-1")
	// Another, for a bulk redrive once the first is redriven alone.
	stuckToo := submitOrder(t, e, "TEST-PAYMENT-PERMANENT", "TEST-INVENTORY-UNDO-PERMANENT-1")
	running := submitOrder(t, e, "TEST-SHIPPING-HANG")
	awaitOrder(t, e, stuck, func(v api.OrderView) bool { return v.Status == order.StatusError })
	awaitOrder(t, e, stuckToo, func(v api.OrderView) bool { return v.Status == order.StatusError })
	awaitOrder(t, e, running, func(v api.OrderView) bool { return onStep(v, ordertest.StepArrangeShipping) })
	// A message in every dead-letter queue, for dlq show and dlq redrive.
	plain := e.Clients().SQS
	var dlqs []string
	for _, q := range append(slices.Collect(maps.Values(e.Stack.Catalog.RequestQueues)), e.Stack.Catalog.ResponseQueue) {
		dlqs = append(dlqs, q.DeadLetterName)
	}
	// The stream's and the schedule's failure queues are the stack's only:
	// made here as the stack names them.
	failures := []string{"orderly-" + e.Stack.Catalog.Stage + "-stream-failures", "orderly-" + e.Stack.Catalog.Stage + "-schedule-failures"}
	for _, name := range append(slices.Clone(dlqs), failures...) {
		out, err := plain.CreateQueue(context.Background(), &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := plain.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: out.QueueUrl, MessageBody: aws.String("{}")}); err != nil {
			t.Fatal(err)
		}
	}

	rec := callrecord.New()
	cfg := testenv.AWS(t).Copy()
	cfg.APIOptions = append(slices.Clone(cfg.APIOptions), rec.For(operatorTools))
	stage := ops.Open(e.Stack.Catalog.Stage, dynamodb.NewFromConfig(cfg), sqs.NewFromConfig(cfg), ordertest.Built(order.DefaultTiming))
	ctx := context.Background()
	must := func(what string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	_, err := stage.InFlight(ctx, 0, 100)
	must("list", err)
	_, _, err = stage.Search(ctx, order.Query{Status: order.StatusProcessing}, 100)
	must("search --status Processing", err)
	_, _, err = stage.Search(ctx, order.Query{EndedFrom: time.Now().Add(-time.Hour)}, 100)
	must("search --ended-from 1h", err)
	_, err = stage.Count(ctx, order.Query{CreatedFrom: time.Now().Add(-time.Hour)}, 0)
	must("counts --created-from 1h", err)
	_, err = stage.Count(ctx, order.Query{EndedFrom: time.Now().Add(-time.Hour)}, 0)
	must("counts --ended-from 1h", err)
	_, err = stage.InStatus(ctx, order.StatusProcessing, 100)
	must("list --status Processing", err)
	_, err = stage.InError(ctx, 100)
	must("list --status Error", err)
	_, err = stage.Versions(ctx)
	must("versions", err)
	_, err = stage.Show(ctx, stuck)
	must("show", err)
	_, _, err = stage.History(ctx, stuck)
	must("history", err)
	_, err = stage.Alerts(ctx, time.Now().Add(-time.Hour), "", 100)
	must("alerts", err)
	_, err = stage.Cancel(ctx, running)
	must("cancel", err)
	_, err = stage.Redrive(ctx, stuck, order.RedriveCompensate)
	must("redrive", err)
	// pause, pauses, pauses --history, resume: the pause's item is in
	// the orders table, its history in the history table.
	_, err = stage.Pause(ctx, order.PauseRequest{Kind: order.PauseService, Name: ordertest.AgentPayment, For: time.Hour, Reason: "maintenance", By: "operator"})
	must("pause", err)
	_, err = stage.Pauses(ctx)
	must("pauses", err)
	_, err = stage.PauseHistory(ctx, order.PauseService, ordertest.AgentPayment)
	must("pauses --history", err)
	_, err = stage.Resume(ctx, order.PauseService, ordertest.AgentPayment, "operator", "")
	must("resume", err)
	// bulk redrive --status Error --yes: its plan (a search, each order
	// read) and its run (each order redriven as above).
	inError := ops.BulkFilter{Query: order.Query{Status: order.StatusError}}
	plan, err := stage.PlanBulk(ctx, inError, ops.DefaultBulkMax)
	must("bulk redrive (plan)", err)
	if len(plan) != 1 || plan[0].OrderID != stuckToo {
		t.Fatalf("bulk plan %+v, want %s alone", plan, stuckToo)
	}
	bulk := ops.BulkAction{Kind: ops.BulkRedrive, Redrive: order.RedriveCompensate}
	journal, err := ops.OpenJournal(filepath.Join(t.TempDir(), "bulk.jsonl"), stage.Name, bulk, inError.Key())
	must("bulk journal", err)
	defer journal.Close()
	if rep, err := stage.RunBulk(ctx, plan, bulk, journal, ops.BulkOptions{}); err != nil || rep.Done != 1 {
		t.Fatalf("bulk redrive: %+v, %v; want it done", rep, err)
	}
	// The order runs a version this build has: the move is refused after
	// reading it (its write is the UpdateItem of cancel and redrive).
	if _, err := stage.Move(ctx, running, "1"); !errors.Is(err, order.ErrNotAllowed) {
		t.Fatalf("move: %v, want it refused", err)
	}
	_, err = stage.DeadLetters(ctx)
	must("dlq list", err)
	for _, name := range append(slices.Clone(dlqs), failures...) {
		letters, err := stage.PeekDeadLetters(ctx, name, 10)
		must("dlq show "+name, err)
		if len(letters) != 1 {
			t.Fatalf("dlq show %s: %d letters, want the one sent", name, len(letters))
		}
	}
	for _, name := range dlqs {
		_, err = stage.RedriveDeadLetters(ctx, name, 10, false)
		must("dlq redrive "+name, err)
	}

	calls := asSynthesized(rec.Calls(), e.Stack.Catalog.Stage)
	checker := newChecker(t, template)
	if err := checker.Principal(operatorTools, "OperatorToolsPolicy"); err != nil {
		t.Fatal(err)
	}
	rep := checker.Check(calls, nil)
	for _, m := range rep.Missing {
		t.Errorf("%s", m)
	}
	for _, g := range rep.Unused {
		t.Errorf("no call of the operators' tools uses the grant %s: remove it", g)
	}
	if t.Failed() {
		t.Logf("recorded calls:\n%s", strings.Join(mapStrings(calls), "\n"))
	}
}
