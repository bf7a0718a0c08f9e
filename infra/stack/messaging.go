package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awskms"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/resources"
)

// messaging holds the queues, their dead-letter queues and the alert topic.
type messaging struct {
	requests  map[string]awssqs.Queue // by agent
	responses awssqs.Queue
	// deadLetters lists every dead-letter queue, for alarms.
	deadLetters []awssqs.Queue
	// streamFailures receives stream records the Scheduler could not
	// process after its retries; scheduleFailures receives Supervisor
	// invocations EventBridge could not deliver.
	streamFailures, scheduleFailures awssqs.Queue
	topic                            awssns.Topic
	topicKey                         awskms.Key
	// bus receives every order status change; clients subscribe with
	// rules of their own.
	bus awsevents.EventBus
}

func newMessaging(s *Stack) *messaging {
	m := &messaging{requests: map[string]awssqs.Queue{}}
	for _, agent := range s.agents() {
		m.requests[agent] = m.queue(s, "RequestQueue"+title(agent), s.cat.RequestQueues[agent])
	}
	m.responses = m.queue(s, "ResponseQueue", s.cat.ResponseQueue)
	m.bus = awsevents.NewEventBus(s.Stack, jsii.String("EventBus"), &awsevents.EventBusProps{EventBusName: jsii.String(s.cat.EventBus)})
	m.streamFailures = m.deadLetter(s, "StreamFailures", "orderly-"+s.props.Stage+"-stream-failures")
	m.scheduleFailures = m.deadLetter(s, "ScheduleFailures", "orderly-"+s.props.Stage+"-schedule-failures")

	// Alerts are encrypted with a key of our own: CloudWatch alarms cannot
	// publish to a topic encrypted with the AWS-managed SNS key.
	m.topicKey = awskms.NewKey(s.Stack, jsii.String("AlertTopicKey"), &awskms.KeyProps{
		Description:       jsii.String("orderly " + s.props.Stage + " alert topic encryption"),
		EnableKeyRotation: jsii.Bool(true),
		RemovalPolicy:     awscdk.RemovalPolicy_DESTROY,
	})
	m.topicKey.AddToResourcePolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Sid:        jsii.String("CloudWatchAlarmsPublish"),
		Principals: &[]awsiam.IPrincipal{awsiam.NewServicePrincipal(jsii.String("cloudwatch.amazonaws.com"), nil)},
		Actions:    jsii.Strings("kms:Decrypt", "kms:GenerateDataKey*"),
		Resources:  jsii.Strings("*"), // in a key policy, "*" means this key
	}), nil)
	m.topic = awssns.NewTopic(s.Stack, jsii.String("AlertTopic"), &awssns.TopicProps{
		TopicName:   jsii.String(s.cat.AlertTopic),
		DisplayName: jsii.String("orderly " + s.props.Stage + " alerts"),
		MasterKey:   m.topicKey,
		EnforceSSL:  jsii.Bool(true),
	})
	if s.props.AlarmEmail != "" {
		m.topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.props.AlarmEmail), nil))
	}
	return m
}

// queue builds an encrypted, TLS-only queue with its dead-letter queue.
func (m *messaging) queue(s *Stack, id string, q resources.Queue) awssqs.Queue {
	dlq := m.deadLetter(s, id+"DLQ", q.DeadLetterName)
	return awssqs.NewQueue(s.Stack, jsii.String(id), &awssqs.QueueProps{
		QueueName:         jsii.String(q.Name),
		VisibilityTimeout: seconds(q.VisibilityTimeout),
		RetentionPeriod:   seconds(q.Retention),
		Encryption:        awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		DeadLetterQueue:   &awssqs.DeadLetterQueue{Queue: dlq, MaxReceiveCount: jsii.Number(float64(q.MaxReceiveCount))},
	})
}

// deadLetter builds a dead-letter queue that keeps messages for the
// longest time SQS allows, so an operator has two weeks to look.
func (m *messaging) deadLetter(s *Stack, id, name string) awssqs.Queue {
	dlq := awssqs.NewQueue(s.Stack, jsii.String(id), &awssqs.QueueProps{
		QueueName:       jsii.String(name),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(14)),
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
	})
	m.deadLetters = append(m.deadLetters, dlq)
	return dlq
}
