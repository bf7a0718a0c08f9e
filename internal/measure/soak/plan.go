// Package soak is the chaos soak: it runs the local runtime as a child
// process with faults injected into its AWS calls, kills it with SIGKILL
// now and then and starts it again, takes a remote service down for a
// while, submits orders over HTTP (a burst first, then a steady stream),
// and then accounts for every order in the manner of Jepsen's total-queue
// checker: every acknowledged order reached a terminal state, none was
// lost, no remote side effect happened twice (the simulator's ledger, which
// survives the restarts, says), no Failed or Cancelled order left an effect
// in place, each outcome is the one its test values (and the client's
// cancel) call for, and every order that was in Error was alerted. Clients
// cancel some orders and an operator redrives the ones its plan says will
// need it.
package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"

	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// Kind is what a planned order's test values make of it.
type Kind string

// Kinds of planned order.
const (
	Plain     Kind = "plain"     // no test value: must end Processed
	Transient Kind = "transient" // TRANSIENT-2 on one service: Processed
	Slow      Kind = "slow"      // SLOW-1500 on one service: Processed
	Hang      Kind = "hang"      // HANG-1 on one service: Processed after a retry
	Permanent Kind = "permanent" // PERMANENT on one service: Failed, the work before it undone
	// Cancel is SLOW-1500 at payment, and the client cancels it a second
	// after it was acknowledged: Cancelled with every effect undone, or
	// Processed if the cancel came too late (409).
	Cancel Kind = "cancel"
	// UndoFlaky fails at shipping for good and its refund fails twice
	// (UNDO-TRANSIENT-2): Failed, every effect undone.
	UndoFlaky Kind = "undo-flaky"
	// UndoStuck fails at shipping for good and its release is refused once
	// (UNDO-PERMANENT-1): Error with an alert, then the soak's operator
	// redrives it and it ends Failed, every effect undone.
	UndoStuck Kind = "undo-stuck"
)

// Mix is the share of each kind of order; the rest are Plain.
type Mix map[Kind]float64

// DefaultMix mixes every remote fault of the simulator in, with cancels,
// failing undos and redrives.
var DefaultMix = Mix{Transient: 0.05, Slow: 0.03, Hang: 0.02, Permanent: 0.03, Cancel: 0.02, UndoFlaky: 0.01, UndoStuck: 0.01}

// kinds are the planned kinds, in the order Plan draws them.
var kinds = []Kind{Transient, Slow, Hang, Permanent, Cancel, UndoFlaky, UndoStuck}

// Planned is one order of the run and what it must come to.
type Planned struct {
	Key     string               `json:"key"`
	Kind    Kind                 `json:"kind"`
	Service string               `json:"service,omitempty"` // the service its test value names
	Order   ordertest.Submission `json:"-"`
	// Workflow is the workflow it is submitted to: the shipped one
	// (empty), or the checkout example (Checkout), whose input carries
	// the same customer and lines.
	Workflow string `json:"workflow,omitempty"`
}

// Checkout is the four-step example workflow the soak runs beside the
// shipped one (examples/workflows/checkout).
const Checkout = "checkout"

// CheckoutShare is the share of the orders submitted to the checkout
// example, of every kind.
const CheckoutShare = 0.25

// Workflows are what the soak's runtime runs (ORDERLY_WORKFLOWS).
var Workflows = []string{order.LegacyWorkflow, Checkout}

var services = []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping}

// checkoutServices are the checkout example's: the fraud check's too.
var checkoutServices = append([]string{"fraud"}, services...)

// Body is what the order's submission sends: the shipped workflow's input,
// or the checkout example's with an amount, an address and a token.
func (p Planned) Body() []byte {
	if p.Workflow != Checkout {
		body, _ := json.Marshal(p.Order)
		return body
	}
	body, _ := json.Marshal(map[string]any{
		"customerId": p.Order.CustomerID, "lines": p.Order.Lines,
		"amount":          map[string]any{"currency": "EUR", "minorUnits": 1000 + 100*len(p.Order.Lines)},
		"shippingAddress": map[string]any{"name": "Soak", "line1": "1 Test Street", "city": "Dublin", "postalCode": "D01", "country": "IE"},
		"paymentToken":    "tok_soak_" + p.Key[len(p.Key)-6:],
	})
	return body
}

// Path is where the order is submitted.
func (p Planned) Path() string {
	if p.Workflow == "" {
		return "/orders"
	}
	return "/workflows/" + p.Workflow + "/orders"
}

// Plan makes n orders of the mix, repeatably for a seed.
func Plan(n int, mix Mix, seed uint64) []Planned {
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]Planned, n)
	for i := range out {
		p := Planned{Key: fmt.Sprintf("soak-%d-%06d", seed, i), Kind: Plain}
		x, acc := rnd.Float64(), 0.0
		for _, k := range kinds {
			acc += mix[k]
			if x < acc {
				p.Kind = k
				break
			}
		}
		svcs := services
		if rnd.Float64() < CheckoutShare {
			p.Workflow, svcs = Checkout, checkoutServices
		}
		lines := []order.Line{{SKU: fmt.Sprintf("BOOK-%d", rnd.IntN(50)), Quantity: 1 + rnd.IntN(3)}}
		test := func(service, mode string) {
			lines = append(lines, order.Line{SKU: fmt.Sprintf("TEST-%s-%s", upper(service), mode), Quantity: 1})
		}
		switch p.Kind {
		case Plain:
		case Cancel:
			p.Service = ordertest.AgentPayment
			test(p.Service, "SLOW-1500")
		case UndoFlaky:
			p.Service = ordertest.AgentShipping
			test(p.Service, "PERMANENT")
			test(ordertest.AgentPayment, "UNDO-TRANSIENT-2")
		case UndoStuck:
			p.Service = ordertest.AgentShipping
			test(p.Service, "PERMANENT")
			test(ordertest.AgentInventory, "UNDO-PERMANENT-1")
		default:
			p.Service = svcs[rnd.IntN(len(svcs))]
			test(p.Service, map[Kind]string{Transient: "TRANSIENT-2", Slow: "SLOW-1500", Hang: "HANG-1", Permanent: "PERMANENT"}[p.Kind])
		}
		p.Order = ordertest.Submission{CustomerID: fmt.Sprintf("soak-c-%d", rnd.IntN(200)), Lines: lines}
		out[i] = p
	}
	return out
}

func upper(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}
