// Package sqs is the SQS adapter: it sends step requests to agents' request
// queues and agents' replies to the response queue, as JSON bodies with the
// order id, step and attempt also set as message attributes so a message
// can be found and read without parsing its body, and, with tracing on, the
// sender's W3C traceparent.
package sqs

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/order"
	"orderly/internal/tracing"
)

// Client is the part of the SQS API this package uses.
type Client interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, optFns ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, optFns ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

var _ Client = (*sqs.Client)(nil)

// Requests sends step requests, routing each to its agent's queue.
type Requests struct {
	client Client
	urls   map[string]string // agent -> queue URL
}

// NewRequests returns a sender over the agents' queue URLs.
func NewRequests(client Client, queueURLs map[string]string) *Requests {
	return &Requests{client: client, urls: queueURLs}
}

// SendRequest sends req to the request queue of agent.
func (r *Requests) SendRequest(ctx context.Context, agent string, req order.StepRequest) error {
	url, ok := r.urls[agent]
	if !ok {
		return fmt.Errorf("send request for step %s of order %s: no queue for agent %q", req.Step, req.OrderID, agent)
	}
	if err := send(ctx, r.client, url, req, req.OrderID, req.Step, req.Attempt, 0); err != nil {
		return fmt.Errorf("send request for step %s of order %s to agent %s: %w", req.Step, req.OrderID, agent, err)
	}
	return nil
}

// MaxHold is the longest SQS can delay a message.
const MaxHold = 15 * time.Minute

// HoldRequest puts req back in the request queue of agent, invisible for
// delay (whole seconds, 1 to MaxHold): an agent whose remote service is
// down parks its requests there instead of spending their attempts. A
// held request counts as held (see Backlog).
func (r *Requests) HoldRequest(ctx context.Context, agent string, req order.StepRequest, delay time.Duration) error {
	url, ok := r.urls[agent]
	if !ok {
		return fmt.Errorf("hold request for step %s of order %s: no queue for agent %q", req.Step, req.OrderID, agent)
	}
	delay = min(max(delay, time.Second), MaxHold)
	if err := send(ctx, r.client, url, req, req.OrderID, req.Step, req.Attempt, delay); err != nil {
		return fmt.Errorf("hold request for step %s of order %s in agent %s's queue: %w", req.Step, req.OrderID, agent, err)
	}
	return nil
}

// Backlogs reads the queues a step's request and reply wait in.
type Backlogs struct {
	client   Client
	requests map[string]string // agent -> queue URL
	replies  string
}

// NewBacklogs returns a reader of the agents' request queues and the
// response queue.
func NewBacklogs(client Client, requestURLs map[string]string, responseURL string) *Backlogs {
	return &Backlogs{client: client, requests: requestURLs, replies: responseURL}
}

// Backlog reports whether a step of agent may be waiting in a queue: its
// request held in the agent's queue while the agent's circuit breaker is
// open (order.Held: a delayed message, as only HoldRequest sends), or not
// taken yet by an agent (visible in the agent's queue), or its reply not
// applied yet by the Scheduler (visible or being worked on in the
// response queue) (order.Queued). A request an agent has taken counts as
// started.
func (b *Backlogs) Backlog(ctx context.Context, agent string) (order.Backlog, error) {
	url, ok := b.requests[agent]
	if !ok {
		return order.NoBacklog, fmt.Errorf("backlog of agent %s: no queue for it", agent)
	}
	requests, err := b.count(ctx, url, types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed)
	switch {
	case err != nil:
		return order.NoBacklog, err
	case requests[types.QueueAttributeNameApproximateNumberOfMessagesDelayed] > 0:
		return order.Held, nil
	case requests[types.QueueAttributeNameApproximateNumberOfMessages] > 0:
		return order.Queued, nil
	}
	replies, err := b.count(ctx, b.replies, types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible)
	if err != nil || replies[types.QueueAttributeNameApproximateNumberOfMessages]+replies[types.QueueAttributeNameApproximateNumberOfMessagesNotVisible] == 0 {
		return order.NoBacklog, err
	}
	return order.Queued, nil
}

// count reads the named counts of a queue.
func (b *Backlogs) count(ctx context.Context, url string, names ...types.QueueAttributeName) (map[types.QueueAttributeName]int, error) {
	out, err := b.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: names})
	if err != nil {
		return nil, fmt.Errorf("backlog of queue %s: %w", url, err)
	}
	counts := make(map[types.QueueAttributeName]int, len(names))
	for _, name := range names {
		n, err := strconv.Atoi(out.Attributes[string(name)])
		if err != nil {
			return nil, fmt.Errorf("backlog of queue %s: %s: %w", url, name, err)
		}
		counts[name] = n
	}
	return counts, nil
}

// Replies sends agents' replies to the response queue.
type Replies struct {
	client Client
	url    string
}

// NewReplies returns a sender to the response queue.
func NewReplies(client Client, queueURL string) *Replies {
	return &Replies{client: client, url: queueURL}
}

// SendReply posts rep on the response queue.
func (r *Replies) SendReply(ctx context.Context, rep order.StepReply) error {
	if err := send(ctx, r.client, r.url, rep, rep.OrderID, rep.Step, rep.Attempt, 0); err != nil {
		return fmt.Errorf("send %s reply for step %s of order %s: %w", rep.Outcome, rep.Step, rep.OrderID, err)
	}
	return nil
}

func send(ctx context.Context, client Client, url string, body any, orderID, step string, attempt int, delay time.Duration) error {
	// The order's input and results go as written: escaped for HTML, each
	// "<", ">" and "&" would take six bytes, and a request within the
	// bound definition.Sizes checks could outgrow the message.
	var data bytes.Buffer
	enc := json.NewEncoder(&data)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(body); err != nil {
		return fmt.Errorf("marshal message: %w", err)
	}
	attrs := map[string]types.MessageAttributeValue{
		"orderId": {DataType: aws.String("String"), StringValue: aws.String(orderID)},
		"step":    {DataType: aws.String("String"), StringValue: aws.String(step)},
		"attempt": {DataType: aws.String("Number"), StringValue: aws.String(strconv.Itoa(attempt))},
	}
	if tp := tracing.Traceparent(ctx); tp != "" {
		// Beside the body, not in it: the messages' format stays the
		// domain's, and the consumer's span becomes a child of the
		// sender's (see tracing.StartFrom).
		attrs[tracing.HeaderTraceparent] = types.MessageAttributeValue{DataType: aws.String("String"), StringValue: aws.String(tp)}
	}
	_, err := client.SendMessage(ctx, &sqs.SendMessageInput{
		QueueUrl:          aws.String(url),
		MessageBody:       aws.String(sqsSafe(bytes.TrimSuffix(data.Bytes(), []byte("\n")))),
		DelaySeconds:      int32((delay + time.Second - 1) / time.Second),
		MessageAttributes: attrs,
	})
	return err
}

// SQS takes a message's characters from #x9, #xA, #xD, #x20-#xD7FF,
// #xE000-#xFFFD and #x10000-#x10FFFF only. JSON escapes every control
// character below #x20 and valid UTF-8 holds no surrogate, so what is left
// to refuse are U+FFFE and U+FFFF, which a client's input or a service's
// result may hold: they are written as JSON escapes, which decode to the
// same string (they can only be inside a string), instead of making the
// message unsendable.
var sqsEscapes = strings.NewReplacer("\uFFFE", `\ufffe`, "\uFFFF", `\uffff`)

func sqsSafe(data []byte) string { return sqsEscapes.Replace(string(data)) }
