package engine_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

type running struct {
	*engine.Engine
	alerts *testenv.AlertInbox
}

func start(t testing.TB, tweak func(*engine.Config)) running {
	t.Helper()
	e := enginetest.Start(t, tweak)
	return running{Engine: e, alerts: testenv.SubscribeAlerts(t, e.Clients(), e.Stack.AlertTopicARN)}
}

func submit(t testing.TB, e running, sub ordertest.Submission) string {
	t.Helper()
	body, _ := json.Marshal(sub)
	resp, err := http.Post(e.URL()+"/orders", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("POST /orders: %v", err)
	}
	defer resp.Body.Close()
	var out struct{ OrderID string }
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST /orders: status %d, %v", resp.StatusCode, err)
	}
	return out.OrderID
}

// status reads the order on the operators' route, which shows every
// record's attempt, owner and result (a client's view shows none of them).
func status(t *testing.T, e running, id string) api.OrderView {
	t.Helper()
	resp, err := http.Get(e.URL() + "/ops/orders/" + id)
	if err != nil {
		t.Fatalf("GET /orders/%s: %v", id, err)
	}
	defer resp.Body.Close()
	var v api.OrderView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /orders/%s: status %d, %v", id, resp.StatusCode, err)
	}
	return v
}

// await polls GET /orders/{id} until the order reaches a final status.
func await(t *testing.T, e running, id string, timeout time.Duration) api.OrderView {
	t.Helper()
	var v api.OrderView
	testenv.Eventually(t, timeout, func() (bool, string) {
		v = status(t, e, id)
		return v.Status.Terminal(), testenv.Describe(v)
	})
	return v
}

func step(v api.OrderView, name string) api.StepView {
	for _, s := range v.Steps {
		if s.Step == name {
			return s
		}
	}
	return api.StepView{}
}

func lines(skus ...string) ordertest.Submission {
	sub := ordertest.Submission{CustomerID: "c-e2e"}
	for _, s := range skus {
		sub.Lines = append(sub.Lines, order.Line{SKU: s, Quantity: 1})
	}
	return sub
}

func TestOrderTravelsEveryActorToProcessed(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	began := time.Now()
	id := submit(t, e, lines("BOOK-1", "PEN-2"))
	v := await(t, e, id, 20*time.Second)
	t.Logf("submission to Processed: %s", time.Since(began))
	if v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed: %s", v.Status, testenv.Describe(v))
	}
	for _, s := range v.Steps {
		if s.State != string(order.Processed) || s.Attempt != 1 || s.FailureCount != 0 || s.LockedBy != "" || s.Reference == "" {
			t.Errorf("step %s: got %s attempt %d failures %d locked by %q reference %q, want Processed on attempt 1, unlocked, with the remote reference",
				s.Step, s.State, s.Attempt, s.FailureCount, s.LockedBy, s.Reference)
		}
	}
	for _, svc := range []string{"inventory", "payment", "shipping"} {
		if n := e.Sim.Calls(svc, enginetest.RemoteKey(t, e.Engine, id, stepOf(svc))); n != 1 {
			t.Errorf("%s called %d times, want 1", svc, n)
		}
	}
}

func stepOf(agent string) string {
	return map[string]string{"inventory": ordertest.StepReserveInventory, "payment": ordertest.StepChargePayment, "shipping": ordertest.StepArrangeShipping}[agent]
}

func TestTransientFaultsAreRetriedInsideTheAgent(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	id := submit(t, e, lines("TEST-PAYMENT-TRANSIENT-2"))
	v := await(t, e, id, 20*time.Second)
	if s := step(v, ordertest.StepChargePayment); v.Status != order.StatusProcessed || s.Attempt != 1 || s.FailureCount != 0 {
		t.Fatalf("got %s, payment attempt %d failures %d; want Processed on attempt 1", v.Status, s.Attempt, s.FailureCount)
	}
	if n := e.Sim.Calls("payment", enginetest.RemoteKey(t, e.Engine, id, ordertest.StepChargePayment)); n != 3 {
		t.Errorf("payment called %d times, want 3 (two 503s, then success)", n)
	}
}

func TestTimedOutAttemptIsRetriedBySupervisor(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	id := submit(t, e, lines("TEST-INVENTORY-HANG-1"))
	v := await(t, e, id, 20*time.Second)
	s := step(v, ordertest.StepReserveInventory)
	if v.Status != order.StatusProcessed || s.Attempt != 2 || s.FailureCount != 1 {
		t.Fatalf("got %s, inventory attempt %d failures %d; want Processed on attempt 2 after 1 timeout: %s", v.Status, s.Attempt, s.FailureCount, testenv.Describe(v))
	}
}

func TestAgentCrashIsRecoveredBySupervisor(t *testing.T) {
	t.Parallel()
	var crashes atomic.Int32
	e := start(t, func(c *engine.Config) {
		c.WrapAgent = func(agent string, h engine.SQSHandler) engine.SQSHandler {
			if agent != ordertest.AgentShipping {
				return h
			}
			return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if crashes.Add(1) == 1 {
					panic("shipping agent crashed mid-request") // no reply, message not deleted
				}
				return h(ctx, ev)
			}
		}
	})
	id := submit(t, e, lines("BOOK-1"))
	v := await(t, e, id, 20*time.Second)
	s := step(v, ordertest.StepArrangeShipping)
	if v.Status != order.StatusProcessed || s.Attempt != 2 || s.FailureCount != 1 || crashes.Load() < 2 {
		t.Fatalf("got %s, shipping attempt %d failures %d after %d deliveries; want Processed on attempt 2: %s",
			v.Status, s.Attempt, s.FailureCount, crashes.Load(), testenv.Describe(v))
	}
}

func TestPoisonMessageEndsInDeadLetterQueueWithoutBlockingOthers(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *engine.Config) { c.QueueVisibility = time.Second })
	ctx := context.Background()
	sqs := e.Clients().SQS
	q := e.Stack.ResponseQueue
	poison := fmt.Sprintf(`{"orderId": "poison-%d"`, time.Now().UnixNano())
	if _, err := sqs.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(q.URL), MessageBody: aws.String(poison)}); err != nil {
		t.Fatalf("send poison: %v", err)
	}
	id := submit(t, e, lines("BOOK-1"))
	if v := await(t, e, id, 20*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed alongside the poison message", v.Status)
	}
	testenv.Eventually(t, 30*time.Second, func() (bool, string) {
		out, err := sqs.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(q.DeadLetterURL), WaitTimeSeconds: 1})
		if err != nil {
			return false, err.Error()
		}
		for _, m := range out.Messages {
			if aws.ToString(m.Body) == poison {
				return true, ""
			}
		}
		return false, "poison message not in the dead-letter queue yet"
	})
}
