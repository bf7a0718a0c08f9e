package api_test

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/testenv"
)

// A paused workflow holds or refuses new orders, as its operator chose.
// Held: the order is accepted (202, Pending), its first step neither
// claimed nor announced nor sent, and the Supervisor keeps it so while
// the pause lasts, however long; after the resume the Supervisor's next
// look releases it, a Scheduler claims it from the stream and it runs.
// Refused: 503 with Retry-After at the pause's stated end, and nothing
// written.
func TestAPausedWorkflowHoldsOrRefusesNewOrders(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	w := testenv.NewWorld(t, timing)
	ctx := context.Background()
	first := w.Workflow.Steps[0]
	pause := func(submissions order.Submissions, d time.Duration) {
		t.Helper()
		p, err := order.PlanPause(order.PauseRequest{Kind: order.PauseWorkflow, Name: w.Workflow.Name, For: d, Reason: "stock count", By: "ops",
			Submissions: submissions}, w.Versions(), w.Clock.Now())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Store.Pause(ctx, p); err != nil {
			t.Fatal(err)
		}
		w.Clock.Advance(6 * time.Second) // past the instances' cached reads
	}
	pause(order.HoldSubmissions, time.Hour)

	resp := post(t, w, validBody, nil)
	if resp.StatusCode != http.StatusAccepted || !strings.Contains(resp.Body, `"status":"Pending"`) {
		t.Fatalf("submit to a held workflow: %d %s, want 202 Pending", resp.StatusCode, resp.Body)
	}
	id := orderID(t, resp)
	if reqs := w.Requests(t, first.Agent); len(reqs) != 0 {
		t.Fatalf("a held order's first request was sent: %+v", reqs)
	}
	item := rawItem(t, w, id)
	if _, announced := item[resources.AttrUnclaimed]; announced || item["Held"] == nil {
		t.Fatalf("held order's item: announced %t, Held %v; want Held and no Scheduler told", announced, item["Held"])
	}
	st := w.Step(t, id, first.Name)
	heldAttempt := st.Attempt
	if st.ProcessState != order.Pending || !st.Held || st.LockedBy != "" {
		t.Fatalf("held order's first step: %s, held %t, claimed by %q", st.ProcessState, st.Held, st.LockedBy)
	}

	// However long the pause lasts, the order is kept, not nudged nor
	// given up.
	for range 12 {
		w.Clock.Advance(order.HeldRecheck + time.Second)
		if _, err := w.Supervisor().Run(ctx); err != nil {
			t.Fatal(err)
		}
	}
	st = w.Step(t, id, first.Name)
	if st.ProcessState != order.Pending || !st.Held || st.Nudges != 0 || !strings.Contains(st.LastError, "held") {
		t.Fatalf("after 12 looks while paused: %s, held %t, nudges %d, %q; want it held", st.ProcessState, st.Held, st.Nudges, st.LastError)
	}

	// Refused: 503 and Retry-After, nothing written.
	pause(order.RefuseSubmissions, 30*time.Minute)
	before := items(t, w)
	resp = post(t, w, validBody, map[string]string{"Idempotency-Key": "refused-1"})
	wait, _ := strconv.Atoi(resp.Headers["Retry-After"])
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(resp.Body, `"error":"paused"`) || wait < 29*60 || wait > 30*60 {
		t.Fatalf("submit to a refusing workflow: %d %s, Retry-After %q; want 503 paused, about 30 minutes", resp.StatusCode, resp.Body, resp.Headers["Retry-After"])
	}
	if after := items(t, w); after != before {
		t.Fatalf("a refused submission wrote: %d items, were %d", after, before)
	}

	// Resumed: the next look releases it, and a Scheduler claims it.
	if _, err := w.Store.Resume(ctx, order.PauseWorkflow, w.Workflow.Name, "ops", ""); err != nil {
		t.Fatal(err)
	}
	w.Clock.Advance(order.HeldRecheck + time.Second)
	if _, err := w.Supervisor().Run(ctx); err != nil {
		t.Fatal(err)
	}
	item = rawItem(t, w, id)
	if _, announced := item[resources.AttrUnclaimed]; !announced || item["Held"] != nil {
		t.Fatalf("after the resume: announced %t, Held %v; want announced, the hold cleared", announced, item["Held"])
	}
	resp2, err := w.Scheduler("s1").HandleStream(ctx, w.StreamEvent(t, id))
	if err != nil || len(resp2.BatchItemFailures) > 0 {
		t.Fatalf("claim from the stream: %+v, %v", resp2, err)
	}
	if st := w.Step(t, id, first.Name); st.ProcessState != order.Processing || st.Attempt != heldAttempt+1 {
		t.Fatalf("after the release: %s attempt %d, want claimed", st.ProcessState, st.Attempt)
	}
	if reqs := w.Requests(t, first.Agent); len(reqs) != 1 || reqs[0].OrderID != id {
		t.Fatalf("requests after the release: %+v, want the order's first", reqs)
	}
}

// rawItem reads an order's item as stored.
func rawItem(t *testing.T, w *testenv.World, id string) map[string]types.AttributeValue {
	t.Helper()
	out, err := w.Clients.DynamoDB.GetItem(context.Background(), &dynamodb.GetItemInput{TableName: aws.String(w.Stack.Catalog.Orders.Name),
		ConsistentRead: aws.Bool(true), Key: map[string]types.AttributeValue{resources.AttrOrderID: &types.AttributeValueMemberS{Value: id}}})
	if err != nil || out.Item == nil {
		t.Fatalf("read order %s: %v", id, err)
	}
	return out.Item
}
