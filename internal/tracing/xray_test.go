package tracing_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"orderly/internal/tracing"
)

// The credentials the tests sign with: none of the secret may leave in a
// request, and none of it may show in an error.
const (
	testKeyID  = "AKIDTESTSIGNING"
	testSecret = "tHiSiStHeSeCrEtKeY0123456789"
	testToken  = "sEsSiOnToKeN-that-only-x-ray-may-see"
	testRegion = "eu-west-1"
)

var testCreds = aws.Credentials{AccessKeyID: testKeyID, SecretAccessKey: testSecret, SessionToken: testToken}

// xrayReceiver is an OTLP/HTTP receiver that checks each request's SigV4
// signature as X-Ray would: it signs the request it received again, with
// the same credentials, time and the SHA-256 of the body it read, and
// compares. It answers status.
type xrayReceiver struct {
	t      *testing.T
	status int
	mu     sync.Mutex
	checks []string // what was wrong with each request, "" when nothing
	bodies [][]byte
}

func (x *xrayReceiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	problem := x.check(r, body)
	x.mu.Lock()
	x.checks = append(x.checks, problem)
	x.bodies = append(x.bodies, body)
	x.mu.Unlock()
	w.WriteHeader(x.status)
}

func (x *xrayReceiver) check(r *http.Request, body []byte) string {
	auth := r.Header.Get("Authorization")
	date := r.Header.Get("X-Amz-Date")
	at, err := time.Parse("20060102T150405Z", date)
	if err != nil {
		return fmt.Sprintf("X-Amz-Date %q: %v", date, err)
	}
	scope := fmt.Sprintf("AWS4-HMAC-SHA256 Credential=%s/%s/%s/xray/aws4_request,", testKeyID, at.Format("20060102"), testRegion)
	if !strings.HasPrefix(auth, scope) {
		return fmt.Sprintf("Authorization %q is not SigV4 for xray in %s", auth, testRegion)
	}
	if got := r.Header.Get("X-Amz-Security-Token"); got != testToken {
		return fmt.Sprintf("X-Amz-Security-Token %q, want the session token", got)
	}
	if strings.Contains(string(body), testSecret) || strings.Contains(fmt.Sprint(r.Header), testSecret) {
		return "the secret key was sent"
	}
	// Sign again what was received: only the headers the client signed.
	_, list, _ := strings.Cut(auth, "SignedHeaders=")
	list, _, _ = strings.Cut(list, ",")
	again := func(payload []byte) string {
		req, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(payload))
		for _, h := range strings.Split(list, ";") {
			if h != "host" && h != "content-length" {
				req.Header.Set(h, r.Header.Get(h))
			}
		}
		sum := sha256.Sum256(payload)
		if err := v4.NewSigner().SignHTTP(context.Background(), testCreds, req, hex.EncodeToString(sum[:]), "xray", testRegion, at); err != nil {
			return err.Error()
		}
		return req.Header.Get("Authorization")
	}
	if want := again(body); auth != want {
		return fmt.Sprintf("signature does not match the body received:\n got  %s\n want %s", auth, want)
	}
	if again(append(bytes.Clone(body), 'x')) == auth {
		return "the signature does not cover the body"
	}
	return ""
}

// exportOneSpan exports one ended span through an OTLP/HTTP exporter whose
// client signs with creds, to rec: the path a function's flush takes.
func exportOneSpan(t *testing.T, rec *xrayReceiver, creds aws.CredentialsProvider) error {
	t.Helper()
	srv := httptest.NewServer(rec)
	t.Cleanup(srv.Close)
	exp, err := otlptracehttp.New(context.Background(), otlptracehttp.WithEndpointURL(srv.URL+"/v1/traces"),
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		otlptracehttp.WithHTTPClient(&http.Client{Transport: tracing.NewSigning(http.DefaultTransport, creds, testRegion)}))
	if err != nil {
		t.Fatal(err)
	}
	mem := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(mem))
	_, span := tp.Tracer("test").Start(context.Background(), "agent.request")
	span.End()
	return exp.ExportSpans(context.Background(), mem.GetSpans().Snapshots())
}

func TestSigningSignsEachExportForXRay(t *testing.T) {
	rec := &xrayReceiver{t: t, status: http.StatusOK}
	if err := exportOneSpan(t, rec, credentials.StaticCredentialsProvider{Value: testCreds}); err != nil {
		t.Fatalf("export: %v", err)
	}
	if len(rec.checks) != 1 {
		t.Fatalf("%d requests received, want 1", len(rec.checks))
	}
	if rec.checks[0] != "" {
		t.Error(rec.checks[0])
	}
	if len(rec.bodies[0]) == 0 {
		t.Error("an empty payload was sent")
	}
}

func TestSigningNeverShowsACredential(t *testing.T) {
	tests := []struct {
		name   string
		status int
		creds  aws.CredentialsProvider
	}{
		// X-Ray refuses the signature, as it would for a role without
		// xray:PutTraceSegments.
		{"X-Ray refuses", http.StatusForbidden, credentials.StaticCredentialsProvider{Value: testCreds}},
		{"no credentials", http.StatusOK, aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
			return aws.Credentials{}, errors.New("no EC2 IMDS role found")
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := &xrayReceiver{t: t, status: tt.status}
			err := exportOneSpan(t, rec, tt.creds)
			if err == nil {
				t.Fatal("export succeeded, want an error")
			}
			for _, secret := range []string{testSecret, testToken} {
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q shows a credential", err)
				}
			}
		})
	}
}
