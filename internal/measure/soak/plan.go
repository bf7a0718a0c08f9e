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
// need it; an operator may also pause one service for a maintenance
// window (PauseWindow), which must hold its orders without a call to it,
// a failed order or an alert.
package soak

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"orderly/internal/local/simulator"
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

// Kinds of order of the fulfilment example (examples/workflows/fulfilment),
// whose steps wait: for a fraud analyst's review when the screen flags
// the customer, for the payment service's and the warehouse's callbacks,
// and for the carrier's delivery. The soak's simulator plays every party.
const (
	// Fulfil is flagged, its review approved, its callbacks on time:
	// Processed.
	Fulfil Kind = "fulfil"
	// FulfilTwice has its service send each success twice
	// (CALLBACK-TWICE): Processed, the work done once.
	FulfilTwice Kind = "fulfil-twice"
	// FulfilLate has its service call back the first call only after its
	// wait ended (CALLBACK-LATE): that callback is answered 410, the call
	// is made again with the same Idempotency-Key, and the order ends
	// Processed with the work done once.
	FulfilLate Kind = "fulfil-late"
	// FulfilWorking has its service send a heartbeat first
	// (CALLBACK-WORKING): Processed.
	FulfilWorking Kind = "fulfil-working"
	// FulfilOutOfOrder has its service send a heartbeat after the success
	// (CALLBACK-OUT-OF-ORDER): Processed.
	FulfilOutOfOrder Kind = "fulfil-out-of-order"
	// FulfilRejected is flagged and its review rejected
	// (TEST-REVIEW-REJECT): Failed, nothing left in place.
	FulfilRejected Kind = "fulfil-rejected"
	// FulfilCancel's carrier never confirms (TEST-CARRIER-SILENT), and the
	// client cancels it once it waits: Cancelled, every effect undone.
	FulfilCancel Kind = "fulfil-cancel"
)

// Mix is the share of each kind of order; the rest are Plain.
type Mix map[Kind]float64

// DefaultMix mixes every remote fault of the simulator in, with cancels,
// failing undos and redrives, and orders of the fulfilment example that
// wait, with every kind of callback and review.
var DefaultMix = Mix{Transient: 0.05, Slow: 0.03, Hang: 0.02, Permanent: 0.03, Cancel: 0.02, UndoFlaky: 0.01, UndoStuck: 0.01,
	Fulfil: 0.03, FulfilTwice: 0.025, FulfilLate: 0.025, FulfilWorking: 0.025, FulfilOutOfOrder: 0.025, FulfilRejected: 0.025, FulfilCancel: 0.025}

// kinds are the planned kinds, in the order Plan draws them.
var kinds = []Kind{Transient, Slow, Hang, Permanent, Cancel, UndoFlaky, UndoStuck,
	Fulfil, FulfilTwice, FulfilLate, FulfilWorking, FulfilOutOfOrder, FulfilRejected, FulfilCancel}

// callbackModes are the fulfilment kinds that set how a service calls
// back, and the test value's mode that does.
var callbackModes = map[Kind]string{FulfilTwice: "CALLBACK-TWICE", FulfilLate: "CALLBACK-LATE", FulfilWorking: "CALLBACK-WORKING", FulfilOutOfOrder: "CALLBACK-OUT-OF-ORDER"}

// Fulfilment reports whether the kind is an order of the fulfilment
// example.
func (k Kind) Fulfilment() bool { return strings.HasPrefix(string(k), string(Fulfil)) }

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

// Fulfilment is the example whose steps wait (examples/workflows/fulfilment),
// which the soak runs beside the others, its parties played by the
// simulator.
const Fulfilment = simulator.FulfilmentWorkflow

// Workflows are what the soak's runtime runs (ORDERLY_WORKFLOWS).
var Workflows = []string{order.LegacyWorkflow, Checkout, Fulfilment}

var services = []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping}

// callbackServices are the fulfilment example's services that call back.
var callbackServices = []string{"payment", "warehouse"}

// flagged is the prefix of the customers the fulfilment example's fraud
// screen flags for review (see package simulator).
const flagged = "TEST-FLAGGED-"

// checkoutServices are the checkout example's: the fraud check's too.
var checkoutServices = append([]string{"fraud"}, services...)

// Body is what the order's submission sends: the shipped workflow's input,
// or the checkout example's with an amount, an address and a token.
func (p Planned) Body() []byte {
	switch p.Workflow {
	case Fulfilment:
		body, _ := json.Marshal(map[string]any{
			"customerId": p.Order.CustomerID, "lines": p.Order.Lines,
			"amount": map[string]any{"currency": "EUR", "minorUnits": 1000 + 100*len(p.Order.Lines)},
		})
		return body
	case "":
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
		customer := fmt.Sprintf("soak-c-%d", rnd.IntN(200))
		if p.Kind.Fulfilment() {
			// The review runs for a flagged customer: always for Fulfil
			// and FulfilRejected, for every other order of the example
			// by a toss.
			p.Workflow = Fulfilment
			if p.Kind == Fulfil || p.Kind == FulfilRejected || rnd.IntN(2) == 0 {
				customer = flagged + customer
			}
		}
		switch p.Kind {
		case Plain, Fulfil:
		case FulfilTwice, FulfilLate, FulfilWorking, FulfilOutOfOrder:
			p.Service = callbackServices[rnd.IntN(len(callbackServices))]
			test(p.Service, callbackModes[p.Kind])
		case FulfilRejected:
			lines = append(lines, order.Line{SKU: "TEST-REVIEW-REJECT", Quantity: 1})
		case FulfilCancel:
			lines = append(lines, order.Line{SKU: "TEST-CARRIER-SILENT", Quantity: 1})
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
		p.Order = ordertest.Submission{CustomerID: customer, Lines: lines}
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
