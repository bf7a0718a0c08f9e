package localrun

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

const testQueueARN = "arn:aws:sqs:eu-west-1:123456789012:orders"

// fakeSQS serves its batches one per ReceiveMessage, then reports drained
// and long-polls empty until the context ends.
type fakeSQS struct {
	mu          sync.Mutex
	receiveErrs []error
	batches     [][]types.Message
	deleted     []string // receipt handles
	drained     chan struct{}
}

func newFakeSQS(batches ...[]types.Message) *fakeSQS {
	return &fakeSQS{batches: batches, drained: make(chan struct{})}
}

func (f *fakeSQS) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, _ ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	f.mu.Lock()
	if len(f.receiveErrs) > 0 {
		err := f.receiveErrs[0]
		f.receiveErrs = f.receiveErrs[1:]
		f.mu.Unlock()
		return nil, err
	}
	if len(f.batches) > 0 {
		batch := f.batches[0]
		f.batches = f.batches[1:]
		f.mu.Unlock()
		return &sqs.ReceiveMessageOutput{Messages: batch}, nil
	}
	select {
	case <-f.drained:
	default:
		close(f.drained)
	}
	f.mu.Unlock()
	<-ctx.Done()
	return nil, ctx.Err()
}

func (f *fakeSQS) DeleteMessageBatch(ctx context.Context, in *sqs.DeleteMessageBatchInput, _ ...func(*sqs.Options)) (*sqs.DeleteMessageBatchOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := &sqs.DeleteMessageBatchOutput{}
	for _, e := range in.Entries {
		f.deleted = append(f.deleted, aws.ToString(e.ReceiptHandle))
		out.Successful = append(out.Successful, types.DeleteMessageBatchResultEntry{Id: e.Id})
	}
	return out, nil
}

func testMessage(id string) types.Message {
	return types.Message{
		MessageId:     aws.String(id),
		ReceiptHandle: aws.String("rh-" + id),
		Body:          aws.String("body of " + id),
		MD5OfBody:     aws.String("md5-" + id),
		Attributes:    map[string]string{"ApproximateReceiveCount": "1"},
	}
}

// runSQSPoller runs a single-poller SQSPoller over fake until the fake has
// served every batch and the poller has gone back for more, which means it
// has finished with them.
func runSQSPoller(t *testing.T, fake *fakeSQS, handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	runSQSPollerWithTimeout(t, fake, 0, handler)
}

// runSQSPollerWithTimeout is runSQSPoller with the handler's timeout set
// (zero: the poller's default).
func runSQSPollerWithTimeout(t *testing.T, fake *fakeSQS, timeout time.Duration, handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	p, err := NewSQSPoller(fake, SQSConfig{QueueURL: "http://sqs.local/123456789012/orders", QueueARN: testQueueARN,
		Concurrency: 1, Timeout: timeout}, handler, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	select {
	case <-fake.drained:
	case err := <-done:
		t.Fatalf("Run returned early: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("poller did not finish the batches within 10s")
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run = %v, want nil after cancellation", err)
	}
}

func TestSQSPollerDeletesWhatTheHandlerProcessed(t *testing.T) {
	failures := func(ids ...string) events.SQSEventResponse {
		var resp events.SQSEventResponse
		for _, id := range ids {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: id})
		}
		return resp
	}
	tests := []struct {
		name        string
		resp        events.SQSEventResponse
		err         error
		panic       bool
		wantDeleted []string
	}{
		{name: "all processed", wantDeleted: []string{"rh-m1", "rh-m2", "rh-m3"}},
		{name: "one item failed", resp: failures("m2"), wantDeleted: []string{"rh-m1", "rh-m3"}},
		{name: "every item failed", resp: failures("m1", "m2", "m3")},
		{name: "handler error", err: errors.New("database down")},
		{name: "handler panic", panic: true},
		{name: "unknown item identifier", resp: failures("m2", "not-in-batch")},
		{name: "empty item identifier", resp: failures("")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := newFakeSQS([]types.Message{testMessage("m1"), testMessage("m2"), testMessage("m3")})
			runSQSPoller(t, fake, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
				if tt.panic {
					panic("handler bug")
				}
				return tt.resp, tt.err
			})
			slices.Sort(fake.deleted)
			if !slices.Equal(fake.deleted, tt.wantDeleted) {
				t.Errorf("deleted %v, want %v", fake.deleted, tt.wantDeleted)
			}
		})
	}
}

func TestSQSPollerRetriesReceiveErrors(t *testing.T) {
	fake := newFakeSQS([]types.Message{testMessage("m1")})
	fake.receiveErrs = []error{errors.New("connection refused"), errors.New("connection reset")}
	runSQSPoller(t, fake, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return events.SQSEventResponse{}, nil
	})
	if !slices.Equal(fake.deleted, []string{"rh-m1"}) {
		t.Errorf("deleted %v, want [rh-m1] once receiving recovered", fake.deleted)
	}
}

func TestSQSPollerStopsWhenQueueDoesNotExist(t *testing.T) {
	fake := newFakeSQS()
	fake.receiveErrs = []error{&types.QueueDoesNotExist{Message: aws.String("no such queue")}}
	p, err := NewSQSPoller(fake, SQSConfig{QueueURL: "http://sqs.local/123456789012/gone", QueueARN: testQueueARN}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	err = p.Run(t.Context())
	if _, ok := errors.AsType[*types.QueueDoesNotExist](err); !ok {
		t.Errorf("Run = %v, want a QueueDoesNotExist error", err)
	}
}

func TestSQSPollerBuildsLambdaRecords(t *testing.T) {
	msg := types.Message{
		MessageId:              aws.String("059f36b4-87a3-44ab-83d2-661975830a7d"),
		ReceiptHandle:          aws.String("AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a"),
		Body:                   aws.String(`{"order_id":"A"}`),
		MD5OfBody:              aws.String("e4e68fb7bd0e697a0ae8f1bb342846b3"),
		MD5OfMessageAttributes: aws.String("7e1c5dcf43ae4d4e4c3a3e2f5b6d1a90"),
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1545082649183",
			"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
			"ApproximateFirstReceiveTimestamp": "1545082649185",
		},
		MessageAttributes: map[string]types.MessageAttributeValue{
			"step":  {DataType: aws.String("String"), StringValue: aws.String("pay")},
			"token": {DataType: aws.String("Binary"), BinaryValue: []byte{0xff, 0x01}},
		},
	}
	want := events.SQSMessage{
		MessageId:              "059f36b4-87a3-44ab-83d2-661975830a7d",
		ReceiptHandle:          "AQEBwJnKyrHigUMZj6rYigCgxlaS3SLy0a",
		Body:                   `{"order_id":"A"}`,
		Md5OfBody:              "e4e68fb7bd0e697a0ae8f1bb342846b3",
		Md5OfMessageAttributes: "7e1c5dcf43ae4d4e4c3a3e2f5b6d1a90",
		Attributes: map[string]string{
			"ApproximateReceiveCount":          "1",
			"SentTimestamp":                    "1545082649183",
			"SenderId":                         "AIDAIENQZJOLO23YVJ4VO",
			"ApproximateFirstReceiveTimestamp": "1545082649185",
		},
		MessageAttributes: map[string]events.SQSMessageAttribute{
			"step":  {DataType: "String", StringValue: aws.String("pay"), StringListValues: []string{}, BinaryListValues: [][]byte{}},
			"token": {DataType: "Binary", BinaryValue: []byte{0xff, 0x01}, StringListValues: []string{}, BinaryListValues: [][]byte{}},
		},
		EventSourceARN: testQueueARN,
		EventSource:    "aws:sqs",
		AWSRegion:      "eu-west-1",
	}

	var got []events.SQSMessage
	runSQSPoller(t, newFakeSQS([]types.Message{msg}), func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		got = ev.Records
		return events.SQSEventResponse{}, nil
	})
	if len(got) != 1 {
		t.Fatalf("handler got %d records, want 1", len(got))
	}
	if !reflect.DeepEqual(got[0], want) {
		t.Errorf("record =\n%+v\nwant\n%+v", got[0], want)
	}
}

func TestNewSQSPollerValidatesConfig(t *testing.T) {
	valid := SQSConfig{QueueURL: "http://sqs.local/123456789012/orders", QueueARN: testQueueARN}
	tests := []struct {
		name   string
		modify func(*SQSConfig)
	}{
		{"missing queue URL", func(c *SQSConfig) { c.QueueURL = "" }},
		{"malformed ARN", func(c *SQSConfig) { c.QueueARN = "orders" }},
		{"batch size above 10", func(c *SQSConfig) { c.BatchSize = 11 }},
		{"negative concurrency", func(c *SQSConfig) { c.Concurrency = -1 }},
		{"wait time above 20s", func(c *SQSConfig) { c.WaitTime = 21 * time.Second }},
		{"fractional wait time", func(c *SQSConfig) { c.WaitTime = 1500 * time.Millisecond }},
	}
	if _, err := NewSQSPoller(newFakeSQS(), valid, nil, testLogger(t)); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for _, tt := range tests {
		cfg := valid
		tt.modify(&cfg)
		if _, err := NewSQSPoller(newFakeSQS(), cfg, nil, testLogger(t)); err == nil {
			t.Errorf("%s: NewSQSPoller accepted %+v", tt.name, cfg)
		}
	}
}

// Finding 11 of the reliability review: a handler that outlives its
// timeout is a failed invocation in Lambda, whatever it returns late, so
// the whole batch comes back; the poller used to delete its successes.
func TestSQSPollerDeletesNothingAfterATimeout(t *testing.T) {
	fake := newFakeSQS([]types.Message{testMessage("m1"), testMessage("m2")})
	runSQSPollerWithTimeout(t, fake, 50*time.Millisecond, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		<-ctx.Done()
		time.Sleep(20 * time.Millisecond) // returns late, reporting success
		return events.SQSEventResponse{}, nil
	})
	if len(fake.deleted) != 0 {
		t.Errorf("deleted %v after the handler timed out, want nothing: Lambda retries the whole batch", fake.deleted)
	}
}
