package simulator

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// Effect is one piece of remote work done: a reservation made, a card
// charged, a shipment arranged; or, with Undo, the undo of the work done
// under Key (Undid is its reference, empty when there was none and the key
// was only fenced off). The ledger keeps one line per effect.
type Effect struct {
	Service     string    `json:"service"`
	Key         string    `json:"key"`
	OrderID     string    `json:"orderId"`
	Fingerprint string    `json:"fingerprint,omitempty"`
	Reference   string    `json:"reference"`
	Undo        bool      `json:"undo,omitempty"`
	Undid       string    `json:"undid,omitempty"`
	At          time.Time `json:"at"`
	// Call, on a line that records no effect, is the number of a call for
	// Key that a counted test value (TRANSIENT-<N>, PERMANENT-<N>,
	// HANG-<N>) answered, so a restarted simulator goes on counting
	// instead of failing the first N calls again.
	Call int `json:"call,omitempty"`
}

// ledger appends effects to a file, each written and synced before the
// call is answered, so the record of remote work outlives any crash of the
// process that holds the simulator, and a restarted simulator still knows
// which keys it has served.
type ledger struct {
	f *os.File
}

// WithLedger keeps the record of work done in the file at path (JSON
// lines): effects found there are known as done when the simulator
// starts, and each new effect is appended before it is answered.
func WithLedger(path string) Option {
	return func(s *Server) { s.ledgerPath = path }
}

func (s *Server) openLedger() error {
	effects, err := readLedger(s.ledgerPath)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	for _, e := range effects {
		ck := callKey{e.Service, e.Key}
		st, ok := s.keys[ck]
		if !ok {
			st = &keyState{}
			s.keys[ck] = st
		}
		if st.orderID == "" {
			st.orderID = e.OrderID
		}
		switch {
		case e.Call > 0 && e.Undo:
			st.undoCalls = max(st.undoCalls, e.Call)
		case e.Call > 0:
			st.calls = max(st.calls, e.Call)
			if st.fingerprint == "" {
				st.fingerprint = e.Fingerprint
			}
		case e.Undo:
			st.undoRef = e.Reference
		default:
			st.fingerprint, st.reference = e.Fingerprint, e.Reference
			s.refs[e.Reference] = ck
		}
	}
	if err := os.MkdirAll(filepath.Dir(s.ledgerPath), 0o755); err != nil {
		return fmt.Errorf("ledger directory: %w", err)
	}
	f, err := os.OpenFile(s.ledgerPath, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return fmt.Errorf("open ledger: %w", err)
	}
	s.ledger = &ledger{f: f}
	return nil
}

func (l *ledger) append(e Effect) error {
	line, err := json.Marshal(e)
	if err != nil {
		return err
	}
	if _, err := l.f.Write(append(line, '\n')); err != nil {
		return fmt.Errorf("append to ledger: %w", err)
	}
	return l.f.Sync()
}

// ReadLedger returns every effect recorded in the ledger at path. A last
// line cut short by a crash is ignored: its call was never answered.
func ReadLedger(path string) ([]Effect, error) {
	lines, err := readLedger(path)
	var effects []Effect
	for _, e := range lines {
		if e.Call == 0 {
			effects = append(effects, e)
		}
	}
	return effects, err
}

// readLedger returns every line: effects and call counts.
func readLedger(path string) ([]Effect, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Effect
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var e Effect
		if json.Unmarshal(sc.Bytes(), &e) == nil && e.Key != "" {
			out = append(out, e)
		}
	}
	return out, sc.Err()
}
