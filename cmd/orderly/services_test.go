package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// `orderly services validate FILE` checks a services file offline with
// the parser synth and make run use: "FILE: valid", or every problem, one
// a line, naming the file and the field (exit 1). With --workflows, as
// synth does with context services: every service the workflows call has
// an entry, and every entry is called.
func TestServicesValidate(t *testing.T) {
	local := filepath.Join("..", "..", "examples", "services.local.json")
	deployed := contextServices(t)
	bad := writeFile(t, []byte(`{
	  "payment": {"url": "http://payment.example.com", "auth": {"type": "header", "header": "Authorization"}},
	  "Shipping": {"url": "https://shipping.example.com/", "auth": {"type": "none"}},
	  "fraud": {"url": "http://127.0.0.1:8081", "auth": {"type": "none"}, "timeout": "5s"}
	}`), t.TempDir(), "services.json")
	notJSON := writeFile(t, []byte(`{"fraud": `), t.TempDir(), "services.json")
	missing := filepath.Join(t.TempDir(), "services.json")
	shipped := filepath.Join("..", "..", "workflows")
	checkout := filepath.Join("..", "..", "examples", "workflows", "checkout", "v1.json")
	// Its step that waits calls no service, so needs no entry.
	waitDef, err := os.ReadFile(filepath.Join("..", "..", "internal", "definition", "testdata", "wait.json"))
	if err != nil {
		t.Fatal(err)
	}
	waits := writeFile(t, waitDef, t.TempDir(), "trial", "v1.json")
	twoServices := writeFile(t, []byte(`{
	  "inventory": {"url": "http://127.0.0.1:8081", "auth": {"type": "none"}},
	  "payment": {"url": "http://127.0.0.1:8082", "auth": {"type": "none"}}
	}`), t.TempDir(), "services.json")
	tests := []struct {
		name     string
		args     []string
		want     []string
		wantCode int
	}{
		{"make run's example", []string{local}, []string{local + ": valid"}, 0},
		{"cdk.json's context services", []string{deployed}, []string{deployed + ": valid"}, 0},
		{"every problem", []string{local, bad, notJSON, missing}, []string{
			local + ": valid",
			bad + `: fraud.timeout: unknown field; a service has "url" and "auth"`,
			bad + `: Shipping: not a service name: want lower-case letters, digits and "-", as a step's "service"`,
			bad + `: Shipping.auth: calls to shipping.example.com would carry no credential: use a "header" or "sigv4" authentication, or set "allowRemote": true for a service reachable only inside a private network`,
			bad + `: payment.auth.secret: is required: the Secrets Manager secret (its name, or its full ARN) whose value is the header's`,
			bad + `: payment.url: "http://payment.example.com": must be https (plain http only for a loopback host)`,
			notJSON + `: fraud: is not valid JSON: ends too early`,
			missing + `: cannot read: no such file or directory`,
		}, 1},
		{"the shipped workflows' services", []string{deployed, "--workflows", shipped}, []string{deployed + ": valid"}, 0},
		{"a workflow's service not listed, a listed one not called", []string{local, "--workflows", shipped}, []string{
			local + `: fraud: no workflow calls a service "fraud" (they call inventory, payment, shipping)`,
			local + `: inventory: not configured: give the service's url and auth (or, for loopback services, set --remote-url)`,
			local + `: payment: not configured: give the service's url and auth (or, for loopback services, set --remote-url)`,
			local + `: shipping: not configured: give the service's url and auth (or, for loopback services, set --remote-url)`,
		}, 1},
		{"a workflow with a step that waits", []string{twoServices, "--workflows", waits}, []string{twoServices + ": valid"}, 0},
		{"the rest at a loopback URL, as make run's simulator", []string{local, "--workflows", checkout, "--remote-url", "http://127.0.0.1:8081"},
			[]string{local + ": valid"}, 0},
		{"the rest at a remote URL", []string{local, "--workflows", checkout + "," + shipped, "--remote-url", "https://sim.example.com"}, []string{
			local + `: inventory: not configured, and --remote-url "https://sim.example.com" is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth`,
			local + `: payment: not configured, and --remote-url "https://sim.example.com" is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth`,
			local + `: shipping: not configured, and --remote-url "https://sim.example.com" is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth`,
		}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := runArgs(append([]string{"services", "validate"}, tt.args...), &out)
			if got := strings.TrimSuffix(out.String(), "\n"); got != strings.Join(tt.want, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", got, strings.Join(tt.want, "\n"))
			}
			if code := exitCode(err); err != nil && code != tt.wantCode || err == nil && tt.wantCode != 0 ||
				tt.wantCode == 1 && !errors.Is(err, errInvalidServices) {
				t.Errorf("error %v (exit %d), want exit %d", err, code, tt.wantCode)
			}
		})
	}
}

// contextServices writes infra/cdk.json's context services, the object
// synth reads, as a file of its own.
func contextServices(t *testing.T) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "infra", "cdk.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Context struct {
			Services json.RawMessage `json:"services"`
		} `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil || doc.Context.Services == nil {
		t.Fatalf("infra/cdk.json's context services: %v", err)
	}
	return writeFile(t, doc.Context.Services, t.TempDir(), "services.json")
}

// No file, an unknown flag, or workflows that are not valid definitions:
// a usage error (exit 2), nothing checked.
func TestServicesValidateUsage(t *testing.T) {
	local := filepath.Join("..", "..", "examples", "services.local.json")
	bad := filepath.Join("..", "..", "internal", "definition", "testdata", "bad", "many-problems.json")
	for _, args := range [][]string{
		{"services"}, {"services", "validate"}, {"services", "check", local},
		{"services", "validate", local, "--workflow", "x"},
		{"services", "validate", local, "--remote-url", "http://127.0.0.1:8081"},
		{"services", "validate", local, "--workflows", bad},
		{"services", "validate", local, "--workflows", filepath.Join(t.TempDir(), "none")},
	} {
		var out bytes.Buffer
		if err := runArgs(args, &out); !isUsage(err) {
			t.Errorf("%q: %v, want a usage error", args, err)
		}
	}
}

// -o json reports each file, valid or not, with its problems by field.
func TestServicesValidateJSON(t *testing.T) {
	local := filepath.Join("..", "..", "examples", "services.local.json")
	bad := writeFile(t, []byte(`{"fraud": {"url": "ftp://x", "auth": {"type": "none"}}}`), t.TempDir(), "services.json")
	var out bytes.Buffer
	err := runArgs([]string{"services", "validate", local, bad, "-o", "json"}, &out)
	if !errors.Is(err, errInvalidServices) {
		t.Errorf("error %v, want %v", err, errInvalidServices)
	}
	var report []validated
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("%v:\n%s", err, out.String())
	}
	want := problemReport{Field: "fraud.url", Rule: `"ftp://x": not an http(s) URL with a host`}
	if len(report) != 2 || !report[0].Valid || report[1].Valid || len(report[1].Problems) != 1 || report[1].Problems[0] != want {
		t.Errorf("report %+v, want %s valid and %s with %+v", report, local, bad, want)
	}
}
