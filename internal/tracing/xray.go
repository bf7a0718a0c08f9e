package tracing

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
)

// EnvXRay set turns tracing on, exporting to X-Ray's OTLP traces
// endpoint: its value is that endpoint's URL,
// https://xray.<region>.amazonaws.com/v1/traces, which the stack sets.
// Each export is signed with SigV4 (service xray) with the function's
// own credentials, as the endpoint takes no other proof from a role; no
// collector runs beside the function.
const EnvXRay = "ORDERLY_TRACE_XRAY"

// xrayService is the SigV4 signing name of X-Ray's OTLP endpoint.
const xrayService = "xray"

// exportTimeout bounds one export, as the exporter's own default does
// (its timeout option does not apply to a client it is given).
const exportTimeout = 10 * time.Second

// xrayExport is the exporter's options for X-Ray's endpoint at rawURL,
// signed with cfg's credentials in cfg's region. A signed request carries
// the role's session token, so only an https URL of X-Ray in that region
// will do.
func xrayExport(rawURL string, cfg aws.Config) ([]otlptracehttp.Option, error) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Scheme != "https" || cfg.Region == "" || !strings.HasPrefix(u.Host, xrayService+"."+cfg.Region+".") {
		return nil, fmt.Errorf("%s: %q is not X-Ray's OTLP endpoint in the function's region %q (https://xray.%s.amazonaws.com/v1/traces)",
			EnvXRay, rawURL, cfg.Region, cfg.Region)
	}
	if cfg.Credentials == nil {
		return nil, errors.New(EnvXRay + ": no AWS credentials to sign spans with (locally, use " + EnvEndpoint + ")")
	}
	client := &http.Client{Timeout: exportTimeout, Transport: NewSigning(http.DefaultTransport, cfg.Credentials, cfg.Region)}
	return []otlptracehttp.Option{otlptracehttp.WithEndpointURL(rawURL), otlptracehttp.WithHTTPClient(client),
		// The endpoint takes gzip: fewer bytes on the wire while the
		// invocation waits for its flush.
		otlptracehttp.WithCompression(otlptracehttp.GzipCompression)}, nil
}

// Signing is an http.RoundTripper that signs each request with SigV4 for
// X-Ray before next sends it: the OTLP exporter's transport.
type Signing struct {
	next   http.RoundTripper
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	now    func() time.Time
}

// NewSigning signs requests for X-Ray in region with creds (the SDK's
// provider, which caches and refreshes them), sending them with next.
func NewSigning(next http.RoundTripper, creds aws.CredentialsProvider, region string) *Signing {
	return &Signing{next: next, creds: creds, region: region, signer: v4.NewSigner(), now: time.Now}
}

// RoundTrip signs a copy of req, the payload's SHA-256 in its signature,
// and sends it. Its errors name what failed, never a credential.
func (s *Signing) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := readBody(req)
	if err != nil {
		return nil, fmt.Errorf("sign spans for X-Ray: read the payload: %w", err)
	}
	sum := sha256.Sum256(body)
	signed := req.Clone(req.Context())
	signed.Body = io.NopCloser(bytes.NewReader(body))
	signed.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	signed.ContentLength = int64(len(body))
	creds, err := s.creds.Retrieve(req.Context())
	if err != nil {
		return nil, fmt.Errorf("sign spans for X-Ray: credentials: %w", err)
	}
	if err := s.signer.SignHTTP(req.Context(), creds, signed, hex.EncodeToString(sum[:]), xrayService, s.region, s.now()); err != nil {
		return nil, fmt.Errorf("sign spans for X-Ray: %w", err)
	}
	return s.next.RoundTrip(signed)
}

// readBody is req's payload, leaving req as it was: a RoundTripper must
// not change the request it is given, and the exporter sends the same
// request again on a retry.
func readBody(req *http.Request) ([]byte, error) {
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		return nil, nil
	case req.GetBody != nil:
		rc, err := req.GetBody()
		if err != nil {
			return nil, err
		}
		defer rc.Close()
		return io.ReadAll(rc)
	default:
		b, err := io.ReadAll(req.Body)
		_ = req.Body.Close()
		return b, err
	}
}

var _ http.RoundTripper = (*Signing)(nil)
