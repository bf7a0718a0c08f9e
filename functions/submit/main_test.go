package main

import (
	"io"
	"log/slog"
	"strings"
	"testing"

	"orderly/internal/config"
	"orderly/internal/resources"
)

// An empty environment names every variable submission needs in one
// error, before anything is built or started.
func TestRunReportsEveryMissingVariable(t *testing.T) {
	err := run(slog.New(slog.NewTextHandler(io.Discard, nil)), config.FromMap(nil))
	if err == nil {
		t.Fatal("run() = nil, want an error naming the missing variables")
	}
	for _, name := range []string{resources.EnvOrdersTable, resources.EnvHistoryTable, resources.EnvPageTokenSecret} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("run() = %q, want it to name %s", err, name)
		}
	}
}
