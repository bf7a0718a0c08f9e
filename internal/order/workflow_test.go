package order_test

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestStepDefAllowanceFor(t *testing.T) {
	tests := []struct {
		name         string
		def          order.StepDef
		failureCount int
		want         time.Duration
	}{
		{"first attempt", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute}, 0, 30 * time.Second},
		{"after one timeout", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute}, 1, time.Minute},
		{"after two timeouts reaches max", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute}, 2, 2 * time.Minute},
		{"after three timeouts stays at max", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute}, 3, 2 * time.Minute},
		{"many timeouts do not overflow", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 2 * time.Minute}, 1000, 2 * time.Minute},
		{"max not a power-of-two multiple", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 100 * time.Second}, 2, 100 * time.Second},
		{"below a non-power-of-two max", order.StepDef{Allowance: 30 * time.Second, MaxAllowance: 100 * time.Second}, 1, time.Minute},
		{"max equals allowance", order.StepDef{Allowance: time.Second, MaxAllowance: time.Second}, 5, time.Second},
		{"max below allowance keeps allowance", order.StepDef{Allowance: time.Minute, MaxAllowance: time.Second}, 2, time.Minute},
		{"negative count is the first attempt", order.StepDef{Allowance: time.Second, MaxAllowance: time.Minute}, -1, time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.def.AllowanceFor(tt.failureCount); got != tt.want {
				t.Errorf("StepDef{Allowance: %s, MaxAllowance: %s}.AllowanceFor(%d) = %s, want %s",
					tt.def.Allowance, tt.def.MaxAllowance, tt.failureCount, got, tt.want)
			}
		})
	}
}

func TestOrderWorkflowUsesTiming(t *testing.T) {
	timing := order.Timing{Allowance: time.Second, MaxAllowance: 4 * time.Second, FailureThreshold: 5, ClaimWithin: 2 * time.Second}
	w := ordertest.OrderWorkflow(timing)
	if w.ClaimWithin != timing.ClaimWithin {
		t.Errorf("ClaimWithin = %s, want %s", w.ClaimWithin, timing.ClaimWithin)
	}
	var gotNames []string
	for _, d := range w.Steps {
		gotNames = append(gotNames, d.Name)
		if d.Allowance != timing.Allowance || d.MaxAllowance != timing.MaxAllowance || d.FailureThreshold != timing.FailureThreshold {
			t.Errorf("step %s = %+v, want the timing %+v", d.Name, d, timing)
		}
	}
	wantNames := []string{ordertest.StepReserveInventory, ordertest.StepChargePayment, ordertest.StepArrangeShipping}
	if !slices.Equal(gotNames, wantNames) {
		t.Errorf("steps = %q, want %q", gotNames, wantNames)
	}
}

func TestWorkflowStep(t *testing.T) {
	w := ordertest.OrderWorkflow(order.DefaultTiming)
	tests := []struct {
		name      string
		wantAgent string
		wantOK    bool
	}{
		{ordertest.StepReserveInventory, ordertest.AgentInventory, true},
		{ordertest.StepChargePayment, ordertest.AgentPayment, true},
		{ordertest.StepArrangeShipping, ordertest.AgentShipping, true},
		{"refund-payment", "", false},
		{"", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := w.Step(tt.name)
			if ok != tt.wantOK || got.Agent != tt.wantAgent || (ok && got.Name != tt.name) {
				t.Errorf("Step(%q) = %+v, %t; want agent %q, %t", tt.name, got, ok, tt.wantAgent, tt.wantOK)
			}
		})
	}
}

func TestWorkflowNext(t *testing.T) {
	w := ordertest.OrderWorkflow(order.DefaultTiming)
	tests := []struct {
		step     string
		wantNext string
		wantOK   bool
	}{
		{ordertest.StepReserveInventory, ordertest.StepChargePayment, true},
		{ordertest.StepChargePayment, ordertest.StepArrangeShipping, true},
		{ordertest.StepArrangeShipping, "", false},
		{"no-such-step", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.step, func(t *testing.T) {
			got, ok := w.Next(tt.step)
			if got.Name != tt.wantNext || ok != tt.wantOK {
				t.Errorf("Next(%q) = %q, %t; want %q, %t", tt.step, got.Name, ok, tt.wantNext, tt.wantOK)
			}
		})
	}
}

func TestWorkflowAgents(t *testing.T) {
	tests := []struct {
		name string
		w    order.Workflow
		want []string
	}{
		{"order workflow", ordertest.OrderWorkflow(order.DefaultTiming), []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping}},
		{"agent used twice listed once in first-use order", order.Workflow{Steps: []order.StepDef{
			{Name: "s1", Agent: "b"}, {Name: "s2", Agent: "a"}, {Name: "s3", Agent: "b"},
		}}, []string{"b", "a"}},
		{"no steps", order.Workflow{}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.w.Agents(); !slices.Equal(got, tt.want) {
				t.Errorf("Agents() = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestWorkflowNewStates(t *testing.T) {
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	w := ordertest.OrderWorkflow(order.DefaultTiming)
	id := order.IDForKey("caller", "", "c-1", "k")
	got := w.NewStates(id, "submit-1", now)
	want := []order.StepState{
		{OrderID: id, Workflow: "order", Version: "1", Step: ordertest.StepReserveInventory, Index: 0, Agent: ordertest.AgentInventory,
			ProcessState: order.Processing, LockedBy: "submit-1", Attempt: 1,
			CompleteBy: now.Add(order.DefaultTiming.Allowance), UpdatedAt: now},
		{OrderID: id, Workflow: "order", Version: "1", Step: ordertest.StepChargePayment, Index: 1, Agent: ordertest.AgentPayment,
			ProcessState: order.NotStarted, UpdatedAt: now},
		{OrderID: id, Workflow: "order", Version: "1", Step: ordertest.StepArrangeShipping, Index: 2, Agent: ordertest.AgentShipping,
			ProcessState: order.NotStarted, UpdatedAt: now},
	}
	if len(got) != len(want) {
		t.Fatalf("NewStates() returned %d states, want %d: %+v", len(got), len(want), got)
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("NewStates()[%d] = %+v, want %+v", i, got[i], want[i])
		}
	}
	if got[1].Expired(now.Add(1000 * time.Hour)) {
		t.Errorf("NotStarted state %+v reports Expired, want a zero CompleteBy never to expire", got[1])
	}

	if got := (order.Workflow{ClaimWithin: time.Minute}).NewStates(id, "submit-1", now); len(got) != 0 {
		t.Errorf("NewStates() of an empty workflow = %+v, want none", got)
	}
}

func TestTimingValidate(t *testing.T) {
	ok := order.DefaultTiming
	with := func(f func(*order.Timing)) order.Timing {
		t := ok
		f(&t)
		return t
	}
	tests := []struct {
		name    string
		timing  order.Timing
		wantErr bool
	}{
		{"default", ok, false},
		{"max equals allowance", with(func(t *order.Timing) { t.MaxAllowance = t.Allowance }), false},
		{"threshold 1", with(func(t *order.Timing) { t.FailureThreshold = 1 }), false},
		{"zero allowance", with(func(t *order.Timing) { t.Allowance = 0 }), true},
		{"negative allowance", with(func(t *order.Timing) { t.Allowance = -time.Second }), true},
		{"max below allowance", with(func(t *order.Timing) { t.MaxAllowance = t.Allowance - 1 }), true},
		{"zero threshold", with(func(t *order.Timing) { t.FailureThreshold = 0 }), true},
		{"zero claim window", with(func(t *order.Timing) { t.ClaimWithin = 0 }), true},
		{"negative claim window", with(func(t *order.Timing) { t.ClaimWithin = -time.Minute }), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.timing.Validate()
			if gotErr := err != nil; gotErr != tt.wantErr {
				t.Fatalf("%+v.Validate() = %v, want error: %t", tt.timing, err, tt.wantErr)
			}
			if err != nil && !errors.Is(err, order.ErrInvalid) {
				t.Errorf("%+v.Validate() = %v, want errors.Is ErrInvalid", tt.timing, err)
			}
		})
	}
}

func TestUndoPlan(t *testing.T) {
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	noUndoForPayment := ordertest.OrderWorkflow(order.DefaultTiming)
	noUndoForPayment.Steps[1].Undo = ""
	tests := []struct {
		name             string
		wf               order.Workflow
		active           int
		activeMayHaveRun bool
		want             []int
	}{
		{"first step refused: nothing to undo", wf, 0, false, nil},
		{"first step timed out: undo it", wf, 0, true, []int{0}},
		{"third step refused: second then first", wf, 2, false, []int{1, 0}},
		{"third step timed out: itself, second, first", wf, 2, true, []int{2, 1, 0}},
		{"cancelled after the last step's success", wf, 2, true, []int{2, 1, 0}},
		{"a step without an undo is left out", noUndoForPayment, 2, false, []int{0}},
		{"index past the end is the whole workflow", wf, 7, false, []int{2, 1, 0}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.wf.UndoPlan(tt.active, tt.activeMayHaveRun); !slices.Equal(got, tt.want) {
				t.Errorf("UndoPlan(%d, %v) = %v, want %v", tt.active, tt.activeMayHaveRun, got, tt.want)
			}
		})
	}
}

func TestNextUndo(t *testing.T) {
	wf := ordertest.OrderWorkflow(order.DefaultTiming)
	wf.Steps[1].Undo = ""
	tests := []struct {
		undid, want int
		ok          bool
	}{
		{2, 0, true}, // step 1 has no undo
		{1, 0, true},
		{0, 0, false},
	}
	for _, tt := range tests {
		if got, ok := wf.NextUndo(tt.undid); got != tt.want || ok != tt.ok {
			t.Errorf("NextUndo(%d) = %d, %t, want %d, %t", tt.undid, got, ok, tt.want, tt.ok)
		}
	}
}

// A request body carries what its call's definition names: the order's
// input beside orderId, and the results of the steps it names that the
// order has.
func TestRequestBodyCarriesWhatTheStepNames(t *testing.T) {
	req := order.StepRequest{
		OrderID: "O1", Input: json.RawMessage(`{"customerId":"c","amount":5}`),
		Results: map[string]json.RawMessage{"fraud": json.RawMessage(`{"id":"f1","score":0.5}`), "charge": json.RawMessage(`{"id":"ch1"}`)},
	}
	legacy := order.StepRequest{OrderID: "O2", LegacyCustomerID: "c2", LegacyLines: []order.Line{{SKU: "A", Quantity: 1}}}
	tests := []struct {
		name string
		req  order.StepRequest
		def  order.StepDef
		undo bool
		want string
	}{
		{"the order", req, order.StepDef{Carries: []string{"order"}}, false, `{"amount":5,"customerId":"c","orderId":"O1"}`},
		{"the order and an earlier result", req, order.StepDef{Carries: []string{"order", "fraud"}}, false,
			`{"amount":5,"customerId":"c","orderId":"O1","results":{"fraud":{"id":"f1","score":0.5}}}`},
		{"a result alone", req, order.StepDef{Carries: []string{"fraud"}}, false, `{"orderId":"O1","results":{"fraud":{"id":"f1","score":0.5}}}`},
		{"an undo carries its own list", req, order.StepDef{Carries: []string{"order"}, UndoCarries: []string{"charge"}}, true,
			`{"orderId":"O1","results":{"charge":{"id":"ch1"}}}`},
		{"a result the order lacks is left out", req, order.StepDef{Carries: []string{"order", "ship"}}, false, `{"amount":5,"customerId":"c","orderId":"O1"}`},
		{"an input's own results never pass as the engine's", order.StepRequest{OrderID: "O3", Input: json.RawMessage(`{"orderId":"X","results":{"charge":{"id":"forged"}}}`)},
			order.StepDef{Carries: []string{"order", "charge"}}, false, `{"orderId":"O3"}`},
		{"a request of an older build", legacy, order.StepDef{Carries: []string{"order"}}, false,
			`{"customerId":"c2","lines":[{"sku":"A","quantity":1}],"orderId":"O2"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.req.Undo = tt.undo
			got, err := tt.req.Body(tt.def)
			if err != nil || string(got) != tt.want {
				t.Errorf("Body() = %s, %v; want %s", got, err, tt.want)
			}
		})
	}
}

// Only results some call carries, or the client is shown, are kept with
// the order; only those the definition shows are shown.
func TestWorkflowKeepsOnlyCarriedOrShownResults(t *testing.T) {
	w := order.Workflow{Steps: []order.StepDef{
		{Name: "fraud", Carries: []string{"order"}},
		{Name: "charge", Carries: []string{"order", "fraud"}, UndoCarries: []string{"charge"}},
		{Name: "ship", Carries: []string{"order"}},
		{Name: "track", Carries: []string{"order"}, ResultShownToClient: true},
	}}
	for _, tt := range []struct {
		step        string
		keeps, show bool
	}{{"fraud", true, false}, {"charge", true, false}, {"ship", false, false}, {"track", true, true}, {"unknown", false, false}} {
		if got := w.Keeps(tt.step); got != tt.keeps {
			t.Errorf("Keeps(%s) = %t, want %t", tt.step, got, tt.keeps)
		}
		if got := w.ShowsResult(tt.step); got != tt.show {
			t.Errorf("ShowsResult(%s) = %t, want %t", tt.step, got, tt.show)
		}
	}
}
