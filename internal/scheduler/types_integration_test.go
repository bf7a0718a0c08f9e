package scheduler_test

import "github.com/aws/aws-lambda-go/events"

type (
	streamEvent    = events.DynamoDBEvent
	streamResponse = events.DynamoDBEventResponse
	replyEvent     = events.SQSEvent
	replyResponse  = events.SQSEventResponse
)
