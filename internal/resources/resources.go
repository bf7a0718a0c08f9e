// Package resources declares, once, every AWS resource orderly needs: table
// names, key schemas, indexes, queues with their redrive and visibility
// settings, the alert topic and function timeouts. Local provisioning and
// the CDK stack both build from these values, so the two cannot drift.
package resources

import (
	"slices"
	"strings"
	"time"
)

// Attribute names that appear in key schemas and indexes. The dynamo
// adapter writes items with these names.
const (
	AttrOrderID  = "OrderID"
	AttrDueShard = "DueShard"
	AttrDueAt    = "DueAt"
	AttrInError  = "InError"
	// AttrInErrorSince is when the order went into Error: the error
	// index's sort key, set with InError and never changed while it is
	// there (an index key that changes costs two index writes).
	AttrInErrorSince = "InErrorSince"
	// AttrUnclaimed is present while the active step waits for a
	// Scheduler's claim; the stream filter selects on it.
	AttrUnclaimed = "Unclaimed"
	// AttrSeq orders an order's history items: the stream sequence number
	// of the change each records.
	AttrSeq = "Seq"
	// AttrAlertDay and AttrAlertAt key the history's alert index: the UTC
	// day (2006-01-02) and time (Unix ms) an alert was sent, set only on
	// the history item of the change that recorded it sent.
	AttrAlertDay = "AlertDay"
	AttrAlertAt  = "AlertAt"
	// AttrExpiresAt is both tables' TTL attribute (Unix seconds): set on an
	// order by the write that ends it (Processed, Failed, Cancelled),
	// never on one in Error; on its history once it ended. DynamoDB
	// deletes an item within days of the time; reads ignore it from then.
	AttrExpiresAt = "ExpiresAt"
	// AttrListed is the order's shard (as DueShard), written by its
	// submission and never changed: the search indexes' partition key.
	AttrListed  = "Listed"
	AttrCreated = "Created"
	// AttrEnded is when the order reached a terminal status (Unix ms) and
	// AttrOutcome that status (Processed, Failed, Cancelled or Error), both
	// set by the write that ends it or puts it in Error and removed by a
	// redrive: the ended-orders index's sort key, and a search filter.
	AttrEnded   = "Ended"
	AttrOutcome = "Outcome"
	// The order's attributes a search filters on: who submitted it, its
	// input's customerId, its workflow and version.
	AttrCaller   = "Caller"
	AttrCustomer = "CustomerID"
	AttrWorkflow = "Workflow"
	AttrVersion  = "Version"
)

// DefaultRetention is how long an ended order and its history are kept:
// Step Functions keeps an ended execution's history as long.
const DefaultRetention = 90 * 24 * time.Hour

// HistoryMargin is how much longer than its order an order's history is
// kept, so that a history is never read without its order.
const HistoryMargin = 24 * time.Hour

// AttrType is a DynamoDB key attribute type.
type AttrType string

// Key attribute types.
const (
	String AttrType = "S"
	Number AttrType = "N"
)

// Key is one key attribute.
type Key struct {
	Name string
	Type AttrType
}

// Projection is what a global secondary index copies from its table.
type Projection string

// Projections. KEYS_ONLY is cheapest: a write that changes no index key
// writes nothing to the index.
const (
	ProjectAll      Projection = "ALL"
	ProjectKeysOnly Projection = "KEYS_ONLY"
	// ProjectInclude copies the keys and the index's NonKey attributes: a
	// write that changes none of them writes nothing to the index.
	ProjectInclude Projection = "INCLUDE"
)

// Index is a global secondary index.
type Index struct {
	Name         string
	PartitionKey Key
	SortKey      Key
	Projection   Projection
	// NonKey names the attributes ProjectInclude copies.
	NonKey []string
}

// StreamFilter selects the table changes that invoke the Scheduler: an
// insert or modify whose new image has every Present attribute. The CDK
// stack turns it into the event source mapping's filter.
type StreamFilter struct {
	Present []string
}

// Table describes a DynamoDB table.
type Table struct {
	Name         string
	PartitionKey Key
	SortKey      *Key
	Indexes      []Index
	// TTL names the attribute DynamoDB expires items by; empty for none.
	TTL string
	// Stream is true when the table streams new and old images.
	Stream bool
	// StreamFilter selects the changes that invoke the Scheduler.
	StreamFilter StreamFilter
}

// Queue describes an SQS queue and its dead-letter queue.
type Queue struct {
	Name              string
	DeadLetterName    string
	VisibilityTimeout time.Duration
	// MaxReceiveCount is how often a message is delivered before it moves
	// to the dead-letter queue.
	MaxReceiveCount int
	// Retention keeps messages (and dead letters) long enough for an
	// operator to act over a long weekend.
	Retention time.Duration
	// ConsumerTimeout is the timeout of the function that consumes it.
	ConsumerTimeout time.Duration
}

// Function timeouts. Agents wait for remote services up to the step's
// allowance, so theirs covers the largest allowance plus margin.
const (
	SubmitTimeout     = 10 * time.Second
	SchedulerTimeout  = 30 * time.Second
	SupervisorTimeout = 60 * time.Second
	AgentTimeout      = 150 * time.Second
	RecorderTimeout   = 30 * time.Second
)

// Event source settings, for the CDK stack and the cost model.
const (
	// StreamBatchSize records per Scheduler invocation from the stream;
	// the Scheduler claims records of different orders in parallel.
	StreamBatchSize = 100
	// StreamParallelization is the stream mapping's ParallelizationFactor:
	// concurrent batches per stream shard (records of one order stay in
	// order). Only re-announced steps pass the filter, so 2 leaves room.
	StreamParallelization = 2
	// ReplyBatchSize replies per Scheduler invocation, applied in parallel.
	ReplyBatchSize = 10
	// RequestBatchSize requests per agent invocation, worked in parallel,
	// so each remote service sees at most RequestBatchSize × the agent's
	// maximum concurrency calls at once.
	RequestBatchSize = 10
	// RecorderBatchSize stream records per recorder invocation; the
	// recorder sees every change of every order.
	RecorderBatchSize = 100
)

// Function memory sizes in MB. Every function spends most of its time
// waiting on the network, so the smallest size that starts quickly fits.
const (
	SubmitMemoryMB     = 256
	SchedulerMemoryMB  = 256
	AgentMemoryMB      = 256
	SupervisorMemoryMB = 256
	RecorderMemoryMB   = 256
)

// Queue settings. AWS advises a visibility timeout of at least six times
// the consuming function's timeout, so a throttled retry cannot deliver a
// message twice while the first delivery is still being worked on.
const (
	VisibilityFactor = 6
	MaxReceiveCount  = 5
	Retention        = 4 * 24 * time.Hour
	DeadLetterSuffix = "-dlq"
)

// DueIndex is the sparse GSI the Supervisor queries. Only orders that need
// watching carry DueShard (in flight, or in Error with an unsent alert);
// DueAt orders them by when to look. The index projects keys only, and on
// the happy path its keys are written twice per order: when the order is
// submitted and when it is done.
//
// DueShards spreads the index over partitions, each of which takes up to
// 1,000 writes a second: 16 shards carry 8,000 orders a second.
const (
	DueIndexName = "due-by-deadline"
	DueShards    = 16
)

// AlertIndexName is the history table's sparse GSI of the alerts sent to
// operators, by day (`orderly alerts`): only the history item of a change
// that recorded an alert sent carries its keys, so a day's alerts are one
// Query and no other history write touches the index. It projects the
// whole item: the alert as SNS carried it.
const AlertIndexName = "alerts"

// ErrorIndex is the sparse GSI of the orders in Error, for operators
// (`orderly list -status Error`): only an order in Error carries InError
// (its shard, as DueShard), set by the write that puts it there and
// removed by the redrive that takes it out. It projects keys only, so an
// order that never fails never writes to it.
const ErrorIndexName = "in-error"

// The search indexes (GET /orders): every order by when it was submitted
// (CreatedIndexName), and the ended ones by when they ended
// (EndedIndexName, sparse), each spread over the order's shard (Listed)
// and projecting what a search filters on. Caller, Customer and Workflow
// never change, and Outcome and Ended change when the order ends, so an
// order writes each index at most twice: a search reads no item.
const (
	CreatedIndexName = "by-created"
	EndedIndexName   = "by-ended"
)

// searchAttrs are the attributes a search filters on besides its index's
// keys.
var searchAttrs = []string{AttrCaller, AttrCustomer, AttrWorkflow, AttrVersion, AttrOutcome}

// Catalog is the full set of resources of one deployment stage.
type Catalog struct {
	Stage string
	// Orders holds each order and the state of its steps, in one item.
	Orders        Table
	RequestQueues map[string]Queue // by agent name
	ResponseQueue Queue
	AlertTopic    string
	// History holds every order's transitions, one item per change, which
	// the recorder writes from the orders table's stream.
	History Table
	// EventBus receives an event for every order status change.
	EventBus string
	// StatusQueue is where the local runtime routes the bus's events, so
	// a developer can watch them; on AWS, clients add rules of their own.
	StatusQueue Queue
	// StatusEvents, when set, are the only statuses whose events the
	// status queue's rule routes (e.g. the terminal ones, for a reader
	// that needs no others); none: every status.
	StatusEvents []string
	// PageTokenSecret is the Secrets Manager secret whose value keys the
	// search API's page tokens (pagetoken): random, made at deployment,
	// read by the submission function.
	PageTokenSecret string
	// CallbackSecret is the Secrets Manager secret whose value keys the
	// tokens of services that call back (callbacktoken): random, made at
	// deployment, read by the agents of steps that call back (to seal a
	// call's token) and by the submission function (to open a callback's).
	CallbackSecret string
}

// Event source and detail-type prefix of status events: detail-type is
// "Order " + the status, e.g. "Order Processed".
const (
	EventSource     = "orderly"
	EventTypePrefix = "Order "
	// OperatorEventSource is the source of operators' events (a pause, a
	// resume): they name the operator (an IAM ARN, so the account) and
	// why, so they are kept off the source clients' rules match.
	OperatorEventSource = "orderly.operator"
	// PauseEventTypePrefix starts a pause's event: "Pause paused",
	// "Pause pause changed", "Pause resumed".
	PauseEventTypePrefix = "Pause "
)

// New returns the catalog for a stage (e.g. "dev", "prod", "local") and the
// given agents. Names are prefixed "orderly-<stage>-".
func New(stage string, agents []string) Catalog {
	name := func(s string) string { return "orderly-" + stage + "-" + s }
	queue := func(s string, consumer time.Duration) Queue {
		return Queue{
			Name: name(s), DeadLetterName: name(s) + DeadLetterSuffix,
			VisibilityTimeout: VisibilityFactor * consumer,
			MaxReceiveCount:   MaxReceiveCount, Retention: Retention,
			ConsumerTimeout: consumer,
		}
	}
	c := Catalog{
		Stage: stage,
		Orders: Table{
			Name:         name("orders"),
			PartitionKey: Key{AttrOrderID, String},
			Indexes: []Index{{
				Name:         DueIndexName,
				PartitionKey: Key{AttrDueShard, String},
				SortKey:      Key{AttrDueAt, Number},
				Projection:   ProjectKeysOnly,
			}, {
				Name:         ErrorIndexName,
				PartitionKey: Key{AttrInError, String},
				SortKey:      Key{AttrInErrorSince, Number},
				Projection:   ProjectKeysOnly,
			}, {
				Name:         CreatedIndexName,
				PartitionKey: Key{AttrListed, String},
				SortKey:      Key{AttrCreated, Number},
				Projection:   ProjectInclude,
				NonKey:       append(slices.Clone(searchAttrs), AttrEnded),
			}, {
				Name:         EndedIndexName,
				PartitionKey: Key{AttrListed, String},
				SortKey:      Key{AttrEnded, Number},
				Projection:   ProjectInclude,
				NonKey:       append(slices.Clone(searchAttrs), AttrCreated),
			}},
			Stream:       true,
			StreamFilter: StreamFilter{Present: []string{AttrUnclaimed}},
			TTL:          AttrExpiresAt,
		},
		RequestQueues: map[string]Queue{},
		ResponseQueue: queue("responses", SchedulerTimeout),
		AlertTopic:    name("alerts"),
		History: Table{
			Name:         name("history"),
			PartitionKey: Key{AttrOrderID, String},
			SortKey:      &Key{AttrSeq, String},
			Indexes: []Index{{
				Name:         AlertIndexName,
				PartitionKey: Key{AttrAlertDay, String},
				SortKey:      Key{AttrAlertAt, Number},
				Projection:   ProjectAll,
			}},
			TTL: AttrExpiresAt,
		},
		EventBus:        name("events"),
		StatusQueue:     queue("status-events", RecorderTimeout),
		PageTokenSecret: name("page-token-key"),
		CallbackSecret:  name("callback-key"),
	}
	for _, a := range agents {
		c.RequestQueues[a] = queue(a+"-requests", AgentTimeout)
	}
	return c
}

// Function names: the stack names each function orderly-<stage>-<name>,
// and the role check (infra/iamcheck) knows each function's calls by them.
const (
	FunctionSubmit     = "submit"
	FunctionScheduler  = "scheduler"
	FunctionSupervisor = "supervisor"
	FunctionRecorder   = "recorder"
)

// AgentFunction names an agent's function, e.g. payment-agent.
func AgentFunction(agent string) string { return agent + "-agent" }

// Environment variables through which functions learn resource names.
// The CDK stack sets them from the catalog; the local runtime sets them
// from what it provisioned.
const (
	EnvOrdersTable      = "ORDERS_TABLE"
	EnvResponseQueueURL = "RESPONSE_QUEUE_URL"
	EnvAlertTopicARN    = "ALERT_TOPIC_ARN"
	EnvHistoryTable     = "HISTORY_TABLE"
	EnvEventBus         = "EVENT_BUS_NAME"
	// EnvMetricsNamespace is the CloudWatch namespace of the stage's
	// metrics (metrics.StageNamespace).
	EnvMetricsNamespace = "METRICS_NAMESPACE"
	// EnvRetention is how long ended orders and their history are kept (a
	// Go duration; DefaultRetention when unset).
	EnvRetention = "RETENTION"
	// EnvAnonymousCaller names the caller of API requests that name none:
	// set only for LocalStack, whose API Gateway passes no identity.
	EnvAnonymousCaller = "ANONYMOUS_CALLER"
	// EnvPageTokenSecret names the secret that keys the search API's page
	// tokens (Catalog.PageTokenSecret).
	EnvPageTokenSecret = "PAGE_TOKEN_SECRET"
	// EnvCallbackSecret names the secret that keys callback tokens
	// (Catalog.CallbackSecret): given to the submission function and to
	// the agents of steps that call back, and to no other.
	EnvCallbackSecret = "CALLBACK_SECRET"
	// EnvCallbackURL is where a service that calls back calls: the stage
	// API's POST /callbacks, given to the agents of steps that call back.
	EnvCallbackURL = "CALLBACK_URL"
)

// EnvRequestQueueURL names the variable holding an agent's request queue
// URL, e.g. REQUEST_QUEUE_URL_PAYMENT. Lambda takes only letters, digits
// and "_" in a variable's name, so a "-" of the agent's becomes "_"
// (agent names have no "_", so no two agents share a variable).
func EnvRequestQueueURL(agent string) string {
	return "REQUEST_QUEUE_URL_" + strings.ToUpper(strings.ReplaceAll(agent, "-", "_"))
}

// Tables lists the catalog's tables.
func (c Catalog) Tables() []Table { return []Table{c.Orders, c.History} }

// WithoutTableTTL returns the catalog with DynamoDB's expiry left off on
// both tables; items still carry their ExpiresAt. Tests that share one
// DynamoDB Local use it: there, every table with TTL on keeps an expiry
// scan running (10 items every 10 s, a pass lasting a second per item) in
// a pool of 10 threads that index builds share, so a few dozen stages
// with TTL on leave an index added to a table CREATING for minutes.
func (c Catalog) WithoutTableTTL() Catalog {
	c.Orders.TTL, c.History.TTL = "", ""
	return c
}

// KeyNames lists the table's primary key attributes.
func (t Table) KeyNames() []string {
	if t.SortKey == nil {
		return []string{t.PartitionKey.Name}
	}
	return []string{t.PartitionKey.Name, t.SortKey.Name}
}
