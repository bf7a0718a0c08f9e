package simulator

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"orderly/internal/order"
)

// maxBodyBytes bounds a request body, as a real service would.
const maxBodyBytes = 64 << 10

// service is one simulated remote service.
type service struct {
	name      string
	refPrefix string
	// refusal is the reason given by PERMANENT.
	refusal string
	// entity is what UNKNOWN says the service does not know.
	entity string
	// scores makes the answer carry a fraud score besides the id.
	scores bool
	// screens makes the answer a fraud screening: a score from 0 to 100
	// and whether the order is flagged for a person's review.
	screens bool
}

// The services the simulator stands in for: the shipped workflow's three
// (workflows/order), the checkout example's fraud service
// (examples/workflows/checkout) and the fulfilment example's warehouse
// (examples/workflows/fulfilment).
const (
	inventoryService = "inventory"
	paymentService   = "payment"
	shippingService  = "shipping"
	fraudService     = "fraud"
	warehouseService = "warehouse"
)

// services maps each collection path to the service behind it.
var services = map[string]service{
	"/inventory/reservations": {name: inventoryService, refPrefix: "res_", refusal: "sku out of stock", entity: "sku"},
	"/payment/charges":        {name: paymentService, refPrefix: "ch_", refusal: "card declined", entity: "payment account"},
	"/shipping/shipments":     {name: shippingService, refPrefix: "shp_", refusal: "address undeliverable", entity: "address"},
	"/fraud/checks":           {name: fraudService, refPrefix: "fc_", refusal: "order flagged as a fraud risk", entity: "customer", scores: true},
	"/fraud/screenings":       {name: fraudService, refPrefix: "fs_", refusal: "order flagged as a fraud risk", entity: "customer", screens: true},
	"/warehouse/shipments":    {name: warehouseService, refPrefix: "wsh_", refusal: "nothing to pick: out of stock", entity: "sku"},
}

// Serves reports whether the simulator answers a call: POST to one of
// the paths it serves, or GET of a status URL it gives (poll.go).
func Serves(method, path string) bool {
	_, work := services[path]
	_, undo := undoServices[path]
	if method == http.MethodGet {
		// The status and result URLs of polled work (poll.go).
		_, _, _, status := parseStatusPath(path)
		return status
	}
	return method == http.MethodPost && (work || undo)
}

// resultMakers names, for each step result a call may carry (a
// workflow's request.carries, as the checkout example's do), the service
// that made it, so the simulator can check the result names work it did,
// as the real services would refuse a shipment from someone else's
// reservation or a refund of another charge.
var resultMakers = map[string]string{
	"fraud-check":       fraudService,
	"reserve-inventory": inventoryService,
	"charge-payment":    paymentService,
}

// resultNouns name each service's work in refusals.
var resultNouns = map[string]string{
	fraudService:     "fraud check",
	inventoryService: "reservation",
	paymentService:   "charge",
}

// undoServices maps each undo path to the service behind it: a POST with a
// step's Idempotency-Key undoes the work done under that key.
var undoServices = map[string]service{
	"/inventory/releases":      {name: inventoryService, refPrefix: "rel_", refusal: "reservation already picked", entity: "reservation"},
	"/payment/refunds":         {name: paymentService, refPrefix: "rf_", refusal: "refund refused", entity: "charge"},
	"/shipping/cancellations":  {name: shippingService, refPrefix: "shc_", refusal: "shipment already dispatched", entity: "shipment"},
	"/warehouse/cancellations": {name: warehouseService, refPrefix: "wsc_", refusal: "parcel already handed to the carrier", entity: "shipment"},
}

// callKey identifies the work an idempotency key stands for: keys are
// scoped per service, as each real service keeps its own.
type callKey struct{ service, key string }

// keyState is what a service remembers about one idempotency key.
type keyState struct {
	calls int
	// fingerprint identifies the first request's content, so a key reused
	// for different work is refused instead of replayed.
	fingerprint string
	// reference is set once the work is done.
	reference string
	// undoCalls counts undo calls; undoRef is set once the key was undone:
	// its work reversed, or, if none was done, the key fenced off so
	// that a late call for it does no work.
	undoCalls int
	undoRef   string
	// orderID is the order of the first call, which the work is for.
	orderID string
	// accepted counts the calls answered 202, to be called back.
	accepted int
	// callbacks are the callbacks sent for the key's work, in order.
	callbacks []CallbackSent
}

// Server simulates the remote services. It is an http.Handler, safe
// for concurrent use; Close releases the calls it holds.
type Server struct {
	log        *slog.Logger
	retryAfter time.Duration

	closing chan struct{}
	// running counts handlers in flight, so Close can wait for them.
	running sync.WaitGroup

	// ledgerPath, when set, keeps effects across restarts (WithLedger).
	ledgerPath string

	mu sync.Mutex
	// outages make services answer 503 (or their status) to every call
	// for a while.
	outages []Outage
	closed  bool
	keys    map[callKey]*keyState
	// refs maps each reference to the key its work was done under, so a
	// result carried by a later call can be checked (resultMakers).
	refs   map[string]callKey
	ledger *ledger
	// required are the headers services require (WithRequiredHeader).
	required map[string]RequiredHeader

	// callbackDelay is how long a service that calls back works before
	// each callback (WithCallbackDelay); callbackClient sends them.
	callbackDelay  time.Duration
	callbackClient *http.Client
	// tally counts what the callbacks met (CallbackTally).
	tally CallbackTally
	// polls are the jobs of polled calls, by their status URLs' ids
	// (poll.go).
	polls map[string]*pollJob
	// life ends at Close, and with it every callback not yet sent;
	// sending counts the goroutines that send them.
	life    context.Context
	end     context.CancelFunc
	sending sync.WaitGroup
}

// Outage is a window in which one service answers every call with 503,
// as a service that is down would, or with Status: 403 as a WAF blocking
// the agents would, 401 as after a rotated credential, a redirect (to
// moved.invalid) as a service that moved would.
type Outage struct {
	Service    string
	From, Till time.Time
	// Status is the answer; zero means 503.
	Status int
}

// WithOutage makes service answer o.Status (503 by default) from o.From
// until o.Till.
func WithOutage(o Outage) Option {
	return func(s *Server) { s.outages = append(s.outages, o) }
}

// AddOutage takes a service down from o.From until o.Till, as
// WithOutage does, on a running simulator: a test starts the outage when
// its order is on its way.
func (s *Server) AddOutage(o Outage) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outages = append(s.outages, o)
}

// down returns the outage service is in at now, if any.
func (s *Server) down(service string, now time.Time) (Outage, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, o := range s.outages {
		if o.Service == service && !now.Before(o.From) && now.Before(o.Till) {
			return o, true
		}
	}
	return Outage{}, false
}

// answer is what a service in the outage answers to a call of path.
func (o Outage) answer(path string) reply {
	switch {
	case o.Status == 0 || o.Status == http.StatusServiceUnavailable:
		return fail(http.StatusServiceUnavailable, "%s is down (outage)", o.Service)
	case o.Status >= 300 && o.Status < 400:
		rep := fail(o.Status, "%s moved (outage)", o.Service)
		rep.header = http.Header{"Location": {"https://moved.invalid" + path}}
		return rep
	}
	return fail(o.Status, "%s refuses the call (outage)", o.Service)
}

// Option configures a Server.
type Option func(*Server)

// WithLogger makes the server log one line per call: remote_service, key, order,
// mode, call number and status. The default discards.
func WithLogger(l *slog.Logger) Option {
	return func(s *Server) { s.log = l }
}

// WithRetryAfter makes 503 answers of TRANSIENT-<N> carry a Retry-After
// header of d, rounded up to whole seconds. By default none is sent.
func WithRetryAfter(d time.Duration) Option {
	return func(s *Server) { s.retryAfter = d }
}

// New returns a simulator that has seen no calls, or, with a ledger, has
// done the work the ledger records. A ledger that cannot be opened is an
// error.
func New(opts ...Option) (*Server, error) {
	s := &Server{
		log:            slog.New(slog.DiscardHandler),
		closing:        make(chan struct{}),
		keys:           make(map[callKey]*keyState),
		refs:           make(map[string]callKey),
		required:       make(map[string]RequiredHeader),
		callbackDelay:  DefaultCallbackDelay,
		callbackClient: newCallbackClient(),
	}
	s.life, s.end = context.WithCancel(context.Background())
	for _, opt := range opts {
		opt(s)
	}
	if s.ledgerPath != "" {
		if err := s.openLedger(); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// Calls returns how many well-formed calls service ("inventory", "payment",
// "shipping", "fraud" or "warehouse") received with the idempotency key,
// replays included.
func (s *Server) Calls(service, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st, ok := s.keys[callKey{service, key}]; ok {
		return st.calls
	}
	return 0
}

// Undone reports whether service's work for the idempotency key was undone
// (or fenced off, if none was done).
func (s *Server) Undone(service, key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	st, ok := s.keys[callKey{service, key}]
	return ok && st.undoRef != ""
}

// Close answers every held call with 503, makes later calls answer 503,
// drops the callbacks not sent yet (as a service that restarts forgets
// them: the step's wait ends, and its call is made again), and returns
// once no handler is running and no callback is being sent. An
// http.Server should call it before or during shutdown
// (http.Server.RegisterOnShutdown), because a held call would otherwise
// keep Shutdown waiting. Close may be called more than once.
func (s *Server) Close() {
	s.mu.Lock()
	if !s.closed {
		s.closed = true
		close(s.closing)
	}
	s.mu.Unlock()
	s.end()
	s.running.Wait()
	s.sending.Wait()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ledger != nil {
		_ = s.ledger.f.Close()
		s.ledger = nil
	}
}

// call describes one call for the log.
type call struct {
	service, key, orderID, mode string
	undo                        bool
	n                           int // the call's number for its key, from 1
	// abandoned is set when the client left before an answer was due.
	abandoned bool
}

// reply is a handler's answer; a zero status writes nothing.
type reply struct {
	status int
	body   any
	header http.Header
}

func fail(status int, format string, args ...any) reply {
	return reply{status: status, body: errorBody{Error: fmt.Sprintf(format, args...)}}
}

// replayed answers a repeated call with the first one's answer (the
// answer is made from its reference, so a replay after a restart says the
// same).
func replayed(svc service, reference, customerID string) reply {
	return reply{
		status: http.StatusOK,
		body:   svc.answer(reference, customerID),
		header: http.Header{"Idempotent-Replayed": {"true"}},
	}
}

// replayedUndo answers a repeated undo.
func replayedUndo(reference string) reply {
	return reply{
		status: http.StatusOK,
		body:   createdBody{ID: reference},
		header: http.Header{"Idempotent-Replayed": {"true"}},
	}
}

type errorBody struct {
	Error string `json:"error"`
}

type createdBody struct {
	ID string `json:"id"`
}

// scoredBody is the fraud service's answer: a check id and the order's
// risk, from 0 (none) to 1.
type scoredBody struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
}

// screenedBody is the fraud screening's answer: a screening id, the
// order's risk from 0 to 100, and whether a person must review it.
type screenedBody struct {
	ID      string  `json:"id"`
	Score   float64 `json:"score"`
	Flagged bool    `json:"flagged"`
}

// flaggedCustomers is the prefix of the customerIds a fraud screening
// flags (score 90), so the fulfilment example's manual review runs.
const flaggedCustomers = "TEST-FLAGGED"

// answer is the service's answer for its work with reference, done for
// customerID's order.
func (svc service) answer(reference, customerID string) any {
	// Made from the reference and the customer, so a replay answers the
	// same score.
	h := fnv.New32a()
	h.Write([]byte(reference))
	switch {
	case svc.scores:
		// The simulator passes every order: a low risk, from 0 to 0.499.
		return scoredBody{ID: reference, Score: float64(h.Sum32()%500) / 1000}
	case svc.screens && strings.HasPrefix(customerID, flaggedCustomers):
		return screenedBody{ID: reference, Score: 90, Flagged: true}
	case svc.screens:
		return screenedBody{ID: reference, Score: float64(h.Sum32() % 40)}
	}
	return createdBody{ID: reference}
}

// requestBody is what the services accept; unknown fields are ignored, as
// a real service would.
type requestBody struct {
	OrderID    string       `json:"orderId"`
	CustomerID string       `json:"customerId"`
	Lines      []order.Line `json:"lines"`
	// Results are earlier steps' answers, when the workflow's request
	// carries them (see resultMakers).
	Results map[string]json.RawMessage `json:"results"`
	// Callback, on the call of a step whose service calls back, is where
	// and with what token to call back (see callbacks.go).
	Callback *callbackRequest `json:"callback"`
}

// fingerprint identifies the work a body asks for: its order, customer
// and lines. Results are left out: they are checked on their own, and a
// ledger written before them stays valid.
func (b requestBody) fingerprint() string {
	canonical, _ := json.Marshal(struct {
		OrderID    string       `json:"orderId"`
		CustomerID string       `json:"customerId"`
		Lines      []order.Line `json:"lines"`
	}{b.OrderID, b.CustomerID, b.Lines}) // strings and ints cannot fail to encode
	return string(canonical)
}

func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var c call
	var rep reply
	if s.enter() {
		// Done only once the answer is logged and written, so that
		// nothing of this call outlives Close.
		defer s.running.Done()
		c, rep = s.serve(r)
	} else {
		rep = fail(http.StatusServiceUnavailable, "simulator is shutting down")
	}
	s.logCall(r, c, rep)
	if rep.status == 0 {
		return
	}
	for name, values := range rep.header {
		w.Header()[name] = values
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rep.status)
	_ = json.NewEncoder(w).Encode(rep.body) // the client may be gone; nothing to do about it
}

// enter registers a handler unless the server is closed.
func (s *Server) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	s.running.Add(1)
	return true
}

func (s *Server) serve(r *http.Request) (call, reply) {
	if strings.HasPrefix(r.URL.Path, statusPrefix) {
		return s.serveStatus(r)
	}
	svc, ok := services[r.URL.Path]
	undo := false
	if !ok {
		svc, undo = undoServices[r.URL.Path]
		if !undo {
			return call{}, fail(http.StatusNotFound, "no service at %s", r.URL.Path)
		}
	}
	c := call{service: svc.name, undo: undo}
	if r.Method != http.MethodPost {
		rep := fail(http.StatusMethodNotAllowed, "%s %s: only POST is allowed", r.Method, r.URL.Path)
		rep.header = http.Header{"Allow": {http.MethodPost}}
		return c, rep
	}
	if refused, ok := s.authenticate(svc.name, r); !ok {
		return c, refused
	}
	key, req, fingerprint, bad := parseRequest(r)
	if bad.status != 0 {
		return c, bad
	}
	m := modeFor(svc.name, req.Lines, undo)
	c.key, c.orderID, c.mode = key, req.OrderID, m.name
	if req.Callback != nil && !undo {
		c.mode += "+" + callbackModeFor(svc.name, req.Lines).String()
	}
	async := req.Callback == nil && !undo && prefersAsync(r.Header)
	if async {
		c.mode += "+" + pollModeFor(svc.name, req.Lines).String()
	}
	if o, down := s.down(svc.name, time.Now()); down {
		c.mode = "outage"
		return c, o.answer(r.URL.Path)
	}

	ck := callKey{svc.name, key}
	s.mu.Lock()
	st, seen := s.keys[ck]
	if !seen {
		st = &keyState{fingerprint: fingerprint, orderID: req.OrderID}
		s.keys[ck] = st
	}
	if undo {
		st.undoCalls++
		c.n = st.undoCalls
	} else {
		st.calls++
		c.n = st.calls
	}
	reference, undoRef, conflict := st.reference, st.undoRef, st.fingerprint != fingerprint
	wrongResult := s.checkResults(svc.name, undo, st, req)
	// A counted test value's count outlives a restart: on disk before the
	// answer, like an effect.
	var counted error
	if s.ledger != nil && m.calls > 0 && m.affects(c.n) {
		counted = s.ledger.append(Effect{Service: ck.service, Key: ck.key, OrderID: req.OrderID, Fingerprint: st.fingerprint,
			Undo: undo, Call: c.n, At: time.Now().UTC()})
	}
	s.mu.Unlock()
	if counted != nil {
		return c, fail(http.StatusServiceUnavailable, "%s could not record the call: %v", svc.name, counted)
	}

	switch {
	case wrongResult.status != 0:
		return c, wrongResult
	case undo && undoRef != "":
		return c, replayedUndo(undoRef)
	case !undo && undoRef != "":
		// The work under this key was undone, or fenced off before it
		// was done: a late call must not do it now.
		return c, fail(http.StatusUnprocessableEntity, "Idempotency-Key %q was undone; no work is done for it", key)
	case conflict && !undo: // an undo is keyed by the work's key; its body is not compared
		// 422, as the IETF Idempotency-Key draft has it: 409 there means
		// "the same key is still in flight", which is worth retrying.
		return c, fail(http.StatusUnprocessableEntity, "Idempotency-Key %q was first used with a different request", key)
	case reference != "" && !undo && req.Callback != nil:
		// The call made again after its wait ended: accepted again,
		// and called back with the new token.
		return c, s.acceptWork(ck, svc, req)
	case reference != "" && !undo:
		return c, replayed(svc, reference, req.CustomerID)
	case !m.affects(c.n):
	case m.behaviour == permanent:
		return c, fail(http.StatusUnprocessableEntity, "%s", svc.refusal)
	case m.behaviour == unknown:
		return c, fail(http.StatusNotFound, "no such %s", svc.entity)
	case m.behaviour == transient:
		rep := fail(http.StatusServiceUnavailable, "%s is temporarily unavailable (call %d of %d failing)", svc.name, c.n, m.calls)
		if s.retryAfter > 0 {
			secs := int64((s.retryAfter + time.Second - 1) / time.Second)
			rep.header = http.Header{"Retry-After": {strconv.FormatInt(secs, 10)}}
		}
		return c, rep
	case m.behaviour == hang, m.behaviour == slow:
		var due <-chan time.Time // nil, so never, for HANG
		if m.behaviour == slow {
			timer := time.NewTimer(m.delay)
			defer timer.Stop()
			due = timer.C
		}
		select {
		case <-due:
		case <-r.Context().Done():
			c.abandoned = true
			return c, reply{}
		case <-s.closing:
			return c, fail(http.StatusServiceUnavailable, "simulator is shutting down")
		}
	}
	if undo {
		return c, s.undoWork(ck, svc, req.OrderID)
	}
	if req.Callback != nil {
		return c, s.acceptWork(ck, svc, req)
	}
	if async {
		return c, s.acceptPoll(ck, svc, r.URL.Path, req, c.n)
	}
	return c, s.doWork(ck, svc, req.OrderID, req.CustomerID)
}

// undoBody answers an undo: its own id and the work it undid, or that
// there was none.
type undoBody struct {
	ID            string `json:"id"`
	Undid         string `json:"undid,omitempty"`
	NothingToUndo bool   `json:"nothingToUndo,omitempty"`
}

// undoWork undoes the work done for a key, or fences the key off when none
// was done, and answers 200 either way: "nothing to undo" is a success.
// With a ledger the undo is on disk before the answer.
func (s *Server) undoWork(ck callKey, svc service, orderID string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.keys[ck]
	if st.undoRef != "" {
		return replayedUndo(st.undoRef)
	}
	ref := svc.refPrefix + strings.ToLower(rand.Text())
	if s.ledger != nil {
		err := s.ledger.append(Effect{Service: ck.service, Key: ck.key, OrderID: orderID, Reference: ref,
			Undo: true, Undid: st.reference, At: time.Now().UTC()})
		if err != nil {
			return fail(http.StatusServiceUnavailable, "%s could not record the undo: %v", svc.name, err)
		}
	}
	st.undoRef = ref
	return reply{status: http.StatusOK, body: undoBody{ID: ref, Undid: st.reference, NothingToUndo: st.reference == ""}}
}

// doWork records the work done for a key and answers with its reference.
// Two concurrent calls may both get here; the second replays the first.
// With a ledger the effect is on disk before the answer; if it cannot be
// written, no work is done and the call fails transiently.
func (s *Server) doWork(ck callKey, svc service, orderID, customerID string) reply {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := s.keys[ck]
	switch {
	case st.reference != "":
		return replayed(svc, st.reference, customerID)
	case st.undoRef != "":
		// Undone while this call was held: the undo wins.
		return fail(http.StatusUnprocessableEntity, "Idempotency-Key %q was undone; no work is done for it", ck.key)
	}
	reference := svc.refPrefix + strings.ToLower(rand.Text())
	if s.ledger != nil {
		err := s.ledger.append(Effect{Service: ck.service, Key: ck.key, OrderID: orderID, Fingerprint: st.fingerprint,
			Reference: reference, At: time.Now().UTC()})
		if err != nil {
			return fail(http.StatusServiceUnavailable, "%s could not record the work: %v", svc.name, err)
		}
	}
	st.reference = reference
	s.refs[reference] = ck
	return reply{status: http.StatusCreated, body: svc.answer(reference, customerID)}
}

// parseRequest checks the headers and body of a call. A non-zero bad.status
// rejects the call; otherwise it returns the key, the body and the
// fingerprint of the body's content.
func parseRequest(r *http.Request) (key string, req requestBody, fingerprint string, bad reply) {
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		return "", req, "", fail(http.StatusUnsupportedMediaType, "Content-Type must be application/json, got %q", r.Header.Get("Content-Type"))
	}
	key = r.Header.Get("Idempotency-Key")
	if key == "" {
		return "", req, "", fail(http.StatusBadRequest, "the Idempotency-Key header is required")
	}
	if err := order.ValidateIdempotencyKey(key); err != nil {
		return "", req, "", fail(http.StatusBadRequest, "Idempotency-Key: %v", err)
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, maxBodyBytes+1))
	switch {
	case err != nil:
		return "", req, "", fail(http.StatusBadRequest, "read body: %v", err)
	case len(raw) > maxBodyBytes:
		return "", req, "", fail(http.StatusRequestEntityTooLarge, "body over %d bytes", maxBodyBytes)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if err := dec.Decode(&req); err != nil {
		return "", req, "", fail(http.StatusBadRequest, "body: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return "", req, "", fail(http.StatusBadRequest, "body: unexpected data after the JSON object")
	}
	if problem := req.problem(); problem != "" {
		return "", req, "", fail(http.StatusBadRequest, "body: %s", problem)
	}
	return key, req, req.fingerprint(), reply{}
}

// problem names the first thing wrong with a decoded body, or is empty.
func (b requestBody) problem() string {
	if b.OrderID == "" {
		return "orderId is required"
	}
	if len(b.Lines) == 0 {
		return "at least one line is required"
	}
	for i, l := range b.Lines {
		if l.SKU == "" || l.Quantity < 1 {
			return fmt.Sprintf("lines[%d] needs a sku and a quantity of at least 1", i)
		}
	}
	if b.Callback != nil {
		return b.Callback.problem()
	}
	return ""
}

func (s *Server) logCall(r *http.Request, c call, rep reply) {
	attrs := []slog.Attr{
		slog.String("path", r.URL.Path),
		slog.String("remote_service", c.service),
		slog.String("key", c.key),
		slog.String("order_id", c.orderID),
		slog.String("mode", c.mode),
		slog.Bool("undo", c.undo),
		slog.Int("call", c.n),
		slog.Int("status", rep.status),
	}
	level := slog.LevelInfo
	switch {
	case c.abandoned:
		attrs = append(attrs, slog.Bool("abandoned", true))
	case rep.status >= 500:
		level = slog.LevelWarn
	}
	s.log.LogAttrs(r.Context(), level, "remote call", attrs...)
}
