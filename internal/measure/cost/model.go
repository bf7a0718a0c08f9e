package cost

import (
	"orderly/internal/prices"

	"maps"
	"math"
	"time"

	"orderly/internal/order"
)

// Load is how full Lambda's batches are: at low load every message is an
// invocation of its own, at high load batches are full.
type Load struct {
	Name        string
	SQSBatch    float64
	StreamBatch float64
}

// The two loads every estimate is made at.
var (
	LowLoad  = Load{Name: "one message per batch", SQSBatch: 1, StreamBatch: 1}
	HighLoad = Load{Name: "high load", SQSBatch: 10, StreamBatch: 100}
)

// PerOrder is measured usage divided by the number of orders.
type PerOrder struct {
	Orders      int
	APIRequests float64
	Calls       map[Op]float64
	TableWrites float64
	IndexWrites float64
	Reads       float64
	// Messages by destination, and stream records Lambda delivers.
	RequestMessages   float64
	ReplyMessages     float64
	StreamInvocations float64
	// StreamRecords are the orders table's changes, every one of which
	// the recorder reads.
	StreamRecords float64
	// LogBytes is what the functions logged, measured.
	LogBytes float64
	// ConditionFailures are the writes per order whose condition failed,
	// with their write units (both included above).
	ConditionFailures      map[Op]float64
	ConditionFailureWrites float64
}

// Divide turns usage over orders into per-order figures.
func Divide(u Usage, orders, apiRequests int, logBytes int64) PerOrder {
	n := float64(max(orders, 1))
	p := PerOrder{
		Orders: orders, APIRequests: float64(apiRequests) / n, Calls: map[Op]float64{},
		TableWrites: u.TableWrites / n, IndexWrites: u.IndexWrites / n, Reads: u.Reads / n,
		RequestMessages: float64(u.RequestMessages) / n, ReplyMessages: float64(u.ReplyMessages) / n,
		StreamInvocations: float64(u.StreamInvocations) / n, StreamRecords: float64(u.StreamRecords) / n, LogBytes: float64(logBytes) / n,
	}
	for op, c := range u.Calls {
		if c > 0 {
			p.Calls[op] = float64(c) / n
		}
	}
	p.ConditionFailures = map[Op]float64{}
	for op, c := range u.ConditionFailures {
		if c > 0 {
			p.ConditionFailures[op] = float64(c) / n
		}
	}
	p.ConditionFailureWrites = u.ConditionFailureWrites / n
	return p
}

// WithoutConditionFailures is the usage as if no write's condition had
// failed: the path's own cost, without the duplicates and races that
// at-least-once delivery brings now and then.
func (u PerOrder) WithoutConditionFailures() PerOrder {
	out := u
	out.Calls = maps.Clone(u.Calls)
	for op, c := range u.ConditionFailures {
		out.Calls[op] -= c
		if out.Calls[op] <= 1e-9 {
			delete(out.Calls, op)
		}
	}
	out.TableWrites -= u.ConditionFailureWrites
	out.ConditionFailures, out.ConditionFailureWrites = nil, 0
	return out
}

// Line is one item of an estimate, per order.
type Line struct {
	Item     string
	Quantity float64
	Unit     string
	// Dollars is per million orders.
	Dollars float64
}

// Estimate is the cost of one order at one load, in dollars per million
// orders.
type Estimate struct {
	Load  Load
	Lines []Line
	// Total covers the requests the comparison counts: API,
	// Lambda, SQS, DynamoDB, SNS. Observability (logs, traces) is apart.
	Total         float64
	Observability []Line
}

// Function memory sizes, in MB, as the stack deploys them.
type Memory struct {
	Submit, Scheduler, Agent, Recorder float64
}

// Price prices per-order usage at a load with the given API type.
func Price(p prices.Prices, u PerOrder, load Load, mem Memory, httpAPI bool) Estimate {
	per := p.DollarsPerMillion
	a := p.Assumptions
	e := Estimate{Load: load}
	add := func(item string, q float64, unit string, dollarsPerMillionUnits float64) {
		d := q * dollarsPerMillionUnits
		e.Lines = append(e.Lines, Line{item, q, unit, d})
		e.Total += d
	}
	if httpAPI {
		add("API Gateway (HTTP API)", u.APIRequests, "requests", per.HTTPRequests)
	} else {
		add("API Gateway (REST API)", u.APIRequests, "requests", per.RESTRequests)
	}

	agentInv := u.RequestMessages / load.SQSBatch
	replyInv := u.ReplyMessages / load.SQSBatch
	streamInv := u.StreamInvocations / load.StreamBatch
	recorderInv := u.StreamRecords / load.StreamBatch
	invocations := u.APIRequests + agentInv + replyInv + streamInv + recorderInv
	add("Lambda invocations", invocations, "invocations", per.LambdaRequests)

	// GB-seconds: a message's time, shared by a batch worked in parallel.
	share := 1.0
	if load.SQSBatch > 1 {
		share = a.ParallelBatchFactor / load.SQSBatch
	}
	secs := func(ms float64) float64 { return ms / 1000 }
	gbs := u.APIRequests*secs(a.HandlerMillis["submit"])*mem.Submit/1024 +
		(u.ReplyMessages+u.StreamInvocations)*share*secs(a.HandlerMillis["scheduler"])*mem.Scheduler/1024 +
		u.RequestMessages*share*secs(a.HandlerMillis["agent"]+a.RemoteCallMillis)*mem.Agent/1024 +
		u.StreamRecords*share*secs(a.HandlerMillis["recorder"])*mem.Recorder/1024
	add("Lambda duration (arm64)", gbs, "GB-s", per.LambdaGBSeconds)

	// The functions' own SQS requests (sends, the Supervisor's backlog
	// reads), and Lambda's pollers', which receive and delete each batch
	// with one request each.
	functionsSQS := 0.0
	for op, n := range u.Calls {
		if op.Service == "SQS" {
			functionsSQS += n
		}
	}
	messages := u.RequestMessages + u.ReplyMessages
	sqsRequests := functionsSQS + 2*messages/load.SQSBatch
	add("SQS requests", sqsRequests, "requests", per.SQSRequests)

	add("DynamoDB writes (table)", u.TableWrites, "WRU", per.DynamoDBWrites)
	add("DynamoDB writes (index)", u.IndexWrites, "WRU", per.DynamoDBWrites)
	add("DynamoDB reads", u.Reads, "RRU", per.DynamoDBReads)
	add("SNS publishes", u.Calls[Op{"SNS", "Publish"}], "publishes", per.SNSPublishes)
	add("EventBridge status events", u.Calls[Op{"EventBridge", "PutEvents"}], "events", per.EventBridgeEvents)

	logGB := (u.LogBytes + invocations*a.PlatformLogBytesPerInvocation) / (1 << 30)
	e.Observability = append(e.Observability,
		Line{"CloudWatch Logs ingestion", logGB * (1 << 30), "bytes", logGB * p.DollarsPerGB.LogsIngested * 1e6},
		Line{"X-Ray traces (sampled)", invocations * a.XRaySampledFraction, "traces", invocations * a.XRaySampledFraction * per.XRayTraces},
	)
	return e
}

// StepFunctions is the same workflow priced on Step Functions: an API
// Gateway request starts an execution whose task states invoke one Lambda
// function per step.
type StepFunctions struct {
	Standard, Express float64
	// Lines explain the arithmetic.
	StandardLines, ExpressLines []Line
}

// StepFunctionsEstimate prices a workflow of steps on Step Functions, per
// million orders, with the same remote latency and handler assumptions.
func StepFunctionsEstimate(p prices.Prices, steps int, mem Memory) StepFunctions {
	per := p.DollarsPerMillion
	a := p.Assumptions
	task := (a.HandlerMillis["agent"] + a.RemoteCallMillis) / 1000
	taskGBs := float64(steps) * task * mem.Agent / 1024
	common := []Line{
		{"API Gateway (REST API)", 1, "requests", per.RESTRequests},
		{"Lambda invocations", float64(steps), "invocations", float64(steps) * per.LambdaRequests},
		{"Lambda duration (arm64)", taskGBs, "GB-s", taskGBs * per.LambdaGBSeconds},
	}
	var sf StepFunctions
	sf.StandardLines = append([]Line{{"state transitions", a.StandardTransitionsPerOrder, "transitions",
		a.StandardTransitionsPerOrder * per.StandardTransitions}}, common...)
	// Express bills its own duration in 100 ms steps at its memory size.
	billed := math.Ceil(float64(steps)*task*10) / 10
	expressGBs := billed * a.ExpressMemoryMB / 1024
	sf.ExpressLines = append([]Line{
		{"Express requests", 1, "executions", per.ExpressRequests},
		{"Express duration", expressGBs, "GB-s", expressGBs * per.ExpressGBSeconds},
	}, common...)
	for _, l := range sf.StandardLines {
		sf.Standard += l.Dollars
	}
	for _, l := range sf.ExpressLines {
		sf.Express += l.Dollars
	}
	return sf
}

// StepKinds counts a workflow's steps by kind: "service" (a call that
// answers at once), "callback" (a call whose service calls back),
// "event" and "timer".
func StepKinds(wf order.Workflow) map[string]int {
	kinds := map[string]int{}
	for _, d := range wf.Steps {
		switch {
		case d.Wait != nil:
			kinds[d.Wait.Kind()]++
		case d.Callback != nil:
			kinds[order.WaitCallback]++
		default:
			kinds["service"]++
		}
	}
	return kinds
}

// Elsewhere is a workflow with waits priced on Step Functions Standard
// and on Lambda durable functions, per million orders, each with its
// arithmetic.
type Elsewhere struct {
	Standard, Durable           float64
	StandardLines, DurableLines []Line
}

// ElsewhereEstimate prices wf, whose orders wait waited in all, on Step
// Functions Standard and on Lambda durable functions, with the same
// remote latency and handler assumptions as the measured run. An event
// or a callback reaches either through API Gateway and a function that
// completes the task (SendTaskSuccess; a durable callback's success), as
// it reaches orderly through its API.
func ElsewhereEstimate(p prices.Prices, wf order.Workflow, waited time.Duration, mem Memory) Elsewhere {
	per := p.DollarsPerMillion
	a := p.Assumptions
	k := StepKinds(wf)
	services, callbacks, events, timers := float64(k["service"]), float64(k[order.WaitCallback]), float64(k[order.WaitEvent]), float64(k[order.WaitTimer])
	secs := func(ms float64) float64 { return ms / 1000 }
	// What both have alike: the submission, and each event and callback
	// arriving through the API to a function that completes the wait.
	api := 1 + events + callbacks
	receivers := events + callbacks
	receiverGBs := receivers * secs(a.HandlerMillis["submit"]) * mem.Submit / 1024
	common := func(invocations, gbs float64) []Line {
		return []Line{
			{"API Gateway (REST API)", api, "requests", api * per.RESTRequests},
			{"Lambda invocations", invocations, "invocations", invocations * per.LambdaRequests},
			{"Lambda duration (arm64)", gbs, "GB-s", gbs * per.LambdaGBSeconds},
		}
	}
	var e Elsewhere

	// Standard: a transition per state entered, a task that waits for its
	// token and a Wait state included. Each call is a task's function;
	// an event's task hands its token over by a service integration,
	// with no function.
	transitions := float64(len(wf.Steps)) + a.StandardTransitionsBesideStates
	tasks := services + callbacks
	taskGBs := tasks * secs(a.HandlerMillis["agent"]+a.RemoteCallMillis) * mem.Agent / 1024
	e.StandardLines = append([]Line{{"state transitions", transitions, "transitions", transitions * per.StandardTransitions}},
		common(tasks+receivers, taskGBs+receiverGBs)...)

	// Durable functions: one function runs the workflow, invoked at the
	// start and again after each wait, and waits for each call.
	d := a.Durable
	ops := d.OperationsPerExecution + services*d.OperationsPerStep["service"] + callbacks*d.OperationsPerStep[order.WaitCallback] +
		events*d.OperationsPerStep[order.WaitEvent] + timers*d.OperationsPerStep[order.WaitTimer]
	invocations := 1 + callbacks + events + timers
	durableGBs := (invocations*secs(d.HandlerMillis) + tasks*secs(a.RemoteCallMillis)) * mem.Agent / 1024
	written := ops * d.CheckpointBytesPerOperation / (1 << 30)
	// Its checkpoints are kept while it waits (and for its retention after
	// it ends, which, like orderly's, is left out).
	retained := written * waited.Hours() / prices.HoursPerMonth
	e.DurableLines = append([]Line{
		{"durable operations", ops, "operations", ops * per.DurableOperations},
		{"checkpoint data written", written * (1 << 30), "bytes", written * p.DollarsPerGB.DurableDataWritten * 1e6},
		{"checkpoint data kept while waiting", retained, "GB-months", retained * p.DollarsPerGBMonth.DurableDataRetained * 1e6},
	}, common(invocations+receivers, durableGBs+receiverGBs)...)
	for _, l := range e.StandardLines {
		e.Standard += l.Dollars
	}
	for _, l := range e.DurableLines {
		e.Durable += l.Dollars
	}
	return e
}

// StorageDollars is what bytes stored for d cost, per million orders.
func StorageDollars(p prices.Prices, bytes float64, d time.Duration) float64 {
	return bytes / (1 << 30) * p.DollarsPerGBMonth.DynamoDBStorage * d.Hours() / prices.HoursPerMonth * 1e6
}
