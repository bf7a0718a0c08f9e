// Package sns is the SNS adapter that alerts operators about failed steps.
package sns

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sns/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/order"
)

// Client is the part of the SNS API this package uses.
type Client interface {
	Publish(ctx context.Context, in *sns.PublishInput, optFns ...func(*sns.Options)) (*sns.PublishOutput, error)
}

var _ Client = (*sns.Client)(nil)

// Alerter publishes operator alerts to a topic.
type Alerter struct {
	client   Client
	topicARN string
}

// NewAlerter returns an alerter for the topic.
func NewAlerter(client Client, topicARN string) *Alerter {
	return &Alerter{client: client, topicARN: topicARN}
}

// Alert publishes a. The subject is readable in an e-mail client; the body
// is JSON for machines and for the operator's runbook.
func (a *Alerter) Alert(ctx context.Context, alert order.Alert) error {
	body, err := json.MarshalIndent(alert, "", "  ")
	if err != nil {
		return fmt.Errorf("marshal alert: %w", err)
	}
	subject := fmt.Sprintf("orderly: %s: order %s step %s", alert.Kind, alert.OrderID, alert.Step)
	_, err = a.client.Publish(ctx, &sns.PublishInput{
		TopicArn: aws.String(a.topicARN),
		Subject:  aws.String(subject[:min(len(subject), 100)]), // SNS caps subjects at 100 characters
		Message:  aws.String(string(body)),
		MessageAttributes: map[string]types.MessageAttributeValue{
			"kind":    {DataType: aws.String("String"), StringValue: aws.String(string(alert.Kind))},
			"orderId": {DataType: aws.String("String"), StringValue: aws.String(alert.OrderID)},
		},
	})
	if err != nil {
		return fmt.Errorf("publish %s alert for step %s of order %s: %w", alert.Kind, alert.Step, alert.OrderID, err)
	}
	return nil
}

// SubscribeQueue creates the queue queueName (if need be) and subscribes it
// to topicARN with raw delivery, the way an operator's tooling would
// consume alerts. It returns the queue's URL.
func SubscribeQueue(ctx context.Context, topics *sns.Client, queues *sqs.Client, topicARN, queueName string) (string, error) {
	q, err := queues.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(queueName)})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", queueName, err)
	}
	attrs, err := queues.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: q.QueueUrl, AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("get ARN of queue %s: %w", queueName, err)
	}
	_, err = topics.Subscribe(ctx, &sns.SubscribeInput{
		TopicArn: aws.String(topicARN), Protocol: aws.String("sqs"),
		Endpoint:   aws.String(attrs.Attributes[string(sqstypes.QueueAttributeNameQueueArn)]),
		Attributes: map[string]string{"RawMessageDelivery": "true"},
	})
	if err != nil {
		return "", fmt.Errorf("subscribe queue %s to %s: %w", queueName, topicARN, err)
	}
	return aws.ToString(q.QueueUrl), nil
}
