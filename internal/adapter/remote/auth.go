package remote

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"orderly/internal/adapter/services"
	"orderly/internal/order"
)

// Service is how the client reaches one remote service: its base URL and
// the authentication of every call to it.
type Service struct {
	// URL is the base URL a step's path is appended to.
	URL string
	// Auth authorizes each call; nil sends no credential.
	Auth Auth
}

// Auth authorizes the calls to one service: HeaderAuth or SigV4Auth.
type Auth interface {
	// authorize adds the credential to req (a clone the client owns, with
	// body as its payload) and returns the request to send.
	authorize(req *http.Request, body []byte) (*http.Request, error)
	// refresh is told that the service refused (401 or 403) the request
	// authorize returned, and reports whether the credential has changed
	// since, so that one more try with it may pass.
	refresh(ctx context.Context, refused *http.Request) bool
	// secrets are the values in an authorized request that the service's
	// answer must not carry into an error, a reason or a log.
	secrets(req *http.Request) []string
}

// DefaultSecretTTL is how long a header's value is used before it is
// fetched again: a rotated secret is picked up within it, and at once by
// the first call the service refuses with the old value.
const DefaultSecretTTL = 5 * time.Minute

// ServicesFrom builds the services of a configuration with the agent's
// own AWS configuration: its role reads the header secrets (through a
// Secrets Manager client made from awsCfg, so its middleware applies)
// and signs the SigV4 calls.
func ServicesFrom(cfg services.Config, awsCfg aws.Config) map[string]Service {
	out := make(map[string]Service, len(cfg))
	var sm *secretsmanager.Client
	for name, s := range cfg {
		svc := Service{URL: s.URL}
		switch s.Auth.Type {
		case services.AuthHeader:
			client := sm
			if region := s.Auth.SecretRegion(); region != "" && region != awsCfg.Region {
				// A secret given by ARN is read in its own region.
				client = secretsmanager.NewFromConfig(awsCfg, func(o *secretsmanager.Options) { o.Region = region })
			} else if sm == nil {
				sm = secretsmanager.NewFromConfig(awsCfg)
				client = sm
			}
			svc.Auth = NewHeaderAuth(s.Auth, client, DefaultSecretTTL, time.Now)
		case services.AuthSigV4:
			svc.Auth = NewSigV4Auth(s.Auth, s.URL, awsCfg.Credentials, time.Now)
		}
		out[name] = svc
	}
	return out
}

// endpoint is one service as the client calls it: its base URL and an
// HTTP client whose transport authorizes each request.
type endpoint struct {
	base string
	http *http.Client
}

// newEndpoint returns the endpoint of svc, calling through a copy of
// httpClient (see NewClient) whose transport adds svc's authentication.
func newEndpoint(svc Service, httpClient *http.Client) *endpoint {
	var hc http.Client
	if httpClient != nil {
		hc = *httpClient
	}
	hc.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	if svc.Auth != nil {
		next := hc.Transport
		if next == nil {
			next = http.DefaultTransport
		}
		hc.Transport = &authTransport{next: next, auth: svc.Auth}
	}
	return &endpoint{base: strings.TrimRight(svc.URL, "/"), http: &hc}
}

// endpointOf returns the endpoint the client calls service at.
func (c *Client) endpointOf(service string) (*endpoint, error) {
	if ep, ok := c.services[service]; ok {
		return ep, nil
	}
	if c.anyService != nil {
		return c.anyService, nil
	}
	// The same for every order until the agent is configured.
	return nil, fmt.Errorf("no base URL configured for service %q: %w", service, order.ErrConfiguration)
}

// authTransport authorizes each request to one service. A request the
// service refuses with 401 or 403 is tried once more when the credential
// has changed since it was sent (a rotated secret), so a rotation costs no
// failed call. Every answer is scrubbed of the credential, whole and in
// part (see Scrubber), so a service that echoes it cannot put it into an
// error, a step's reason or a log.
type authTransport struct {
	next http.RoundTripper
	auth Auth

	// scrubber is made for the secrets in scrubFor, and kept until they
	// change.
	mu       sync.Mutex
	scrubFor []string
	scrubber *Scrubber
}

// scrubberOf returns the scrubber of secrets, made again only when they
// change (a rotation, a new session token).
func (t *authTransport) scrubberOf(secrets []string) *Scrubber {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.scrubber == nil || !slices.Equal(t.scrubFor, secrets) {
		t.scrubber, t.scrubFor = NewScrubber(secrets...), secrets
	}
	return t.scrubber
}

func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	body, err := payload(req)
	if err != nil {
		return nil, err
	}
	send := func() (*http.Request, *http.Response, error) {
		out := req.Clone(req.Context())
		if body != nil {
			out.Body = io.NopCloser(bytes.NewReader(body))
			out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
			out.ContentLength = int64(len(body))
		}
		out, err := t.auth.authorize(out, body)
		if err != nil {
			return nil, nil, err
		}
		resp, err := t.next.RoundTrip(out)
		return out, resp, err
	}
	sent, resp, err := send()
	if err != nil {
		return nil, t.scrubError(sent, err)
	}
	if resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden {
		if t.auth.refresh(req.Context(), sent) {
			io.Copy(io.Discard, io.LimitReader(resp.Body, maxResponseBytes))
			resp.Body.Close()
			if sent, resp, err = send(); err != nil {
				return nil, t.scrubError(sent, err)
			}
		}
	}
	return scrub(resp, t.scrubberOf(t.auth.secrets(sent)))
}

// scrubError scrubs the credential sent with out of a transport's error,
// whose text may quote what the service answered ("malformed HTTP
// response \"…\""). An error before sending (out is nil) is the
// client's own.
func (t *authTransport) scrubError(out *http.Request, err error) error {
	if out == nil {
		return err
	}
	return quoted(err, t.scrubberOf(t.auth.secrets(out)).Scrub(err.Error()))
}

// payload reads a request's body: a signature covers it, and a second
// try sends it again.
func payload(req *http.Request) ([]byte, error) {
	if req.Body == nil || req.Body == http.NoBody {
		return nil, nil
	}
	defer req.Body.Close()
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, fmt.Errorf("read the request's body: %w", err)
	}
	return body, nil
}

// scrub takes the credential s was made for out of the answer's header
// values (a Location, say) and body (the first 128 KiB: more than the
// client reads), whole and in part, in every form a service may write it
// (see Scrubber).
func scrub(resp *http.Response, s *Scrubber) (*http.Response, error) {
	if len(s.forms) == 0 {
		return resp, nil
	}
	for name, values := range resp.Header {
		for i, v := range values {
			values[i] = s.Scrub(v)
			if name == "Location" {
				// Brackets would make it a URL the client cannot parse
				// (an IPv6 host), and the redirect a transient fault.
				values[i] = s.replace(v, "redacted")
			}
		}
	}
	// More than Call reads, so that a bound Call checks still sees an
	// answer too long.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, 2*maxResponseBytes))
	resp.Body.Close()
	if err != nil {
		return nil, fmt.Errorf("read response: %w", err)
	}
	raw = s.scrubJSON(s.scrubBytes(raw))
	resp.Body = io.NopCloser(bytes.NewReader(raw))
	resp.ContentLength = int64(len(raw))
	return resp, nil
}

const redacted = "[redacted]"

// secretValue is a credential's value: it prints, logs and encodes as
// [redacted], so a slip cannot show it.
type secretValue string

func (secretValue) String() string                  { return redacted }
func (secretValue) GoString() string                { return redacted }
func (secretValue) LogValue() slog.Value            { return slog.StringValue(redacted) }
func (secretValue) MarshalText() ([]byte, error)    { return []byte(redacted), nil }
func (s secretValue) Format(f fmt.State, verb rune) { io.WriteString(f, redacted) }

// SecretsAPI is the Secrets Manager call a header authentication makes.
type SecretsAPI interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// HeaderAuth sets one header to a Secrets Manager secret's value, fetched
// with the agent's role and cached for a TTL. It is safe for concurrent
// use; concurrent calls share one fetch.
type HeaderAuth struct {
	header   string
	secretID string
	// name shows the secret without its ARN's account.
	name   string
	client SecretsAPI
	ttl    time.Duration
	now    func() time.Time

	mu      sync.Mutex
	value   secretValue
	fetched time.Time
}

// NewHeaderAuth returns the header authentication auth configures
// (services.AuthHeader), reading its secret through client.
func NewHeaderAuth(auth services.Auth, client SecretsAPI, ttl time.Duration, now func() time.Time) *HeaderAuth {
	return &HeaderAuth{header: auth.Header, secretID: auth.Secret, name: auth.SecretName(), client: client, ttl: ttl, now: now}
}

func (h *HeaderAuth) authorize(req *http.Request, _ []byte) (*http.Request, error) {
	v, err := h.current(req.Context())
	if err != nil {
		return nil, err
	}
	req.Header.Set(h.header, string(v))
	return req, nil
}

// current returns the cached value, fetching it when there is none or
// it is older than the TTL.
func (h *HeaderAuth) current(ctx context.Context) (secretValue, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.value != "" && h.now().Sub(h.fetched) < h.ttl {
		return h.value, nil
	}
	return h.fetchLocked(ctx)
}

func (h *HeaderAuth) refresh(ctx context.Context, refused *http.Request) bool {
	used := refused.Header.Get(h.header)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.value != "" && string(h.value) != used {
		return true // another call fetched the new value already
	}
	v, err := h.fetchLocked(ctx)
	return err == nil && string(v) != used
}

func (h *HeaderAuth) secrets(req *http.Request) []string {
	return []string{req.Header.Get(h.header)}
}

// fetchLocked reads the secret's current value (h.mu held). Its errors
// name the secret and what went wrong, never the value, and never the
// SDK's message, which may name the agent's role and account.
func (h *HeaderAuth) fetchLocked(ctx context.Context) (secretValue, error) {
	fail := func(what string) (secretValue, error) {
		return "", &secretError{secret: h.name, header: h.header, what: what, ctxErr: ctx.Err()}
	}
	out, err := h.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(h.secretID)})
	var apiErr smithy.APIError
	switch {
	case err != nil && ctx.Err() != nil:
		return fail("not read before the call's deadline")
	case errors.As(err, &apiErr):
		return fail("Secrets Manager answered " + apiErr.ErrorCode())
	case err != nil:
		return fail("Secrets Manager could not be reached")
	case out.SecretString == nil:
		return fail("has no string value (a binary secret)")
	}
	v := strings.TrimSpace(*out.SecretString)
	switch {
	case v == "":
		return fail("is empty")
	case !validHeaderValue(v):
		return fail("is not a valid header value (it holds a line break or a control character)")
	}
	h.value, h.fetched = secretValue(v), h.now()
	return h.value, nil
}

// secretError is a failure to read a header's secret. The client takes it
// as a transient fault: a later try may read it (Secrets Manager back, the
// grant deployed, the secret created).
type secretError struct {
	secret, header, what string
	ctxErr               error
}

func (e *secretError) Error() string {
	return fmt.Sprintf("secret %q for header %s: %s", e.secret, e.header, e.what)
}

// Unwrap names the context's error when the context ended the fetch.
func (e *secretError) Unwrap() error { return e.ctxErr }

// validHeaderValue reports whether v can be sent as a header's value:
// no control character but tab.
func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}

// IAMCall is the IAM action a signed request needs on its resource, with
// the condition key the grant may test: what the role check records.
type IAMCall struct {
	Action, Resource           string
	ConditionKey, ConditionVal string
}

type iamCallKey struct{}

// IAMCallOf returns the IAM calls a request signed by SigV4Auth makes, as
// the transport under the client sees it.
func IAMCallOf(req *http.Request) ([]IAMCall, bool) {
	c, ok := req.Context().Value(iamCallKey{}).([]IAMCall)
	return c, ok
}

// SigV4Auth signs each call with the agent's credentials (AWS Signature
// Version 4) for a Lambda function URL with AWS_IAM auth or an API
// Gateway API with IAM authorization.
type SigV4Auth struct {
	service, region, target string
	// basePath is the base URL's path: a request's path under it is the
	// API's resource path.
	basePath string
	creds    aws.CredentialsProvider
	signer   *v4.Signer
	now      func() time.Time
}

// NewSigV4Auth returns the SigV4 authentication auth configures
// (services.AuthSigV4) for the service at baseURL, signing with creds in
// the target's region.
func NewSigV4Auth(auth services.Auth, baseURL string, creds aws.CredentialsProvider, now func() time.Time) *SigV4Auth {
	var basePath string
	if u, err := url.Parse(baseURL); err == nil {
		basePath = strings.TrimRight(u.Path, "/")
	}
	return &SigV4Auth{service: auth.Service, region: auth.Region(), target: auth.Target, basePath: basePath,
		creds: creds, signer: v4.NewSigner(), now: now}
}

func (s *SigV4Auth) authorize(req *http.Request, body []byte) (*http.Request, error) {
	ctx := req.Context()
	if s.creds == nil {
		return nil, fmt.Errorf("sign the call for %s: the agent has no AWS credentials", s.service)
	}
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		// The provider's message may name the role; the context's error
		// is what the client needs.
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, fmt.Errorf("sign the call for %s: credentials: %w", s.service, ctxErr)
		}
		return nil, fmt.Errorf("sign the call for %s: the agent's credentials are unavailable", s.service)
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	req.Header.Set("X-Amz-Content-Sha256", hash)
	if err := s.signer.SignHTTP(ctx, creds, req, hash, s.service, s.region, s.now()); err != nil {
		return nil, fmt.Errorf("sign the call for %s: %w", s.service, err)
	}
	return req.WithContext(context.WithValue(ctx, iamCallKey{}, s.iamCall(req))), nil
}

// iamCall is the grants a signed request needs: to invoke the function's
// URL (of AWS_IAM auth type) and, as function URLs made since October 2025
// require, the function itself through its URL; or the API stage's
// method and path.
func (s *SigV4Auth) iamCall(req *http.Request) []IAMCall {
	if s.service == services.SigningLambda {
		return []IAMCall{
			{Action: services.ActionInvokeFunctionURL, Resource: s.target,
				ConditionKey: services.ConditionFunctionURLAuthType, ConditionVal: services.FunctionURLAuthIAM},
			{Action: services.ActionInvokeFunction, Resource: s.target,
				ConditionKey: services.ConditionInvokedViaFunctionURL, ConditionVal: "true"},
		}
	}
	return []IAMCall{{Action: services.ActionInvokeAPI,
		Resource: services.APIResource(s.target, req.Method, strings.TrimPrefix(req.URL.Path, s.basePath))}}
}

// A signature is not refreshed: a 401 or 403 is the grant's or the
// target's configuration.
func (s *SigV4Auth) refresh(context.Context, *http.Request) bool { return false }

func (s *SigV4Auth) secrets(req *http.Request) []string {
	return []string{req.Header.Get("X-Amz-Security-Token")}
}
