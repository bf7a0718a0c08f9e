package simulator_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"orderly/internal/local/simulator"
)

// signedAPI stands for a deployed stage's API, whose routes take IAM: it
// checks each request's SigV4 signature, as API Gateway does, before the
// API behind it answers; an unsigned or wrongly signed one gets 403.
type signedAPI struct {
	next   http.Handler
	creds  aws.CredentialsProvider
	region string
	mu     sync.Mutex
	// checked are each request's method and path, and what was wrong
	// with its signature ("" when nothing).
	checked map[string]string
}

func (a *signedAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	problem := verifySigV4(r, body, a.creds, "execute-api", a.region)
	a.mu.Lock()
	a.checked[r.Method+" "+r.URL.Path] += problem
	a.mu.Unlock()
	if problem != "" {
		http.Error(w, `{"message":"Missing Authentication Token"}`, http.StatusForbidden)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	a.next.ServeHTTP(w, r)
}

// verifySigV4 signs again what the server received, as AWS does, and
// says what differs; "" when the signature is right.
func verifySigV4(r *http.Request, body []byte, creds aws.CredentialsProvider, service, region string) string {
	auth := r.Header.Get("Authorization")
	when, err := time.Parse("20060102T150405Z", r.Header.Get("X-Amz-Date"))
	if err != nil {
		return "no X-Amz-Date"
	}
	sum := sha256.Sum256(body)
	if got := r.Header.Get("X-Amz-Content-Sha256"); got != hex.EncodeToString(sum[:]) {
		return "payload hash " + got + " is not the body's"
	}
	if !strings.Contains(auth, "/"+region+"/"+service+"/aws4_request") || !strings.Contains(auth, "SignedHeaders=") {
		return "Authorization " + auth + ": want the scope " + region + "/" + service
	}
	again, _ := http.NewRequest(r.Method, "http://"+r.Host+r.URL.RequestURI(), bytes.NewReader(body))
	signed := auth[strings.Index(auth, "SignedHeaders=")+len("SignedHeaders=") : strings.Index(auth, ", Signature=")]
	for _, h := range strings.Split(signed, ";") {
		if h != "host" {
			again.Header.Set(h, r.Header.Get(h))
		}
	}
	c, _ := creds.Retrieve(context.Background())
	if err := v4.NewSigner().SignHTTP(context.Background(), c, again, hex.EncodeToString(sum[:]), service, region, when); err != nil {
		return err.Error()
	}
	if again.Header.Get("Authorization") != auth {
		return "signature " + auth + " is not " + again.Header.Get("Authorization")
	}
	return ""
}

// Against a deployed stage's API, whose operators' routes take IAM, the
// parties sign each request with SigV4 (the search, the order's view, the
// event and its body) with the credentials and region they are given.
func TestPartiesSignTheirRequestsForADeployedAPI(t *testing.T) {
	t.Parallel()
	creds := credentials.NewStaticCredentialsProvider("AKIDPARTIES", "parties-secret", "")
	waiting := &waitingAPI{views: map[string]string{
		"deliver": view("deliver", 4, "event", simulator.EventDelivered, time.Now().Add(-time.Minute)),
	}}
	api := &signedAPI{next: waiting, creds: creds, region: "eu-west-1", checked: map[string]string{}}
	ts := httptest.NewServer(api)
	t.Cleanup(ts.Close)
	ctx, stop := context.WithCancel(t.Context())
	done := make(chan error, 1)
	signed := simulator.SigV4(aws.Config{Credentials: creds, Region: "eu-west-1"}, nil)
	go func() {
		done <- simulator.NewParties(ts.URL, simulator.PartyConfig{Every: 10 * time.Millisecond, Transport: signed}).Run(ctx)
	}()
	waitFor(t, "the event taken", func() bool { waiting.mu.Lock(); defer waiting.mu.Unlock(); return len(waiting.sent) == 1 })
	stop()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	if want := `deliver delivered {"trackingId":"ref_deliver_3"}`; waiting.sent[0] != want {
		t.Errorf("event sent %s, want %s", waiting.sent[0], want)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	for request, problem := range api.checked {
		if problem != "" {
			t.Errorf("%s: %s", request, problem)
		}
	}
	for _, want := range []string{"GET /ops/orders", "GET /ops/orders/deliver", "POST /ops/orders/deliver/events/delivered"} {
		if _, ok := api.checked[want]; !ok {
			t.Errorf("requests %q, none %s", api.checked, want)
		}
	}
}

// Without credentials the transport refuses to send: a request the API
// would refuse is not sent unsigned.
func TestSigV4WithoutCredentialsSendsNothing(t *testing.T) {
	t.Parallel()
	var sent atomic.Bool
	ts := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { sent.Store(true) }))
	t.Cleanup(ts.Close)
	client := &http.Client{Transport: simulator.SigV4(aws.Config{Region: "eu-west-1"}, nil)}
	resp, err := client.Get(ts.URL + "/ops/orders")
	if err == nil {
		resp.Body.Close()
	}
	if err == nil || !strings.Contains(err.Error(), "credentials") || sent.Load() {
		t.Errorf("GET without credentials: %v (sent %t), want an error naming the credentials and nothing sent", err, sent.Load())
	}
}
