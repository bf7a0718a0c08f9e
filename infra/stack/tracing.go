package stack

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/tracing"
)

// CtxTracing turns tracing on: a JSON object, {"sample": 0.1}, in
// cdk.json or as -c tracing='{"sample": 0.1}'. Absent, tracing is off.
const CtxTracing = "tracing"

// Tracing is how the stage traces orders into X-Ray (docs/operations.md,
// Tracing): each function exports its spans itself, signed, to X-Ray's
// OTLP endpoint, which needs CloudWatch Transaction Search on in the
// account.
type Tracing struct {
	// Sample is the share of orders traced: more than 0, at most 1.
	Sample float64
}

// tracingFromContext reads CtxTracing's value v: nil (off), the object,
// or the object as a string. Unknown fields are refused.
func tracingFromContext(v any) (*Tracing, error) {
	var raw []byte
	switch v := v.(type) {
	case nil:
		return nil, nil
	case string: // -c tracing='{...}' arrives as a string
		raw = []byte(v)
	default: // cdk.json's object
		raw, _ = json.Marshal(v)
	}
	var got struct {
		Sample *float64 `json:"sample"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&got); err != nil {
		return nil, fmt.Errorf("context %s: want an object such as {\"sample\": 0.1}: %w", CtxTracing, err)
	}
	t := &Tracing{Sample: 1}
	if got.Sample != nil {
		t.Sample = *got.Sample
	}
	if t.Sample <= 0 || t.Sample > 1 {
		return nil, errors.New("context " + CtxTracing + ": sample " + strconv.FormatFloat(t.Sample, 'g', -1, 64) +
			" is not a share of orders: want more than 0 and at most 1 (to turn tracing off, remove the setting)")
	}
	return t, nil
}

// tracingEnv is what turns a function's tracing on: X-Ray's OTLP
// endpoint in the stack's region, and the share of orders sampled. Off,
// nothing.
//
// It adds no grant. X-Ray authorizes an export to that endpoint as
// xray:PutTraceSegments, which every function's role already has:
// Lambda's active tracing, on for every function, needs it (CDK grants it
// with Tracing_ACTIVE, on "*", as X-Ray has no resource-level
// permissions).
func (s *Stack) tracingEnv() map[string]*string {
	if s.props.Tracing == nil {
		return nil
	}
	return map[string]*string{
		tracing.EnvXRay:   awscdk.Fn_Sub(jsii.String("https://xray.${AWS::Region}.${AWS::URLSuffix}/v1/traces"), nil),
		tracing.EnvSample: jsii.String(strconv.FormatFloat(s.props.Tracing.Sample, 'g', -1, 64)),
	}
}
