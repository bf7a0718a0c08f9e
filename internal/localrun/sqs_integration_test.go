package localrun

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"errors"
	"slices"
	"strconv"
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

// newTestQueue creates a queue whose one-second visibility timeout makes
// redelivery quick, and deletes it when the test ends.
func newTestQueue(t *testing.T) testQueue {
	t.Helper()
	client := sqs.NewFromConfig(integrationConfig(t, "AWS_ENDPOINT_URL"))
	created, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{
		QueueName:  aws.String(uniqueName("localrun-test")),
		Attributes: map[string]string{string(types.QueueAttributeNameVisibilityTimeout): "1"},
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

// deliveries records every message a handler saw, by body.
type deliveries struct {
	mu     sync.Mutex
	byBody map[string][]events.SQSMessage
}

func (d *deliveries) add(m events.SQSMessage) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.byBody == nil {
		d.byBody = map[string][]events.SQSMessage{}
	}
	d.byBody[m.Body] = append(d.byBody[m.Body], m)
}

// receiveCounts returns the ApproximateReceiveCount of each delivery of
// body.
func (d *deliveries) receiveCounts(body string) []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	var counts []string
	for _, m := range d.byBody[body] {
		counts = append(counts, m.Attributes["ApproximateReceiveCount"])
	}
	return counts
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

	eventually(t, 20*time.Second, func() bool {
		return len(seen.receiveCounts("poison")) == 2 && q.empty(t)
	}, "poison delivered with receive counts %v, want [1 2] and then an empty queue", seen.receiveCounts("poison"))

	for body, want := range map[string][]string{"ok-1": {"1"}, "ok-2": {"1"}, "poison": {"1", "2"}} {
		if got := seen.receiveCounts(body); !slices.Equal(got, want) {
			t.Errorf("%s delivered with receive counts %v, want %v", body, got, want)
		}
	}

	m := seen.byBody["ok-1"][0]
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
	bodies := []string{"a", "b", "c"}
	q.send(t, bodies...)

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

	eventually(t, 20*time.Second, func() bool {
		for _, b := range bodies {
			if len(seen.receiveCounts(b)) < 2 {
				return false
			}
		}
		return q.empty(t)
	}, "deliveries a=%v b=%v c=%v, want each redelivered after the failed batch and then an empty queue",
		seen.receiveCounts("a"), seen.receiveCounts("b"), seen.receiveCounts("c"))

	for _, b := range bodies {
		if got := seen.receiveCounts(b); !slices.Equal(got, []string{"1", "2"}) {
			t.Errorf("%s delivered with receive counts %v, want [1 2]", b, got)
		}
	}
}

func TestSQSPollerIntegrationMissingQueue(t *testing.T) {
	t.Parallel()
	client := sqs.NewFromConfig(integrationConfig(t, "AWS_ENDPOINT_URL"))
	name := uniqueName("localrun-missing")
	p, err := NewSQSPoller(client, SQSConfig{
		QueueURL: "http://127.0.0.1:5000/123456789012/" + name,
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
