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

	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// history reads the order's history on the operators' route, which
// shows every writer and attempt (a client's history shows neither).
func history(t testing.TB, e running, id string) api.HistoryView {
	t.Helper()
	resp, err := http.Get(e.URL() + "/ops/orders/" + id + "/history")
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

// brief writes a transition as "record event from>to by": o is the
// order, u3 undo record 3, 1 workflow step 1; by is the kind of actor
// (submit, scheduler, supervisor, agent, client, operator), without the
// instance.
func brief(tr order.HistoryEntry) string {
	who := "o"
	if tr.Record >= 0 {
		who = fmt.Sprint(tr.Record)
		if tr.Undo {
			who = "u" + who
		}
	}
	by, _, _ := strings.Cut(tr.By, " ")
	if tr.Event == "status" || tr.Event == "state" {
		return fmt.Sprintf("%s %s>%s %s", who, tr.From, tr.To, by)
	}
	return fmt.Sprintf("%s %s %s", who, tr.Event, by)
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
		out, err := e.Clients().Deliveries.ReceiveMessage(context.Background(), &awssqs.ReceiveMessageInput{
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
			e.Clients().Deliveries.DeleteMessage(context.Background(), &awssqs.DeleteMessageInput{QueueUrl: aws.String(e.Stack.StatusQueue.URL), ReceiptHandle: m.ReceiptHandle})
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
		redrive  bool // once the order stops in Error
		history  []string
		statuses []order.Status
	}{
		{"processed", []string{"BOOK-1"}, false, false, []string{
			"o >Pending submit", "0 NotStarted>Processing submit",
			"o Pending>Processing scheduler", "0 Processing>Processed scheduler", "1 NotStarted>Processing scheduler",
			"1 Processing>Processed scheduler", "2 NotStarted>Processing scheduler",
			"o Processing>Processed scheduler", "2 Processing>Processed scheduler",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusProcessed}},
		{"a permanent fault at step 3, compensated", []string{"TEST-SHIPPING-PERMANENT"}, false, false, []string{
			"o >Pending submit", "0 NotStarted>Processing submit",
			"o Pending>Processing scheduler", "0 Processing>Processed scheduler", "1 NotStarted>Processing scheduler",
			"1 Processing>Processed scheduler", "2 NotStarted>Processing scheduler",
			"o Processing>Compensating scheduler", "2 Processing>Failed scheduler", "u3 >Processing scheduler", "u4 >NotStarted scheduler",
			"1 Processed>Undone scheduler", "u3 Processing>Processed scheduler", "u4 NotStarted>Processing scheduler",
			"o Compensating>Failed scheduler", "0 Processed>Undone scheduler", "u4 Processing>Processed scheduler",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCompensating, order.StatusFailed}},
		{"cancelled while step 2 runs", []string{"TEST-PAYMENT-SLOW-1500"}, true, false, []string{
			"o >Pending submit", "0 NotStarted>Processing submit",
			"o Pending>Processing scheduler", "0 Processing>Processed scheduler", "1 NotStarted>Processing scheduler",
			"o Processing>Cancelling client", "o cancel requested client",
			"1 Processing>Processed scheduler", "u3 >Processing scheduler", "u4 >NotStarted scheduler",
			"1 Processed>Undone scheduler", "u3 Processing>Processed scheduler", "u4 NotStarted>Processing scheduler",
			"o Cancelling>Cancelled scheduler", "0 Processed>Undone scheduler", "u4 Processing>Processed scheduler",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCancelling, order.StatusCancelled}},
		{"an undo refused, then redriven", []string{"TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT-1"}, false, true, []string{
			"o >Pending submit", "0 NotStarted>Processing submit",
			"o Pending>Processing scheduler", "0 Processing>Processed scheduler", "1 NotStarted>Processing scheduler",
			"1 Processing>Processed scheduler", "2 NotStarted>Processing scheduler",
			"o Processing>Compensating scheduler", "2 Processing>Failed scheduler", "u3 >Processing scheduler", "u4 >NotStarted scheduler",
			"o Compensating>Error scheduler", "u3 Processing>Error scheduler", "u3 alert recorded scheduler", "u3 alert sent scheduler",
			"o Error>Compensating operator", "u3 Error>Pending operator", "u3 Pending>Processing scheduler",
			"1 Processed>Undone scheduler", "u3 Processing>Processed scheduler", "u4 NotStarted>Processing scheduler",
			"o Compensating>Failed scheduler", "0 Processed>Undone scheduler", "u4 Processing>Processed scheduler",
		}, []order.Status{order.StatusPending, order.StatusProcessing, order.StatusCompensating, order.StatusError, order.StatusCompensating, order.StatusFailed}},
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
			if tt.redrive {
				if v.Status != order.StatusError {
					t.Fatalf("before the redrive: %s, want Error: %s", v.Status, testenv.Describe(v))
				}
				// An operator redrives once alerted. (A redrive made while the
				// alert is being sent ends its outbox entry, so the history
				// would show no "alert sent" although the alert went out.)
				testenv.Eventually(t, 10*time.Second, func() (bool, string) {
					h := history(t, e, id).History
					return slices.ContainsFunc(h, func(tr order.HistoryEntry) bool { return tr.Event == "alert sent" }), fmt.Sprint(h)
				})
				// The alert is listed among the stage's recent alerts, as sent.
				testenv.Eventually(t, 10*time.Second, func() (bool, string) {
					alerts, err := e.History.Alerts(context.Background(), time.Now().Add(-time.Hour), time.Now(), 1000)
					i := slices.IndexFunc(alerts, func(a order.Alert) bool { return a.OrderID == id })
					return err == nil && i >= 0 && alerts[i].Kind == order.AlertUndoFailed && alerts[i].Undo &&
						alerts[i].Step == ordertest.StepChargePayment && strings.Contains(alerts[i].Reason, "refund"), fmt.Sprint(alerts, err)
				})
				if code, body := post(t, e, "/orders/"+id+"/redrive", ``); code != http.StatusAccepted {
					t.Fatalf("redrive: %d %v", code, body)
				}
				v = await(t, e, id, 30*time.Second)
			}
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
			if last.CustomerID != "c-e2e" || (last.Status == order.StatusFailed && (last.FailedStep != ordertest.StepArrangeShipping || last.Reason == "")) {
				t.Errorf("last event %+v: want the customer, and for Failed the failed step and reason", last)
			}
		})
	}
}
