package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"orderly/internal/order"
)

// fate is what the fake API does with one submission.
type fate struct {
	refuse bool          // answer 400 invalid_request
	delay  time.Duration // terminal this long after acceptance
	// final is the terminal status; "" keeps the order Processing forever.
	final order.Status
	// skew moves the order's updatedAt, as an API on another clock would.
	skew time.Duration
}

// fakeAPI plays orderly's public API over real HTTP: POST /orders accepts
// or refuses an order as plan says, GET /orders/{id} shows it Pending
// until its delay has passed, then in its final status.
type fakeAPI struct {
	t    *testing.T
	plan func(key string, n int) fate
	srv  *httptest.Server

	mu       sync.Mutex
	orders   map[string]fakeOrder
	keys     map[string]bool
	bodies   map[string]bool
	accepted int
	posts    int

	reads                 atomic.Int64
	readsNow, maxReadsNow atomic.Int64
}

type fakeOrder struct {
	created time.Time
	fate    fate
}

func newFakeAPI(t *testing.T, plan func(key string, n int) fate) *fakeAPI {
	t.Helper()
	f := &fakeAPI{t: t, plan: plan, orders: map[string]fakeOrder{}, keys: map[string]bool{}, bodies: map[string]bool{}}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) { fmt.Fprint(w, `{"openapi":"3.1.0"}`) })
	mux.HandleFunc("POST /orders", f.submit)
	mux.HandleFunc("POST /workflows/{workflow}/orders", f.submit)
	mux.HandleFunc("GET /orders/{id}", f.get)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) submit(w http.ResponseWriter, r *http.Request) {
	var body json.RawMessage
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		f.t.Errorf("POST %s: body is not JSON: %v", r.URL.Path, err)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		f.t.Errorf("POST %s: Content-Type %q, want application/json", r.URL.Path, ct)
	}
	key := r.Header.Get("Idempotency-Key")
	f.mu.Lock()
	defer f.mu.Unlock()
	if key == "" || f.keys[key] {
		f.t.Errorf("POST %s: Idempotency-Key %q is empty or was sent before", r.URL.Path, key)
	}
	f.keys[key] = true
	f.bodies[r.URL.Path+" "+string(body)] = true
	fa := f.plan(key, f.posts)
	f.posts++
	if fa.refuse {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"error":"invalid_request","message":"the request has invalid fields","fields":[{"field":"lines[0].quantity","problem":"minimum: got 0, want 1"}]}`)
		return
	}
	id := fmt.Sprintf("ORDER%04d", f.accepted)
	f.accepted++
	f.orders[id] = fakeOrder{created: time.Now(), fate: fa}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	fmt.Fprintf(w, `{"links":{"self":"/orders/%s"},"orderId":"%s","status":"Pending"}`, id, id)
}

func (f *fakeAPI) get(w http.ResponseWriter, r *http.Request) {
	f.reads.Add(1)
	now := f.readsNow.Add(1)
	defer f.readsNow.Add(-1)
	for seen := f.maxReadsNow.Load(); now > seen && !f.maxReadsNow.CompareAndSwap(seen, now); seen = f.maxReadsNow.Load() {
	}
	// A read takes a while, as a real one does, so that reads made at
	// once overlap and maxReadsNow sees them.
	time.Sleep(time.Millisecond)
	f.mu.Lock()
	o, ok := f.orders[r.PathValue("id")]
	f.mu.Unlock()
	if !ok {
		w.WriteHeader(http.StatusNotFound)
		fmt.Fprint(w, `{"error":"not_found","message":"no order has that id"}`)
		return
	}
	status, updated := order.StatusPending, o.created
	switch due := o.created.Add(o.fate.delay); {
	case o.fate.final == "":
		status = order.StatusProcessing
	case !time.Now().Before(due):
		status, updated = o.fate.final, due
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"orderId":%q,"workflow":"order","version":"1","status":%q,"createdAt":%q,"updatedAt":%q,"steps":[]}`,
		r.PathValue("id"), status, o.created.UTC().Format(time.RFC3339Nano), updated.Add(o.fate.skew).UTC().Format(time.RFC3339Nano))
}

// client is a Client of the fake that submits DefaultBody.
func (f *fakeAPI) client(t *testing.T) *Client {
	t.Helper()
	c, err := NewClient(f.srv.URL, DefaultPath, []byte(DefaultBody), nil, 8)
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	return c
}

// everyOrder gives every submission the same fate.
func everyOrder(fa fate) func(string, int) fate {
	return func(string, int) fate { return fa }
}

// inPhase is true for a key of the named phase (before, burst, after).
func inPhase(key, phase string) bool { return strings.Contains(key, "-"+phase+"-") }
