package stack_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"orderly/infra/stack"
	"orderly/internal/order"
)

// The Scheduler and the Supervisor read an order's item (GetItem) only
// when a workflow's step starts on the order's data (a condition, a timer
// until a time) or is polled (the Scheduler reads a wait's deadline to
// bound the next check); on the shipped workflow they never do, and so
// are not allowed to.
func TestOrderReadsAreGrantedOnlyToWorkflowsThatMakeThem(t *testing.T) {
	for _, tt := range []struct {
		name  string
		shape func(*order.Workflow)
		want  map[string]bool // role: allowed GetItem on the orders table
	}{
		{name: "the shipped workflow", shape: func(*order.Workflow) {}, want: map[string]bool{"SchedulerRole": false, "SupervisorRole": false}},
		{name: "a condition", shape: func(w *order.Workflow) { w.Steps[2].When = always(true) },
			want: map[string]bool{"SchedulerRole": true, "SupervisorRole": true}},
		{name: "a polled step", shape: func(w *order.Workflow) { w.Steps[1].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute} },
			want: map[string]bool{"SchedulerRole": true, "SupervisorRole": false}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			v := synthVariant(t, "Orderly-reads", map[string]any{stack.CtxStage: "reads"}, tt.shape)
			got := getItemGrants(v)
			for role, want := range tt.want {
				if got[role] != want {
					t.Errorf("%s may GetItem on the orders table: %t, want %t", role, got[role], want)
				}
			}
		})
	}
}

// getItemGrants names the roles v allows dynamodb:GetItem on the orders
// table.
func getItemGrants(v variant) map[string]bool {
	out := map[string]bool{}
	for _, r := range v.ofType("AWS::IAM::Policy") {
		var policy struct {
			Statement []struct {
				Action   any
				Resource any
			}
		}
		raw, _ := json.Marshal(props(r)["PolicyDocument"])
		_ = json.Unmarshal(raw, &policy)
		for _, st := range policy.Statement {
			if !strings.Contains(fmt.Sprint(st.Action), "dynamodb:GetItem") || !strings.Contains(fmt.Sprint(st.Resource), "OrdersTable") {
				continue
			}
			for _, role := range list(props(r)["Roles"]) {
				out[logicalName(describe(role))] = true
			}
		}
	}
	return out
}

// always is a condition that holds, or not, whatever the order's data.
type always bool

func (a always) Bool(order.ExprVars) (bool, error)      { return bool(a), nil }
func (a always) Time(order.ExprVars) (time.Time, error) { return time.Time{}, nil }
func (a always) Results() []string                      { return nil }
func (a always) String() string                         { return fmt.Sprint(bool(a)) }
