package order_test

import (
	"errors"
	"slices"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestVersions(t *testing.T) {
	v1 := ordertest.OrderWorkflow(order.DefaultTiming)
	v2 := v1
	v2.Version = "2"
	v2.Steps = append(slices.Clone(v1.Steps), order.StepDef{Name: "notify", Agent: "mailer", Allowance: 1, MaxAllowance: 1, FailureThreshold: 1})
	vs, err := order.NewVersions(v1, v2)
	if err != nil {
		t.Fatal(err)
	}
	if vs.Latest().Version != "2" {
		t.Errorf("latest %s, want the last given", vs.Latest().Version)
	}
	for _, tt := range []struct {
		version string
		want    string
		ok      bool
	}{{"1", "1", true}, {"", "1", true}, {"2", "2", true}, {"3", "", false}} {
		w, ok := vs.Get("", tt.version)
		if ok != tt.ok || w.Version != tt.want {
			t.Errorf("Get(%q) = version %q, %t; want %q, %t", tt.version, w.Version, ok, tt.want, tt.ok)
		}
	}
	if got := vs.Agents(); !slices.Equal(got, []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping, "mailer"}) {
		t.Errorf("agents %v, want every version's, each once", got)
	}
	if got := vs.Known(); !slices.Equal(got, []string{"order/1", "order/2"}) {
		t.Errorf("known %v", got)
	}
	for name, wfs := range map[string][]order.Workflow{
		"none":            nil,
		"a version twice": {v1, v1},
		"no version":      {{Steps: v1.Steps}},
		"no steps":        {{Version: "9"}},
	} {
		if _, err := order.NewVersions(wfs...); !errors.Is(err, order.ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", name, err)
		}
	}
	// Orders written before versions existed carry none: they run under
	// version 1, which stays until `orderly versions` shows none left.
	if _, ok := ordertest.OrderWorkflows(order.DefaultTiming).Get("", order.LegacyVersion); !ok {
		t.Error("the shipped versions lack version 1, which orders without a version run under")
	}
}

// The rehearsal is a version change of the kinds that strand orders in an
// engine without versions: a step renamed, allowances changed.
func TestRehearsal(t *testing.T) {
	shipped := ordertest.OrderWorkflows(order.DefaultTiming)
	vs := order.WithRehearsal(shipped)
	r := vs.Latest()
	base, _ := vs.Get("", order.LegacyVersion)
	if r.Version != base.Version+".rehearsal" || !slices.Equal(vs.Known(), []string{order.Ref(base.Name, base.Version), order.Ref(r.Name, r.Version)}) {
		t.Fatalf("versions %v, latest %q; want %s and its rehearsal, the latest", vs.Known(), r.Version, base.Version)
	}
	var names []string
	for i, d := range r.Steps {
		names = append(names, d.Name)
		b := base.Steps[i]
		if d.Agent != b.Agent || d.Undo != b.Undo || d.Allowance != 2*b.Allowance || d.MaxAllowance != 2*b.MaxAllowance {
			t.Errorf("step %d: %+v, want %+v with its allowances doubled", i, d, b)
		}
	}
	want := []string{ordertest.StepReserveInventory, ordertest.StepChargePayment + "-rehearsal", ordertest.StepArrangeShipping}
	if !slices.Equal(names, want) {
		t.Errorf("steps %v, want %v", names, want)
	}
	if base.Steps[1].Name != ordertest.StepChargePayment {
		t.Errorf("the rehearsal renamed version %s's step too: %v", base.Version, base.Steps)
	}
}

// Several workflows run side by side, each with its versions and latest;
// the first given is the stage's default.
func TestVersionsOfSeveralWorkflows(t *testing.T) {
	o1 := ordertest.OrderWorkflow(order.DefaultTiming)
	o2 := o1
	o2.Version = "2"
	c1 := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{{Name: "fraud-check", Agent: "fraud", Allowance: 1, MaxAllowance: 1, FailureThreshold: 1}}}
	// A workflow that starts with a timer has no first agent.
	h1 := order.Workflow{Name: "hold", Version: "1", Steps: []order.StepDef{{Name: "cool-off", Wait: &order.Wait{For: time.Minute}}, c1.Steps[0]}}
	vs, err := order.NewVersions(o1, c1, o2, h1)
	if err != nil {
		t.Fatal(err)
	}
	if vs.Default() != "order" || vs.Latest().Version != "2" || !slices.Equal(vs.Names(), []string{"order", "checkout", "hold"}) {
		t.Errorf("default %s, latest %s, names %v; want order, 2, [order checkout]", vs.Default(), vs.Latest().Version, vs.Names())
	}
	if w, ok := vs.LatestOf("checkout"); !ok || w.Version != "1" {
		t.Errorf("LatestOf(checkout) = %s, %t", w.Version, ok)
	}
	if _, ok := vs.LatestOf("nope"); ok {
		t.Error("LatestOf(nope) found a workflow")
	}
	for _, tt := range []struct {
		workflow, version string
		ok                bool
	}{{"", "1", true}, {"order", "2", true}, {"checkout", "1", true}, {"checkout", "2", false}, {"other", "1", false}} {
		if _, ok := vs.Get(tt.workflow, tt.version); ok != tt.ok {
			t.Errorf("Get(%q, %q) found %t, want %t", tt.workflow, tt.version, ok, tt.ok)
		}
	}
	if got := vs.FirstAgents(); !slices.Equal(got, []string{ordertest.AgentInventory, "fraud"}) {
		t.Errorf("first agents %v", got)
	}
	if _, err := order.NewVersions(o1, c1, c1); !errors.Is(err, order.ErrInvalid) {
		t.Errorf("a workflow's version twice: %v, want ErrInvalid", err)
	}
}

// The rehearsal renames its middle step where steps carry its result too.
func TestRehearsalRenamesWhatCarriesTheStep(t *testing.T) {
	w := order.Workflow{Name: "checkout", Version: "1", Steps: []order.StepDef{
		{Name: "a", Carries: []string{"order"}},
		{Name: "b", Carries: []string{"order", "a"}, UndoCarries: []string{"b"}},
		{Name: "c", Carries: []string{"order", "b"}},
	}}
	r := order.Rehearsal(w)
	if got := r.Steps[1].UndoCarries; !slices.Equal(got, []string{"b-rehearsal"}) {
		t.Errorf("the renamed step's undo carries %v, want its own new name", got)
	}
	if got := r.Steps[2].Carries; !slices.Equal(got, []string{"order", "b-rehearsal"}) || !r.Keeps("b-rehearsal") {
		t.Errorf("the next step carries %v, want the renamed step's result", got)
	}
	if !slices.Equal(w.Steps[2].Carries, []string{"order", "b"}) {
		t.Errorf("the rehearsal changed the original: %v", w.Steps[2].Carries)
	}
}

// A stage reads orders' items only when a step after the first starts on
// the order's data, and polls only when a step's service is polled.
func TestVersionsSayWhetherTheyReadOrdersAndPoll(t *testing.T) {
	base := ordertest.OrderWorkflow(order.DefaultTiming)
	tests := []struct {
		name        string
		shape       func(w *order.Workflow)
		reads, poll bool
	}{
		{"plain", func(*order.Workflow) {}, false, false},
		{"a condition on the first step", func(w *order.Workflow) { w.Steps[0].When = holds(true) }, false, false},
		{"a condition after it", func(w *order.Workflow) { w.Steps[1].When = holds(true) }, true, false},
		{"a timer until a time", func(w *order.Workflow) {
			w.Steps = slices.Insert(w.Steps, 1, order.StepDef{Name: "hold", Wait: &order.Wait{Until: holds(true), Max: time.Hour}})
		}, true, false},
		{"a polled step", func(w *order.Workflow) { w.Steps[2].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute} }, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := base
			w.Steps = slices.Clone(base.Steps)
			tt.shape(&w)
			v := order.MustVersions(w)
			if v.ReadsOrders() != tt.reads || v.Polls() != tt.poll {
				t.Errorf("ReadsOrders %t, Polls %t; want %t, %t", v.ReadsOrders(), v.Polls(), tt.reads, tt.poll)
			}
		})
	}
}
