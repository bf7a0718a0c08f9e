package config_test

import (
	"encoding/json"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"testing"

	"orderly/internal/config"
)

// A function that cannot start logs one "cannot start" record with the
// error and exits 1. Main exits the process, so the test runs it in a
// copy of the test binary.
func TestMainCannotStart(t *testing.T) {
	if os.Getenv("ORDERLY_TEST_MAIN") == "1" {
		config.Main("probe", func(*slog.Logger, *config.Env) error { return errors.New("workflows: broken build") })
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestMainCannotStart$")
	cmd.Env = append(os.Environ(), "ORDERLY_TEST_MAIN=1", "AWS_LAMBDA_LOG_FORMAT=")
	out, err := cmd.Output()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 1 {
		t.Fatalf("exit = %v, want status 1", err)
	}
	var record struct{ Level, Msg, Error, Service string }
	if err := json.Unmarshal(out, &record); err != nil {
		t.Fatalf("output %q is not one JSON record: %v", out, err)
	}
	want := struct{ Level, Msg, Error, Service string }{"ERROR", "cannot start", "workflows: broken build", "probe"}
	if record != want {
		t.Errorf("record = %+v, want %+v", record, want)
	}
}
