// Package e2e tests orderly as deployed: the CDK stack on LocalStack, its
// Lambdas run as host processes by orderly's executor plugin, reached only
// through the stack's API Gateway. `make test-localstack` deploys the stack,
// runs these tests and tears it down; they are skipped unless
// ORDERLY_LOCALSTACK_OUTPUTS names the deployed stack's outputs file.
package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/local/provision"
	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// deployed is the stack under test, read from its outputs.
type deployed struct {
	api   string // base URL of the REST API through LocalStack's gateway
	stage string
	// signed signs each request to the API with SigV4, with the standard
	// environment's credentials, as a client in AWS must (LocalStack
	// checks no signature).
	signed  http.RoundTripper
	clients provision.Clients
	alerts  *testenv.AlertInbox
	events  *eventInbox // a queue a rule on the stack's bus feeds
	orders  string      // the orders table
}

func stack(t *testing.T) deployed {
	t.Helper()
	file := os.Getenv("ORDERLY_LOCALSTACK_OUTPUTS")
	if file == "" {
		t.Skip("needs a stack deployed to LocalStack: make test-localstack")
	}
	// cdk deploy --outputs-file: {"Orderly-<stage>": {"ApiUrl": …, …}}.
	raw, err := os.ReadFile(file)
	var stacks map[string]map[string]string
	if err == nil {
		err = json.Unmarshal(raw, &stacks)
	}
	if err != nil || len(stacks) != 1 {
		t.Fatalf("stack outputs %s: %v (want one stack, got %d)", file, err, len(stacks))
	}
	var stage string
	var outputs map[string]string
	for name, out := range stacks {
		stage, outputs = strings.TrimPrefix(name, "Orderly-"), out
	}
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		t.Fatalf("AWS config: %v", err)
	}
	d := deployed{stage: stage, signed: simulator.SigV4(cfg, nil), clients: provision.NewClients(cfg)}
	d.api = gatewayURL(t, aws.ToString(cfg.BaseEndpoint), outputs["ApiUrl"])
	d.orders = resources.New(stage, ordertest.OrderWorkflow(order.DefaultTiming).Agents()).Orders.Name
	d.alerts = testenv.SubscribeAlerts(t, d.clients, outputs["AlertTopicArn"])
	d.events = &eventInbox{sqs: d.clients.Deliveries, url: testenv.BusQueue(t, d.clients, outputs["EventBusName"], resources.EventSource, resources.OperatorEventSource), seen: map[string][]order.StatusChange{}, ids: map[string]bool{}}
	return d
}

// gatewayURL turns the stack's ApiUrl (https://<api id>.execute-api.
// localhost.localstack.cloud:4566/<stage>/, a name that needs public DNS)
// into LocalStack's path form on its own endpoint.
func gatewayURL(t *testing.T, endpoint, apiURL string) string {
	t.Helper()
	u, err := url.Parse(apiURL)
	if err != nil || endpoint == "" {
		t.Fatalf("ApiUrl %q, endpoint %q: %v", apiURL, endpoint, err)
	}
	apiID, _, _ := strings.Cut(u.Host, ".")
	stage := strings.Trim(u.Path, "/")
	return fmt.Sprintf("%s/_aws/execute-api/%s/%s", strings.TrimSuffix(endpoint, "/"), apiID, stage)
}

func (d deployed) call(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	req, err := http.NewRequest(method, d.api+path, bytes.NewReader([]byte(body)))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := (&http.Client{Transport: d.signed}).Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	got, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, got
}

func (d deployed) submit(t *testing.T, skus ...string) string {
	t.Helper()
	lines := make([]order.Line, len(skus))
	for i, s := range skus {
		lines[i] = order.Line{SKU: s, Quantity: 1}
	}
	body, _ := json.Marshal(ordertest.Submission{CustomerID: "c-e2e", Lines: lines})
	code, got := d.call(t, http.MethodPost, "/orders", string(body))
	var out struct{ OrderID string }
	if code != http.StatusAccepted || json.Unmarshal(got, &out) != nil || out.OrderID == "" {
		t.Fatalf("POST /orders: %d %s", code, got)
	}
	return out.OrderID
}

// logHistory logs the order's history, one line per transition with its
// time since submission, so a slow or failed run shows where time went.
func (d deployed) logHistory(t *testing.T, id string) {
	t.Helper()
	code, got := d.call(t, http.MethodGet, "/ops/orders/"+id+"/history", "") // the operators' route names each writer
	var v api.HistoryView
	if code != http.StatusOK || json.Unmarshal(got, &v) != nil || len(v.History) == 0 {
		t.Logf("history of %s: %d %s", id, code, got)
		return
	}
	var b strings.Builder
	for _, tr := range v.History {
		fmt.Fprintf(&b, "\n  +%6.1fs record %2d %-18s %s>%s by %s", tr.At.Sub(v.History[0].At).Seconds(), tr.Record, tr.Event, tr.From, tr.To, tr.By)
	}
	t.Logf("history of %s (%s):%s", id, v.Status, b.String())
}

// await polls the order on the operators' route (which shows every
// record's attempt and result) until its status is one of want.
func (d deployed) await(t *testing.T, id string, timeout time.Duration, want ...order.Status) api.OrderView {
	t.Helper()
	var v api.OrderView
	testenv.Eventually(t, timeout, func() (bool, string) {
		code, got := d.call(t, http.MethodGet, "/ops/orders/"+id, "")
		if code != http.StatusOK || json.Unmarshal(got, &v) != nil {
			return false, fmt.Sprintf("GET: %d %s", code, got)
		}
		return slices.Contains(want, v.Status), string(got)
	})
	return v
}

// eventInbox reads the rule's queue for every test, keeping each order's
// status events for the test that waits on them (a message one test
// received and left would be hidden from the others until its visibility
// timeout).
type eventInbox struct {
	sqs  *sqs.Client
	url  string
	mu   sync.Mutex
	seen map[string][]order.StatusChange
	// pauses are the pauses' events taken (detail-type "Pause …").
	pauses []order.PauseChange
	// ids are the events taken, by eventId: delivery is at least once, and
	// a consumer drops a duplicate on it, as docs/api.md tells clients to.
	ids map[string]bool
}

// take receives the events waiting in the inbox's queue and keeps each
// once: an order's status events by order, pauses' events apart.
func (in *eventInbox) take(t *testing.T) error {
	t.Helper()
	out, err := in.sqs.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{QueueUrl: aws.String(in.url),
		MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
	if err != nil {
		return err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, m := range out.Messages {
		var ev struct {
			DetailType string          `json:"detail-type"`
			Detail     json.RawMessage `json:"detail"`
		}
		var status order.StatusChange
		var pause order.PauseChange
		err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev)
		switch {
		case err == nil && strings.HasPrefix(ev.DetailType, resources.PauseEventTypePrefix):
			if err = json.Unmarshal(ev.Detail, &pause); err == nil && !in.ids[pause.ID] {
				in.ids[pause.ID] = true
				in.pauses = append(in.pauses, pause)
			}
		case err == nil:
			if err = json.Unmarshal(ev.Detail, &status); err == nil && ev.DetailType != "Order "+string(status.Status) {
				err = fmt.Errorf("detail-type %q for status %s", ev.DetailType, status.Status)
			}
			if status.ID == "" {
				t.Errorf("status event without an eventId: %s", aws.ToString(m.Body))
			}
			if !in.ids[status.ID] {
				in.ids[status.ID] = true
				in.seen[status.OrderID] = append(in.seen[status.OrderID], status)
			}
		}
		if err != nil {
			t.Errorf("event %s: %v", aws.ToString(m.Body), err)
		}
		in.sqs.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(in.url), ReceiptHandle: m.ReceiptHandle})
	}
	return nil
}

// statuses waits until order id's status events, each taken once, are
// want, and returns them.
func (in *eventInbox) statuses(t *testing.T, id string, want []order.Status, timeout time.Duration) []order.StatusChange {
	t.Helper()
	var changes []order.StatusChange
	var got []order.Status
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := in.take(t); err != nil {
			return false, err.Error()
		}
		in.mu.Lock()
		defer in.mu.Unlock()
		changes, got = slices.Clone(in.seen[id]), nil
		for _, c := range changes {
			got = append(got, c.Status)
		}
		return len(got) >= len(want), fmt.Sprint(got)
	})
	if !slices.Equal(got, want) {
		t.Errorf("order %s status events %v, want %v", id, got, want)
	}
	return changes
}

// An order flows through the deployed wiring: API Gateway with its
// validator, Submit, the table's stream and its filter, the Scheduler,
// the request queues and the agents (calling the simulator on the host),
// the response queue, the Supervisor on its EventBridge schedule, the
// recorder's status events on the bus, and SNS alerts.
func TestDeployedStack(t *testing.T) {
	d := stack(t)
	// First, alone: nothing else writes meanwhile.
	t.Run("malformed input is refused and nothing is written", func(t *testing.T) {
		before := d.count(t)
		for _, body := range []string{`{"customerId":"c"}`, `{"customerId":"c","lines":[{"sku":"BOOK-1","quantity":0}]}`, `not json`} {
			// LocalStack answers with its own body ({"message": "Invalid
			// request body"}): it ignores the stack's gateway response,
			// which the stack's assertion tests check instead.
			if code, got := d.call(t, http.MethodPost, "/orders", body); code != http.StatusBadRequest {
				t.Errorf("POST %s: %d %s, want 400", body, code, got)
			}
		}
		if after := d.count(t); after != before {
			t.Errorf("orders stored went from %d to %d", before, after)
		}
	})
	t.Run("a paused workflow refuses new orders, and takes them again once resumed", func(t *testing.T) {
		testPausedWorkflow(t, d)
	})
	t.Run("processed", func(t *testing.T) {
		t.Parallel()
		id := d.submit(t, "BOOK-1")
		defer d.logHistory(t, id)
		v := d.await(t, id, 2*time.Minute, order.StatusProcessed, order.StatusFailed, order.StatusError)
		if v.Status != order.StatusProcessed {
			t.Fatalf("status %s, want Processed: %s", v.Status, testenv.Describe(v))
		}
		d.events.statuses(t, id, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusProcessed}, time.Minute)
		code, got := d.call(t, http.MethodGet, "/orders/"+id+"/history", "")
		if code != http.StatusOK || !strings.Contains(string(got), `"to":"Processed"`) {
			t.Errorf("history: %d %s", code, got)
		}
		// Found again by search: the deployed function reads its page
		// token key and queries the ended index, page by page.
		query := "/orders?customer=c-e2e&status=Processed&limit=1&ended_from=" + v.CreatedAt.Add(-time.Second).UTC().Format(time.RFC3339)
		found := false
		for pages := 0; query != "" && !found && pages < 100; pages++ {
			code, got := d.call(t, http.MethodGet, query, "")
			var page api.SearchView
			if code != http.StatusOK || json.Unmarshal(got, &page) != nil {
				t.Fatalf("GET %s: %d %s", query, code, got)
			}
			found = slices.ContainsFunc(page.Orders, func(o api.OrderSummary) bool { return o.OrderID == id && o.EndedAt != nil })
			query = page.Links["next"]
		}
		if !found {
			t.Errorf("the search for c-e2e's orders Processed since %s did not find %s", v.CreatedAt, id)
		}
	})
	t.Run("a permanent failure is compensated", func(t *testing.T) {
		t.Parallel()
		id := d.submit(t, "TEST-PAYMENT-PERMANENT")
		defer d.logHistory(t, id)
		v := d.await(t, id, 2*time.Minute, order.StatusFailed, order.StatusProcessed, order.StatusError)
		if v.Status != order.StatusFailed || v.Steps[0].State != string(order.Undone) {
			t.Fatalf("status %s, want Failed with the reservation undone: %s", v.Status, testenv.Describe(v))
		}
		d.events.statuses(t, id, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCompensating, order.StatusFailed}, time.Minute)
	})
	t.Run("an undo refused ends in Error with an alert, then is redriven", func(t *testing.T) {
		t.Parallel()
		// The refund is refused once: after the alert, an operator's
		// redrive resumes the compensation, which ends Failed.
		id := d.submit(t, "TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT-1")
		defer d.logHistory(t, id)
		if v := d.await(t, id, 2*time.Minute, order.StatusError, order.StatusFailed, order.StatusProcessed); v.Status != order.StatusError {
			t.Fatalf("status %s, want Error: %s", v.Status, testenv.Describe(v))
		}
		if a := d.alerts.Await(t, id, time.Minute); a.Kind != order.AlertUndoFailed {
			t.Errorf("alert %+v, want %s", a, order.AlertUndoFailed)
		}
		if code, got := d.call(t, http.MethodPost, "/orders/"+id+"/redrive", ""); code != http.StatusAccepted {
			t.Fatalf("redrive: %d %s, want 202", code, got)
		}
		if v := d.await(t, id, 2*time.Minute, order.StatusFailed, order.StatusError, order.StatusProcessed); v.Status != order.StatusFailed {
			t.Errorf("after the redrive: %s, want Failed: %s", v.Status, testenv.Describe(v))
		}
	})
	t.Run("a cancel while a step runs", func(t *testing.T) {
		t.Parallel()
		id := d.submit(t, "TEST-PAYMENT-SLOW-3000")
		defer d.logHistory(t, id)
		d.await(t, id, time.Minute, order.StatusProcessing)
		if code, got := d.call(t, http.MethodPost, "/orders/"+id+"/cancel", ""); code != http.StatusAccepted {
			t.Fatalf("cancel: %d %s, want 202", code, got)
		}
		v := d.await(t, id, 2*time.Minute, order.StatusCancelled, order.StatusProcessed, order.StatusFailed, order.StatusError)
		if v.Status != order.StatusCancelled {
			t.Errorf("status %s, want Cancelled: %s", v.Status, testenv.Describe(v))
		}
		if code, _ := d.call(t, http.MethodPost, "/orders/"+id+"/cancel", ""); code != http.StatusAccepted {
			t.Errorf("second cancel: %d, want 202 (idempotent)", code)
		}
	})
	t.Run("a team's own four-step workflow passes results on", func(t *testing.T) {
		t.Parallel()
		body := `{"customerId":"c-e2e","lines":[{"sku":"BOOK-1","quantity":1}],"amount":{"currency":"EUR","minorUnits":1250},` +
			`"shippingAddress":{"name":"Ada","line1":"12 Square","city":"London","postalCode":"SW1","country":"GB"},"paymentToken":"tok_e2e_0001"}`
		code, got := d.call(t, http.MethodPost, "/workflows/checkout/orders", body)
		var out struct{ OrderID string }
		if code != http.StatusAccepted || json.Unmarshal(got, &out) != nil {
			t.Fatalf("POST /workflows/checkout/orders: %d %s", code, got)
		}
		defer d.logHistory(t, out.OrderID)
		v := d.await(t, out.OrderID, 2*time.Minute, order.StatusProcessed, order.StatusFailed, order.StatusError)
		if v.Status != order.StatusProcessed || v.Workflow != "checkout" || len(v.Steps) != 4 {
			t.Fatalf("status %s of %s, want a Processed checkout order of 4 steps: %s", v.Status, v.Workflow, testenv.Describe(v))
		}
		// The reservation's and the fraud check's answers are kept: later
		// steps carry them.
		for _, s := range v.Steps[:3] {
			if len(s.Result) == 0 {
				t.Errorf("step %s kept no result", s.Step)
			}
		}
		if code, got := d.call(t, http.MethodPost, "/workflows/no-such-workflow/orders", body); code != http.StatusBadRequest || !strings.Contains(string(got), "checkout") {
			t.Errorf("an unknown workflow: %d %s, want 400 naming the workflows there are", code, got)
		}
	})
	t.Run("a flagged fulfilment order waits for its analyst, its services and its carrier", func(t *testing.T) {
		t.Parallel()
		testFulfilment(t, d)
	})
	t.Run("a hang is recovered by the Supervisor", func(t *testing.T) {
		t.Parallel()
		id := d.submit(t, "TEST-INVENTORY-HANG-1")
		defer d.logHistory(t, id)
		v := d.await(t, id, 5*time.Minute, order.StatusProcessed, order.StatusFailed, order.StatusError)
		if v.Status != order.StatusProcessed || v.Steps[0].Attempt < 2 {
			t.Fatalf("status %s, want Processed on a later attempt: %s", v.Status, testenv.Describe(v))
		}
	})

}

// pauseEvents waits until the pauses' events taken include one of each
// event of want, and returns them all.
func (in *eventInbox) pauseEvents(t *testing.T, want []string, timeout time.Duration) []order.PauseChange {
	t.Helper()
	var got []order.PauseChange
	testenv.Eventually(t, timeout, func() (bool, string) {
		if err := in.take(t); err != nil {
			return false, err.Error()
		}
		in.mu.Lock()
		defer in.mu.Unlock()
		got = slices.Clone(in.pauses)
		var events []string
		for _, p := range got {
			events = append(events, p.Event)
		}
		for _, w := range want {
			if !slices.Contains(events, w) {
				return false, fmt.Sprint(events)
			}
		}
		return true, ""
	})
	return got
}

// count is how many orders the table holds (a test-sized Scan).
func (d deployed) count(t *testing.T) int32 {
	t.Helper()
	out, err := d.clients.DynamoDB.Scan(context.Background(), &dynamodb.ScanInput{TableName: aws.String(d.orders), Select: "COUNT"})
	if err != nil {
		t.Fatalf("scan %s: %v", d.orders, err)
	}
	return out.Count
}
