// Package soak is the chaos soak: it runs the local runtime as a child
// process with faults injected into its AWS calls, kills it with SIGKILL
// now and then and starts it again, takes a remote service down for a
// while, submits orders over HTTP (a burst first, then a steady stream),
// and then accounts for every order in the manner of Jepsen's total-queue
// checker: every acknowledged order reached a terminal state, none was
// lost, no remote side effect happened twice (the simulator's ledger, which
// survives the restarts, says), each outcome is the one its test values
// call for, and every order in Error was alerted.
package soak

import (
	"fmt"
	"math/rand/v2"

	"orderly/internal/order"
)

// Kind is what a planned order's test values make of it.
type Kind string

// Kinds of planned order.
const (
	Plain     Kind = "plain"     // no test value: must end Processed
	Transient Kind = "transient" // TRANSIENT-2 on one service: Processed
	Slow      Kind = "slow"      // SLOW-1500 on one service: Processed
	Hang      Kind = "hang"      // HANG-1 on one service: Processed after a retry
	Permanent Kind = "permanent" // PERMANENT on one service: Error, never Processed
)

// Mix is the share of each kind of order; the rest are Plain.
type Mix map[Kind]float64

// DefaultMix mixes every remote fault of the simulator in.
var DefaultMix = Mix{Transient: 0.05, Slow: 0.03, Hang: 0.02, Permanent: 0.03}

// Planned is one order of the run and what it must come to.
type Planned struct {
	Key     string           `json:"key"`
	Kind    Kind             `json:"kind"`
	Service string           `json:"service,omitempty"` // the service its test value names
	Order   order.Submission `json:"-"`
}

var services = []string{order.AgentInventory, order.AgentPayment, order.AgentShipping}

// Plan makes n orders of the mix, repeatably for a seed.
func Plan(n int, mix Mix, seed uint64) []Planned {
	rnd := rand.New(rand.NewPCG(seed, seed+1))
	out := make([]Planned, n)
	for i := range out {
		p := Planned{Key: fmt.Sprintf("soak-%d-%06d", seed, i), Kind: Plain}
		x, acc := rnd.Float64(), 0.0
		for _, k := range []Kind{Transient, Slow, Hang, Permanent} {
			acc += mix[k]
			if x < acc {
				p.Kind = k
				break
			}
		}
		lines := []order.Line{{SKU: fmt.Sprintf("BOOK-%d", rnd.IntN(50)), Quantity: 1 + rnd.IntN(3)}}
		if p.Kind != Plain {
			p.Service = services[rnd.IntN(len(services))]
			mode := map[Kind]string{Transient: "TRANSIENT-2", Slow: "SLOW-1500", Hang: "HANG-1", Permanent: "PERMANENT"}[p.Kind]
			lines = append(lines, order.Line{SKU: fmt.Sprintf("TEST-%s-%s", upper(p.Service), mode), Quantity: 1})
		}
		p.Order = order.Submission{CustomerID: fmt.Sprintf("soak-c-%d", rnd.IntN(200)), Lines: lines}
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
