// Package faults injects failures into the AWS SDK calls of the engine's
// functions, for the chaos soak. It is SDK middleware (an APIOptions
// entry), so the code under test is the code that ships: it sees the
// errors a real outage, a throttled table or a lost response would give
// it, above the SDK's own retries.
//
// Kinds, each a probability per call:
//
//	throttle   the call fails with ThrottlingException; nothing was done
//	5xx        the call fails with an InternalServerError; nothing was done
//	timeout    the call fails after a pause, as a client timeout would;
//	           nothing was done
//	ambiguous  the call is made and succeeds, but the caller sees an error,
//	           as when a response is lost: a commit it does not know about
//	drop       an SQS SendMessage reports success but sends nothing
//	duplicate  an SQS SendMessage sends its message twice
//	crash      the process is killed (SIGKILL) just before the call: a
//	           crash between two writes. Which call it hits names the
//	           crash point: SQS SendMessage to a request queue is "between
//	           claim and send", to the response queue "between remote
//	           success and reply", SNS Publish "between an Error write and
//	           its alert", and so on (see Point). The local pollers work
//	           batches of up to ten messages in parallel, so a crash in a
//	           handler is also a crash mid-batch.
//
// Every injected fault is logged as one JSON line ("fault injected", with
// its kind, the call and its point), so a soak can count them even across
// crashes.
package faults

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"
)

// Kind is a kind of fault.
type Kind string

// The kinds of fault, in the order they are considered for a call.
const (
	Crash     Kind = "crash"
	Throttle  Kind = "throttle"
	Server    Kind = "5xx"
	Timeout   Kind = "timeout"
	Ambiguous Kind = "ambiguous"
	Drop      Kind = "drop"
	Duplicate Kind = "duplicate"
)

// Kinds lists every kind.
var Kinds = []Kind{Crash, Throttle, Server, Timeout, Ambiguous, Drop, Duplicate}

// Rates is the probability of each kind of fault per call.
type Rates map[Kind]float64

// Parse reads rates written as "throttle=0.02,5xx=0.01,crash=0.0002". An
// empty spec injects nothing.
func Parse(spec string) (Rates, error) {
	r := Rates{}
	if strings.TrimSpace(spec) == "" {
		return r, nil
	}
	known := map[Kind]bool{}
	for _, k := range Kinds {
		known[k] = true
	}
	for _, part := range strings.Split(spec, ",") {
		name, value, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok || !known[Kind(name)] {
			return nil, fmt.Errorf("fault %q: want kind=probability, kind one of %v", part, Kinds)
		}
		p, err := strconv.ParseFloat(value, 64)
		if err != nil || p < 0 || p > 1 {
			return nil, fmt.Errorf("fault %q: probability must be in [0, 1]", part)
		}
		r[Kind(name)] = p
	}
	return r, nil
}

func (r Rates) String() string {
	var parts []string
	for _, k := range Kinds {
		if p := r[k]; p > 0 {
			parts = append(parts, fmt.Sprintf("%s=%g", k, p))
		}
	}
	return strings.Join(parts, ",")
}

// Injector injects faults at the configured rates.
type Injector struct {
	rates Rates
	log   *slog.Logger
	// kill ends the process for a crash; tests replace it.
	kill func()

	mu       sync.Mutex
	rnd      *rand.Rand
	injected map[Kind]int
}

// New returns an injector. seed makes a run repeatable.
func New(rates Rates, seed uint64, log *slog.Logger) *Injector {
	return &Injector{rates: rates, log: log, rnd: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		injected: map[Kind]int{}, kill: func() { _ = syscall.Kill(os.Getpid(), syscall.SIGKILL) }}
}

// Injected counts the faults injected so far, by kind.
func (in *Injector) Injected() map[Kind]int {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make(map[Kind]int, len(in.injected))
	for k, n := range in.injected {
		out[k] = n
	}
	return out
}

// draw picks the fault for one call, or "" for none.
func (in *Injector) draw(sqsSend bool) Kind {
	in.mu.Lock()
	defer in.mu.Unlock()
	for _, k := range Kinds {
		if (k == Drop || k == Duplicate) && !sqsSend {
			continue
		}
		if p := in.rates[k]; p > 0 && in.rnd.Float64() < p {
			in.injected[k]++
			return k
		}
	}
	return ""
}

// AddTo attaches the injector to an SDK client's middleware stack; use it
// as an APIOptions entry.
func (in *Injector) AddTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("orderly-fault-injector", in.handle), middleware.After)
}

func (in *Injector) handle(ctx context.Context, input middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
	send, isSend := input.Parameters.(*sqs.SendMessageInput)
	kind := in.draw(isSend)
	if kind == "" {
		return next.HandleInitialize(ctx, input)
	}
	target := ""
	if isSend && send.QueueUrl != nil {
		target = *send.QueueUrl
		target = target[strings.LastIndex(target, "/")+1:]
	}
	in.log.WarnContext(ctx, "fault injected", "kind", string(kind), "aws_service", service, "operation", op,
		"target", target, "point", Point(service, op, target))
	switch kind {
	case Crash:
		in.kill()
		return middleware.InitializeOutput{}, middleware.Metadata{}, errors.New("fault injection: process killed")
	case Throttle:
		return middleware.InitializeOutput{}, middleware.Metadata{}, injected(op, http.StatusBadRequest, "ThrottlingException", "rate exceeded")
	case Server:
		return middleware.InitializeOutput{}, middleware.Metadata{}, injected(op, http.StatusInternalServerError, "InternalServerError", "internal error")
	case Timeout:
		pause := time.Duration(in.intn(200)) * time.Millisecond
		select {
		case <-ctx.Done():
		case <-time.After(pause):
		}
		return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.OperationError{ServiceID: service, OperationName: op,
			Err: fmt.Errorf("fault injection: request timed out after %s: %w", pause, context.DeadlineExceeded)}
	case Ambiguous:
		if _, _, err := next.HandleInitialize(ctx, input); err != nil {
			return middleware.InitializeOutput{}, middleware.Metadata{}, err
		}
		return middleware.InitializeOutput{}, middleware.Metadata{}, &smithy.OperationError{ServiceID: service, OperationName: op,
			Err: errors.New("fault injection: connection reset after the request was sent")}
	case Drop:
		return middleware.InitializeOutput{Result: &sqs.SendMessageOutput{MessageId: dropped()}}, middleware.Metadata{}, nil
	case Duplicate:
		if _, _, err := next.HandleInitialize(ctx, input); err != nil {
			return middleware.InitializeOutput{}, middleware.Metadata{}, err
		}
		return next.HandleInitialize(ctx, input)
	}
	return next.HandleInitialize(ctx, input)
}

func (in *Injector) intn(n int) int {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.rnd.IntN(n)
}

// injected is an API error as the service would return it.
func injected(op string, status int, code, message string) error {
	return &smithy.OperationError{OperationName: op, Err: &smithyhttp.ResponseError{
		Response: &smithyhttp.Response{Response: &http.Response{StatusCode: status}},
		Err:      &smithy.GenericAPIError{Code: code, Message: "fault injection: " + message},
	}}
}

var droppedSeq struct {
	sync.Mutex
	n int
}

func dropped() *string {
	droppedSeq.Lock()
	defer droppedSeq.Unlock()
	droppedSeq.n++
	id := "dropped-by-fault-injection-" + strconv.Itoa(droppedSeq.n)
	return &id
}

// Point names where a fault before the call falls in the pattern, from the
// call: the AWS service, the operation and, for SQS sends, the queue.
func Point(service, operation, target string) string {
	switch {
	case service == "SQS" && operation == "SendMessage" && strings.HasSuffix(target, "-responses"):
		return "between remote success and reply"
	case service == "SQS" && operation == "SendMessage":
		return "between claim and send"
	case service == "SQS" && operation == "GetQueueAttributes":
		return "before a backlog read"
	case service == "SNS" && operation == "Publish":
		return "between an Error write and its alert"
	case service == "DynamoDB" && (operation == "TransactWriteItems" || operation == "PutItem"):
		return "before an order is written"
	case service == "DynamoDB" && operation == "UpdateItem":
		return "before a state write"
	case service == "DynamoDB" && (operation == "Query" || operation == "GetItem" || operation == "BatchGetItem"):
		return "before a read"
	}
	return "before " + service + " " + operation
}
