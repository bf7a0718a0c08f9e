package remote_test

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"orderly/internal/adapter/remote"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// shipped is the shipped workflow, whose steps name the calls the client makes.
var shipped = ordertest.Built(order.DefaultTiming)

func stepRequest(key string) order.StepRequest {
	return order.StepRequest{
		OrderID:        "ORDER1",
		Step:           ordertest.StepChargePayment,
		Attempt:        3,
		IdempotencyKey: key,
		Input:          json.RawMessage(`{"customerId":"cust-42","lines":[{"sku":"WIDGET-1","quantity":2},{"sku":"GADGET-7","quantity":1}]}`),
	}
}

// respond returns a handler that answers every request the same way.
func respond(status int, header http.Header, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		for k, v := range header {
			w.Header()[k] = v
		}
		w.WriteHeader(status)
		io.WriteString(w, body)
	}
}

// holdUntilClientGivesUp never answers. It reads the body first because
// net/http notices a client hanging up only once the body is consumed;
// until then ts.Close would wait for the handler forever.
var holdUntilClientGivesUp = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
	io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
})

func TestCallSendsTheContract(t *testing.T) {
	tests := []struct {
		service  string
		step     string
		wantPath string
	}{
		{"inventory", ordertest.StepReserveInventory, "/inventory/reservations"},
		{"payment", ordertest.StepChargePayment, "/payment/charges"},
		{"shipping", ordertest.StepArrangeShipping, "/shipping/shipments"},
	}
	for _, tt := range tests {
		t.Run(tt.service, func(t *testing.T) {
			var got *http.Request
			var gotBody []byte
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r
				gotBody, _ = io.ReadAll(r.Body)
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ref_1"}`)
			}))
			defer ts.Close()
			key := order.IdempotencyKeyFor("ORDER1", ordertest.StepChargePayment)
			req := stepRequest(key)
			req.Step = tt.step

			// A trailing slash on the base URL must not double up.
			answer, err := remote.NewClient(ts.URL+"/", ts.Client(), shipped).Call(t.Context(), tt.service, req)
			ref := answer.Reference
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			if ref != "ref_1" {
				t.Errorf("reference = %q, want %q", ref, "ref_1")
			}
			if got.Method != http.MethodPost || got.URL.Path != tt.wantPath {
				t.Errorf("request = %s %s, want POST %s", got.Method, got.URL.Path, tt.wantPath)
			}
			if ct := got.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("Content-Type = %q, want application/json", ct)
			}
			if k := got.Header.Get("Idempotency-Key"); k != "ORDER1/charge-payment" {
				t.Errorf("Idempotency-Key = %q, want %q", k, "ORDER1/charge-payment")
			}
			var body map[string]json.RawMessage
			if err := json.Unmarshal(gotBody, &body); err != nil {
				t.Fatalf("body %s: %v", gotBody, err)
			}
			if keys := slices.Sorted(func(yield func(string) bool) {
				for k := range body {
					if !yield(k) {
						return
					}
				}
			}); !slices.Equal(keys, []string{"customerId", "lines", "orderId"}) {
				t.Errorf("body fields = %v, want [customerId lines orderId]", keys)
			}
			want := `{"customerId":"cust-42","lines":[{"sku":"WIDGET-1","quantity":2},{"sku":"GADGET-7","quantity":1}],"orderId":"ORDER1"}`
			if string(gotBody) != want {
				t.Errorf("body = %s, want %s", gotBody, want)
			}
		})
	}
}

// The fault classes, by status: the agent retries a transient fault,
// replies with an error (the step fails) on a permanent one, and holds the
// request on a configuration fault (see package agent). wantStatus is how
// a configuration fault's status is named in metrics and alarms.
func TestCallClassifiesResponses(t *testing.T) {
	type classification struct {
		name       string
		status     int
		header     http.Header
		body       string
		wantRef    string
		wantKind   error // nil for success
		wantMsg    string
		wantStatus string
	}
	tests := []classification{
		{name: "created", status: 201, body: `{"id":"ch_1"}`, wantRef: "ch_1"},
		{name: "replayed", status: 200, header: http.Header{"Idempotent-Replayed": {"true"}}, body: `{"id":"ch_1"}`, wantRef: "ch_1"},
		{name: "success without id", status: 201, body: `{}`, wantKind: order.ErrTransient, wantMsg: "status 201 without a reference"},
		{name: "success with garbage", status: 201, body: `<html>`, wantKind: order.ErrTransient, wantMsg: "without a reference"},
		{name: "503", status: 503, body: `{"error":"busy"}`, wantKind: order.ErrTransient,
			wantMsg: "payment: POST /payment/charges: status 503: busy: transient fault"},
		{name: "429", status: 429, body: `{"error":"slow down"}`, wantKind: order.ErrTransient, wantMsg: "status 429: slow down"},
		{name: "500 plain text", status: 500, body: "oops\n", wantKind: order.ErrTransient, wantMsg: "status 500: oops: transient"},
		{name: "502 empty", status: 502, wantKind: order.ErrTransient, wantMsg: "status 502: Bad Gateway"},
		{name: "504", status: 504, wantKind: order.ErrTransient, wantMsg: "status 504"},
		{name: "599", status: 599, wantKind: order.ErrTransient, wantMsg: "status 599"},
		{name: "408", status: 408, wantKind: order.ErrTransient, wantMsg: "status 408"},
		// The IETF Idempotency-Key draft answers 409 while a request with
		// the same key is still in flight, as after an abandoned attempt.
		{name: "409 key in flight", status: 409, body: `{"error":"a request with this key is in progress"}`,
			wantKind: order.ErrTransient, wantMsg: "status 409: a request with this key is in progress"},
		{name: "422", status: 422, body: `{"error":"card declined"}`, wantKind: order.ErrPermanent,
			wantMsg: "payment: POST /payment/charges: status 422: card declined: permanent fault"},
		{name: "400", status: 400, body: `{"error":"bad"}`, wantKind: order.ErrPermanent, wantMsg: "status 400: bad"},
		{name: "402", status: 402, body: `{"error":"card declined"}`, wantKind: order.ErrPermanent, wantMsg: "status 402: card declined"},
		{name: "410", status: 410, wantKind: order.ErrPermanent, wantMsg: "status 410"},
		{name: "501", status: 501, wantKind: order.ErrPermanent, wantMsg: "status 501"},
		// The service, or something in front of it (a WAF, a gateway, a
		// proxy), refuses how it is called: a credential, an address, a
		// method or a format that is wrong for every order alike.
		{name: "401", status: 401, body: `{"error":"token expired"}`, wantKind: order.ErrConfiguration,
			wantMsg: "payment: POST /payment/charges: status 401: token expired: configuration fault", wantStatus: "401"},
		{name: "403 from a WAF", status: 403, body: "<html>Request blocked</html>", wantKind: order.ErrConfiguration,
			wantMsg: "status 403: <html>Request blocked</html>: configuration fault", wantStatus: "403"},
		{name: "404", status: 404, wantKind: order.ErrConfiguration, wantMsg: "status 404: Not Found", wantStatus: "404"},
		{name: "405", status: 405, wantKind: order.ErrConfiguration, wantMsg: "status 405: Method Not Allowed", wantStatus: "405"},
		{name: "407", status: 407, wantKind: order.ErrConfiguration, wantMsg: "status 407", wantStatus: "407"},
		{name: "415", status: 415, wantKind: order.ErrConfiguration, wantMsg: "status 415: Unsupported Media Type", wantStatus: "415"},
	}
	// Every redirect, with a Location or without.
	for status := 300; status <= 308; status++ {
		tests = append(tests, classification{name: strconv.Itoa(status), status: status, header: http.Header{"Location": {"https://moved.example.com/v2/charges"}},
			wantKind: order.ErrConfiguration, wantStatus: "3xx",
			wantMsg: fmt.Sprintf("payment: POST /payment/charges: redirected to moved.example.com (status %d): remote services must answer at the configured URL; fix the service's base URL: configuration fault", status)})
	}
	tests = append(tests, classification{name: "302 without a Location", status: 302, wantKind: order.ErrConfiguration, wantStatus: "3xx",
		wantMsg: "redirected without a Location (status 302): remote services must answer at the configured URL"})
	classes := []error{order.ErrTransient, order.ErrPermanent, order.ErrConfiguration}
	var named []string
	for _, tt := range tests {
		if tt.wantStatus != "" && !slices.Contains(named, tt.wantStatus) {
			named = append(named, tt.wantStatus)
		}
	}
	if !slices.Equal(slices.Sorted(slices.Values(named)), slices.Sorted(slices.Values(remote.ConfigurationStatuses))) {
		t.Errorf("remote.ConfigurationStatuses = %v, want the statuses classified as configuration faults here, %v", remote.ConfigurationStatuses, named)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(tt.status, tt.header, tt.body))
			defer ts.Close()

			answer, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", stepRequest("k1"))
			ref := answer.Reference
			if ref != tt.wantRef {
				t.Errorf("reference = %q, want %q", ref, tt.wantRef)
			}
			if tt.wantKind == nil {
				if err != nil {
					t.Fatalf("Call: %v, want success", err)
				}
				return
			}
			for _, class := range classes {
				if got, want := errors.Is(err, class), class == tt.wantKind; got != want {
					t.Errorf("Call error = %v: wraps %v is %t, want %t", err, class, got, want)
				}
			}
			if !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Call error = %q, want it to contain %q", err, tt.wantMsg)
			}
			got, ok := order.ConfigurationStatus(err)
			if got != tt.wantStatus || ok != (tt.wantStatus != "") {
				t.Errorf("ConfigurationStatus = %q, %t, want %q, %t", got, ok, tt.wantStatus, tt.wantStatus != "")
			}
			if ok && !slices.Contains(remote.ConfigurationStatuses, got) {
				t.Errorf("ConfigurationStatus = %q, not one of remote.ConfigurationStatuses %v (the stack alarms on each)", got, remote.ConfigurationStatuses)
			}
			// Only a 404 may name what one order names and the service
			// does not know (the agent's circuit then fails that order
			// alone); a 403 is every order's (an expired credential).
			if got, want := order.UnknownEntity(err), tt.status == http.StatusNotFound; got != want {
				t.Errorf("UnknownEntity = %t, want %t", got, want)
			}
		})
	}
}

// A remote service that answers with a redirect is misconfigured (its
// base URL is wrong): the client never follows it, whatever http.Client it
// was given, because following turns the POST into a call to another host
// carrying the step's Idempotency-Key (and a 302 or 303 into a GET whose
// 2xx would pass for the work done). The answer is a configuration fault
// that names where the service pointed.
func TestCallNeverFollowsARedirect(t *testing.T) {
	for _, status := range []int{301, 302, 303, 307, 308} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var elsewhere atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				elsewhere.Add(1)
				respond(200, nil, `{"id":"ch_elsewhere"}`)(w, r)
			}))
			defer other.Close()
			ts := httptest.NewServer(respond(status, http.Header{"Location": {other.URL + "/payment/charges?token=secret"}}, ""))
			defer ts.Close()

			for name, hc := range map[string]*http.Client{"nil": nil, "the test server's": ts.Client(), "the default": http.DefaultClient} {
				answer, err := remote.NewClient(ts.URL, hc, shipped).Call(t.Context(), "payment", stepRequest("k1"))
				ref := answer.Reference
				if n := elsewhere.Load(); n != 0 {
					t.Fatalf("%s client: the redirect's target got %d calls, want 0", name, n)
				}
				if ref != "" || !errors.Is(err, order.ErrConfiguration) {
					t.Fatalf("%s client: Call = %q, %v; want no reference and a configuration fault", name, ref, err)
				}
				if errors.Is(err, order.ErrPermanent) || errors.Is(err, order.ErrTransient) {
					t.Errorf("%s client: Call error = %v, wraps another fault class as well", name, err)
				}
				host := strings.TrimPrefix(other.URL, "http://")
				want := fmt.Sprintf("redirected to %s (status %d): remote services must answer at the configured URL; fix the service's base URL", host, status)
				if !strings.Contains(err.Error(), want) {
					t.Errorf("%s client: Call error = %q, want it to contain %q", name, err, want)
				}
				if strings.Contains(err.Error(), "secret") {
					t.Errorf("%s client: Call error = %q quotes the Location's query", name, err)
				}
			}
		})
	}
	// The caller's client is left as it was: the copy refuses redirects.
	hc := &http.Client{}
	remote.NewClient("http://localhost", hc, shipped)
	if hc.CheckRedirect != nil {
		t.Error("NewClient changed the caller's http.Client")
	}
}

func TestCallRefusesBadRequestsWithoutSending(t *testing.T) {
	tests := []struct {
		name    string
		service string
		key     string
		wantMsg string
	}{
		{"unknown service", "billing", "k1", `remote service "billing": unknown`},
		{"empty service", "", "k1", "unknown"},
		{"no idempotency key", "payment", "", "no idempotency key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int32
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				hits.Add(1)
				respond(201, nil, `{"id":"x"}`)(w, r)
			}))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), tt.service, stepRequest(tt.key))
			if !errors.Is(err, order.ErrPermanent) || !strings.Contains(err.Error(), tt.wantMsg) {
				t.Errorf("Call error = %v, want order.ErrPermanent containing %q", err, tt.wantMsg)
			}
			if n := hits.Load(); n != 0 {
				t.Errorf("server was called %d times, want 0", n)
			}
		})
	}
}

func TestCallEndedByContextIsTransient(t *testing.T) {
	ts := httptest.NewServer(holdUntilClientGivesUp)
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client(), shipped)

	cancelled, cancel := context.WithCancel(t.Context())
	cancel()
	deadline, cancelDeadline := context.WithTimeout(t.Context(), 50*time.Millisecond)
	defer cancelDeadline()

	tests := []struct {
		name    string
		ctx     context.Context
		wantErr error
	}{
		{"cancelled", cancelled, context.Canceled},
		{"deadline", deadline, context.DeadlineExceeded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := client.Call(tt.ctx, "payment", stepRequest("k1"))
			if !errors.Is(err, tt.wantErr) || !errors.Is(err, order.ErrTransient) {
				t.Errorf("Call error = %v, want it to wrap %v and order.ErrTransient", err, tt.wantErr)
			}
			if !strings.HasPrefix(err.Error(), "payment: POST /payment/charges: ") {
				t.Errorf("Call error = %q, want it to name the call", err)
			}
		})
	}
}

func TestCallNetworkErrorIsTransient(t *testing.T) {
	ts := httptest.NewServer(respond(201, nil, `{"id":"x"}`))
	url := ts.URL
	ts.Close()

	_, err := remote.NewClient(url, nil, shipped).Call(t.Context(), "payment", stepRequest("k1"))
	if !errors.Is(err, order.ErrTransient) {
		t.Errorf("Call error = %v, want order.ErrTransient", err)
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Call error = %v, wraps a context error though the context is live", err)
	}
}

func TestCallHTTPClientTimeoutIsTransient(t *testing.T) {
	ts := httptest.NewServer(holdUntilClientGivesUp)
	defer ts.Close()
	hc := ts.Client()
	hc.Timeout = 50 * time.Millisecond

	_, err := remote.NewClient(ts.URL, hc, shipped).Call(t.Context(), "payment", stepRequest("k1"))
	if !errors.Is(err, order.ErrTransient) {
		t.Errorf("Call error = %v, want order.ErrTransient", err)
	}
}

func TestCallReadsAtMost64KiB(t *testing.T) {
	huge := strings.Repeat("x", 1<<20)
	tests := []struct {
		name     string
		status   int
		body     string
		wantKind error
		maxLen   int
	}{
		// The work was done, and no retry shortens the answer: a contract
		// fault (before it was a cut, unreadable answer, retried in vain).
		{"success padded past the limit", 201, `{"id":"ch_1","padding":"` + huge + `"}`, order.ErrContract, 1000},
		{"error text quoted in part", 503, huge, order.ErrTransient, 1000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(tt.status, nil, tt.body))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", stepRequest("k1"))
			if !errors.Is(err, tt.wantKind) {
				t.Fatalf("Call error = %v, want %v", err, tt.wantKind)
			}
			if n := len(err.Error()); n > tt.maxLen {
				t.Errorf("error message is %d bytes, want at most %d", n, tt.maxLen)
			}
		})
	}
}

// Every message taken from a service's answer is cut to 512 bytes, on a
// character's boundary and marked, before it reaches an error (and so a
// log or a reason); a short one is kept whole.
func TestServiceMessageIsCut(t *testing.T) {
	long := strings.Repeat("é", 2000) // two bytes each: a cut may fall inside one
	tests := []struct {
		name, body, want string
		cut              bool
	}{
		{"a long error field", `{"error":"` + long + `"}`, "éé", true},
		{"a long text body", long, "éé", true},
		{"a short error field", `{"error":"card declined"}`, "card declined", false},
		{"a short text body", "card declined", "card declined", false},
		{"at the bound", `{"error":"` + strings.Repeat("x", 512) + `"}`, strings.Repeat("x", 512), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(http.StatusUnprocessableEntity, nil, tt.body))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", stepRequest("k1"))
			var se *order.ServiceError
			if !errors.As(err, &se) {
				t.Fatalf("Call error = %v, want an order.ServiceError", err)
			}
			if n := len(se.Message); n > 512 || !utf8.ValidString(se.Message) {
				t.Errorf("message is %d bytes (valid UTF-8: %t), want at most 512 of valid UTF-8", n, utf8.ValidString(se.Message))
			}
			if got := strings.HasSuffix(se.Message, "…"); got != tt.cut {
				t.Errorf("message %q marked as cut: %t, want %t", se.Message, got, tt.cut)
			}
			if !strings.Contains(se.Message, tt.want) {
				t.Errorf("message %q, want it to hold %q", se.Message, tt.want)
			}
		})
	}
}

// A service's id is the step's reference, kept in the order and shown to
// operators and clients: it is at most 256 printable characters of valid
// UTF-8. Any other is a contract fault (the work was done; an operator
// must act) whose reason never quotes it, for a call and an undo alike.
func TestCallRefusesAReferenceOutOfBounds(t *testing.T) {
	tests := []struct {
		name, id string
		raw      bool // id is JSON as it is, not a string to quote
		want     error
		mention  string
	}{
		{"short", "ch_1", false, nil, ""},
		{"at the bound", strings.Repeat("r", 256), false, nil, ""},
		{"at the bound in characters", strings.Repeat("é", 256), false, nil, ""},
		{"printable, with a space and a symbol", "ch 1 ✓", false, nil, ""},
		{"over the bound", strings.Repeat("r", 257), false, order.ErrContract, "over the 256"},
		{"a line break", `ch_1\nforged log line`, false, order.ErrContract, "not printable"},
		{"a control character, JSON-escaped", `ch_1\u0007`, false, order.ErrContract, "not printable"},
		{"a direction override", "ch_1\u202egpj.exe", false, order.ErrContract, "not printable"},
		{"invalid UTF-8", "\"ch_\xff\"", true, order.ErrContract, "not valid UTF-8"},
	}
	for _, tt := range tests {
		for _, undo := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/undo=%t", tt.name, undo), func(t *testing.T) {
				id := tt.id
				if !tt.raw {
					id = `"` + id + `"`
				}
				ts := httptest.NewServer(respond(http.StatusOK, nil, `{"id":`+id+`}`))
				defer ts.Close()
				req := stepRequest("k1")
				req.Undo = undo

				answer, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", req)
				if !errors.Is(err, tt.want) || (tt.want == nil) != (err == nil) {
					t.Fatalf("Call() = %q, %v; want %v", answer.Reference, err, tt.want)
				}
				if err == nil {
					var want string
					json.Unmarshal([]byte(id), &want)
					if answer.Reference != want {
						t.Errorf("reference = %q, want %q", answer.Reference, want)
					}
					return
				}
				if answer.Reference != "" {
					t.Errorf("reference = %q, want none with a contract fault", answer.Reference)
				}
				reason := order.ReasonFor(err)
				if !strings.Contains(reason, tt.mention) || strings.Contains(reason, "ch_1") || strings.Contains(reason, "rrrr") {
					t.Errorf("reason %q, want it to say %q and not quote the id", reason, tt.mention)
				}
			})
		}
	}
}

func TestRetryAfter(t *testing.T) {
	date := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name   string
		header http.Header
		want   time.Duration
		wantOK bool
	}{
		{"seconds", http.Header{"Retry-After": {"3"}}, 3 * time.Second, true},
		{"zero", http.Header{"Retry-After": {"0"}}, 0, true},
		{"date against the response's Date", http.Header{
			"Date":        {date.Format(http.TimeFormat)},
			"Retry-After": {date.Add(5 * time.Second).Format(http.TimeFormat)},
		}, 5 * time.Second, true},
		{"date in the past", http.Header{
			"Date":        {date.Format(http.TimeFormat)},
			"Retry-After": {date.Add(-time.Minute).Format(http.TimeFormat)},
		}, 0, true},
		{"negative", http.Header{"Retry-After": {"-1"}}, 0, false},
		{"garbage", http.Header{"Retry-After": {"soon"}}, 0, false},
		{"absent", nil, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ts := httptest.NewServer(respond(503, tt.header, `{"error":"busy"}`))
			defer ts.Close()

			_, err := remote.NewClient(ts.URL, ts.Client(), shipped).Call(t.Context(), "payment", stepRequest("k1"))
			if !errors.Is(err, order.ErrTransient) {
				t.Fatalf("Call error = %v, want order.ErrTransient", err)
			}
			got, ok := order.RetryAfter(err)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("RetryAfter = %v, %t, want %v, %t", got, ok, tt.want, tt.wantOK)
			}
		})
	}
	if _, ok := order.RetryAfter(nil); ok {
		t.Error("RetryAfter(nil) reported a delay")
	}
}

// The call and its undo go where the step's definition says, with its
// method: nothing about a service's paths is in the client.
func TestCallTakesTheStepsDefinedCall(t *testing.T) {
	wf := order.Workflow{Version: "7", Steps: []order.StepDef{
		{Name: "check-fraud", Agent: "fraud", Call: order.Endpoint{Method: http.MethodPut, Path: "/v2/checks"},
			Undo: "forget the check", UndoCall: order.Endpoint{Method: http.MethodDelete, Path: "/v2/checks/undo"}},
		{Name: "notify", Agent: "mail", Call: order.Endpoint{Method: http.MethodPost, Path: "/send"}},
	}}
	versions := order.MustVersions(wf)
	tests := []struct {
		name      string
		step      string
		version   string
		undo      bool
		service   string // the caller's; empty: fraud
		want      string // method and path the service sees; empty: no call
		wantClass error
	}{
		{"call", "check-fraud", "7", false, "", "PUT /v2/checks", nil},
		{"undo", "check-fraud", "7", true, "", "DELETE /v2/checks/undo", nil},
		{"no undo defined", "notify", "7", true, "mail", "", order.ErrPermanent},
		{"unknown step", "ship", "7", false, "", "", order.ErrPermanent},
		{"a version not in this build waits for it", "check-fraud", "8", false, "", "", order.ErrNotInBuild},
		{"another service's step", "notify", "7", false, "fraud", "", order.ErrPermanent},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				got = r.Method + " " + r.URL.Path
				w.WriteHeader(http.StatusCreated)
				io.WriteString(w, `{"id":"ref_1"}`)
			}))
			defer ts.Close()
			req := stepRequest("k1")
			req.Step, req.Version, req.Undo = tt.step, tt.version, tt.undo
			_, err := remote.NewClient(ts.URL, ts.Client(), versions).Call(t.Context(), cmp.Or(tt.service, "fraud"), req)
			if got != tt.want {
				t.Errorf("service saw %q, want %q", got, tt.want)
			}
			if tt.wantClass == nil && err != nil || tt.wantClass != nil && !errors.Is(err, tt.wantClass) {
				t.Errorf("Call: %v, want class %v", err, tt.wantClass)
			}
		})
	}
}
