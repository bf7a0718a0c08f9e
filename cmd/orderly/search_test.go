package main

import (
	"context"
	"strings"
	"testing"
	"time"
)

func TestTimeParam(t *testing.T) {
	now := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		flag, value, want string
		wantErr           bool
	}{
		{"created-from", "2026-11-26", "2026-11-26T00:00:00Z", false},
		{"created-to", "48h", "2026-11-25T12:00:00Z", false},
		{"ended-from", "2026-11-26T08:00:00+01:00", "2026-11-26T08:00:00+01:00", false},
		{"ended-to", "yesterday", "", true},
		{"created-from", "-1h", "", true},
		{"customer", "48h", "48h", false}, // not a time flag
	}
	for _, tt := range tests {
		got, err := timeParam(tt.flag, tt.value, now)
		if (err != nil) != tt.wantErr || got != tt.want {
			t.Errorf("timeParam(%s, %q) = %q, %v; want %q, error %t", tt.flag, tt.value, got, err, tt.want, tt.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--"+tt.flag) {
			t.Errorf("error %q does not name --%s", err, tt.flag)
		}
	}
}

// A bad filter is a usage error naming the flag, before any AWS call.
func TestSearchUsageErrors(t *testing.T) {
	for _, args := range [][]string{
		{"search", "--status", "Done"},
		{"search", "--created-from", "soon"},
		{"search", "--created-from", "2026-11-27", "--created-to", "2026-11-26"},
		{"search", "--max", "0"},
		{"search", "stray"},
	} {
		var out, errOut strings.Builder
		code := run(context.Background(), args, &out, &errOut)
		if code != 2 {
			t.Errorf("%q: exit %d (%s), want 2", args, code, errOut.String())
		}
		if strings.Contains(errOut.String(), "query parameter") {
			t.Errorf("%q: %s names a query parameter, not the flag", args, errOut.String())
		}
	}
}
