// Package config reads a function's settings from environment variables and
// reports every missing or malformed one at once, and builds the shared
// logger and AWS configuration.
package config

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"

	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// Variables that tune the workflow's timing, shared by the Scheduler, the
// Supervisor and the submission function.
const (
	EnvAllowance        = "STEP_ALLOWANCE"
	EnvMaxAllowance     = "STEP_MAX_ALLOWANCE"
	EnvFailureThreshold = "FAILURE_THRESHOLD"
	EnvClaimWithin      = "CLAIM_WITHIN"
	EnvSkewGrace        = "CLOCK_SKEW_GRACE"
	EnvMaxHeartbeats    = "STEP_MAX_HEARTBEATS"
	// EnvReplyMargin and EnvTryTimeout are read by the agents alone.
	EnvReplyMargin = "STEP_REPLY_MARGIN"
	EnvTryTimeout  = "STEP_TRY_TIMEOUT"
)

// Env reads variables and remembers what was wrong with them.
type Env struct {
	lookup   func(string) (string, bool)
	problems []string
}

// FromOS reads the process environment.
func FromOS() *Env { return &Env{lookup: os.LookupEnv} }

// FromMap reads a map; tests and the local runtime use it.
func FromMap(m map[string]string) *Env {
	return &Env{lookup: func(k string) (string, bool) { v, ok := m[k]; return v, ok }}
}

// Required returns a variable that must be set and non-empty.
func (e *Env) Required(name string) string {
	v, ok := e.lookup(name)
	if !ok || strings.TrimSpace(v) == "" {
		e.problems = append(e.problems, name+" is not set")
	}
	return v
}

// String returns a variable or def when it is unset.
func (e *Env) String(name, def string) string {
	if v, ok := e.lookup(name); ok && v != "" {
		return v
	}
	return def
}

// Duration returns a Go duration ("30s", "1m") or def when unset.
func (e *Env) Duration(name string, def time.Duration) time.Duration {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a positive duration like 30s", name, v))
		return def
	}
	return d
}

// Span returns a duration of 0 or more (a clock skew, which may be none),
// or def when unset.
func (e *Env) Span(name string, def time.Duration) time.Duration {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a duration of 0 or more like 500ms", name, v))
		return def
	}
	return d
}

// Int returns a positive integer or def when unset.
func (e *Env) Int(name string, def int) int {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a positive integer", name, v))
		return def
	}
	return n
}

// Count returns a whole number, 0 or more, or def when unset.
func (e *Env) Count(name string, def int) int {
	v, ok := e.lookup(name)
	if !ok || v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		e.problems = append(e.problems, fmt.Sprintf("%s=%q is not a count (0 or more)", name, v))
		return def
	}
	return n
}

// RequestQueueURLs reads the request queue URL of every agent, which the
// functions that dispatch steps need.
func (e *Env) RequestQueueURLs(agents []string) map[string]string {
	urls := make(map[string]string, len(agents))
	for _, agent := range agents {
		urls[agent] = e.Required(resources.EnvRequestQueueURL(agent))
	}
	return urls
}

// InstanceID names one execution environment of a function: the LockedBy
// value of the claims it makes.
func InstanceID(function string) string {
	return function + "/" + os.Getenv("AWS_LAMBDA_LOG_STREAM_NAME") + "/" + rand.Text()[:8]
}

// Variables that name the workflows a stage runs (the stack sets them
// from what it deployed): a comma-separated list of names, every one built
// in under workflows/ when empty, and the default, which POST /orders
// submits to.
const (
	EnvWorkflows       = "ORDERLY_WORKFLOWS"
	EnvDefaultWorkflow = "ORDERLY_DEFAULT_WORKFLOW"
	// EnvWorkflowsDigest is the digest of the definitions the stack
	// deployed (definition.Digest): a function built with others refuses
	// to start.
	EnvWorkflowsDigest = "ORDERLY_WORKFLOWS_DIGEST"
)

// Workflows reads the names of the workflows the stage runs (none: every
// one under workflows/) and its default (order.LegacyWorkflow unless set).
func (e *Env) Workflows() (names []string, def string) {
	for _, n := range strings.Split(e.String(EnvWorkflows, ""), ",") {
		if n = strings.TrimSpace(n); n != "" {
			names = append(names, n)
		}
	}
	return names, e.String(EnvDefaultWorkflow, order.LegacyWorkflow)
}

// Retention reads how long ended orders and their history are kept
// (RETENTION, a Go duration: 2160h is 90 days).
func (e *Env) Retention() time.Duration {
	return e.Duration(resources.EnvRetention, resources.DefaultRetention)
}

// Timing reads the workflow timing, defaulting to order.DefaultTiming.
func (e *Env) Timing() order.Timing {
	d := order.DefaultTiming
	t := order.Timing{
		Allowance:        e.Duration(EnvAllowance, d.Allowance),
		FailureThreshold: e.Int(EnvFailureThreshold, d.FailureThreshold),
		ClaimWithin:      e.Duration(EnvClaimWithin, d.ClaimWithin),
		SkewGrace:        e.Duration(EnvSkewGrace, d.SkewGrace),
		MaxHeartbeats:    e.Count(EnvMaxHeartbeats, d.MaxHeartbeats), // 0 turns them off
	}
	// A short allowance without an explicit maximum keeps the default
	// ratio rather than jumping to the default maximum.
	t.MaxAllowance = e.Duration(EnvMaxAllowance, t.Allowance*(d.MaxAllowance/d.Allowance))
	if err := t.Validate(); err != nil {
		e.problems = append(e.problems, err.Error())
	}
	return t
}

// Err reports every problem met so far, or nil.
// Metrics returns the function's metrics recorder, writing to w in the
// stage's namespace (METRICS_NAMESPACE, which the stack sets).
func (e *Env) Metrics(w io.Writer, service string) *metrics.Recorder {
	return metrics.New(w, service).In(e.String(resources.EnvMetricsNamespace, ""))
}

func (e *Env) Err() error {
	if len(e.problems) == 0 {
		return nil
	}
	return errors.New("configuration: " + strings.Join(e.problems, "; "))
}

// Logger returns the JSON logger every function uses; service names the
// function ("" adds no service attribute, for callers that add their own). In Lambda with JSON log format it adds the request id to every
// record; elsewhere it writes plain slog JSON to stdout.
func Logger(service string) *slog.Logger {
	var h slog.Handler = slog.NewJSONHandler(os.Stdout, nil)
	if os.Getenv("AWS_LAMBDA_LOG_FORMAT") == "JSON" {
		h = lambdacontext.NewLogHandler()
	}
	log := slog.New(h)
	if service != "" {
		log = log.With("service", service)
	}
	return log
}

// Load reports env's problems, if any, and otherwise loads the AWS
// configuration: the last step of every function's start-up.
func Load(ctx context.Context, env *Env) (aws.Config, error) {
	if err := env.Err(); err != nil {
		return aws.Config{}, err
	}
	return AWS(ctx)
}

// AWS loads the SDK configuration the standard way: region, credentials
// and endpoints (AWS_ENDPOINT_URL, AWS_ENDPOINT_URL_DYNAMODB, ...) come
// from the environment, so the same code runs against AWS, LocalStack or
// the local emulators.
func AWS(ctx context.Context) (aws.Config, error) {
	cfg, err := awsconfig.LoadDefaultConfig(ctx)
	if err != nil {
		return aws.Config{}, fmt.Errorf("load AWS configuration: %w", err)
	}
	return cfg, nil
}
