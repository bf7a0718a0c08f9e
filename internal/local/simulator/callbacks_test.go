package simulator_test

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/local/simulator"
	"orderly/internal/order"
	"orderly/internal/testkit/testenv"
)

// callbackSink stands for orderly's POST /callbacks: it keeps each
// callback's Authorization header and body, and answers 200.
type callbackSink struct {
	mu  sync.Mutex
	got []receivedCallback
}

type receivedCallback struct {
	auth string
	at   time.Time
	body struct {
		Outcome string         `json:"outcome"`
		Result  map[string]any `json:"result"`
		Error   string         `json:"error"`
	}
}

func newCallbackSink(t *testing.T) (*callbackSink, string) {
	s := &callbackSink{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var cb receivedCallback
		cb.auth, cb.at = r.Header.Get("Authorization"), time.Now()
		raw, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(raw, &cb.body); err != nil || r.URL.Path != "/callbacks" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.got = append(s.got, cb)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(ts.Close)
	return s, ts.URL + "/callbacks"
}

func (s *callbackSink) received() []receivedCallback {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.got)
}

// callbackBody is a call of the fulfilment example's callback steps: the
// order, its lines, and the callback object the agent adds.
func callbackBody(orderID, url, token string, expires time.Time, skus ...string) string {
	lines := []map[string]any{{"sku": "SKU-1", "quantity": 1}}
	for _, s := range skus {
		lines = append(lines, map[string]any{"sku": s, "quantity": 1})
	}
	raw, _ := json.Marshal(map[string]any{"orderId": orderID, "customerId": "c-42", "lines": lines,
		"callback": map[string]any{"url": url, "token": token, "expiresAt": expires.UTC().Format(time.RFC3339)}})
	return string(raw)
}

// A service given a callback object answers 202 and calls back, with the
// token in the Authorization header, as each test value says; the token
// is in no log line.
func TestServicesCallBack(t *testing.T) {
	const succeeded, working, failed = order.CallbackOutcomeSucceeded, order.CallbackOutcomeWorking, order.CallbackOutcomeFailed
	for _, tt := range []struct {
		name, path, service string
		skus                []string
		want                []string // outcomes, in order
		late                bool     // the first comes after the token expired
		work                bool     // the work is done (a reference kept)
	}{
		{name: "payment", path: "/payment/charges", service: "payment", want: []string{succeeded}, work: true},
		{name: "warehouse", path: "/warehouse/shipments", service: "warehouse", want: []string{succeeded}, work: true},
		{name: "twice", path: "/warehouse/shipments", service: "warehouse", skus: []string{"TEST-WAREHOUSE-CALLBACK-TWICE"}, want: []string{succeeded, succeeded}, work: true},
		{name: "working first", path: "/payment/charges", service: "payment", skus: []string{"TEST-PAYMENT-CALLBACK-WORKING"}, want: []string{working, succeeded}, work: true},
		{name: "out of order", path: "/payment/charges", service: "payment", skus: []string{"TEST-PAYMENT-CALLBACK-OUT-OF-ORDER"}, want: []string{succeeded, working}, work: true},
		{name: "failed", path: "/payment/charges", service: "payment", skus: []string{"TEST-PAYMENT-CALLBACK-FAILED"}, want: []string{failed}},
		{name: "late", path: "/warehouse/shipments", service: "warehouse", skus: []string{"TEST-WAREHOUSE-CALLBACK-LATE"}, want: []string{succeeded}, late: true, work: true},
		{name: "late and twice", path: "/warehouse/shipments", service: "warehouse", skus: []string{"TEST-WAREHOUSE-CALLBACK-LATE", "TEST-WAREHOUSE-CALLBACK-TWICE"},
			want: []string{succeeded, succeeded}, late: true, work: true},
		{name: "another service's value", path: "/payment/charges", service: "payment", skus: []string{"TEST-WAREHOUSE-CALLBACK-FAILED"}, want: []string{succeeded}, work: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var logs testenv.JSONLines
			sink, url := newCallbackSink(t)
			sim, ts, _ := start(t, simulator.WithCallbackDelay(20*time.Millisecond), simulator.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))))
			const token = "tok-SECRET-0123456789abcdef"
			expires := time.Now().Add(time.Second)
			code, answer := rawCall(t, ts.URL+tt.path, "K1", callbackBody("O1", url, token, expires, tt.skus...), nil)
			if code != http.StatusAccepted || answer["status"] != "accepted" {
				t.Fatalf("call: %d %v, want 202 accepted", code, answer)
			}
			waitFor(t, "the callbacks", func() bool { return len(sim.Callbacks(tt.service, "K1")) == len(tt.want) })
			got := sink.received()
			var outcomes []string
			for _, cb := range got {
				outcomes = append(outcomes, cb.body.Outcome)
				if cb.auth != "Orderly-Callback "+token {
					t.Errorf("Authorization %q, want the call's token", cb.auth)
				}
			}
			if !slices.Equal(outcomes, tt.want) {
				t.Errorf("callbacks %v, want %v", outcomes, tt.want)
			}
			ref := sim.Reference(tt.service, "K1")
			if (ref != "") != tt.work {
				t.Errorf("reference %q, want work done: %t", ref, tt.work)
			}
			for _, cb := range got {
				switch cb.body.Outcome {
				case succeeded:
					if cb.body.Result["id"] != ref || answer["id"] != ref {
						t.Errorf("result %v and answer %v, want the work's reference %s", cb.body.Result, answer, ref)
					}
				case failed:
					if cb.body.Error == "" || cb.body.Result != nil {
						t.Errorf("failed callback %+v, want a reason and no result", cb.body)
					}
				}
			}
			if late := got[0].at.After(expires); late != tt.late {
				t.Errorf("first callback at %s, token expiring at %s: late %t, want %t", got[0].at, expires, late, tt.late)
			}
			if strings.Contains(logs.String(), token) || !strings.Contains(logs.String(), `"msg":"callback sent"`) {
				t.Errorf("the logs hold the token, or no callback line: %s", logs.String())
			}
		})
	}
}

// A call made again with its key (the step's wait ended) is accepted
// again and called back with its own token, naming the same work; only
// the first call's callbacks come late.
func TestACallMadeAgainIsCalledBackWithItsNewToken(t *testing.T) {
	t.Parallel()
	sink, url := newCallbackSink(t)
	sim, ts, _ := start(t, simulator.WithCallbackDelay(20*time.Millisecond))
	far := time.Now().Add(time.Hour)
	first := callbackBody("O1", url, "token-of-attempt-1", far, "TEST-WAREHOUSE-CALLBACK-LATE")
	if code, _ := rawCall(t, ts.URL+"/warehouse/shipments", "K1", first, nil); code != http.StatusAccepted {
		t.Fatalf("first call: %d, want 202", code)
	}
	again := callbackBody("O1", url, "token-of-attempt-2", far, "TEST-WAREHOUSE-CALLBACK-LATE")
	if code, _ := rawCall(t, ts.URL+"/warehouse/shipments", "K1", again, nil); code != http.StatusAccepted {
		t.Fatalf("call made again: %d, want 202", code)
	}
	waitFor(t, "the second call's callback", func() bool { return len(sink.received()) == 1 })
	got := sink.received()[0]
	if got.auth != "Orderly-Callback token-of-attempt-2" || got.body.Result["id"] != sim.Reference("warehouse", "K1") {
		t.Errorf("callback %q %v, want the second token and the one piece of work", got.auth, got.body.Result)
	}
	if n := sim.Calls("warehouse", "K1"); n != 2 {
		t.Errorf("%d calls, want 2", n)
	}
	// The first call's callback, an hour away, is dropped at Close, which
	// does not wait for it.
	closed := make(chan struct{})
	go func() { sim.Close(); close(closed) }()
	select {
	case <-closed:
	case <-time.After(5 * time.Second):
		t.Fatal("Close waited for a callback due in an hour")
	}
}

// A callback object the simulator cannot use is refused, with nothing
// done under the key.
func TestAMalformedCallbackIsRefused(t *testing.T) {
	t.Parallel()
	sim, ts, _ := start(t)
	for _, tt := range []struct{ name, body, mention string }{
		{"no URL", callbackBody("O1", "", "t", time.Now()), "callback.url"},
		{"not http", callbackBody("O1", "file:///etc/passwd", "t", time.Now()), "callback.url"},
		{"no token", callbackBody("O1", "http://127.0.0.1:1/callbacks", "", time.Now()), "callback.token"},
		{"no expiry", strings.Replace(callbackBody("O1", "http://127.0.0.1:1/callbacks", "t", time.Now()), `"expiresAt":"`, `"expiresAt":"x`, 1), "callback.expiresAt"},
	} {
		code, answer := rawCall(t, ts.URL+"/payment/charges", "K-"+strings.ReplaceAll(tt.name, " ", "-"), tt.body, nil)
		if code != http.StatusBadRequest || !strings.Contains(answer["error"].(string), tt.mention) {
			t.Errorf("%s: %d %v, want 400 naming %s", tt.name, code, answer, tt.mention)
		}
	}
	if ref := sim.Reference("payment", "K-no-URL"); ref != "" {
		t.Errorf("work done for a refused call: %s", ref)
	}
}

// The fulfilment example's fraud screening scores a customer low and
// lets it through, and flags a TEST-FLAGGED customer with a score of 90;
// a replay answers the same.
func TestFraudScreening(t *testing.T) {
	t.Parallel()
	_, ts, _ := start(t)
	for _, tt := range []struct {
		customer string
		flagged  bool
	}{{"c-42", false}, {"TEST-FLAGGED", true}, {"TEST-FLAGGED-7", true}, {"c-TEST-FLAGGED", false}} {
		b := strings.Replace(body("O-"+tt.customer, nil), `"c-42"`, `"`+tt.customer+`"`, 1)
		code, first := rawCall(t, ts.URL+"/fraud/screenings", "K-"+tt.customer, b, nil)
		_, replay := rawCall(t, ts.URL+"/fraud/screenings", "K-"+tt.customer, b, nil)
		score, _ := first["score"].(float64)
		switch {
		case code != http.StatusCreated || first["flagged"] != tt.flagged || !strings.HasPrefix(first["id"].(string), "fs_"):
			t.Errorf("%s: %d %v, want 201 flagged %t", tt.customer, code, first, tt.flagged)
		case tt.flagged && score != 90, !tt.flagged && (score < 0 || score >= 40):
			t.Errorf("%s: score %v, want 90 when flagged, below 40 otherwise", tt.customer, score)
		case replay["score"] != first["score"] || replay["flagged"] != first["flagged"] || replay["id"] != first["id"]:
			t.Errorf("%s: replay %v, want %v", tt.customer, replay, first)
		}
	}
}

// A callback that orderly does not answer (it is down: the connection is
// refused) or answers 5xx is tried again, as a real service would, until
// orderly answers or the token expires; the tally says what it met.
func TestACallbackIsTriedAgainWhileOrderlyIsDown(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		// serve starts orderly's callback route, as it comes up after a
		// while or answers 503 for a while, and returns its URL.
		serve      func(t *testing.T) string
		expiresIn  time.Duration
		wantStatus int
		want       simulator.CallbackTally
	}{
		{name: "orderly answers 503 for a while", serve: func(t *testing.T) string {
			up := time.Now().Add(2500 * time.Millisecond)
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if time.Now().Before(up) {
					w.WriteHeader(http.StatusServiceUnavailable)
					return
				}
				w.Write([]byte(`{}`))
			}))
			t.Cleanup(ts.Close)
			return ts.URL + "/callbacks"
		}, expiresIn: 20 * time.Second, wantStatus: http.StatusOK, want: simulator.CallbackTally{Callbacks: 1, Retried: 1, RetriedDelivered: 1}},
		{name: "orderly is down for a while", serve: func(t *testing.T) string {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close() // nothing listens: connection refused
			go func() {
				time.Sleep(2500 * time.Millisecond)
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					return // the port was taken meanwhile: the test fails on its own
				}
				srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte(`{}`)) })}
				t.Cleanup(func() { srv.Close() })
				srv.Serve(ln)
			}()
			return "http://" + addr + "/callbacks"
		}, expiresIn: 20 * time.Second, wantStatus: http.StatusOK, want: simulator.CallbackTally{Callbacks: 1, Retried: 1, RetriedDelivered: 1}},
		{name: "orderly is down until the token expired", serve: func(t *testing.T) string {
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
			t.Cleanup(ts.Close)
			return ts.URL + "/callbacks"
		}, expiresIn: 3 * time.Second, wantStatus: http.StatusBadGateway, want: simulator.CallbackTally{Callbacks: 1, Retried: 1, Undelivered: 1}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			url := tt.serve(t)
			sim, ts, _ := start(t, simulator.WithCallbackDelay(20*time.Millisecond))
			expires := time.Now().Add(tt.expiresIn)
			if code, _ := rawCall(t, ts.URL+"/payment/charges", "K1", callbackBody("O1", url, "tok", expires), nil); code != http.StatusAccepted {
				t.Fatalf("call: %d, want 202", code)
			}
			testenv.Eventually(t, 15*time.Second, func() (bool, string) {
				got := sim.Callbacks("payment", "K1")
				return len(got) == 1, fmt.Sprintf("callbacks %+v, want one sent", got)
			})
			if got := sim.Callbacks("payment", "K1")[0]; got.Status != tt.wantStatus {
				t.Errorf("callback answered %d, want %d", got.Status, tt.wantStatus)
			}
			got := sim.CallbackTally()
			if got.TriesFailed < 2 {
				t.Errorf("%d failed tries, want at least 2 (a try every half second at first)", got.TriesFailed)
			}
			got.TriesFailed = 0
			if got != tt.want {
				t.Errorf("tally %+v, want %+v", got, tt.want)
			}
		})
	}
}
