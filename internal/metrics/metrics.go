// Package metrics emits CloudWatch metrics as Embedded Metric Format (EMF)
// log lines: CloudWatch turns them into metrics from the function's logs,
// so emitting one costs no API call and cannot fail a request.
package metrics

import (
	"encoding/json"
	"io"
	"sync"
	"time"
)

// Namespace is the CloudWatch namespace of orderly's metrics when no
// stage names its own.
const Namespace = "orderly"

// StageNamespace is a stage's namespace, so that two stages in one
// account keep their metrics, alarms and dashboards apart.
func StageNamespace(stage string) string { return Namespace + "/" + stage }

// Metric names. The CDK stack alarms on some of them.
const (
	OrdersSubmitted = "OrdersSubmitted"
	OrdersProcessed = "OrdersProcessed"
	// OrdersFailed and OrdersCancelled count orders that ended so, their
	// work undone; OrdersInError counts orders that need an operator (the
	// stack alarms on it).
	OrdersFailed    = "OrdersFailed"
	OrdersCancelled = "OrdersCancelled"
	OrdersInError   = "OrdersInError"
	// CompensationsStarted counts orders whose work began to be undone;
	// StepsUndone counts undo records done.
	CompensationsStarted = "CompensationsStarted"
	StepsUndone          = "StepsUndone"
	StepsClaimed         = "StepsClaimed"
	ClaimsLost           = "ClaimsLost"
	ClaimsReleased       = "ClaimsReleased"
	StepsCompleted       = "StepsCompleted"
	StaleReplies         = "StaleReplies"
	StepsRetried         = "StepsRetried"
	StepsNudged          = "StepsNudged"
	StepsDeferred        = "StepsDeferred"
	// WaitsEnded counts waits of steps that wait that the Supervisor
	// ended (their time was up).
	WaitsEnded = "WaitsEnded"
	// PollsSent counts checks of polled steps' status URLs that the
	// Supervisor sent to their agents.
	PollsSent       = "PollsSent"
	AlertsSent      = "AlertsSent"
	RemoteCalls     = "RemoteCalls"
	RemoteFaults    = "RemoteFaults"
	RepliesWithheld = "RepliesWithheld"
	// Heartbeats counts deadlines an agent moved on: at the start of a
	// request that waited, and during a long call.
	Heartbeats = "Heartbeats"
	// StaleRequests counts requests an agent dropped without a call
	// because their attempt was already over.
	StaleRequests = "StaleRequests"
	// CircuitOpened counts openings of an agent's circuit breaker: its
	// remote service failed call after call. The stack alarms on it.
	CircuitOpened = "CircuitOpened"
	// ConfigurationFaults counts calls a remote service answered with a
	// configuration fault (a redirect, 401, 403, 404, 405, 407, 415: see
	// order.ErrConfiguration), with a DimStatus dimension naming it (3xx
	// for any redirect). Each opens the agent's circuit; the stack alarms
	// on it per agent and status.
	ConfigurationFaults = "ConfigurationFaults"
	// RequestsHeld counts requests an agent put back in its queue while
	// its circuit was open.
	RequestsHeld = "RequestsHeld"
	// RequestsPaused counts requests an agent put back in its queue while
	// an operator paused its service: no failure, no alarm.
	RequestsPaused = "RequestsPaused"
	// PausesOn is, each Supervisor run, how many services and workflows
	// an operator has paused (the dashboard shows it).
	PausesOn = "PausesOn"
	// PausesOverrun is, each Supervisor run, how many pauses are on past
	// the end their operator gave; the stack alarms on it.
	PausesOverrun  = "PausesOverrun"
	PoisonMessages = "PoisonMessages"
	// OrdersParked counts orders found under a workflow version the
	// running build lacks (a rollback): they wait, alerted once.
	OrdersParked = "OrdersParked"
	// StatusEvents counts status events the recorder published.
	StatusEvents = "StatusEvents"
)

// Latencies, in milliseconds.
const (
	// OrderLatency is an order's time from submission to the status it
	// ended in (the recorder's, with a Status dimension: Processed,
	// Failed, Cancelled, or Error when it stopped for an operator).
	OrderLatency = "OrderLatency"
	// StepLatency is a workflow step's time from its claim to the
	// agent's success reply: the wait in its queue and the remote call,
	// retries included (each agent's: its Service is "<agent>-agent").
	StepLatency = "StepLatency"
	// UndoLatency is the same for an undo.
	UndoLatency = "UndoLatency"
)

// DimStatus is the dimension of OrderLatency (the order's status) and of
// ConfigurationFaults (the remote service's HTTP status).
const DimStatus = "Status"

// Recorder writes EMF records for one service (function).
type Recorder struct {
	mu        sync.Mutex
	w         io.Writer
	service   string
	namespace string
	now       func() time.Time
}

// New returns a recorder writing to w (stdout in Lambda) in Namespace.
func New(w io.Writer, service string) *Recorder {
	return &Recorder{w: w, service: service, namespace: Namespace, now: time.Now}
}

// In returns the recorder writing in another namespace (a stage's); an
// empty one keeps Namespace.
func (r *Recorder) In(namespace string) *Recorder {
	if namespace != "" {
		r.namespace = namespace
	}
	return r
}

// Discard returns a recorder that writes nothing, for tests.
func Discard() *Recorder { return New(io.Discard, "test") }

// Count records n occurrences of the named event. The metric has one
// dimension, Service; properties are extra searchable fields (order id,
// step) that do not become dimensions and so cost nothing.
func (r *Recorder) Count(name string, n int, properties ...any) {
	r.write(name, "Count", n, nil, properties)
}

// CountBy is Count with a second dimension, dimension, of value: a count
// per value that an alarm can watch (e.g. per remote status).
func (r *Recorder) CountBy(name string, n int, dimension, value string, properties ...any) {
	r.write(name, "Count", n, map[string]string{dimension: value}, properties)
}

// Duration records how long something took, in milliseconds, with the
// Service dimension and, when dimension is set, that one too (a
// percentile per value, e.g. per Status).
func (r *Recorder) Duration(name string, d time.Duration, dimension, value string, properties ...any) {
	var extra map[string]string
	if dimension != "" {
		extra = map[string]string{dimension: value}
	}
	r.write(name, "Milliseconds", float64(d.Microseconds())/1000, extra, properties)
}

func (r *Recorder) write(name, unit string, v any, dimensions map[string]string, properties []any) {
	dims := []string{"Service"}
	for k := range dimensions {
		dims = append(dims, k)
	}
	rec := map[string]any{
		"_aws": map[string]any{
			"Timestamp": r.now().UnixMilli(),
			"CloudWatchMetrics": []any{map[string]any{
				"Namespace":  r.namespace,
				"Dimensions": [][]string{dims},
				"Metrics":    []any{map[string]string{"Name": name, "Unit": unit}},
			}},
		},
		"Service": r.service,
		name:      v,
	}
	for k, v := range dimensions {
		rec[k] = v
	}
	for i := 0; i+1 < len(properties); i += 2 {
		if k, ok := properties[i].(string); ok {
			rec[k] = properties[i+1]
		}
	}
	line, err := json.Marshal(rec)
	if err != nil {
		return // properties are strings and numbers; nothing to report
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.w.Write(append(line, '\n'))
}
