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
	} `json:"dollarsPerMillion"`
	DollarsPerGB struct {
		LogsIngested float64 `json:"cloudwatchLogsIngested"`
	} `json:"dollarsPerGB"`
	Assumptions Assumptions `json:"assumptions"`
}

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
