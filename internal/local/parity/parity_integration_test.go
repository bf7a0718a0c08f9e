package parity_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	snstypes "github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	orderlysns "orderly/internal/adapter/sns"
	"orderly/internal/testkit/testenv"
)

// queue creates a queue for one test on client and deletes it after.
func queue(t *testing.T, client *sqs.Client, attrs map[string]string) (url, arn string) {
	t.Helper()
	name := "parity-" + strings.ToLower(rand.Text()[:10])
	out, err := client.CreateQueue(t.Context(), &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		t.Fatalf("create queue %s: %v", name, err)
	}
	url = aws.ToString(out.QueueUrl)
	t.Cleanup(func() { client.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}) })
	got, err := client.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		t.Fatalf("queue ARN of %s: %v", name, err)
	}
	return url, got.Attributes[string(types.QueueAttributeNameQueueArn)]
}

func clients(t *testing.T) (queues, deliveries *sqs.Client, topics *sns.Client, buses *eventbridge.Client) {
	c := testenv.Clients(testenv.AWS(t))
	return c.SQS, c.Deliveries, c.SNS, c.EventBridge
}

func send(t *testing.T, client *sqs.Client, url, body string) {
	t.Helper()
	if _, err := client.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String(body)}); err != nil {
		t.Fatalf("send %q: %v", body, err)
	}
}

// receive asks once for up to 10 messages, waiting at most wait.
func receive(t *testing.T, client *sqs.Client, url string, wait int32, visibility int32) []types.Message {
	t.Helper()
	in := &sqs.ReceiveMessageInput{QueueUrl: aws.String(url), MaxNumberOfMessages: 10, WaitTimeSeconds: wait,
		MessageAttributeNames:       []string{"All"},
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll}}
	if visibility >= 0 {
		in.VisibilityTimeout = visibility
	}
	out, err := client.ReceiveMessage(t.Context(), in)
	if err != nil {
		t.Fatalf("receive from %s: %v", url, err)
	}
	return out.Messages
}

func bodies(msgs []types.Message) []string {
	var out []string
	for _, m := range msgs {
		out = append(out, aws.ToString(m.Body))
	}
	return out
}

// awaitOne receives until one message arrives, or fails after timeout.
func awaitOne(t *testing.T, client *sqs.Client, url string, timeout time.Duration) types.Message {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		if msgs := receive(t, client, url, 1, -1); len(msgs) > 0 {
			if len(msgs) > 1 {
				t.Fatalf("got %d messages %q, want one", len(msgs), bodies(msgs))
			}
			return msgs[0]
		}
	}
	t.Fatalf("no message on %s within %s", url, timeout)
	return types.Message{}
}

// A received message stays invisible for its visibility timeout, then
// comes back with its receive count raised: the Scheduler's and agents'
// retries of a failed batch rest on it.
func TestVisibilityTimeoutHidesThenReturnsAMessage(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	url, _ := queue(t, q, nil)
	send(t, q, url, "m")
	if got := receive(t, q, url, 0, 2); len(got) != 1 {
		t.Fatalf("first receive: got %q, want the message", bodies(got))
	}
	if got := receive(t, q, url, 0, -1); len(got) != 0 {
		t.Fatalf("receive inside the visibility timeout: got %q, want nothing", bodies(got))
	}
	time.Sleep(2500 * time.Millisecond)
	got := receive(t, q, url, 1, -1)
	if len(got) != 1 {
		t.Fatalf("receive after the visibility timeout: got %q, want the message back", bodies(got))
	}
	if n := got[0].Attributes[string(types.MessageSystemAttributeNameApproximateReceiveCount)]; n != "2" {
		t.Errorf("ApproximateReceiveCount after two receives: got %q, want 2", n)
	}
	if got[0].Attributes[string(types.MessageSystemAttributeNameSentTimestamp)] == "" {
		t.Errorf("SentTimestamp missing from the system attributes %v", got[0].Attributes)
	}
}

// ChangeMessageVisibility both releases a message at once (0: ops hands a
// message back) and keeps it hidden longer than the receive asked.
func TestChangeMessageVisibility(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	url, _ := queue(t, q, nil)
	send(t, q, url, "released")
	got := receive(t, q, url, 0, 30)
	if len(got) != 1 {
		t.Fatalf("receive: got %q, want the message", bodies(got))
	}
	if _, err := q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 0}); err != nil {
		t.Fatalf("change visibility to 0: %v", err)
	}
	if got := receive(t, q, url, 1, 1); len(got) != 1 {
		t.Fatalf("receive after visibility 0: got %q, want the message at once", bodies(got))
	} else if _, err := q.ChangeMessageVisibility(t.Context(), &sqs.ChangeMessageVisibilityInput{QueueUrl: aws.String(url),
		ReceiptHandle: got[0].ReceiptHandle, VisibilityTimeout: 5}); err != nil {
		t.Fatalf("extend visibility to 5 s: %v", err)
	}
	time.Sleep(2 * time.Second) // past the receive's 1 s, inside the 5 s it was extended to
	if got := receive(t, q, url, 0, -1); len(got) != 0 {
		t.Fatalf("receive inside the extended visibility: got %q, want nothing", bodies(got))
	}
}

// After maxReceiveCount receives a message moves to the dead-letter queue,
// where operators find poison messages.
func TestRedriveToTheDeadLetterQueue(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	dlq, dlqARN := queue(t, q, nil)
	policy, _ := json.Marshal(map[string]string{"deadLetterTargetArn": dlqARN, "maxReceiveCount": "2"})
	url, _ := queue(t, q, map[string]string{"RedrivePolicy": string(policy)})
	send(t, q, url, "poison")
	// Each receive hides it for a second (the SDK leaves a 0 out, which
	// would mean the queue's default of 30 s); the next waits it out.
	for i := range 2 {
		got := receive(t, q, url, 3, 1)
		if len(got) != 1 {
			t.Fatalf("receive %d: got %q, want the message", i+1, bodies(got))
		}
	}
	if got := receive(t, q, url, 3, 1); len(got) != 0 {
		t.Fatalf("third receive: got %q from the source queue, want it moved to the dead-letter queue", bodies(got))
	}
	if m := awaitOne(t, q, dlq, 5*time.Second); aws.ToString(m.Body) != "poison" {
		t.Fatalf("dead-letter queue: got %q, want poison", aws.ToString(m.Body))
	}
}

// A long poll waits for a message that arrives during it, and an empty
// one waits its whole time rather than answering at once: pollers rest on
// both (the first for latency, the second not to spin).
func TestLongPolling(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	url, _ := queue(t, q, nil)

	began := time.Now()
	if got := receive(t, q, url, 1, -1); len(got) != 0 {
		t.Fatalf("empty queue: got %q", bodies(got))
	}
	if waited := time.Since(began); waited < 900*time.Millisecond {
		t.Errorf("an empty 1 s long poll answered after %s; want it to wait the second", waited)
	}

	go func() {
		time.Sleep(500 * time.Millisecond)
		q.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("late")})
	}()
	began = time.Now()
	got := receive(t, q, url, 10, -1)
	if len(got) != 1 || aws.ToString(got[0].Body) != "late" {
		t.Fatalf("long poll: got %q, want the message sent during it", bodies(got))
	}
	if waited := time.Since(began); waited > 5*time.Second {
		t.Errorf("a message sent 0.5 s into a 10 s long poll was answered after %s; want soon after it was sent", waited)
	}
}

// Batches: ten messages in one send, a delete of a whole batch whose bad
// entry fails alone, and AWS's limit of ten entries.
func TestBatchSendAndDelete(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	url, _ := queue(t, q, nil)
	var entries []types.SendMessageBatchRequestEntry
	for i := range 10 {
		entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String("m" + strconv.Itoa(i))})
	}
	out, err := q.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: entries})
	if err != nil {
		t.Fatalf("send a batch of 10: %v", err)
	}
	if len(out.Successful) != 10 || len(out.Failed) != 0 {
		t.Fatalf("send a batch of 10: %d sent, %d failed %+v", len(out.Successful), len(out.Failed), out.Failed)
	}
	eleven := append(entries, types.SendMessageBatchRequestEntry{Id: aws.String("10"), MessageBody: aws.String("m10")})
	_, err = q.SendMessageBatch(t.Context(), &sqs.SendMessageBatchInput{QueueUrl: aws.String(url), Entries: eleven})
	if _, ok := errors.AsType[*types.TooManyEntriesInBatchRequest](err); !ok {
		t.Errorf("send a batch of 11: got error %v, want TooManyEntriesInBatchRequest", err)
	}

	var received []types.Message
	for deadline := time.Now().Add(10 * time.Second); len(received) < 10 && time.Now().Before(deadline); {
		received = append(received, receive(t, q, url, 1, 30)...)
	}
	if len(received) != 10 {
		t.Fatalf("received %d of the 10 messages: %q", len(received), bodies(received))
	}
	var deletes []types.DeleteMessageBatchRequestEntry
	for i, m := range received {
		deletes = append(deletes, types.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
	}
	// One entry with a receipt handle SQS never issued: it fails, the
	// others are deleted (the poller's partial-batch deletes rest on it).
	deletes[9].ReceiptHandle = aws.String("not-a-receipt-handle")
	del, err := q.DeleteMessageBatch(t.Context(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: deletes})
	if err != nil {
		t.Fatalf("delete a batch with one bad entry: %v", err)
	}
	if len(del.Successful) != 9 || len(del.Failed) != 1 || aws.ToString(del.Failed[0].Id) != "9" {
		t.Fatalf("delete a batch with one bad entry: %d deleted, failed %+v; want 9 deleted and entry 9 failed", len(del.Successful), del.Failed)
	}
	attrs, err := q.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url),
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
	if err != nil {
		t.Fatal(err)
	}
	if got := attrs.Attributes[string(types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)]; got != "1" {
		t.Errorf("messages in flight after deleting 9 of 10: got %s, want 1 (%v)", got, attrs.Attributes)
	}
}

// Message attributes of each type come back as sent, and a delayed message
// is counted as delayed until it is due: the Supervisor reads the three
// counts to tell a backlog from a lost step.
func TestMessageAttributesDelayAndCounts(t *testing.T) {
	t.Parallel()
	q, _, _, _ := clients(t)
	url, _ := queue(t, q, nil)
	sent := map[string]types.MessageAttributeValue{
		"orderId": {DataType: aws.String("String"), StringValue: aws.String("o-1")},
		"attempt": {DataType: aws.String("Number"), StringValue: aws.String("3")},
		"blob":    {DataType: aws.String("Binary"), BinaryValue: []byte{0, 1, 2, 255}},
	}
	if _, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("with attributes"),
		MessageAttributes: sent}); err != nil {
		t.Fatal(err)
	}
	if _, err := q.SendMessage(t.Context(), &sqs.SendMessageInput{QueueUrl: aws.String(url), MessageBody: aws.String("delayed"),
		DelaySeconds: 2}); err != nil {
		t.Fatal(err)
	}
	counts := func() map[string]string {
		out, err := q.GetQueueAttributes(t.Context(), &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages, types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible}})
		if err != nil {
			t.Fatal(err)
		}
		return out.Attributes
	}
	if c := counts(); c["ApproximateNumberOfMessages"] != "1" || c["ApproximateNumberOfMessagesDelayed"] != "1" {
		t.Errorf("counts with one visible and one delayed message: got %v", c)
	}
	got := receive(t, q, url, 0, 30)
	if len(got) != 1 || aws.ToString(got[0].Body) != "with attributes" {
		t.Fatalf("receive before the delay is over: got %q, want only the undelayed message", bodies(got))
	}
	for name, want := range sent {
		have, ok := got[0].MessageAttributes[name]
		if !ok || aws.ToString(have.DataType) != aws.ToString(want.DataType) || aws.ToString(have.StringValue) != aws.ToString(want.StringValue) ||
			string(have.BinaryValue) != string(want.BinaryValue) {
			t.Errorf("attribute %s: got %+v, want %+v", name, have, want)
		}
	}
	if got[0].MD5OfMessageAttributes == nil {
		t.Error("MD5OfMessageAttributes missing: the SDK could not check the attributes")
	}
	if c := counts(); c["ApproximateNumberOfMessagesNotVisible"] != "1" {
		t.Errorf("counts with one message in flight: got %v", c)
	}
	if m := awaitOne(t, q, url, 5*time.Second); aws.ToString(m.Body) != "delayed" {
		t.Fatalf("after the delay: got %q, want the delayed message", aws.ToString(m.Body))
	}
}

// The alert topic fans out to every subscribed queue, raw (the body is
// the message and the attributes stay attributes, as operators' tooling
// and the tests' inboxes read them) or wrapped in SNS's envelope.
func TestSNSFansOutToQueues(t *testing.T) {
	t.Parallel()
	_, deliveries, topics, _ := clients(t)
	topic, err := topics.CreateTopic(t.Context(), &sns.CreateTopicInput{Name: aws.String("parity-" + strings.ToLower(rand.Text()[:10]))})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { topics.DeleteTopic(context.Background(), &sns.DeleteTopicInput{TopicArn: topic.TopicArn}) })
	rawURL, err := orderlysns.SubscribeQueue(t.Context(), topics, deliveries, aws.ToString(topic.TopicArn), "parity-raw-"+strings.ToLower(rand.Text()[:10]))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		deliveries.DeleteQueue(context.Background(), &sqs.DeleteQueueInput{QueueUrl: aws.String(rawURL)})
	})
	wrappedURL, wrappedARN := queue(t, deliveries, nil)
	if _, err := topics.Subscribe(t.Context(), &sns.SubscribeInput{TopicArn: topic.TopicArn, Protocol: aws.String("sqs"), Endpoint: aws.String(wrappedARN)}); err != nil {
		t.Fatal(err)
	}
	if _, err := topics.Publish(t.Context(), &sns.PublishInput{TopicArn: topic.TopicArn, Message: aws.String(`{"kind":"StepFailed"}`),
		MessageAttributes: map[string]snstypes.MessageAttributeValue{"orderId": {DataType: aws.String("String"), StringValue: aws.String("o-7")}}}); err != nil {
		t.Fatal(err)
	}
	raw := awaitOne(t, deliveries, rawURL, 10*time.Second)
	if aws.ToString(raw.Body) != `{"kind":"StepFailed"}` {
		t.Errorf("raw delivery body: got %q, want the message itself", aws.ToString(raw.Body))
	}
	if v := raw.MessageAttributes["orderId"]; aws.ToString(v.StringValue) != "o-7" {
		t.Errorf("raw delivery attributes: got %v, want orderId o-7", raw.MessageAttributes)
	}
	wrapped := awaitOne(t, deliveries, wrappedURL, 10*time.Second)
	var envelope struct{ Type, Message, TopicArn string }
	if err := json.Unmarshal([]byte(aws.ToString(wrapped.Body)), &envelope); err != nil {
		t.Fatalf("wrapped delivery body %q is not SNS's JSON envelope: %v", aws.ToString(wrapped.Body), err)
	}
	if envelope.Type != "Notification" || envelope.Message != `{"kind":"StepFailed"}` || envelope.TopicArn != aws.ToString(topic.TopicArn) {
		t.Errorf("wrapped delivery: got %+v", envelope)
	}
}

// A rule on a custom bus sends the events its pattern matches, and only
// those, to its queue target, in EventBridge's envelope: the status events
// clients subscribe to travel this way.
func TestEventBridgeRuleDeliversMatchingEventsToAQueue(t *testing.T) {
	t.Parallel()
	_, deliveries, _, buses := clients(t)
	name := "parity-" + strings.ToLower(rand.Text()[:10])
	if _, err := buses.CreateEventBus(t.Context(), &eventbridge.CreateEventBusInput{Name: aws.String(name)}); err != nil {
		t.Fatal(err)
	}
	url, arn := queue(t, deliveries, nil)
	pattern := `{"source":["orderly"],"detail-type":["OrderStatusChanged"]}`
	if _, err := buses.PutRule(t.Context(), &eventbridge.PutRuleInput{Name: aws.String(name), EventBusName: aws.String(name), EventPattern: aws.String(pattern)}); err != nil {
		t.Fatal(err)
	}
	if _, err := buses.PutTargets(t.Context(), &eventbridge.PutTargetsInput{Rule: aws.String(name), EventBusName: aws.String(name),
		Targets: []ebtypes.Target{{Id: aws.String("q"), Arn: aws.String(arn)}}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx := context.Background()
		buses.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: aws.String(name), EventBusName: aws.String(name), Ids: []string{"q"}})
		buses.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: aws.String(name), EventBusName: aws.String(name)})
		buses.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: aws.String(name)})
	})
	entry := func(source, detail string) ebtypes.PutEventsRequestEntry {
		return ebtypes.PutEventsRequestEntry{EventBusName: aws.String(name), Source: aws.String(source),
			DetailType: aws.String("OrderStatusChanged"), Detail: aws.String(detail)}
	}
	out, err := buses.PutEvents(t.Context(), &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
		entry("someone-else", `{"orderId":"o-0"}`), entry("orderly", `{"orderId":"o-1","status":"Processed"}`)}})
	if err != nil || out.FailedEntryCount != 0 {
		t.Fatalf("put events: %v (failed entries %d)", err, out.FailedEntryCount)
	}
	got := awaitOne(t, deliveries, url, 10*time.Second)
	var event struct {
		Source     string          `json:"source"`
		DetailType string          `json:"detail-type"`
		Detail     json.RawMessage `json:"detail"`
	}
	if err := json.Unmarshal([]byte(aws.ToString(got.Body)), &event); err != nil {
		t.Fatalf("body %q is not EventBridge's event envelope: %v", aws.ToString(got.Body), err)
	}
	if event.Source != "orderly" || event.DetailType != "OrderStatusChanged" || !strings.Contains(string(event.Detail), `"o-1"`) {
		t.Errorf("delivered event: got %+v (detail %s), want the orderly event", event, event.Detail)
	}
	if more := receive(t, deliveries, url, 1, -1); len(more) != 0 {
		t.Errorf("the rule delivered an event its pattern does not match: %q", bodies(more))
	}
}
