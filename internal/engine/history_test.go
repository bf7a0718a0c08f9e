package engine_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/api"
	"orderly/internal/engine"
	"orderly/internal/order"
	"orderly/internal/testenv"
)

func history(t testing.TB, e running, id string) api.HistoryView {
	t.Helper()
	resp, err := http.Get(e.URL() + "/orders/" + id + "/history")
	if err != nil {
		t.Fatalf("GET history: %v", err)
	}
	defer resp.Body.Close()
	var v api.HistoryView
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET history: status %d, %v", resp.StatusCode, err)
	}
	return v
}

// brief writes a transition as "record event from>to": o is the order,
// u3 undo record 3, 1 workflow step 1.
func brief(tr order.Transition) string {
	who := "o"
	if tr.Record >= 0 {
		who = fmt.Sprint(tr.Record)
		if tr.Undo {
			who = "u" + who
		}
	}
	if tr.Event == "status" || tr.Event == "state" {
		return fmt.Sprintf("%s %s>%s", who, tr.From, tr.To)
	}
	return who + " " + tr.Event
}

// statusEvents reads the local status-events queue, which a rule on the
// bus feeds, and hands each order's statuses out to the tests waiting.
type statusEvents struct {
	mu   sync.Mutex
	seen map[string][]order.StatusChange
}

func (s *statusEvents) await(t *testing.T, e running, id string, n int, timeout time.Duration) []order.StatusChange {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		out, err := e.Clients().SQS.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
			QueueUrl: aws.String(e.Stack.StatusQueue.URL), MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
		if err != nil {
			t.Fatalf("receive status events: %v", err)
		}
		s.mu.Lock()
		for _, m := range out.Messages {
			var ev struct {
				Source     string             `json:"source"`
				DetailType string             `json:"detail-type"`
				Detail     order.StatusChange `json:"detail"`
			}
			if err := json.Unmarshal([]byte(aws.ToString(m.Body)), &ev); err != nil || ev.Source != "orderly" ||
				ev.DetailType != "Order "+string(ev.Detail.Status) {
				t.Errorf("status event %s: %v", aws.ToString(m.Body), err)
			}
			s.seen[ev.Detail.OrderID] = append(s.seen[ev.Detail.OrderID], ev.Detail)
			e.Clients().SQS.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(e.Stack.StatusQueue.URL), ReceiptHandle: m.ReceiptHandle})
		}
		got := slices.Clone(s.seen[id])
		s.mu.Unlock()
		if len(got) >= n {
			return got
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	t.Fatalf("order %s: %d status events within %s, want %d: %+v", id, len(s.seen[id]), timeout, n, s.seen[id])
	return nil
}

// The history of an order is every transition of the order and its
// records, in order, entry by entry; each status change is an event on
// the bus.
func TestHistoryAndStatusEvents(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *engine.Config) { c.Timing.Allowance, c.Timing.MaxAllowance = 5*time.Second, 5*time.Second })
	events := &statusEvents{seen: map[string][]order.StatusChange{}}
	tests := []struct {
		name     string
		skus     []string
		cancel   bool
		history  []string
		statuses []order.Status
	}{
		{"processed", []string{"BOOK-1"}, false, []string{
			"o >Pending", "0 NotStarted>Processing",
			"o Pending>Processing", "0 Processing>Processed", "1 NotStarted>Processing",
			"1 Processing>Processed", "2 NotStarted>Processing",
			"o Processing>Processed", "2 Processing>Processed",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusProcessed}},
		{"a permanent fault at step 3, compensated", []string{"TEST-SHIPPING-PERMANENT"}, false, []string{
			"o >Pending", "0 NotStarted>Processing",
			"o Pending>Processing", "0 Processing>Processed", "1 NotStarted>Processing",
			"1 Processing>Processed", "2 NotStarted>Processing",
			"o Processing>Compensating", "2 Processing>Failed", "u3 >Processing", "u4 >NotStarted",
			"1 Processed>Undone", "u3 Processing>Processed", "u4 NotStarted>Processing",
			"o Compensating>Failed", "0 Processed>Undone", "u4 Processing>Processed",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCompensating, order.StatusFailed}},
		{"cancelled while step 2 runs", []string{"TEST-PAYMENT-SLOW-1500"}, true, []string{
			"o >Pending", "0 NotStarted>Processing",
			"o Pending>Processing", "0 Processing>Processed", "1 NotStarted>Processing",
			"o Processing>Cancelling", "o cancel requested",
			"1 Processing>Processed", "u3 >Processing", "u4 >NotStarted",
			"1 Processed>Undone", "u3 Processing>Processed", "u4 NotStarted>Processing",
			"o Cancelling>Cancelled", "0 Processed>Undone", "u4 Processing>Processed",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCancelling, order.StatusCancelled}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := submit(t, e, lines(tt.skus...))
			if tt.cancel {
				testenv.Eventually(t, 10*time.Second, func() (bool, string) {
					v := status(t, e, id)
					return v.Status == order.StatusProcessing, testenv.Describe(v)
				})
				if code, body := post(t, e, "/orders/"+id+"/cancel", ``); code != http.StatusAccepted {
					t.Fatalf("cancel: %d %v", code, body)
				}
			}
			v := await(t, e, id, 30*time.Second)
			var got []string
			testenv.Eventually(t, 10*time.Second, func() (bool, string) {
				got = got[:0]
				for _, tr := range history(t, e, id).History {
					if tr.Event == "heartbeat" || tr.Event == "deferred" {
						continue // the time model's, which timing may or may not need
					}
					got = append(got, brief(tr))
				}
				return len(got) >= len(tt.history), strings.Join(got, "\n")
			})
			if !slices.Equal(got, tt.history) {
				t.Errorf("history of a %s order:\n%s\nwant:\n%s", v.Status, strings.Join(got, "\n"), strings.Join(tt.history, "\n"))
			}
			for _, tr := range history(t, e, id).History {
				if tr.By == "" || tr.At.IsZero() {
					t.Errorf("transition %+v names no actor or time", tr)
				}
			}
			evs := events.await(t, e, id, len(tt.statuses), 20*time.Second)
			var statuses []order.Status
			for _, ev := range evs {
				statuses = append(statuses, ev.Status)
			}
			if !slices.Equal(statuses, tt.statuses) {
				t.Errorf("status events %v, want %v", statuses, tt.statuses)
			}
			last := evs[len(evs)-1]
			if last.CustomerID != "c-e2e" || (last.Status == order.StatusFailed && (last.FailedStep != order.StepArrangeShipping || last.Reason == "")) {
				t.Errorf("last event %+v: want the customer, and for Failed the failed step and reason", last)
			}
		})
	}
}
