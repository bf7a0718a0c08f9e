package testenv

import (
	"bytes"
	"encoding/json"
	"strings"
	"sync"
	"testing"
)

// JSONLines collects JSON lines (slog records, EMF metrics) that many
// goroutines write, for a test to read back.
type JSONLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (j *JSONLines) Write(p []byte) (int, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.Write(p)
}

// String is everything written so far.
func (j *JSONLines) String() string {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.buf.String()
}

// Records decodes every line written so far; a line that is not a JSON
// object fails the test.
func (j *JSONLines) Records(t testing.TB) []map[string]any {
	t.Helper()
	var recs []map[string]any
	for line := range strings.Lines(j.String()) {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("JSON line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	return recs
}
