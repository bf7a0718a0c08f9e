package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"orderly/internal/local/simulator"
)

var (
	shippedFile  = filepath.Join("..", "..", "workflows", "order", "v1.json")
	checkoutFile = filepath.Join("..", "..", "examples", "workflows", "checkout", "v1.json")
)

func simulatorURL(t *testing.T, opts ...simulator.Option) string {
	t.Helper()
	sim, err := simulator.New(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(sim)
	t.Cleanup(func() { sim.Close(); ts.Close() })
	return ts.URL
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// `orderly conformance` passes against the simulator, for the checkout
// example (its input from the schema's example, the fraud service's
// credential from a file) and the shipped workflow (its input from a
// file): one line per rule per step and a summary; exit 0.
func TestConformancePassesAgainstTheSimulator(t *testing.T) {
	const secret = "Bearer cli-s3cret"
	url := simulatorURL(t, simulator.WithRequiredHeader("fraud", "Authorization", secret))
	token := writeTemp(t, "token", secret+"\n")
	input := writeTemp(t, "input.json", `{"customerId":"c-42","lines":[{"sku":"SKU-1","quantity":2}]}`)
	// Lines the simulator's services do not know: each answers 404.
	unknown := writeTemp(t, "unknown.json", `{"customerId":"c-42","lines":[{"sku":"TEST-INVENTORY-UNKNOWN","quantity":1},`+
		`{"sku":"TEST-PAYMENT-UNKNOWN","quantity":1},{"sku":"TEST-SHIPPING-UNKNOWN","quantity":1}]}`)
	tests := []struct {
		args  []string
		lines int
		// passes is a line the output must have.
		passes string
	}{
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--header", "Authorization=@" + token}, 4*12 + 1, ""},
		{[]string{"conformance", "--workflow", shippedFile, "--url", url, "--input", input}, 3*12 + 1, ""},
		{[]string{"conformance", "--workflow", shippedFile, "--url", url, "--input", input, "--unknown-input", unknown, "--step", "charge-payment"}, 12 + 1,
			"PASS  charge-payment  unknown-entity       an order of the given unknown input: answered 404 while the step's call succeeds for other orders"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--header", "Authorization=" + secret, "--step", "fraud-check"}, 12 + 1, ""},
	}
	for _, tt := range tests {
		var out bytes.Buffer
		if err := runArgs(tt.args, &out); err != nil {
			t.Errorf("%q: %v\n%s", tt.args, err, out.String())
		}
		lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
		if len(lines) != tt.lines || !strings.HasSuffix(lines[len(lines)-1], " 0 failed, "+fmt.Sprint(strings.Count(out.String(), "SKIP "))+" skipped") {
			t.Errorf("%q: %d lines, want %d:\n%s", tt.args, len(lines), tt.lines, out.String())
		}
		if strings.Contains(out.String(), "s3cret") {
			t.Errorf("the output says the credential:\n%s", out.String())
		}
		if !strings.Contains(out.String(), tt.passes) {
			t.Errorf("%q: no line %q:\n%s", tt.args, tt.passes, out.String())
		}
	}
}

// A step whose service calls back is checked with the callback rules,
// called back at the receiver --callback-listen names, waiting at most
// --callback-wait for each callback.
func TestConformanceOfAServiceThatCallsBack(t *testing.T) {
	url := simulatorURL(t, simulator.WithCallbackDelay(10*time.Millisecond))
	fulfilment := filepath.Join("..", "..", "examples", "workflows", "fulfilment", "v1.json")
	if _, err := os.Stat(fulfilment); err != nil {
		t.Skip("no fulfilment example")
	}
	var out bytes.Buffer
	err := runArgs([]string{"conformance", "--workflow", fulfilment, "--url", url, "--step", "charge-payment",
		"--callback-listen", "127.0.0.1:0", "--callback-wait", "5s"}, &out)
	if err != nil {
		t.Errorf("%v\n%s", err, out.String())
	}
	for _, rule := range []string{"callback-accepts", "callback-arrives", "callback-idempotent", "callback-token-kept"} {
		if !strings.Contains(out.String(), "PASS  charge-payment  "+rule+" ") {
			t.Errorf("no %s passed:\n%s", rule, out.String())
		}
	}
}

// A service that ignores Idempotency-Key fails, exit 1, and -o json
// gives the same verdicts to scripts.
func TestConformanceFailsAgainstAServiceIgnoringKeys(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		fmt.Fprintf(w, `{"id":"new-%d"}`, n.Add(1))
	}))
	defer srv.Close()
	input := writeTemp(t, "input.json", `{"customerId":"c-42","lines":[{"sku":"SKU-1","quantity":2}]}`)
	var out bytes.Buffer
	err := runArgs([]string{"-o", "json", "conformance", "--workflow", shippedFile, "--url", srv.URL, "--input", input, "--step", "charge-payment"}, &out)
	if !errors.Is(err, errNonConformant) || exitCode(err) != 1 {
		t.Errorf("error %v, want non-conformant (exit 1)", err)
	}
	var report struct {
		Results []struct{ Step, Rule, Verdict, Why string }
		Failed  int
	}
	if err := json.Unmarshal(out.Bytes(), &report); err != nil {
		t.Fatalf("-o json: %v\n%s", err, out.String())
	}
	sameKey := ""
	for _, r := range report.Results {
		if r.Rule == "same-key" {
			sameKey = r.Verdict + " " + r.Why
		}
	}
	if report.Failed == 0 || !strings.HasPrefix(sameKey, "FAIL the same Idempotency-Key twice gave two ids") {
		t.Errorf("failed %d, same-key %q", report.Failed, sameKey)
	}
}

// Wrong command lines, and runs that cannot start, exit 2, each saying
// what is wrong, and none quotes a header's value.
func TestConformanceUsage(t *testing.T) {
	url := simulatorURL(t)
	bad := writeTemp(t, "v1.json", `{"name":"x"}`)
	noExample := writeTemp(t, "mini.json", `{"name":"mini","version":"1","input":{"type":"object"},"steps":[{"name":"a","service":"s","call":{"method":"POST","path":"/a"}}]}`)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"conformance"}, "--workflow FILE is required"},
		{[]string{"conformance", "--workflow", checkoutFile}, "--url BASE is required"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "extra"}, `unknown command "extra" for "orderly conformance"`},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--nope"}, "unknown flag: --nope"},
		{[]string{"conformance", "-workflow", checkoutFile, "-url", url, "-step", "refund"}, `has no step "refund"`},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--header", "Authorization"}, `--header "Authorization": want NAME=VALUE`},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--header", "Bad Name=s3cret"}, `--header "Bad Name": want NAME=VALUE`},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--header", "X-Key=@/nonexistent/token"}, "--header X-Key: open /nonexistent"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--step", "refund"}, `has no step "refund"`},
		{[]string{"conformance", "--workflow", noExample, "--url", url}, "workflow mini version 1: its input schema has no examples: give an input file (--input FILE)"},
		{[]string{"conformance", "--workflow", bad, "--url", url}, bad + ": version: must not be empty"},
		{[]string{"conformance", "--workflow", filepath.Join(t.TempDir(), "none.json"), "--url", url}, "no such file"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", "localhost:1"}, "want http:// or https://"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--callback-wait", "-1s"}, "--callback-wait -1s: want a positive duration"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--poll-wait", "0s"}, "--poll-wait 0s: want a positive duration"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--callback-listen", "0.0.0.0:9"}, "give the address the service reaches this machine at"},
		{[]string{"conformance", "--workflow", checkoutFile, "--url", url, "--callback-listen", "9"}, "--callback-listen \"9\": want HOST:PORT"},
		{[]string{"conformance", "--workflow", shippedFile, "--url", url, "--input", writeTemp(t, "in.json", `{"customerId":"c"}`)}, "lines"},
		{[]string{"conformance", "--workflow", shippedFile, "--url", url, "--unknown-input", writeTemp(t, "unknown.json", `{"customerId":"c"}`)}, "--unknown-input: the input breaks"},
	}
	for _, tt := range tests {
		err := runArgs(tt.args, &bytes.Buffer{})
		if err == nil || exitCode(err) != 2 || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%q: %v, want a usage error saying %q", tt.args, err, tt.want)
		}
		if err != nil && strings.Contains(err.Error(), "s3cret") && !strings.Contains(tt.want, "s3cret") {
			t.Errorf("%q: the error quotes a value: %v", tt.args, err)
		}
	}
}

// --openapi prints the workflow's own contract: its calls at their paths.
func TestConformanceOpenAPI(t *testing.T) {
	var out bytes.Buffer
	if err := runArgs([]string{"conformance", "--workflow", checkoutFile, "--openapi"}, &out); err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.Unmarshal(out.Bytes(), &doc); err != nil || doc.OpenAPI != "3.1.0" {
		t.Fatalf("%v, openapi %q", err, doc.OpenAPI)
	}
	for _, p := range []string{"/fraud/checks", "/inventory/reservations", "/inventory/releases", "/payment/charges", "/payment/refunds",
		"/shipping/shipments", "/shipping/cancellations"} {
		if doc.Paths[p]["post"] == nil {
			t.Errorf("no POST %s", p)
		}
	}
	if len(doc.Paths) != 7 {
		t.Errorf("%d paths, want 7", len(doc.Paths))
	}
}
