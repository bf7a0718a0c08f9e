package remote_test

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/services"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// fakeSecrets is Secrets Manager holding one secret, for unit tests of the
// cache; the integration test reads a real one from the emulator.
type fakeSecrets struct {
	mu      sync.Mutex
	value   string
	binary  bool // a secret with no string value
	err     error
	fetches int
}

func (f *fakeSecrets) GetSecretValue(_ context.Context, in *secretsmanager.GetSecretValueInput, _ ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fetches++
	switch {
	case f.err != nil:
		return nil, f.err
	case f.binary:
		return &secretsmanager.GetSecretValueOutput{Name: in.SecretId, SecretBinary: []byte{1}}, nil
	}
	return &secretsmanager.GetSecretValueOutput{Name: in.SecretId, SecretString: aws.String(f.value)}, nil
}

func (f *fakeSecrets) set(v string) { f.mu.Lock(); f.value = v; f.mu.Unlock() }
func (f *fakeSecrets) count() int   { f.mu.Lock(); defer f.mu.Unlock(); return f.fetches }

// keyedService answers 201 to a request whose X-Api-Key is the key it
// holds, 401 to any other; it counts requests and remembers their keys.
type keyedService struct {
	key      atomic.Value
	requests atomic.Int32
	idemKeys sync.Map
}

func (s *keyedService) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.requests.Add(1)
	s.idemKeys.Store(r.Header.Get("Idempotency-Key"), true)
	io.Copy(io.Discard, r.Body)
	if r.Header.Get("X-Api-Key") != s.key.Load().(string) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":"bad key"}`)
		return
	}
	w.WriteHeader(http.StatusCreated)
	io.WriteString(w, `{"id":"ch_1"}`)
}

// clock is a clock a test moves.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time          { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *clock) Advance(d time.Duration) { c.mu.Lock(); c.now = c.now.Add(d); c.mu.Unlock() }

var headerAuth = services.Auth{Type: services.AuthHeader, Header: "X-Api-Key", Secret: "orderly/test/payment"}

func headerClient(ts *httptest.Server, secrets remote.SecretsAPI, now func() time.Time) *remote.Client {
	auth := remote.NewHeaderAuth(headerAuth, secrets, time.Minute, now)
	return remote.NewClientFor(map[string]remote.Service{"payment": {URL: ts.URL, Auth: auth}}, ts.Client(), shipped)
}

func TestHeaderAuthCachesTheSecretForItsTTL(t *testing.T) {
	svc := &keyedService{}
	svc.key.Store("k1")
	ts := httptest.NewServer(svc)
	defer ts.Close()
	secrets := &fakeSecrets{value: "k1\n"} // as `echo k1 >file` stores it
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	client := headerClient(ts, secrets, clk.Now)

	for i, step := range []struct {
		advance     time.Duration
		wantFetches int
	}{{0, 1}, {30 * time.Second, 1}, {29 * time.Second, 1}, {2 * time.Second, 2}, {time.Second, 2}} {
		clk.Advance(step.advance)
		if ans, err := client.Call(context.Background(), "payment", stepRequest(fmt.Sprint("key-", i))); err != nil || ans.Reference != "ch_1" {
			t.Fatalf("call %d: got %q, %v, want ch_1", i, ans.Reference, err)
		}
		if got := secrets.count(); got != step.wantFetches {
			t.Errorf("after call %d: %d fetches of the secret, want %d", i, got, step.wantFetches)
		}
	}
}

func TestHeaderAuthTakesARotatedSecretAfterARefusal(t *testing.T) {
	svc := &keyedService{}
	svc.key.Store("old")
	ts := httptest.NewServer(svc)
	defer ts.Close()
	secrets := &fakeSecrets{value: "old"}
	clk := &clock{now: time.Unix(1_700_000_000, 0)}
	client := headerClient(ts, secrets, clk.Now)
	if _, err := client.Call(context.Background(), "payment", stepRequest("k-before")); err != nil {
		t.Fatal(err)
	}

	// Rotation: the service takes only the new value, well inside the TTL.
	secrets.set("new")
	svc.key.Store("new")
	svc.requests.Store(0)
	ans, err := client.Call(context.Background(), "payment", stepRequest("k-after"))
	if err != nil || ans.Reference != "ch_1" {
		t.Fatalf("call after the rotation: got %q, %v, want ch_1 (the refused call tried once more with the new value)", ans.Reference, err)
	}
	if got := svc.requests.Load(); got != 2 {
		t.Errorf("the service saw %d requests, want 2 (refused, then taken)", got)
	}
	if got := secrets.count(); got != 2 {
		t.Errorf("%d fetches, want 2: the refusal fetched the secret again at once", got)
	}

	// A refusal the secret cannot fix (it has not changed) is the
	// configuration fault it was, after one fetch, without a second try.
	svc.key.Store("revoked")
	svc.requests.Store(0)
	_, err = client.Call(context.Background(), "payment", stepRequest("k-revoked"))
	if !errors.Is(err, order.ErrConfiguration) {
		t.Fatalf("got %v, want a configuration fault", err)
	}
	if status, _ := order.ConfigurationStatus(err); status != "401" {
		t.Errorf("configuration status %q, want 401", status)
	}
	if got, want := svc.requests.Load(), int32(1); got != want {
		t.Errorf("the service saw %d requests, want %d", got, want)
	}
	if got := secrets.count(); got != 3 {
		t.Errorf("%d fetches, want 3", got)
	}
}

func TestHeaderAuthConcurrentRefusalsFetchOnce(t *testing.T) {
	svc := &keyedService{}
	svc.key.Store("old")
	ts := httptest.NewServer(svc)
	defer ts.Close()
	secrets := &fakeSecrets{value: "old"}
	client := headerClient(ts, secrets, time.Now)
	if _, err := client.Call(context.Background(), "payment", stepRequest("k-warm")); err != nil {
		t.Fatal(err)
	}
	secrets.set("new")
	svc.key.Store("new")
	var wg sync.WaitGroup
	errs := make(chan error, 20)
	for i := range 20 {
		wg.Go(func() {
			_, err := client.Call(context.Background(), "payment", stepRequest(fmt.Sprint("k-", i)))
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("got %v, want every call to pass", err)
		}
	}
	if got := secrets.count(); got != 2 {
		t.Errorf("%d fetches, want 2: one at the start, one for all the refusals", got)
	}
}

// accessDenied is how the SDK reports a refusal; its message names the
// caller's role and account, as AWS's do.
var accessDenied = &smithy.GenericAPIError{Code: "AccessDeniedException",
	Message: "User: arn:aws:sts::111122223333:assumed-role/orderly-agent/x is not authorized to perform: secretsmanager:GetSecretValue on resource: arn:aws:secretsmanager:us-east-1:111122223333:secret:orderly/test/payment"}

func TestHeaderAuthFetchFailureIsTransientAndNamesNoAccount(t *testing.T) {
	svc := &keyedService{}
	svc.key.Store("k1")
	ts := httptest.NewServer(svc)
	defer ts.Close()
	for _, tc := range []struct {
		name    string
		secrets *fakeSecrets
		want    string
	}{
		{"refused", &fakeSecrets{err: accessDenied}, `secret "orderly/test/payment" for header X-Api-Key: Secrets Manager answered AccessDeniedException`},
		{"unreachable", &fakeSecrets{err: errors.New("dial tcp 10.0.0.1:443: i/o timeout; role arn:aws:iam::111122223333:role/x")}, "Secrets Manager could not be reached"},
		{"empty", &fakeSecrets{value: " \n"}, "is empty"},
		{"binary", &fakeSecrets{binary: true}, "has no string value"},
		{"line break", &fakeSecrets{value: "k1\r\nX-Injected: 1"}, "is not a valid header value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := headerClient(ts, tc.secrets, time.Now)
			_, err := client.Call(context.Background(), "payment", stepRequest("k-fail"))
			if !errors.Is(err, order.ErrTransient) || errors.Is(err, order.ErrConfiguration) || errors.Is(err, order.ErrPermanent) {
				t.Fatalf("got %v, want a transient fault only", err)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %q, want it to say %q", err, tc.want)
			}
			for _, leak := range []string{"111122223333", "assumed-role", "k1"} {
				if strings.Contains(err.Error(), leak) {
					t.Errorf("the error %q names %q", err, leak)
				}
			}
			if got := svc.requests.Load(); got != 0 {
				t.Errorf("the service was called %d times without its credential", got)
			}
		})
	}
}

// The secret's value, injected into every answer a service could give,
// appears in nothing the client returns: not its errors, not the
// reference, not a log of them.
func TestNoSecretValueLeavesTheClient(t *testing.T) {
	const secret = `s3cr3t-"value"/<&>+=`
	for _, status := range []int{http.StatusCreated, http.StatusUnauthorized, http.StatusForbidden, http.StatusUnprocessableEntity, http.StatusInternalServerError, http.StatusFound} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got := r.Header.Get("X-Api-Key")
				w.Header().Set("Location", "https://elsewhere.example.com/?key="+got)
				w.WriteHeader(status)
				// Raw, JSON-escaped and HTML-escaped: as services write.
				fmt.Fprintf(w, `{"id": %q, "error": "key %s rejected", "detail": %q}`, got, got, got)
			}))
			defer ts.Close()
			secrets := &fakeSecrets{value: secret}
			client := headerClient(ts, secrets, time.Now)
			var logs bytes.Buffer
			log := slog.New(slog.NewJSONHandler(&logs, nil))

			ans, err := client.Call(context.Background(), "payment", stepRequest("k-leak"))
			ref := ans.Reference + string(ans.Body)
			log.Error("call failed", "error", err, "reference", ref)
			var se *order.ServiceError
			if errors.As(err, &se) {
				log.Error("reason", "reason", order.ReasonFor(err))
			}
			for name, out := range map[string]string{"error": fmt.Sprint(err), "reference": ref, "logs": logs.String()} {
				for _, form := range []string{"s3cr3t", secret} {
					if strings.Contains(out, form) {
						t.Errorf("the %s carries the secret: %s", name, out)
					}
				}
			}
		})
	}
}

// A service that echoes a part of the credential (the token after its
// scheme, a Basic credential's password, a parameter's value) has that
// part scrubbed too, in every form services write it: as is, URL-escaped,
// JSON-escaped (even a character at a time) and base64-encoded.
func TestNoSecretPartLeavesTheClient(t *testing.T) {
	const token = `tok_S3CR3T/+<&>=123456`
	values := map[string]string{
		"bearer":     "Bearer " + token,
		"basic":      "Basic " + base64.StdEncoding.EncodeToString([]byte("merchant-42:"+token)),
		"parameters": `Token realm="shop", token="` + token + `"`,
	}
	html, _ := json.Marshal(token)
	var unicode strings.Builder
	for _, r := range token {
		fmt.Fprintf(&unicode, `\u%04x`, r)
	}
	forms := map[string]string{
		"as is":           token,
		"query-escaped":   url.QueryEscape(token),
		"path-escaped":    url.PathEscape(token),
		"json-escaped":    strings.Trim(string(html), `"`),
		"slash-escaped":   strings.ReplaceAll(token, "/", `\/`),
		"unicode-escaped": unicode.String(),
		"base64":          base64.StdEncoding.EncodeToString([]byte(token)),
		"base64 url":      base64.URLEncoding.EncodeToString([]byte(token)),
		"base64 raw":      base64.RawStdEncoding.EncodeToString([]byte(token)),
		"base64 raw url":  base64.RawURLEncoding.EncodeToString([]byte(token)),
	}
	leaks := []string{"S3CR3T", token}
	for _, form := range forms {
		if !strings.Contains(form, `\u`) && !strings.Contains(form, `\/`) {
			leaks = append(leaks, form)
		}
	}
	for name, value := range values {
		for formName, form := range forms {
			for _, status := range []int{http.StatusCreated, http.StatusUnprocessableEntity, http.StatusInternalServerError} {
				t.Run(fmt.Sprintf("%s/%s/%d", name, formName, status), func(t *testing.T) {
					ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
						if r.Header.Get("X-Api-Key") != value {
							w.WriteHeader(http.StatusUnauthorized)
							return
						}
						w.WriteHeader(status)
						fmt.Fprintf(w, `{"id": "ch_%s", "error": "token %s is not allowed", "detail": {"%s": ["%s"]}}`, form, form, form, form)
					}))
					defer ts.Close()
					client := headerClient(ts, &fakeSecrets{value: value}, time.Now)

					ans, err := client.Call(t.Context(), "payment", stepRequest("k-part"))
					if status == http.StatusCreated && err != nil {
						t.Fatalf("Call: %v, want the answer", err)
					}
					var body any
					json.Unmarshal(ans.Body, &body)
					outputs := map[string]string{"error": fmt.Sprint(err), "reason": order.ReasonFor(err),
						"reference": ans.Reference, "result": string(ans.Body), "result decoded": fmt.Sprint(body)}
					for what, out := range outputs {
						for _, leak := range leaks {
							if strings.Contains(out, leak) {
								t.Errorf("the %s carries %q: %s", what, leak, out)
							}
						}
					}
				})
			}
		}
	}
}

// rawService answers every request on a TCP listener with answer, as is:
// bytes no HTTP server would send.
func rawService(t *testing.T, answer string) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listen: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer conn.Close()
				if req, err := http.ReadRequest(bufio.NewReader(conn)); err == nil {
					io.Copy(io.Discard, req.Body)
				}
				io.WriteString(conn, answer)
			}()
		}
	}()
	return "http://" + ln.Addr().String()
}

// What a service sends outside a body (a redirect's Location, bytes Go's
// transport quotes in its error) reaches the client's error scrubbed of
// the credential and cut, however long it is.
func TestServiceBytesOutsideTheBodyAreScrubbedAndCut(t *testing.T) {
	const token = "tok_S3CR3T123"
	long := strings.Repeat("a", 5000)
	redirect := func(location string) string {
		ts := httptest.NewServer(respond(http.StatusFound, http.Header{"Location": {location}}, ""))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	tests := []struct {
		name string
		url  func() string
		kind error
	}{
		{"a Location's host holding the token", func() string { return redirect("https://" + token + ".elsewhere.example/x") }, order.ErrConfiguration},
		{"a Location's long host", func() string { return redirect("https://" + long + ".example/x") }, order.ErrConfiguration},
		{"a status line holding the token", func() string { return rawService(t, "BOGUS "+token+" \r\n\r\n") }, order.ErrTransient},
		{"a long status line", func() string { return rawService(t, "BOGUS "+long+"\r\n\r\n") }, order.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			auth := remote.NewHeaderAuth(headerAuth, &fakeSecrets{value: "Bearer " + token}, time.Minute, time.Now)
			client := remote.NewClientFor(map[string]remote.Service{"payment": {URL: tt.url(), Auth: auth}}, nil, shipped)
			var logs bytes.Buffer
			_, err := client.Call(t.Context(), "payment", stepRequest("k-raw"))
			slog.New(slog.NewJSONHandler(&logs, nil)).Error("call failed", "error", err)
			if !errors.Is(err, tt.kind) {
				t.Fatalf("Call error = %v, want %v", err, tt.kind)
			}
			for what, out := range map[string]string{"error": fmt.Sprint(err), "logs": logs.String()} {
				if strings.Contains(out, "S3CR3T") {
					t.Errorf("the %s carries the token: %s", what, out)
				}
				if strings.Contains(out, long[:1024]) {
					t.Errorf("the %s carries the service's bytes uncut (%d bytes)", what, len(out))
				}
			}
		})
	}
}

func TestSigV4SignsEachCallForItsTarget(t *testing.T) {
	signedAt := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	creds := credentials.NewStaticCredentialsProvider("AKIDEXAMPLE", "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY", "session-token-xyz")
	for _, tc := range []struct {
		name, base, service, target string
		wantScope                   string
		want                        []remote.IAMCall
	}{
		// Function URLs made since October 2025 need both actions.
		{"function URL", "", services.SigningLambda, "arn:aws:lambda:eu-west-1:111122223333:function:charge", "eu-west-1/lambda",
			[]remote.IAMCall{{Action: "lambda:InvokeFunctionUrl", Resource: "arn:aws:lambda:eu-west-1:111122223333:function:charge",
				ConditionKey: "lambda:FunctionUrlAuthType", ConditionVal: "AWS_IAM"},
				{Action: "lambda:InvokeFunction", Resource: "arn:aws:lambda:eu-west-1:111122223333:function:charge",
					ConditionKey: "lambda:InvokedViaFunctionUrl", ConditionVal: "true"}}},
		{"API stage", "/live", services.SigningExecuteAPI, "arn:aws:execute-api:us-west-2:111122223333:a1b2c3d4e5/live", "us-west-2/execute-api",
			[]remote.IAMCall{{Action: "execute-api:Invoke", Resource: "arn:aws:execute-api:us-west-2:111122223333:a1b2c3d4e5/live/POST/payment/charges"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			auth := services.Auth{Type: services.AuthSigV4, Service: tc.service, Target: tc.target}
			var verified, gotToken string
			var gotBody []byte
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				gotBody, _ = io.ReadAll(r.Body)
				gotToken = r.Header.Get("X-Amz-Security-Token")
				verified = verifySignature(t, r, gotBody, creds, tc.service, auth.Region())
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ch_1"}`)
			}))
			defer ts.Close()
			var recorded []remote.IAMCall
			hc := ts.Client()
			hc.Transport = recordIAM(hc.Transport, &recorded)
			svc := remote.Service{URL: ts.URL + tc.base, Auth: remote.NewSigV4Auth(auth, ts.URL+tc.base, creds, func() time.Time { return signedAt })}
			client := remote.NewClientFor(map[string]remote.Service{"payment": svc}, hc, shipped)

			if _, err := client.Call(context.Background(), "payment", stepRequest("k-signed")); err != nil {
				t.Fatal(err)
			}
			if verified != "" {
				t.Error(verified)
			}
			if gotToken != "session-token-xyz" {
				t.Errorf("security token %q, want the session's", gotToken)
			}
			if !slices.Equal(recorded, tc.want) {
				t.Errorf("recorded %+v, want %+v", recorded, tc.want)
			}
		})
	}
}

// verifySignature signs again what the server received, as AWS does, and
// says what differs; "" when the signature is right.
func verifySignature(t *testing.T, r *http.Request, body []byte, creds aws.CredentialsProvider, service, region string) string {
	t.Helper()
	auth := r.Header.Get("Authorization")
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date: " + err.Error()
	}
	sum := sha256.Sum256(body)
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) {
		return "payload hash " + got + " is not the body's"
	}
	if !strings.Contains(auth, "/"+region+"/"+service+"/aws4_request") || !strings.Contains(auth, "idempotency-key") {
		return "Authorization " + auth + ": want the scope " + region + "/" + service + " and the Idempotency-Key signed"
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	signed := auth[strings.Index(auth, "SignedHeaders=")+len("SignedHeaders=") : strings.Index(auth, ", Signature=")]
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header.Set(h, r.Header.Get(h))
		}
	}
	again.Header.Del("Authorization")
	c, _ := creds.Retrieve(context.Background())
	if err := v4.NewSigner().SignHTTP(context.Background(), c, again, hex.EncodeToString(sum[:]), service, region, when); err != nil {
		return err.Error()
	}
	if again.Header.Get("Authorization") != auth {
		return "signature " + auth + " is not " + again.Header.Get("Authorization")
	}
	return ""
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// recordIAM notes the IAM call of each request sent through next.
func recordIAM(next http.RoundTripper, into *[]remote.IAMCall) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return roundTripFunc(func(r *http.Request) (*http.Response, error) {
		if c, ok := remote.IAMCallOf(r); ok {
			*into = append(*into, c...)
		}
		return next.RoundTrip(r)
	})
}

func TestSigV4WithoutCredentialsIsTransient(t *testing.T) {
	ts := httptest.NewServer(respond(http.StatusCreated, nil, `{"id":"x"}`))
	defer ts.Close()
	failing := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no EC2 IMDS role found for arn:aws:iam::111122223333:role/agent")
	})
	auth := services.Auth{Type: services.AuthSigV4, Service: services.SigningLambda, Target: "arn:aws:lambda:us-east-1:111122223333:function:f"}
	client := remote.NewClientFor(map[string]remote.Service{"payment": {URL: ts.URL, Auth: remote.NewSigV4Auth(auth, ts.URL, failing, time.Now)}}, ts.Client(), shipped)
	_, err := client.Call(context.Background(), "payment", stepRequest("k"))
	if !errors.Is(err, order.ErrTransient) || strings.Contains(err.Error(), "111122223333") {
		t.Errorf("got %v, want a transient fault that names no account", err)
	}
}

func TestCallOfAServiceNotConfiguredIsAConfigurationFault(t *testing.T) {
	client := remote.NewClientFor(map[string]remote.Service{"inventory": {URL: "http://127.0.0.1:1"}}, nil, shipped)
	_, err := client.Call(context.Background(), "payment", stepRequest("k"))
	if !errors.Is(err, order.ErrConfiguration) || !strings.Contains(err.Error(), `no base URL configured for service "payment"`) {
		t.Errorf("got %v, want a configuration fault naming the service", err)
	}
}

func TestServicesFromCallsEachServiceAtItsURL(t *testing.T) {
	var paths sync.Map
	serve := func(name string) *httptest.Server {
		return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			paths.Store(name, r.URL.Path)
			w.WriteHeader(http.StatusCreated)
			io.WriteString(w, `{"id":"x"}`)
		}))
	}
	inv, pay := serve("inventory"), serve("payment")
	defer inv.Close()
	defer pay.Close()
	cfg := services.Config{
		"inventory": {URL: inv.URL + "/v2", Auth: services.Auth{Type: services.AuthNone}},
		"payment":   {URL: pay.URL, Auth: services.Auth{Type: services.AuthNone}},
	}
	client := remote.NewClientFor(remote.ServicesFrom(cfg, aws.Config{}), nil, shipped)
	for service, step := range map[string]string{"inventory": ordertest.StepReserveInventory, "payment": ordertest.StepChargePayment} {
		req := stepRequest("k")
		req.Step = step
		if _, err := client.Call(context.Background(), service, req); err != nil {
			t.Fatalf("%s: %v", service, err)
		}
	}
	for service, want := range map[string]string{"inventory": "/v2/inventory/reservations", "payment": "/payment/charges"} {
		if got, _ := paths.Load(service); got != want {
			t.Errorf("%s was called at %v, want %s", service, got, want)
		}
	}
}
