package localrun

import (
	"context"
	"crypto/rand"
	"net"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
)

// emulatorEnv is what `localstack/emulators.sh env` prints. Integration
// tests fill in whichever of these the environment leaves unset, so that
// ORDERLY_INTEGRATION=1 alone points the SDK at the emulators and never at
// a real account.
var emulatorEnv = map[string]string{
	"AWS_ENDPOINT_URL":                  "http://127.0.0.1:5000",
	"AWS_ENDPOINT_URL_SQS":              "http://127.0.0.1:9324",
	"AWS_ENDPOINT_URL_DYNAMODB":         "http://127.0.0.1:8000",
	"AWS_ENDPOINT_URL_DYNAMODB_STREAMS": "http://127.0.0.1:8000",
	"AWS_ACCESS_KEY_ID":                 "test",
	"AWS_SECRET_ACCESS_KEY":             "test",
	"AWS_REGION":                        "us-east-1",
}

func TestMain(m *testing.M) {
	if os.Getenv("ORDERLY_INTEGRATION") == "1" {
		for k, v := range emulatorEnv {
			if os.Getenv(k) == "" {
				os.Setenv(k, v)
			}
		}
	}
	os.Exit(m.Run())
}

// integrationConfig skips the test unless ORDERLY_INTEGRATION=1, and then
// fails it unless the emulators behind the named endpoint variables answer.
func integrationConfig(t *testing.T, endpointVars ...string) aws.Config {
	t.Helper()
	if os.Getenv("ORDERLY_INTEGRATION") != "1" {
		t.Skip("integration test: run `bash localstack/emulators.sh start`, then set ORDERLY_INTEGRATION=1")
	}
	for _, v := range endpointVars {
		endpoint := os.Getenv(v)
		u, err := url.Parse(endpoint)
		if err != nil || u.Host == "" {
			t.Fatalf("%s = %q is not an endpoint URL", v, endpoint)
		}
		conn, err := net.DialTimeout("tcp", u.Host, 2*time.Second)
		if err != nil {
			t.Fatalf("emulator at %s (%s) unreachable; start it with `bash localstack/emulators.sh start`: %v", endpoint, v, err)
		}
		conn.Close()
	}
	cfg, err := config.LoadDefaultConfig(t.Context())
	if err != nil {
		t.Fatalf("load AWS config: %v", err)
	}
	return cfg
}

// uniqueName returns a fresh resource name, so tests can share emulators.
func uniqueName(prefix string) string {
	return prefix + "-" + strings.ToLower(rand.Text()[:12])
}

// cleanupContext is for t.Cleanup functions, which run after t.Context is
// cancelled.
func cleanupContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// runInBackground runs fn until the test ends and then checks it returned
// nil.
func runInBackground(t *testing.T, fn func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- fn(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancellation", err)
			}
		case <-time.After(10 * time.Second):
			t.Errorf("Run did not return within 10s of cancellation")
		}
	})
}
