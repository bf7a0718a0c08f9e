package remote_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"orderly/internal/adapter/remote"
	"orderly/internal/callbacktoken"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// callingBack is the shipped workflow with charge-payment's service
// calling back.
func callingBack(t *testing.T) (order.Versions, order.StepDef) {
	t.Helper()
	wf := ordertest.Built(order.DefaultTiming).Latest()
	wf.Steps = slices.Clone(wf.Steps)
	i, _ := wf.Index(ordertest.StepChargePayment)
	wf.Steps[i].Callback = &order.CallbackWait{Timeout: time.Hour, MaxTimeout: 6 * time.Hour}
	return order.MustVersions(wf), wf.Steps[i]
}

func callbackSealer(t *testing.T) *callbacktoken.Sealer {
	t.Helper()
	s, err := callbacktoken.New(bytes.Repeat([]byte{9}, callbacktoken.MinKeyBytes))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The call of a step that calls back carries the callback URL, a token
// that opens with the stage's key to the attempt's claim, and the token's
// expiry; the service's 202 is the call accepted (an answer with no
// reference), its 200 or 201 the work done at once. An undo carries no
// callback, and its 202 is an answer like any other.
func TestCallOfAStepThatCallsBack(t *testing.T) {
	versions, def := callingBack(t)
	now := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	sealer := callbackSealer(t)
	tests := []struct {
		name     string
		undo     bool
		status   int
		body     string
		wantRef  string
		carries  bool
		wantsErr bool
	}{
		{name: "accepted", status: http.StatusAccepted, body: `{"status":"pending"}`, carries: true},
		{name: "accepted with no body", status: http.StatusAccepted, carries: true},
		{name: "done at once", status: http.StatusOK, body: `{"id":"ch_1"}`, wantRef: "ch_1", carries: true},
		{name: "created at once", status: http.StatusCreated, body: `{"id":"ch_2"}`, wantRef: "ch_2", carries: true},
		{name: "refused", status: http.StatusUnprocessableEntity, body: `{"error":"declined"}`, carries: true, wantsErr: true},
		{name: "an undo", undo: true, status: http.StatusAccepted, body: `{"id":"rf_1"}`, wantRef: "rf_1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body map[string]json.RawMessage
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				raw, _ := io.ReadAll(r.Body)
				if err := json.Unmarshal(raw, &body); err != nil {
					t.Errorf("body %s: %v", raw, err)
				}
				w.WriteHeader(tt.status)
				io.WriteString(w, tt.body)
			}))
			defer ts.Close()
			client := remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{
				URL: "https://api.example.com/dev/callbacks", Tokens: callbacktoken.Fixed(sealer), Now: func() time.Time { return now }})
			req := stepRequest("ORDER1/charge-payment")
			req.OrderID, req.Record, req.AllowanceMs = "01JTQ8ZK5XW3M6R2V9B4N7C1DE", 1, (2 * def.Allowance).Milliseconds()
			if tt.undo {
				req.Undo, req.Record = true, 3
			}
			answer, err := client.Call(t.Context(), "payment", req)
			if (err != nil) != tt.wantsErr {
				t.Fatalf("Call: %v, want an error: %t", err, tt.wantsErr)
			}
			if answer.Reference != tt.wantRef {
				t.Errorf("reference %q, want %q", answer.Reference, tt.wantRef)
			}
			raw, ok := body[remote.BodyCallback]
			if ok != tt.carries {
				t.Fatalf("body %v carries a callback: %t, want %t", body, ok, tt.carries)
			}
			if !ok {
				return
			}
			var cb struct{ URL, Token, ExpiresAt string }
			if err := json.Unmarshal(raw, &cb); err != nil {
				t.Fatalf("callback %s: %v", raw, err)
			}
			// The longest wait, after the attempt's window.
			expires := now.Add(def.Callback.MaxTimeout + max(req.Allowance(), def.Allowance))
			if cb.URL != "https://api.example.com/dev/callbacks" || cb.ExpiresAt != expires.Format(time.RFC3339) {
				t.Errorf("callback %s, want the URL and expiry %s", raw, expires.Format(time.RFC3339))
			}
			got, err := sealer.Open(cb.Token, now)
			want := callbacktoken.Claim{OrderID: req.OrderID, Record: 1, Step: ordertest.StepChargePayment, Attempt: req.Attempt, ExpiresAt: expires}
			if err != nil || got != want {
				t.Errorf("token opens to %+v, %v; want %+v", got, err, want)
			}
		})
	}
}

// A callback object the order's input names is the engine's all the same.
func TestCallbackFieldIsTheEngines(t *testing.T) {
	versions, _ := callingBack(t)
	var body map[string]json.RawMessage
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raw, _ := io.ReadAll(r.Body)
		json.Unmarshal(raw, &body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{
		URL: "https://api.example.com/callbacks", Tokens: callbacktoken.Fixed(callbackSealer(t))})
	req := stepRequest("ORDER1/charge-payment")
	req.Input = json.RawMessage(`{"customerId":"c","lines":[],"callback":{"url":"https://evil.example.com"}}`)
	if _, err := client.Call(t.Context(), "payment", req); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(body[remote.BodyCallback]), `"url":"https://api.example.com/callbacks"`) {
		t.Errorf("callback %s, want the engine's", body[remote.BodyCallback])
	}
}

// Without a callback URL and key, or with a key that cannot be read, the
// call of a step that calls back is not made: a configuration fault, or a
// transient one; neither error names the key's value.
func TestCallOfAStepThatCallsBackNeedsTheKey(t *testing.T) {
	versions, _ := callingBack(t)
	calls := 0
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { calls++; w.WriteHeader(http.StatusAccepted) }))
	defer ts.Close()
	unreadable := func(context.Context) (*callbacktoken.Sealer, error) {
		return nil, errors.New("load callback token key: read secret orderly-t-callback-key: Secrets Manager answered AccessDeniedException")
	}
	tests := []struct {
		name   string
		client *remote.Client
		want   error
	}{
		{"no callbacks", remote.NewClient(ts.URL, ts.Client(), versions), order.ErrConfiguration},
		{"no URL", remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{Tokens: callbacktoken.Fixed(callbackSealer(t))}), order.ErrConfiguration},
		{"a key that cannot be read", remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{URL: "https://api.example.com/callbacks", Tokens: unreadable}), order.ErrTransient},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tt.client.Call(t.Context(), "payment", stepRequest("ORDER1/charge-payment"))
			if !errors.Is(err, tt.want) {
				t.Errorf("Call: %v, want %v", err, tt.want)
			}
		})
	}
	if calls != 0 {
		t.Errorf("%d calls made, want none", calls)
	}
}

// The call of a step that calls back is one its workflow's contract
// describes, callback and all, and the contract calls its 202 accepted.
func TestCallOfAStepThatCallsBackMatchesTheContract(t *testing.T) {
	versions, def := callingBack(t)
	wf := versions.Latest()
	check := newContractCheck(t, wf)
	var problems []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		problems = check.request(r, body)
		w.WriteHeader(http.StatusAccepted)
	}))
	defer ts.Close()
	client := remote.NewClient(ts.URL, ts.Client(), versions).CallingBack(remote.Callbacks{
		URL: "https://api.example.com/callbacks", Tokens: callbacktoken.Fixed(callbackSealer(t))})
	req := stepRequest("ORDER1/charge-payment")
	req.Results = map[string]json.RawMessage{ordertest.StepReserveInventory: json.RawMessage(`{"id":"res_1"}`)}
	if _, err := client.Call(t.Context(), "payment", req); err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
	resp, key, err := check.response(def.Call.Method, def.Call.Path, http.StatusAccepted)
	if err != nil || key != "202" || resp["x-orderly-class"] != string(remote.ClassAccepted) {
		t.Errorf("the contract's 202: %v under %s (%v), want class %s", resp, key, err, remote.ClassAccepted)
	}
	bad := check.request(httptest.NewRequest(http.MethodPost, def.Call.Path, nil), []byte(`{"orderId":"ORDER1"}`))
	if !slices.ContainsFunc(bad, func(p string) bool { return strings.HasPrefix(p, "body") }) {
		t.Errorf("a call without its callback: problems %q, want the body's", bad)
	}
}
