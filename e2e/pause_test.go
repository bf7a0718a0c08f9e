package e2e

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// testPausedWorkflow pauses the checkout workflow with new orders
// refused, as `orderly pause workflow checkout --submissions refuse`
// writes it: the deployed submission function reads the pause and answers
// 503 paused with Retry-After through API Gateway, writing nothing; the
// recorder publishes the pause and its resume on the stack's bus; after
// the resume (within the functions' 5 s cache of it) orders are taken
// again. Run alone: nothing else submits checkout orders meanwhile.
func testPausedWorkflow(t *testing.T, d deployed) {
	ctx := context.Background()
	store := dynamo.NewStore(d.clients.DynamoDB, d.orders)
	now := time.Now().UTC().Truncate(time.Second)
	p := order.Pause{Kind: order.PauseWorkflow, Name: "checkout", By: "arn:aws:iam::000000000000:user/e2e", Reason: "stock count",
		Since: now, Until: now.Add(20 * time.Minute), Submissions: order.RefuseSubmissions}
	if _, err := store.Pause(ctx, p); err != nil {
		t.Fatal(err)
	}
	resumed := false
	defer func() {
		if !resumed {
			_, _ = store.Resume(ctx, order.PauseWorkflow, "checkout", "e2e", "test ended")
		}
	}()
	body := `{"customerId":"c-e2e","lines":[{"sku":"BOOK-1","quantity":1}],"amount":{"currency":"EUR","minorUnits":1250},` +
		`"shippingAddress":{"name":"Ada","line1":"12 Square","city":"London","postalCode":"SW1","country":"GB"},"paymentToken":"tok_e2e_0002"}`
	submit := func() (int, string, string) {
		req, err := http.NewRequest(http.MethodPost, d.api+"/workflows/checkout/orders", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Idempotency-Key", "e2e-paused-checkout")
		resp, err := (&http.Client{Transport: d.signed}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		got, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, resp.Header.Get("Retry-After"), string(got)
	}
	before := d.count(t)
	// An instance may hold the pause as it read it a moment ago: 5 s.
	var code int
	var retryAfter, got string
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, retryAfter, got = submit()
		return code == http.StatusServiceUnavailable, got
	})
	wait, _ := strconv.Atoi(retryAfter)
	if !strings.Contains(got, `"error":"paused"`) || wait < 60 || wait > 20*60 {
		t.Errorf("submit to the paused workflow: %d %s, Retry-After %q; want 503 paused, up to 20 minutes", code, got, retryAfter)
	}
	if after := d.count(t); after != before {
		t.Errorf("a refused submission wrote: orders went from %d to %d", before, after)
	}
	if _, err := store.Resume(ctx, order.PauseWorkflow, "checkout", "arn:aws:iam::000000000000:user/e2e", "counted"); err != nil {
		t.Fatal(err)
	}
	resumed = true
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		code, _, got = submit()
		return code == http.StatusAccepted, got
	})
	events := d.events.pauseEvents(t, []string{order.PausedEvent, order.ResumedEvent}, time.Minute)
	for _, e := range events {
		if e.Pause.Name != "checkout" || (e.Event == order.PausedEvent && e.Pause.By != p.By) {
			t.Errorf("pause event %+v: want checkout's, naming who paused", e)
		}
	}
}
