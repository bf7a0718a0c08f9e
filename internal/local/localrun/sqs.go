package localrun

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQSClient is the part of *sqs.Client that SQSPoller calls.
type SQSClient interface {
	ReceiveMessage(ctx context.Context, params *sqs.ReceiveMessageInput, optFns ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessageBatch(ctx context.Context, params *sqs.DeleteMessageBatchInput, optFns ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error)
}

var _ SQSClient = (*sqs.Client)(nil)

// SQSConfig says which queue an SQSPoller reads and how, mirroring the
// settings of a Lambda SQS event source mapping.
type SQSConfig struct {
	QueueURL string
	// QueueARN becomes each record's eventSourceARN, and its region the
	// record's awsRegion.
	QueueARN string
	// BatchSize is the most messages handed to one invocation, 1 to 10;
	// zero means 10, Lambda's default.
	BatchSize int
	// Concurrency is how many batches may be in the handler at once; zero
	// means 4.
	Concurrency int
	// WaitTime is the long-poll wait of each ReceiveMessage, in whole seconds
	// up to 20s; zero means 1s, which keeps shutdown quick.
	WaitTime time.Duration
	// Timeout bounds each invocation, like a function's timeout; zero means
	// 30s. The handler's context is cancelled then, but the poller still
	// waits for it to return.
	Timeout time.Duration
}

// SQSPoller is a local stand-in for Lambda's SQS event source mapping: it
// long-polls one queue, hands batches to the handler and deletes what the
// handler reports as processed.
type SQSPoller struct {
	client      SQSClient
	handler     func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)
	queueURL    string
	queueARN    string
	region      string
	batchSize   int32
	concurrency int
	waitSeconds int32
	timeout     time.Duration
	log         *slog.Logger
}

// NewSQSPoller returns a poller for the queue in cfg; it does nothing until
// Run.
func NewSQSPoller(client SQSClient, cfg SQSConfig, handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error), log *slog.Logger) (*SQSPoller, error) {
	if cfg.QueueURL == "" {
		return nil, errors.New("sqs poller: queue URL is required")
	}
	queueARN, err := arn.Parse(cfg.QueueARN)
	if err != nil {
		return nil, fmt.Errorf("sqs poller: queue ARN %q: %w", cfg.QueueARN, err)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 10
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > 10 {
		return nil, fmt.Errorf("sqs poller: batch size %d outside 1-10", cfg.BatchSize)
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = 4
	}
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("sqs poller: concurrency %d below 1", cfg.Concurrency)
	}
	if cfg.WaitTime == 0 {
		cfg.WaitTime = time.Second
	}
	if cfg.WaitTime < time.Second || cfg.WaitTime > 20*time.Second || cfg.WaitTime%time.Second != 0 {
		return nil, fmt.Errorf("sqs poller: wait time %s is not whole seconds from 1s to 20s", cfg.WaitTime)
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &SQSPoller{
		client:      client,
		handler:     handler,
		queueURL:    cfg.QueueURL,
		queueARN:    cfg.QueueARN,
		region:      queueARN.Region,
		batchSize:   int32(cfg.BatchSize),
		concurrency: cfg.Concurrency,
		waitSeconds: int32(cfg.WaitTime / time.Second),
		timeout:     cfg.Timeout,
		log:         log.With("queue_arn", cfg.QueueARN),
	}, nil
}

// Run polls until ctx is cancelled, then waits for batches already in the
// handler to finish and be deleted, and returns nil. It returns an error only
// if the queue does not exist; other failures are logged and retried.
func (p *SQSPoller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for range p.concurrency {
		wg.Go(func() {
			if err := p.poll(ctx); err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

func (p *SQSPoller) poll(ctx context.Context) error {
	failures := 0
	for ctx.Err() == nil {
		out, err := p.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
			QueueUrl:                    &p.queueURL,
			MaxNumberOfMessages:         p.batchSize,
			WaitTimeSeconds:             p.waitSeconds,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		})
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if _, ok := errors.AsType[*types.QueueDoesNotExist](err); ok {
				return fmt.Errorf("poll queue %s: %w", p.queueURL, err)
			}
			failures++
			wait := backoff(failures, 100*time.Millisecond, 5*time.Second)
			p.log.WarnContext(ctx, "receive messages failed; retrying", "error", err, "attempt", failures, "retry_in", wait)
			sleep(ctx, wait)
			continue
		}
		failures = 0
		if len(out.Messages) > 0 {
			p.deliver(ctx, out.Messages)
		}
	}
	return nil
}

// deliver invokes the handler with one batch and deletes the messages it
// processed. The rest stay invisible until their visibility timeout, after
// which SQS redelivers them, or moves them to the DLQ once the queue's
// redrive policy says they have been received too often.
func (p *SQSPoller) deliver(ctx context.Context, messages []types.Message) {
	// A batch that reached the handler is finished even during shutdown, so
	// that its messages are deleted rather than processed twice.
	ctx = context.WithoutCancel(ctx)
	event := events.SQSEvent{Records: make([]events.SQSMessage, len(messages))}
	for i, m := range messages {
		event.Records[i] = lambdaSQSMessage(m, p.queueARN, p.region)
	}
	invokeCtx, cancel := context.WithTimeout(ctx, p.timeout)
	resp, requestID, err := invoke(invokeCtx, p.log, p.handler, event)
	if err == nil && errors.Is(invokeCtx.Err(), context.DeadlineExceeded) {
		// Lambda ends a function at its timeout: whatever it would have
		// returned is lost, and the whole batch comes back.
		err = fmt.Errorf("handler ran past its %s timeout", p.timeout)
	}
	cancel()
	log := p.log.With("request_id", requestID, "batch_size", len(messages))
	if err != nil {
		log.ErrorContext(ctx, "handler failed; the whole batch returns to the queue", "error", err)
		return
	}
	failed, err := failedMessageIDs(event.Records, resp)
	if err != nil {
		log.ErrorContext(ctx, "invalid batch item failures; the whole batch returns to the queue", "error", err)
		return
	}
	if len(failed) > 0 {
		ids := slices.Sorted(maps.Keys(failed))
		log.WarnContext(ctx, "handler reported batch item failures; they return to the queue", "failed_message_ids", ids)
	}
	var entries []types.DeleteMessageBatchRequestEntry
	for i, m := range messages {
		if !failed[aws.ToString(m.MessageId)] {
			entries = append(entries, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
	}
	p.delete(ctx, log, entries)
}

// failedMessageIDs returns the ids the handler reported as failed. Like
// Lambda, it treats an empty or unknown id as a failure of the whole batch.
func failedMessageIDs(records []events.SQSMessage, resp events.SQSEventResponse) (map[string]bool, error) {
	inBatch := make(map[string]bool, len(records))
	for _, r := range records {
		inBatch[r.MessageId] = true
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		if !inBatch[f.ItemIdentifier] {
			return nil, fmt.Errorf("item identifier %q is not a message id of the batch", f.ItemIdentifier)
		}
		failed[f.ItemIdentifier] = true
	}
	return failed, nil
}

func (p *SQSPoller) delete(ctx context.Context, log *slog.Logger, entries []types.DeleteMessageBatchRequestEntry) {
	const attempts = 3
	for attempt := 1; len(entries) > 0; attempt++ {
		out, err := p.client.DeleteMessageBatch(ctx, &sqs.DeleteMessageBatchInput{QueueUrl: &p.queueURL, Entries: entries})
		if err == nil {
			for _, f := range out.Failed {
				// A receipt handle expires with the visibility timeout; the
				// message comes back and, handlers being idempotent, is
				// processed again.
				log.WarnContext(ctx, "delete message failed; it will be redelivered", "code", aws.ToString(f.Code), "error", aws.ToString(f.Message))
			}
			return
		}
		if attempt == attempts {
			log.ErrorContext(ctx, "delete messages failed; they will be redelivered", "error", err, "attempt", attempt, "count", len(entries))
			return
		}
		wait := backoff(attempt, 100*time.Millisecond, time.Second)
		log.WarnContext(ctx, "delete messages failed; retrying", "error", err, "attempt", attempt, "retry_in", wait)
		sleep(ctx, wait)
	}
}

// lambdaSQSMessage builds the record Lambda would put in an SQS event for m.
func lambdaSQSMessage(m types.Message, queueARN, region string) events.SQSMessage {
	rec := events.SQSMessage{
		MessageId:              aws.ToString(m.MessageId),
		ReceiptHandle:          aws.ToString(m.ReceiptHandle),
		Body:                   aws.ToString(m.Body),
		Md5OfBody:              aws.ToString(m.MD5OfBody),
		Md5OfMessageAttributes: aws.ToString(m.MD5OfMessageAttributes),
		Attributes:             make(map[string]string, len(m.Attributes)),
		MessageAttributes:      make(map[string]events.SQSMessageAttribute, len(m.MessageAttributes)),
		EventSourceARN:         queueARN,
		EventSource:            "aws:sqs",
		AWSRegion:              region,
	}
	for k, v := range m.Attributes {
		rec.Attributes[k] = v
	}
	for k, v := range m.MessageAttributes {
		// Lambda sends the list fields as [] rather than null.
		a := events.SQSMessageAttribute{
			StringValue:      v.StringValue,
			BinaryValue:      v.BinaryValue,
			StringListValues: []string{},
			BinaryListValues: [][]byte{},
			DataType:         aws.ToString(v.DataType),
		}
		a.StringListValues = append(a.StringListValues, v.StringListValues...)
		a.BinaryListValues = append(a.BinaryListValues, v.BinaryListValues...)
		rec.MessageAttributes[k] = a
	}
	return rec
}
