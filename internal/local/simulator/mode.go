package simulator

import (
	"strings"
	"time"

	"orderly/internal/order"
)

// maxSlow caps SLOW-<MS>, so a typo cannot hold a request for hours.
const maxSlow = 60 * time.Second

type behaviour int

const (
	normal behaviour = iota
	transient
	permanent
	hang
	slow
	// unknown answers 404, as a REST service does for an entity it
	// does not know (an unknown SKU).
	unknown
)

// mode is how a service treats one order, chosen by a test SKU.
type mode struct {
	name string // the MODE part of the SKU, or "normal"
	behaviour
	// calls is how many calls TRANSIENT-<N>, PERMANENT-<N> and HANG-<N>
	// affect; -1 is every call.
	calls int
	delay time.Duration
}

// affects reports whether the n-th call (from 1) for a key misbehaves.
func (m mode) affects(n int) bool {
	switch m.behaviour {
	case slow:
		return true
	case permanent, hang, unknown:
		return m.calls < 0 || n <= m.calls
	case transient:
		return n <= m.calls
	}
	return false
}

// modeFor returns the mode the order's lines ask of service's work, or,
// with undo, of its undo: TEST-<SERVICE>-UNDO-<MODE>.
func modeFor(service string, lines []order.Line, undo bool) mode {
	prefix := "TEST-" + strings.ToUpper(service) + "-"
	if undo {
		prefix += "UNDO-"
	}
	for _, l := range lines {
		if rest, ok := strings.CutPrefix(l.SKU, prefix); ok {
			if m, ok := parseMode(rest); ok {
				return m
			}
		}
	}
	return mode{name: "normal", behaviour: normal}
}

// parseMode reads the MODE part of a test SKU.
func parseMode(s string) (mode, bool) {
	m := mode{name: s}
	switch {
	case s == "PERMANENT":
		m.behaviour, m.calls = permanent, -1
	case s == "HANG":
		m.behaviour, m.calls = hang, -1
	case s == "UNKNOWN":
		m.behaviour, m.calls = unknown, -1
	default:
		kind, arg, ok := strings.Cut(s, "-")
		n, isCount := count(arg)
		if !ok || !isCount {
			return mode{}, false
		}
		switch kind {
		case "TRANSIENT":
			m.behaviour, m.calls = transient, n
		case "PERMANENT":
			m.behaviour, m.calls = permanent, n
		case "HANG":
			m.behaviour, m.calls = hang, n
		case "SLOW":
			m.behaviour, m.delay = slow, min(time.Duration(n)*time.Millisecond, maxSlow)
		default:
			return mode{}, false
		}
	}
	return m, true
}

// count parses a non-empty run of decimal digits, saturating rather than
// overflowing: every use of it is capped far below the saturation point.
func count(s string) (int, bool) {
	const saturated = 1 << 30
	if s == "" {
		return 0, false
	}
	n := 0
	for _, r := range s {
		if r < '0' || r > '9' {
			return 0, false
		}
		n = min(n*10+int(r-'0'), saturated)
	}
	return n, true
}
