package order_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestParseRedrive(t *testing.T) {
	tests := []struct {
		body string
		want string
		ok   bool
	}{
		{``, "", true},
		{`{}`, "", true},
		{`{"action":"retry"}`, order.RedriveRetry, true},
		{`{"action":"compensate"}`, order.RedriveCompensate, true},
		{`{"action":"rewind"}`, "", false},
		{`{"Action":"retry"}`, "", false},
		{`{"action":"retry","action":"compensate"}`, "", false},
		{`{"action":"retry","force":true}`, "", false},
		{`{"action":1}`, "", false},
		{`{"action":"retry"} {}`, "", false},
		{`{"action":"retry"}]`, "", false},
		{`{"action":null}`, "", false},
		{`null`, "", false},
		{`[]`, "", false},
		{`{"action":`, "", false},
		{"{\"action\":\"retry\xff\"}", "", false},
	}
	for _, tt := range tests {
		r, err := order.ParseRedrive([]byte(tt.body))
		if tt.ok != (err == nil) || (tt.ok && r.Action != tt.want) {
			t.Errorf("ParseRedrive(%q) = %+v, %v; want action %q, ok %t", tt.body, r, err, tt.want, tt.ok)
		}
		if err != nil && !errors.Is(err, order.ErrInvalid) {
			t.Errorf("ParseRedrive(%q) error %v does not wrap ErrInvalid", tt.body, err)
		}
	}
}

// A refused redrive body names each problem's field, as a submission's do.
func TestParseRedriveNamesEachProblem(t *testing.T) {
	for _, tt := range []struct {
		body string
		want []order.FieldError
	}{
		{`{"action":"retry","action":"compensate"}`, []order.FieldError{{Field: "action", Problem: "appears more than once"}}},
		{`{"Action":"retry","force":{"x":null}}`, []order.FieldError{{Field: "Action", Problem: "unknown field (names are case-sensitive)"},
			{Field: "force", Problem: "unknown field (names are case-sensitive)"}, {Field: "force.x", Problem: "is null; leave an optional field out instead"}}},
		{`{"action":null}`, []order.FieldError{{Field: "action", Problem: "is null; leave an optional field out instead"}}},
		{`{"action":1}`, []order.FieldError{{Field: "body", Problem: `field "action" must be a string, got number`}}},
		{`{"action":"retry"}]`, []order.FieldError{{Field: "body", Problem: "unexpected data after the JSON object"}}},
		{`{"action":`, []order.FieldError{{Field: "body", Problem: "malformed JSON: unexpected EOF"}}},
	} {
		_, err := order.ParseRedrive([]byte(tt.body))
		var ve *order.ValidationError
		if !errors.As(err, &ve) || !slices.Equal(ve.Fields, tt.want) {
			t.Errorf("ParseRedrive(%q) = %v, want problems %q", tt.body, err, tt.want)
		}
	}
}

func TestParseEmpty(t *testing.T) {
	for body, ok := range map[string]bool{``: true, ` `: true, `{}`: true, `{"reason":"x"}`: false, `[]`: false, `{`: false, `{}]`: false, `null`: false} {
		if err := order.ParseEmpty([]byte(body)); (err == nil) != ok {
			t.Errorf("ParseEmpty(%q) = %v, want ok %t", body, err, ok)
		}
	}
}

// records builds an order's records from "step:State" (workflow steps)
// and "undo step:State" (undo records), each tweaked by the function of
// the same index, if any.
func records(specs []string, tweaks map[int]func(*order.StepState)) []order.StepState {
	agents := map[string]string{ordertest.StepReserveInventory: ordertest.AgentInventory, ordertest.StepChargePayment: ordertest.AgentPayment,
		ordertest.StepArrangeShipping: ordertest.AgentShipping}
	steps := make([]order.StepState, len(specs))
	for i, spec := range specs {
		name, state, _ := strings.Cut(spec, ":")
		undo := strings.HasPrefix(name, "undo ")
		name = strings.TrimPrefix(name, "undo ")
		st := order.StepState{OrderID: "O", Step: name, Index: i, Undo: undo, Agent: agents[name], ProcessState: order.ProcessState(state)}
		if st.ProcessState != order.NotStarted {
			st.Attempt = 1
		}
		if f := tweaks[i]; f != nil {
			f(&st)
		}
		steps[i] = st
	}
	for i := range steps {
		steps[i].CancelRequested = steps[0].CancelRequested
	}
	return steps
}

// What an operator's redrive does, for each way an order can stop in
// Error, and which redrives are refused (with what to do instead). A
// retry never runs an order forward over an undo that may have been done.
func TestPlanRedrive(t *testing.T) {
	stuckStep := []string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Error"}
	stuckUndo := []string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Failed",
		"undo charge-payment:Error", "undo reserve-inventory:NotStarted"}
	timedOut := func(s *order.StepState) { s.Attempt, s.FailureCount = 3, 3 }
	cancelled := func(s *order.StepState) { s.CancelRequested = true }
	tests := []struct {
		name    string
		status  order.Status
		records []string
		tweaks  map[int]func(*order.StepState)
		action  string
		// want is the move; 0 means refused, with an error that wraps
		// wantErr and names what to do instead (refusal).
		want       order.RedriveMove
		wantAction string
		wantStatus order.Status
		wantErr    error
		refusal    string
	}{
		// A workflow step in Error (StopOnFailure, or a step nobody claimed).
		{name: "step refused, default", status: order.StatusError, records: stuckStep,
			want: order.ResumeStuck, wantAction: order.RedriveRetry, wantStatus: order.StatusProcessing},
		{name: "step refused, retry", status: order.StatusError, records: stuckStep, action: order.RedriveRetry,
			want: order.ResumeStuck, wantAction: order.RedriveRetry, wantStatus: order.StatusProcessing},
		{name: "step refused, compensate", status: order.StatusError, records: stuckStep, action: order.RedriveCompensate,
			want: order.UndoFromStuck, wantAction: order.RedriveCompensate},
		{name: "step timed out, retry", status: order.StatusError, records: stuckStep, tweaks: map[int]func(*order.StepState){2: timedOut},
			action: order.RedriveRetry, want: order.ResumeStuck, wantAction: order.RedriveRetry, wantStatus: order.StatusProcessing},
		{name: "first step abandoned, retry", status: order.StatusError,
			records: []string{"reserve-inventory:Error", "charge-payment:NotStarted", "arrange-shipping:NotStarted"},
			action:  order.RedriveRetry, want: order.ResumeStuck, wantAction: order.RedriveRetry, wantStatus: order.StatusPending},
		// An undo in Error.
		{name: "undo refused, default resumes undoing", status: order.StatusError, records: stuckUndo,
			want: order.ResumeStuck, wantAction: order.RedriveCompensate, wantStatus: order.StatusCompensating},
		{name: "undo refused on its only attempt, retry runs forward", status: order.StatusError, records: stuckUndo,
			action: order.RedriveRetry, want: order.RunForward, wantAction: order.RedriveRetry, wantStatus: order.StatusProcessing},
		{name: "undo of the first step refused, retry runs it forward", status: order.StatusError,
			records: []string{"reserve-inventory:Failed", "charge-payment:NotStarted", "arrange-shipping:NotStarted", "undo reserve-inventory:Error"},
			action:  order.RedriveRetry, want: order.RunForward, wantAction: order.RedriveRetry, wantStatus: order.StatusPending},
		{name: "undo never claimed (abandoned), retry runs forward", status: order.StatusError, records: stuckUndo,
			tweaks: map[int]func(*order.StepState){3: func(s *order.StepState) { s.Attempt, s.Nudges = 0, 8 }},
			action: order.RedriveRetry, want: order.RunForward, wantAction: order.RedriveRetry, wantStatus: order.StatusProcessing},
		{name: "undo timed out, retry refused", status: order.StatusError, records: stuckUndo, tweaks: map[int]func(*order.StepState){3: timedOut},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `may have been done`},
		{name: "undo timed out, compensate resumes it", status: order.StatusError, records: stuckUndo, tweaks: map[int]func(*order.StepState){3: timedOut},
			action: order.RedriveCompensate, want: order.ResumeStuck, wantAction: order.RedriveCompensate, wantStatus: order.StatusCompensating},
		{name: "undo refused after a timeout, retry refused", status: order.StatusError, records: stuckUndo,
			tweaks: map[int]func(*order.StepState){3: func(s *order.StepState) { s.Attempt, s.FailureCount = 2, 1 }},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `may have been done`},
		{name: "undo refused after a redrive reset its timeouts, retry refused", status: order.StatusError, records: stuckUndo,
			tweaks: map[int]func(*order.StepState){3: func(s *order.StepState) { s.Attempt, s.FailureCount, s.PastFailures = 4, 0, 3 }},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `may have been done`},
		{name: "undo abandoned after a timeout, retry refused", status: order.StatusError, records: stuckUndo,
			tweaks: map[int]func(*order.StepState){3: func(s *order.StepState) { s.FailureCount, s.Nudges = 1, 8 }},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `may have been done`},
		{name: "undo abandoned after its request could not be sent, retry refused", status: order.StatusError, records: stuckUndo,
			tweaks: map[int]func(*order.StepState){3: func(s *order.StepState) { s.Releases, s.Nudges = 1, 8 }},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `may have been done`},
		{name: "second undo stuck: work already undone, retry refused", status: order.StatusError,
			records: []string{"reserve-inventory:Processed", "charge-payment:Undone", "arrange-shipping:Failed",
				"undo charge-payment:Processed", "undo reserve-inventory:Error"},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `already undone`},
		{name: "cancelled order's undo, retry refused", status: order.StatusError, records: stuckUndo, tweaks: map[int]func(*order.StepState){0: cancelled},
			action: order.RedriveRetry, wantErr: order.ErrNotAllowed, refusal: `cancelled`},
		{name: "cancelled order's undo, default resumes it Cancelling", status: order.StatusError, records: stuckUndo, tweaks: map[int]func(*order.StepState){0: cancelled},
			want: order.ResumeStuck, wantAction: order.RedriveCompensate, wantStatus: order.StatusCancelling},
		// Not in Error, or nothing to redrive.
		{name: "processing order", status: order.StatusProcessing, records: []string{"reserve-inventory:Processed", "charge-payment:Processing", "arrange-shipping:NotStarted"},
			wantErr: order.ErrNotAllowed, refusal: "Processing"},
		{name: "unknown action", status: order.StatusError, records: stuckStep, action: "rewind", wantErr: order.ErrInvalid, refusal: "rewind"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := records(tt.records, tt.tweaks)
			p, err := order.PlanRedrive(tt.status, steps, tt.action)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.refusal) {
					t.Fatalf("PlanRedrive(%q) = %+v, %v; want an error wrapping %v that says %q", tt.action, p, err, tt.wantErr, tt.refusal)
				}
				if errors.Is(err, order.ErrNotAllowed) && tt.status == order.StatusError && !strings.Contains(err.Error(), `"compensate"`) {
					t.Errorf("refusal %q does not say to redrive with \"compensate\" instead", err)
				}
				return
			}
			if err != nil || p.Move != tt.want || p.Action != tt.wantAction || p.Status != tt.wantStatus {
				t.Fatalf("PlanRedrive(%q) = move %v action %q status %q, %v; want move %v action %q status %q",
					tt.action, p.Move, p.Action, p.Status, err, tt.want, tt.wantAction, tt.wantStatus)
			}
			if stuck := steps[p.Stuck.Index]; stuck.ProcessState != order.Error || p.Stuck.Step != stuck.Step {
				t.Errorf("stuck record %d %s is %s, want the record in Error", p.Stuck.Index, p.Stuck.Step, stuck.ProcessState)
			}
			if p.Move == order.RunForward && (p.Forward.Undo || p.Forward.ProcessState != order.Failed) {
				t.Errorf("forward step %+v, want the Failed workflow step", p.Forward)
			}
			if p.What == "" {
				t.Error("the plan does not say what it does")
			}
		})
	}
}

// Running forward drops the undo records; the floor it leaves is at least
// every attempt they reached, so the undo records of a later compensation
// number their attempts above them.
func TestPlanRedriveForwardRaisesTheUndoFloor(t *testing.T) {
	stuckUndo := []string{"reserve-inventory:Processed", "charge-payment:Processed", "arrange-shipping:Failed",
		"undo charge-payment:Error", "undo reserve-inventory:NotStarted"}
	tests := []struct {
		name      string
		floor     int
		attempt   int
		wantFloor int
	}{
		{"first forward redrive", 0, 1, 1},
		{"the dropped undo went on from an earlier floor", 1, 2, 2},
		{"an earlier floor above the dropped attempts stays", 5, 0, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := records(stuckUndo, map[int]func(*order.StepState){3: func(s *order.StepState) { s.Attempt = tt.attempt }})
			for i := range steps {
				steps[i].UndoFloor = tt.floor
			}
			p, err := order.PlanRedrive(order.StatusError, steps, order.RedriveRetry)
			if err != nil || p.Move != order.RunForward || p.UndoFloor != tt.wantFloor {
				t.Errorf("PlanRedrive() = %v floor %d, %v; want forward with floor %d", p.Move, p.UndoFloor, err, tt.wantFloor)
			}
		})
	}
}
