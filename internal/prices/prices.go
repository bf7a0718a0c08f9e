// Package prices reads the price table (cost/prices.json) that make cost
// prices measured usage with and the deployed dashboard estimates a
// period's cost with. It is a package of its own so that the CDK app
// links the table, not the cost measurement and the engine it runs.
package prices

import (
	"encoding/json"
	"fmt"
	"os"
)

// Prices is the price table file: dollars per million units, its date and
// its source, and the assumptions the model cannot measure locally.
type Prices struct {
	Date              string `json:"date"`
	Region            string `json:"region"`
	Source            string `json:"source"`
	DollarsPerMillion struct {
		DynamoDBWrites      float64 `json:"dynamodbWriteRequestUnits"`
		DynamoDBReads       float64 `json:"dynamodbReadRequestUnits"`
		LambdaRequests      float64 `json:"lambdaRequests"`
		LambdaGBSeconds     float64 `json:"lambdaArmGBSeconds"`
		SQSRequests         float64 `json:"sqsRequests"`
		RESTRequests        float64 `json:"apiGatewayRestRequests"`
		HTTPRequests        float64 `json:"apiGatewayHttpRequests"`
		SNSPublishes        float64 `json:"snsPublishes"`
		EventBridgeEvents   float64 `json:"eventBridgeCustomEvents"`
		StandardTransitions float64 `json:"stepFunctionsStandardTransitions"`
		ExpressRequests     float64 `json:"stepFunctionsExpressRequests"`
		ExpressGBSeconds    float64 `json:"stepFunctionsExpressGBSeconds"`
		XRayTraces          float64 `json:"xrayTracesRecorded"`
		DurableOperations   float64 `json:"lambdaDurableOperations"`
	} `json:"dollarsPerMillion"`
	DollarsPerGB struct {
		LogsIngested       float64 `json:"cloudwatchLogsIngested"`
		DurableDataWritten float64 `json:"lambdaDurableDataWritten"`
	} `json:"dollarsPerGB"`
	// DollarsPerGBMonth prices what is stored, pro-rated by the hour.
	DollarsPerGBMonth struct {
		DynamoDBStorage     float64 `json:"dynamodbStandardStorage"`
		DurableDataRetained float64 `json:"lambdaDurableDataRetained"`
	} `json:"dollarsPerGBMonth"`
	// Sources say where the prices added after Date were read, and when.
	Sources     map[string]Source `json:"sources"`
	Assumptions Assumptions       `json:"assumptions"`
}

// Source is where one price was published and when it was read.
type Source struct {
	URL  string `json:"url"`
	Date string `json:"date"`
	Note string `json:"note,omitempty"`
}

// HoursPerMonth is the month AWS pro-rates storage over (730 hours).
const HoursPerMonth = 730

// Assumptions are the stated inputs the emulators cannot measure.
type Assumptions struct {
	Note string `json:"note"`
	// RemoteCallMillis is a remote service's latency; agents (and Step
	// Functions' task functions) are billed while they wait for it.
	RemoteCallMillis float64 `json:"remoteCallMillis"`
	// HandlerMillis is each function's own time per message.
	HandlerMillis map[string]float64 `json:"handlerMillis"`
	// ParallelBatchFactor is how much longer a full batch, worked in
	// parallel, runs than one message.
	ParallelBatchFactor           float64 `json:"parallelBatchFactor"`
	PlatformLogBytesPerInvocation float64 `json:"lambdaPlatformLogBytesPerInvocation"`
	XRaySampledFraction           float64 `json:"xraySampledFraction"`
	StandardTransitionsPerOrder   float64 `json:"stepFunctionsStandardTransitionsPerOrder"`
	ExpressMemoryMB               float64 `json:"stepFunctionsExpressMemoryMB"`
	// StandardTransitionsBesideStates are the transitions of a Standard
	// execution beyond one per state entered (its start and its end, as
	// StandardTransitionsPerOrder counts 5 for 3 states).
	StandardTransitionsBesideStates float64 `json:"stepFunctionsStandardTransitionsBesideStates"`
	// Durable is how the same workflow is counted on Lambda durable
	// functions.
	Durable DurableAssumptions `json:"lambdaDurable"`
}

// DurableAssumptions count a workflow on Lambda durable functions: one
// function whose steps call the services, whose waits suspend it, and
// which is invoked again (and replays) after each.
type DurableAssumptions struct {
	Note string `json:"note"`
	// OperationsPerExecution are the operations every execution has
	// beside its steps' (its start).
	OperationsPerExecution float64 `json:"operationsPerExecution"`
	// Operations per step of each kind: "service" (a step calling a
	// service), "callback" (a step whose service calls back), "event",
	// "timer".
	OperationsPerStep map[string]float64 `json:"operationsPerStep"`
	// CheckpointBytesPerOperation is what each operation writes.
	CheckpointBytesPerOperation float64 `json:"checkpointBytesPerOperation"`
	// RetentionDays is how long an ended execution's data is kept (the
	// default).
	RetentionDays float64 `json:"retentionDays"`
	// HandlerMillis is the function's own time per invocation (its replay
	// included), beside the remote calls it waits for.
	HandlerMillis float64 `json:"handlerMillis"`
}

// Load reads a price table file.
func Load(path string) (Prices, error) {
	var p Prices
	data, err := os.ReadFile(path)
	if err != nil {
		return p, fmt.Errorf("read price table: %w", err)
	}
	if err := json.Unmarshal(data, &p); err != nil {
		return p, fmt.Errorf("parse price table %s: %w", path, err)
	}
	if p.Date == "" || p.Source == "" {
		return p, fmt.Errorf("price table %s: needs a date and a source", path)
	}
	return p, nil
}
