package localrun

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

type testQueue struct {
	client *sqs.Client
	url    string
	arn    string
}

// testVisibility is the test queues' visibility timeout: short, so that
// redelivery is quick, and long enough that a busy machine finishes a batch
// before its messages come back.
const testVisibility = 2 * time.Second

// newTestQueue creates a queue with testVisibility, and deletes it when the
// test ends.
func newTestQueue(t *testing.T) testQueue {
	t.Helper()
	client := sqs.NewFromConfig(integrationConfig(t, "AWS_ENDPOINT_URL_SQS"))
	created, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{
		QueueName:  aws.String(uniqueName("localrun-test")),
		Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): strconv.Itoa(int(testVisibility / time.Second))},
	})
	if err != nil {
		t.Fatalf("create queue: %v", err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteQueue(cleanupContext(t), &sqs.DeleteQueueInput{QueueUrl: created.QueueUrl}); err != nil {
			t.Errorf("delete queue: %v", err)
		}
	})
	attrs, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl:       created.QueueUrl,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn},
	})
	if err != nil {
		t.Fatalf("get queue ARN: %v", err)
	}
	return testQueue{client: client, url: *created.QueueUrl, arn: attrs.Attributes[string(types.QueueAttributeNameQueueArn)]}
}

func (q testQueue) send(t *testing.T, bodies ...string) {
	t.Helper()
	in := &sqs.SendMessageBatchInput{QueueUrl: &q.url}
	for i, body := range bodies {
		in.Entries = append(in.Entries, types.SendMessageBatchRequestEntry{
			Id:          aws.String(strconv.Itoa(i)),
			MessageBody: aws.String(body),
			MessageAttributes: map[string]types.MessageAttributeValue{
				"step": {DataType: aws.String("String"), StringValue: aws.String("pay")},
			},
		})
	}
	out, err := q.client.SendMessageBatch(t.Context(), in)
	if err != nil || len(out.Failed) > 0 {
		t.Fatalf("send messages: %v %+v", err, out)
	}
}

// empty reports whether the queue holds no message, visible or in flight:
// every message has been deleted.
func (q testQueue) empty(t *testing.T) bool {
	out, err := q.client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{
		QueueUrl: &q.url,
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
		},
	})
	if err != nil {
		t.Errorf("get queue attributes: %v", err)
		return false
	}
	return out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessages)] == "0" &&
		out.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)] == "0"
}

func (q testQueue) startPoller(t *testing.T, handler func(context.Context, events.SQSEvent) (events.SQSEventResponse, error)) {
	t.Helper()
	p, err := NewSQSPoller(q.client, SQSConfig{QueueURL: q.url, QueueARN: q.arn, Concurrency: 2}, handler, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, p.Run)
}

// deliveries records every message a handler saw, by message id: SQS
// delivers at least once, and a send the SDK retried can put a body in the
// queue twice, so the tests follow messages, not bodies.
type deliveries struct {
	mu   sync.Mutex
	byID map[string][]events.SQSMessage
	ids  []string // in order of first delivery
}

func (d *deliveries) add(m events.SQSMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byID == nil {
		d.byID = map[string][]events.SQSMessage{}
	}
	if _, ok := d.byID[m.MessageId]; !ok {
		d.ids = append(d.ids, m.MessageId)
	}
	d.byID[m.MessageId] = append(d.byID[m.MessageId], m)
}

// receiveCounts returns, for each message with this body, the
// ApproximateReceiveCount of each of its deliveries.
func (d *deliveries) receiveCounts(body string) [][]string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var counts [][]string
	for _, id := range d.ids {
		if d.byID[id][0].Body != body {
			continue
		}
		var c []string
		for _, m := range d.byID[id] {
			c = append(c, m.Attributes["ApproximateReceiveCount"])
		}
		counts = append(counts, c)
	}
	return counts
}

// first returns the first delivery of a message with this body.
func (d *deliveries) first(body string) (events.SQSMessage, bool) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, id := range d.ids {
		if d.byID[id][0].Body == body {
			return d.byID[id][0], true
		}
	}
	return events.SQSMessage{}, false
}

// String lists each message's body and receive counts, for failures.
func (d *deliveries) String() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var b strings.Builder
	for _, id := range d.ids {
		fmt.Fprintf(&b, "%s %s:", id, d.byID[id][0].Body)
		for _, m := range d.byID[id] {
			fmt.Fprintf(&b, " %s", m.Attributes["ApproximateReceiveCount"])
		}
		b.WriteString("; ")
	}
	return b.String()
}

// each reports whether every message with one of these bodies has been
// delivered with exactly want's receive counts, and at least one of each
// body has.
func (d *deliveries) each(want map[string][]string) bool {
	for body, counts := range want {
		got := d.receiveCounts(body)
		if len(got) == 0 {
			return false
		}
		for _, c := range got {
			if !slices.Equal(c, counts) {
				return false
			}
		}
	}
	return true
}

func TestSQSPollerIntegrationPartialBatchFailure(t *testing.T) {
	t.Parallel()
	q := newTestQueue(t)
	q.send(t, "ok-1", "poison", "ok-2")

	var seen deliveries
	q.startPoller(t, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		var resp events.SQSEventResponse
		for _, m := range ev.Records {
			seen.add(m)
			if m.Body == "poison" && m.Attributes["ApproximateReceiveCount"] == "1" {
				resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: m.MessageId})
			}
		}
		return resp, nil
	})

	// The processed messages are deleted after one delivery; the failed one
	// comes back once its visibility timeout passes, and is deleted then.
	want := map[string][]string{"ok-1": {"1"}, "ok-2": {"1"}, "poison": {"1", "2"}}
	eventually(t, time.Minute, func() bool { return seen.each(want) && q.empty(t) }, func() string {
		return fmt.Sprintf("deliveries by message [%s], want receive counts %v and then an empty queue", &seen, want)
	})
	// Nothing more comes once the queue is empty.
	time.Sleep(2 * testVisibility)
	if !seen.each(want) {
		t.Errorf("deliveries by message [%s], want receive counts %v", &seen, want)
	}

	m, _ := seen.first("ok-1")
	sum := md5.Sum([]byte("ok-1"))
	if m.EventSource != "aws:sqs" || m.EventSourceARN != q.arn || m.AWSRegion != "us-east-1" {
		t.Errorf("eventSource %q, eventSourceARN %q, awsRegion %q, want aws:sqs, %q, us-east-1", m.EventSource, m.EventSourceARN, m.AWSRegion, q.arn)
	}
	if m.MessageId == "" || m.ReceiptHandle == "" || m.Md5OfBody != hex.EncodeToString(sum[:]) {
		t.Errorf("messageId %q, receiptHandle %q, md5OfBody %q, want ids and the body's MD5", m.MessageId, m.ReceiptHandle, m.Md5OfBody)
	}
	for _, attr := range []string{"ApproximateReceiveCount", "SentTimestamp", "ApproximateFirstReceiveTimestamp", "SenderId"} {
		if m.Attributes[attr] == "" {
			t.Errorf("attributes[%s] missing; attributes = %v", attr, m.Attributes)
		}
	}
	if a := m.MessageAttributes["step"]; a.DataType != "String" || aws.ToString(a.StringValue) != "pay" {
		t.Errorf("messageAttributes[step] = %+v, want String pay", a)
	}
}

func TestSQSPollerIntegrationHandlerErrorReturnsBatch(t *testing.T) {
	t.Parallel()
	q := newTestQueue(t)
	q.send(t, "a", "b", "c")

	var seen deliveries
	q.startPoller(t, func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		for _, m := range ev.Records {
			seen.add(m)
		}
		for _, m := range ev.Records {
			if m.Attributes["ApproximateReceiveCount"] == "1" {
				return events.SQSEventResponse{}, errors.New("database unavailable")
			}
		}
		return events.SQSEventResponse{}, nil
	})

	// A batch holding a first delivery fails as a whole; every message comes
	// back and the second delivery of each succeeds.
	want := map[string][]string{"a": {"1", "2"}, "b": {"1", "2"}, "c": {"1", "2"}}
	eventually(t, time.Minute, func() bool { return seen.each(want) && q.empty(t) }, func() string {
		return fmt.Sprintf("deliveries by message [%s], want receive counts %v and then an empty queue", &seen, want)
	})
}

func TestSQSPollerIntegrationMissingQueue(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(integrationConfig(t, "AWS_ENDPOINT_URL_SQS"))
	name := uniqueName("localrun-missing")
	p, err := NewSQSPoller(client, SQSConfig{
		QueueURL: "http://127.0.0.1:9324/123456789012/" + name,
		QueueARN: "arn:aws:sqs:us-east-1:123456789012:" + name,
	}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = p.Run(ctx)
	if _, ok := errors.AsType[*types.QueueDoesNotExist](err); !ok {
		t.Errorf("Run = %v, want a QueueDoesNotExist error", err)
	}
}
