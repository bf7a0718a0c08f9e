// Package testenv connects integration tests to real AWS endpoints: the
// local emulators under `make test`, LocalStack, or an account. Tests run
// only when ORDERLY_INTEGRATION=1; then an unreachable endpoint fails them
// rather than skipping them, so a broken set-up cannot pass silently.
package testenv

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
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

	orderlysns "orderly/internal/adapter/sns"
	"orderly/internal/config"
	"orderly/internal/local/provision"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// AWS returns the SDK configuration, skipping the test unless integration
// tests are enabled and failing it when the endpoints do not answer.
func AWS(t testing.TB) aws.Config {
	t.Helper()
	if !Enabled() {
		t.Skip("integration test: set ORDERLY_INTEGRATION=1 and start the emulators (make test does both)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	if err := config.CheckEndpoints(ctx, cfg); err != nil {
		t.Fatal(err)
	}
	if _, err := dynamodb.NewFromConfig(cfg).ListTables(ctx, &dynamodb.ListTablesInput{Limit: aws.Int32(1)}); err != nil {
		t.Fatalf("DynamoDB endpoint does not answer (are the emulators running? make emulators): %v", err)
	}
	if _, err := sqs.NewFromConfig(cfg).ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatalf("SQS endpoint does not answer (are the emulators running? make emulators): %v", err)
	}
	return cfg
}

// Stage returns a unique stage name, so tests never share resources.
func Stage(t testing.TB) string {
	return "t" + strings.ToLower(rand.Text()[:10])
}

// Provision creates a throwaway stack, with DynamoDB's expiry off on its
// tables (see resources.Catalog.WithoutTableTTL), and deletes it when the
// test ends.
func Provision(t testing.TB, cfg aws.Config, cat resources.Catalog) (provision.Stack, provision.Clients) {
	t.Helper()
	clients := Clients(cfg)
	ctx := context.Background()
	stack, err := provision.Create(ctx, clients, cat.WithoutTableTTL())
	if err != nil {
		t.Fatalf("provision %s: %v", cat.Stage, err)
	}
	t.Cleanup(func() {
		if err := provision.Delete(context.Background(), clients, stack); err != nil {
			t.Logf("clean up stage %s: %v", cat.Stage, err)
		}
	})
	return stack, clients
}

// Clients builds SDK clients from cfg.
func Clients(cfg aws.Config) provision.Clients {
	return provision.NewClients(cfg)
}

// AlertInbox is an SQS queue subscribed to the alert topic, the way an
// operator's tooling would consume alerts.
type AlertInbox struct {
	client *sqs.Client
	url    string

	mu        sync.Mutex
	kept      []order.Alert   // received, about orders nobody waited for yet
	published map[string]bool // bodies received: a second copy is delivery, not the engine
}

// SubscribeAlerts subscribes a fresh queue to topicARN with raw delivery.
func SubscribeAlerts(t testing.TB, clients provision.Clients, topicARN string) *AlertInbox {
	t.Helper()
	ctx := context.Background()
	url, err := orderlysns.SubscribeQueue(ctx, clients.SNS, clients.Deliveries, topicARN, "alerts-"+strings.ToLower(rand.Text()[:10]))
	if err != nil {
		t.Fatalf("alert inbox: %v", err)
	}
	t.Cleanup(func() {
		clients.Deliveries.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)})
	})
	return &AlertInbox{client: clients.Deliveries, url: url, published: map[string]bool{}}
}

// Await returns the first alert about orderID, failing the test if none
// arrives within timeout.
func (in *AlertInbox) Await(t testing.TB, orderID string, timeout time.Duration) order.Alert {
	t.Helper()
	a, ok, seen, err := in.next(orderID, timeout)
	if err != nil {
		t.Fatal(err)
	}
	if !ok {
		t.Fatalf("no alert about order %s within %s (alerts seen for: %v)", orderID, timeout, seen)
	}
	return a
}

// Next returns the first alert about orderID that arrives within timeout;
// ok is false when none did (a test that expects no alert waits this way).
func (in *AlertInbox) Next(orderID string, timeout time.Duration) (order.Alert, bool) {
	a, ok, _, err := in.next(orderID, timeout)
	return a, ok && err == nil
}

// Others returns every alert that arrives within timeout, with those
// received before that no Await or Next took: a test that expects no
// alert about anything waits this way (it always waits all of timeout).
func (in *AlertInbox) Others(timeout time.Duration) ([]order.Alert, error) {
	// No order's id has a '#' (order.ValidID), so every alert is kept.
	if _, _, _, err := in.next("#", timeout); err != nil {
		return nil, err
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	return slices.Clone(in.kept), nil
}

func (in *AlertInbox) next(orderID string, timeout time.Duration) (order.Alert, bool, []string, error) {
	deadline := time.Now().Add(timeout)
	var seen []string
	for time.Now().Before(deadline) {
		// Alerts about other orders are kept for the tests waiting on them.
		in.mu.Lock()
		for i, a := range in.kept {
			if a.OrderID == orderID {
				in.kept = slices.Delete(in.kept, i, i+1)
				in.mu.Unlock()
				return a, true, seen, nil
			}
		}
		in.mu.Unlock()
		out, err := in.client.ReceiveMessage(context.Background(), &sqs.ReceiveMessageInput{
			QueueUrl: aws.String(in.url), MaxNumberOfMessages: 10, WaitTimeSeconds: 1,
		})
		if err != nil {
			return order.Alert{}, false, seen, fmt.Errorf("receive alerts: %w", err)
		}
		// The whole batch is read and deleted before returning, so no
		// alert waits out a visibility timeout behind the one wanted.
		// An alert's body carries the instant it was published, so the
		// same body twice is a copy SNS, SQS or a resent Publish made,
		// and is dropped; an alert the engine sent again is kept.
		var found *order.Alert
		for _, m := range out.Messages {
			body := aws.ToString(m.Body)
			var a order.Alert
			if err := json.Unmarshal([]byte(body), &a); err != nil {
				return order.Alert{}, false, seen, fmt.Errorf("alert is not JSON: %w: %s", err, body)
			}
			_, _ = in.client.DeleteMessage(context.Background(), &sqs.DeleteMessageInput{QueueUrl: aws.String(in.url), ReceiptHandle: m.ReceiptHandle})
			in.mu.Lock()
			copied := in.published[body]
			in.published[body] = true
			switch {
			case copied:
			case a.OrderID == orderID && found == nil:
				found = &a
			default:
				seen = append(seen, a.OrderID)
				in.kept = append(in.kept, a)
			}
			in.mu.Unlock()
		}
		if found != nil {
			return *found, true, seen, nil
		}
	}
	return order.Alert{}, false, seen, nil
}

// Eventually polls cond until it returns true or timeout passes, then
// fails with the last description cond gave. It waits for an observable
// state, never for a guessed duration.
func Eventually(t testing.TB, timeout time.Duration, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	var last string
	for {
		ok, desc := cond()
		if ok {
			return
		}
		last = desc
		if time.Now().After(deadline) {
			t.Fatalf("condition not met within %s: %s", timeout, last)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Enabled reports whether integration tests should run.
func Enabled() bool { return os.Getenv("ORDERLY_INTEGRATION") == "1" }

// Describe formats v for failure messages.
func Describe(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// Cleanup deletes a stack provisioned outside Provision.
func Cleanup(t testing.TB, clients provision.Clients, stack provision.Stack) {
	if err := provision.Delete(context.Background(), clients, stack); err != nil {
		t.Logf("clean up stage %s: %v", stack.Catalog.Stage, err)
	}
}
