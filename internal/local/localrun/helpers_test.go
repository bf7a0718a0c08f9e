package localrun

import (
	"log/slog"
	"testing"
	"time"
)

// testLogger writes to the test's own output, so logs show only for failing
// or verbose tests.
func testLogger(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// eventually polls cond until it holds or timeout passes, and then fails
// with describe's account of what was seen, taken at that moment.
func eventually(t *testing.T, timeout time.Duration, cond func() bool, describe func() string) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("after %s: %s", timeout, describe())
		}
		time.Sleep(20 * time.Millisecond)
	}
}
