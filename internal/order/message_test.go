package order_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestDecodeRequest(t *testing.T) {
	id := order.NewID()
	valid := order.StepRequest{OrderID: id, Step: ordertest.StepChargePayment, Attempt: 1,
		CompleteBy: time.Now(), IdempotencyKey: "k"}
	tests := []struct {
		name    string
		change  func(*order.StepRequest)
		wantErr string // empty: valid
	}{
		{"valid", func(*order.StepRequest) {}, ""},
		{"undo with its record", func(r *order.StepRequest) { r.Undo, r.Record = true, 3 }, ""},
		{"invalid order id", func(r *order.StepRequest) { r.OrderID = "../x" }, "invalid orderId"},
		{"no step", func(r *order.StepRequest) { r.Step = "" }, "no step"},
		{"attempt 0", func(r *order.StepRequest) { r.Attempt = 0 }, "invalid attempt 0"},
		{"no deadline", func(r *order.StepRequest) { r.CompleteBy = time.Time{} }, "no completeBy"},
		{"no idempotency key", func(r *order.StepRequest) { r.IdempotencyKey = "" }, "no idempotencyKey"},
		{"undo of record 0", func(r *order.StepRequest) { r.Undo, r.Record = true, 0 }, "invalid record 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := valid
			tt.change(&req)
			body, _ := json.Marshal(req)
			_, err := order.DecodeRequest(body)
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("DecodeRequest: %v, want %q", err, tt.wantErr)
			}
		})
	}
	if _, err := order.DecodeRequest([]byte(`{"orderId":`)); err == nil || !strings.Contains(err.Error(), "decode request") {
		t.Errorf("a truncated body: %v, want a decode error", err)
	}
}

func TestDecodeAndCheckReply(t *testing.T) {
	wf := ordertest.OrderWorkflows(order.DefaultTiming).Latest()
	valid := order.StepReply{OrderID: order.NewID(), Step: ordertest.StepChargePayment, Attempt: 2, Outcome: order.OutcomeSucceeded}
	tests := []struct {
		name    string
		change  func(*order.StepReply)
		wantErr string
	}{
		{"valid", func(*order.StepReply) {}, ""},
		{"failed", func(r *order.StepReply) { r.Outcome = order.OutcomeFailed }, ""},
		{"undo of its record", func(r *order.StepReply) { r.Undo, r.Record = true, len(wf.Steps) }, ""},
		{"invalid order id", func(r *order.StepReply) { r.OrderID = "x" }, "invalid orderId"},
		{"attempt 0", func(r *order.StepReply) { r.Attempt = 0 }, "invalid attempt 0"},
		{"unknown outcome", func(r *order.StepReply) { r.Outcome = "maybe" }, `unknown outcome "maybe"`},
		{"a step the workflow lacks", func(r *order.StepReply) { r.Step = "teleport" }, `step "teleport"`},
		{"undo naming a workflow step's record", func(r *order.StepReply) { r.Undo, r.Record = true, 1 }, "undo record 1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rep := valid
			tt.change(&rep)
			body, _ := json.Marshal(rep)
			got, err := order.DecodeReply(body)
			if err == nil {
				err = got.Check(wf)
			}
			if tt.wantErr == "" && err != nil || tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Errorf("DecodeReply and Check: %v, want %q", err, tt.wantErr)
			}
		})
	}
}
