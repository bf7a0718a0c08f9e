// Package localrun drives the real Lambda handlers locally the way their AWS
// event sources would: an HTTP server shaped like API Gateway, an SQS poller
// and a DynamoDB Streams poller, each pointed at local emulators.
package localrun

import (
	"context"
	"crypto/rand"
	"fmt"
	"log/slog"
	"runtime/debug"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// invoke calls handler the way the Lambda runtime does: with a fresh request
// id in the context (so lambdacontext's log handler picks it up) and with a
// panic turned into an error, so one bad event cannot take the whole local
// runtime down.
func invoke[In, Out any](ctx context.Context, log *slog.Logger, handler func(context.Context, In) (Out, error), event In) (out Out, requestID string, err error) {
	requestID = newRequestID()
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: requestID})
	defer func() {
		if v := recover(); v != nil {
			log.ErrorContext(ctx, "handler panicked", "request_id", requestID, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
			err = fmt.Errorf("handler panicked: %v", v)
		}
	}()
	out, err = handler(ctx, event)
	return out, requestID, err
}

// newRequestID returns a random UUID (version 4), the shape of Lambda's and
// API Gateway's request ids.
func newRequestID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // crypto/rand.Read never returns an error.
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

// backoff returns how long to wait before attempt (1-based) of something that
// keeps failing: doubling from base, capped at limit.
func backoff(attempt int, base, limit time.Duration) time.Duration {
	d := base
	for i := 1; i < attempt && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

// sleep waits for d or until ctx is done, reporting whether the full wait
// elapsed.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
