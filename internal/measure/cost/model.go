package cost

import (
	"orderly/internal/prices"

	"maps"
	"math"
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
