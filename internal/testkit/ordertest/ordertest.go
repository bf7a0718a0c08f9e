// Package ordertest is the shipped order workflow in Go, for tests and the
// tools that drive it (the soak, the cost run, the simulator, which stands
// for its services): its steps, agents and calls, and the shape of its
// input. What ships is the file workflows/order/v1.json; package
// definition's tests hold the two equal. Built reads the files themselves,
// as a stage runs them. Nothing in the engine uses this package: the
// engine runs whatever the definitions say.
package ordertest

import (
	"fmt"

	"orderly/internal/definition"
	"orderly/internal/order"
)

// Agents of the shipped order workflow.
const (
	AgentInventory = "inventory"
	AgentPayment   = "payment"
	AgentShipping  = "shipping"
)

// Steps of the shipped order workflow.
const (
	StepReserveInventory = "reserve-inventory"
	StepChargePayment    = "charge-payment"
	StepArrangeShipping  = "arrange-shipping"
)

// OrderWorkflow returns the shipped three-step order workflow, version 1,
// as Go, for the domain's own tests and test worlds. What ships is the file
// workflows/order/v1.json (package definition loads it); its tests hold the
// two equal for any timing.
func OrderWorkflow(t order.Timing) order.Workflow {
	step := func(name, agent, path, undo, undoPath string) order.StepDef {
		return order.StepDef{Name: name, Agent: agent, Undo: undo, Allowance: t.Allowance,
			MaxAllowance: t.MaxAllowance, FailureThreshold: t.FailureThreshold, MaxHeartbeats: t.MaxHeartbeats,
			Call: order.Endpoint{Method: "POST", Path: path}, UndoCall: order.Endpoint{Method: "POST", Path: undoPath},
			Carries: []string{order.CarriesOrder}, UndoCarries: []string{order.CarriesOrder}, ResultMaxBytes: order.DefaultResultMaxBytes}
	}
	return order.Workflow{
		Name:    order.LegacyWorkflow,
		Version: "1",
		Steps: []order.StepDef{
			step(StepReserveInventory, AgentInventory, "/inventory/reservations", "release the reservation", "/inventory/releases"),
			step(StepChargePayment, AgentPayment, "/payment/charges", "refund the payment", "/payment/refunds"),
			step(StepArrangeShipping, AgentShipping, "/shipping/shipments", "cancel the shipment", "/shipping/cancellations"),
		},
		ClaimWithin: t.ClaimWithin,
		SkewGrace:   t.SkewGrace,
	}
}

// OrderWorkflows returns the shipped workflow versions: version 1, the
// three-step order workflow. To change the workflow, add a version (copy
// the latest, change it, give it the next number) and keep the old ones
// until `orderly versions` shows no order uses them (docs/operations.md, Rolling out a new workflow version).
func OrderWorkflows(t order.Timing) order.Versions {
	return order.MustVersions(OrderWorkflow(t))
}

// Built returns the workflows built into the binary, read from their
// files as a stage runs them, with the timing t: those named, the first
// the default, or every one under workflows/ with the shipped default when
// none is. It is for tests and tools, whose build embeds the files: an
// error is a broken build, so it panics.
func Built(t order.Timing, names ...string) order.Versions {
	def := definition.ShippedWorkflow
	if len(names) > 0 {
		def = names[0]
	}
	v, err := definition.Deployed(t, names, def, "")
	if err != nil {
		panic(fmt.Sprintf("the built-in workflows %v: %v", names, err))
	}
	return v
}

// Submission is the shipped order workflow's input, as the tools that
// submit orders of it (the soak, the cost run, test worlds) write it. The
// API itself checks every workflow's input against its definition's input
// schema (ParseInput).
type Submission struct {
	CustomerID string       `json:"customerId"`
	Lines      []order.Line `json:"lines"`
	// NotificationTarget names where progress reports should go; it is
	// stored now and used by a later feature.
	NotificationTarget string `json:"notificationTarget,omitempty"`
}
