package remote_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/adapter/remote"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// polled is the shipped workflow with charge-payment's service polled.
func polled(t *testing.T) order.Versions {
	t.Helper()
	wf := ordertest.Built(order.DefaultTiming).Latest()
	wf.Steps = slices.Clone(wf.Steps)
	i, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[i].Poll = &order.PollWait{Timeout: time.Hour, Every: time.Minute}
	return order.MustVersions(wf)
}

// A polled call's 202 is accepted with its status URL, resolved and kept
// only under the service's base URL, and its Retry-After. Every check of
// the status URL is a GET with the step's key: 202 goes on (a new
// Location moves the status URL), 200 is the step's answer, 303 points to
// it, a 4xx is a failure classified as a call's. No error names the URL
// a service gave, which may carry its token.
func TestPolledCallAndChecks(t *testing.T) {
	const secret = "tok-s3cr3t"
	type answer struct {
		status  int
		headers map[string]string
		body    string
	}
	tests := []struct {
		name string
		// call is the call's answer; check, when set, the status URL's,
		// and result the answer a 303 points to.
		call, check, result answer
		checkURL            string // the request's status URL; "" is the base's /status/1
		wantAccepted        bool
		wantStatusURL       string // with "BASE" for the service's base URL
		wantRetry           time.Duration
		wantRef             string
		wantErr             error
	}{
		{name: "accepted", call: answer{202, map[string]string{"Location": "/status/1?sig=" + secret, "Retry-After": "5"}, ""},
			wantAccepted: true, wantStatusURL: "BASE/status/1?sig=" + secret, wantRetry: 5 * time.Second},
		{name: "accepted with an absolute Location", call: answer{202, map[string]string{"Location": "BASE/jobs/7"}, ""},
			wantAccepted: true, wantStatusURL: "BASE/jobs/7"},
		{name: "done at once", call: answer{200, nil, `{"id":"ch_1"}`}, wantRef: "ch_1"},
		{name: "accepted without a Location", call: answer{202, nil, ""}, wantErr: order.ErrContract},
		{name: "accepted elsewhere", call: answer{202, map[string]string{"Location": "https://evil.example/status?sig=" + secret}, ""}, wantErr: order.ErrContract},
		{name: "accepted with a fragment", call: answer{202, map[string]string{"Location": "/status/1#" + secret}, ""}, wantErr: order.ErrContract},
		{name: "check: working", check: answer{202, map[string]string{"Retry-After": "30"}, `{"status":"working"}`}, wantAccepted: true, wantRetry: 30 * time.Second},
		{name: "check: working, moved", check: answer{202, map[string]string{"Location": "/status/2"}, ""}, wantAccepted: true, wantStatusURL: "BASE/status/2"},
		{name: "check: moved elsewhere", check: answer{202, map[string]string{"Location": "http://169.254.169.254/latest?sig=" + secret}, ""}, wantErr: order.ErrContract},
		{name: "check: done", check: answer{200, nil, `{"id":"ch_9","amount":12}`}, wantRef: "ch_9"},
		{name: "check: done, see other", check: answer{303, map[string]string{"Location": "/charges/ch_3"}, ""}, result: answer{200, nil, `{"id":"ch_3"}`}, wantRef: "ch_3"},
		{name: "check: see other elsewhere", check: answer{303, map[string]string{"Location": "https://evil.example/r?sig=" + secret}, ""}, wantErr: order.ErrContract},
		{name: "check: failed", check: answer{422, nil, `{"error":"card declined"}`}, wantErr: order.ErrPermanent},
		{name: "check: down", check: answer{503, nil, ""}, wantErr: order.ErrTransient},
		{name: "check: a status URL off the service", checkURL: "https://evil.example/status/1?sig=" + secret, wantErr: order.ErrConfiguration},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var base string
			var gets []string
			write := func(w http.ResponseWriter, a answer) {
				for k, v := range a.headers {
					w.Header().Set(k, strings.ReplaceAll(v, "BASE", base))
				}
				w.WriteHeader(a.status)
				io.WriteString(w, a.body)
			}
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Header.Get("Idempotency-Key") == "" {
					t.Errorf("%s %s without an Idempotency-Key", r.Method, r.URL)
				}
				switch {
				case r.Method == http.MethodPost:
					if r.Header.Get("Prefer") != remote.PreferAsync {
						t.Errorf("the call's Prefer header is %q, want %q", r.Header.Get("Prefer"), remote.PreferAsync)
					}
					write(w, tt.call)
				case strings.HasPrefix(r.URL.Path, "/charges/"):
					gets = append(gets, r.URL.Path)
					write(w, tt.result)
				default:
					gets = append(gets, r.URL.Path)
					write(w, tt.check)
				}
			}))
			defer ts.Close()
			base = ts.URL + "/svc"
			if strings.Contains(tt.call.headers["Location"], "/jobs/") || strings.HasPrefix(tt.call.headers["Location"], "/") {
				base = ts.URL
			}
			if tt.check.status != 0 || tt.checkURL != "" {
				base = ts.URL
			}
			client := remote.NewClient(base, ts.Client(), polled(t))
			req := stepRequest("ORDER1/charge-payment")
			if tt.check.status != 0 || tt.checkURL != "" {
				req.Poll = base + "/status/1"
				if tt.checkURL != "" {
					req.Poll = tt.checkURL
				}
			}
			got, err := client.Call(t.Context(), "payment", req)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Call: %v, want %v", err, tt.wantErr)
				}
				if strings.Contains(err.Error(), secret) {
					t.Errorf("error %q names the service's URL with its token", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Call: %v", err)
			}
			want := strings.ReplaceAll(tt.wantStatusURL, "BASE", base)
			if got.Accepted != tt.wantAccepted || got.StatusURL != want || got.RetryAfter != tt.wantRetry || got.Reference != tt.wantRef {
				t.Errorf("answer %+v, want accepted %t, status URL %q, retry after %s, reference %q", got, tt.wantAccepted, want, tt.wantRetry, tt.wantRef)
			}
			if tt.check.status == 0 && len(gets) > 0 {
				t.Errorf("the call made checks %q", gets)
			}
		})
	}
}

// A check never follows the service elsewhere by a redirect of the
// answer it points to, and a refused connection does not name the URL.
func TestCheckErrorsDoNotNameTheStatusURL(t *testing.T) {
	ts := httptest.NewServer(http.NotFoundHandler())
	base := ts.URL
	ts.Close() // nothing listens there now
	client := remote.NewClient(base, http.DefaultClient, polled(t))
	req := stepRequest("ORDER1/charge-payment")
	req.Poll = base + "/status/1?sig=tok-s3cr3t"
	_, err := client.Call(t.Context(), "payment", req)
	if !errors.Is(err, order.ErrTransient) || strings.Contains(err.Error(), "tok-s3cr3t") || strings.Contains(err.Error(), "/status/1") {
		t.Errorf("Call: %v; want a transient error that does not name the status URL", err)
	}
}
