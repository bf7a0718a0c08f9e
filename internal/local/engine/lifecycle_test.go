package engine_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/actor/api"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// forward lists the workflow steps' states, in order.
func forward(v api.OrderView) []string {
	var out []string
	for _, s := range v.Steps {
		if !s.Undo {
			out = append(out, s.State)
		}
	}
	return out
}

// undone lists the services whose work for the order the simulator undid.
func undone(t testing.TB, e running, id string) []string {
	t.Helper()
	var out []string
	for _, d := range []struct{ agent, step string }{
		{ordertest.AgentInventory, ordertest.StepReserveInventory},
		{ordertest.AgentPayment, ordertest.StepChargePayment},
		{ordertest.AgentShipping, ordertest.StepArrangeShipping},
	} {
		if e.Sim.Undone(d.agent, enginetest.RemoteKey(t, e.Engine, id, d.step)) {
			out = append(out, d.agent)
		}
	}
	return out
}

// The compensation paths end to end: real agents, the simulator's undo
// endpoints, the Supervisor's timeouts.
func TestCompensation(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	tests := []struct {
		name    string
		skus    []string
		status  order.Status
		forward []string
		undone  []string
		alert   order.AlertKind
	}{
		{"a permanent fault at step 3 undoes step 2 then step 1", []string{"TEST-SHIPPING-PERMANENT"},
			order.StatusFailed, []string{"Undone", "Undone", "Failed"}, []string{"inventory", "payment"}, ""},
		{"a hang at step 2 past the threshold undoes step 2 (outcome unknown) and step 1", []string{"TEST-PAYMENT-HANG"},
			order.StatusFailed, []string{"Undone", "Undone", "NotStarted"}, []string{"inventory", "payment"}, ""},
		{"an undo failing transiently is retried", []string{"TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-TRANSIENT-2"},
			order.StatusFailed, []string{"Undone", "Undone", "Failed"}, []string{"inventory", "payment"}, ""},
		{"an undo refused for good ends Error with an alert", []string{"TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT"},
			order.StatusError, []string{"Processed", "Processed", "Failed"}, nil, order.AlertUndoFailed},
		{"an undo that hangs times out and ends Error", []string{"TEST-SHIPPING-PERMANENT", "TEST-INVENTORY-UNDO-HANG"},
			order.StatusError, []string{"Processed", "Undone", "Failed"}, []string{"payment"}, order.AlertUndoTimedOut},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := submit(t, e, lines(tt.skus...))
			v := await(t, e, id, 40*time.Second)
			if v.Status != tt.status || !slices.Equal(forward(v), tt.forward) {
				t.Fatalf("got %s %v, want %s %v: %s", v.Status, forward(v), tt.status, tt.forward, testenv.Describe(v))
			}
			if got := undone(t, e, id); !slices.Equal(got, tt.undone) {
				t.Errorf("the simulator undid %v, want %v", got, tt.undone)
			}
			if tt.alert == "" {
				if a, ok := e.alerts.Next(id, time.Second); ok {
					t.Errorf("alert %s, want none", testenv.Describe(a))
				}
				return
			}
			a := e.alerts.Await(t, id, 10*time.Second)
			if a.Kind != tt.alert || !a.Undo {
				t.Errorf("alert %s, want %s about an undo", testenv.Describe(a), tt.alert)
			}
		})
	}
}

// post sends a POST with an optional JSON body and returns the status and
// the decoded body.
func post(t *testing.T, e running, path, body string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("POST %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out
}

// An operator redrives an order whose undo was refused, once the remote
// service is fixed: resumed, the compensation ends Failed; retried
// forward, the order ends Processed.
func TestRedrive(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	tests := []struct {
		name    string
		skus    []string
		body    string
		status  order.Status
		forward []string
	}{
		{"compensation resumed", []string{"TEST-SHIPPING-PERMANENT", "TEST-PAYMENT-UNDO-PERMANENT-1"}, ``,
			order.StatusFailed, []string{"Undone", "Undone", "Failed"}},
		{"retried forward", []string{"TEST-SHIPPING-PERMANENT-1", "TEST-PAYMENT-UNDO-PERMANENT-1"}, `{"action":"retry"}`,
			order.StatusProcessed, []string{"Processed", "Processed", "Processed"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			id := submit(t, e, lines(tt.skus...))
			if v := await(t, e, id, 40*time.Second); v.Status != order.StatusError {
				t.Fatalf("before the redrive: %s, want Error: %s", v.Status, testenv.Describe(v))
			}
			stuck := status(t, e, id)
			if code, body := post(t, e, "/orders/"+id+"/redrive", tt.body); code != http.StatusAccepted {
				t.Fatalf("redrive: %d %v, want 202", code, body)
			}
			v := await(t, e, id, 40*time.Second)
			if v.Status != tt.status || !slices.Equal(forward(v), tt.forward) {
				t.Fatalf("after the redrive: %s %v, want %s %v: %s", v.Status, forward(v), tt.status, tt.forward, testenv.Describe(v))
			}
			// The attempt counter went on, so old attempts' replies stay stale.
			for i, s := range stuck.Steps {
				if i < len(v.Steps) && v.Steps[i].Step == s.Step && v.Steps[i].Undo == s.Undo && v.Steps[i].Attempt < s.Attempt {
					t.Errorf("record %d attempt went from %d to %d", i, s.Attempt, v.Steps[i].Attempt)
				}
			}
			if code, _ := post(t, e, "/orders/"+id+"/redrive", ``); code != http.StatusConflict {
				t.Errorf("second redrive of a %s order: %d, want 409", v.Status, code)
			}
		})
	}
}

// A cancel while step 2 runs lets it finish, then undoes it and step 1.
func TestCancelDuringAStep(t *testing.T) {
	t.Parallel()
	e := start(t, func(c *engine.Config) { c.Timing.Allowance, c.Timing.MaxAllowance = 5*time.Second, 5*time.Second })
	id := submit(t, e, lines("TEST-PAYMENT-SLOW-1500"))
	testenv.Eventually(t, 10*time.Second, func() (bool, string) {
		v := status(t, e, id)
		return v.Status == order.StatusProcessing, testenv.Describe(v)
	})
	code, body := post(t, e, "/orders/"+id+"/cancel", ``)
	if code != http.StatusAccepted || body["status"] != string(order.StatusCancelling) {
		t.Fatalf("cancel: %d %v, want 202 Cancelling", code, body)
	}
	if again, body := post(t, e, "/orders/"+id+"/cancel", `{}`); again != http.StatusAccepted {
		t.Errorf("second cancel: %d %v, want 202 (idempotent)", again, body)
	}
	v := await(t, e, id, 30*time.Second)
	if want := []string{"Undone", "Undone", "NotStarted"}; v.Status != order.StatusCancelled || !slices.Equal(forward(v), want) {
		t.Fatalf("got %s %v, want Cancelled %v: %s", v.Status, forward(v), want, testenv.Describe(v))
	}
	if got := undone(t, e, id); !slices.Equal(got, []string{"inventory", "payment"}) {
		t.Errorf("the simulator undid %v, want inventory and payment", got)
	}
}

// Cancelling or redriving an order in the wrong status is refused with
// 409 and a reason, and changes nothing.
func TestLifecycleRefusals(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	done := submit(t, e, lines("BOOK-1"))
	if v := await(t, e, done, 20*time.Second); v.Status != order.StatusProcessed {
		t.Fatalf("got %s, want Processed", v.Status)
	}
	before := status(t, e, done)
	for _, path := range []string{"/orders/" + done + "/cancel", "/orders/" + done + "/redrive"} {
		code, body := post(t, e, path, ``)
		if code != http.StatusConflict || body["error"] != "invalid_state" || !strings.Contains(body["message"].(string), "Processed") {
			t.Errorf("POST %s: %d %v, want 409 invalid_state naming the status", path, code, body)
		}
	}
	if after := status(t, e, done); !after.UpdatedAt.Equal(before.UpdatedAt) {
		t.Errorf("a refused request changed the order: updated %s, was %s", after.UpdatedAt, before.UpdatedAt)
	}
}
