package callrecord_test

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/adapter/remote"
	"orderly/internal/adapter/services"
	"orderly/internal/measure/callrecord"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

func TestCallsOf(t *testing.T) {
	for _, tt := range []struct {
		name, service, op string
		params            any
		want              []string
	}{
		{"a write", "DynamoDB", "UpdateItem", &dynamodb.UpdateItemInput{TableName: aws.String("orderly-dev-orders")},
			[]string{"f: dynamodb:UpdateItem on table orderly-dev-orders"}},
		{"a table given by ARN", "DynamoDB", "GetItem", &dynamodb.GetItemInput{TableName: aws.String("arn:aws:dynamodb:us-east-1:123456789012:table/orderly-dev-orders")},
			[]string{"f: dynamodb:GetItem on table orderly-dev-orders"}},
		{"an index query", "DynamoDB", "Query", &dynamodb.QueryInput{TableName: aws.String("orderly-dev-orders"), IndexName: aws.String("due")},
			[]string{"f: dynamodb:Query on index orderly-dev-orders/due"}},
		{"a transaction needs each item's own write", "DynamoDB", "TransactWriteItems", &dynamodb.TransactWriteItemsInput{TransactItems: []types.TransactWriteItem{
			{Put: &types.Put{TableName: aws.String("a")}}, {ConditionCheck: &types.ConditionCheck{TableName: aws.String("b")}}}},
			[]string{"f: dynamodb:PutItem on table a", "f: dynamodb:ConditionCheckItem on table b"}},
		{"a batch read of one table", "DynamoDB", "BatchGetItem", &dynamodb.BatchGetItemInput{RequestItems: map[string]types.KeysAndAttributes{"orderly-dev-orders": {}}},
			[]string{"f: dynamodb:BatchGetItem on table orderly-dev-orders"}},
		{"a queue by URL", "SQS", "SendMessage", &sqs.SendMessageInput{QueueUrl: aws.String("http://127.0.0.1:5000/123456789012/orderly-dev-responses")},
			[]string{"f: sqs:SendMessage on queue orderly-dev-responses"}},
		{"a batch send needs SendMessage", "SQS", "SendMessageBatch", &sqs.SendMessageBatchInput{QueueUrl: aws.String("https://sqs/1/q")},
			[]string{"f: sqs:SendMessage on queue q"}},
		{"a topic by ARN", "SNS", "Publish", &sns.PublishInput{TopicArn: aws.String("arn:aws:sns:us-east-1:123456789012:orderly-dev-alerts")},
			[]string{"f: sns:Publish on topic orderly-dev-alerts"}},
		{"events on a named bus and the default one", "EventBridge", "PutEvents", &eventbridge.PutEventsInput{Entries: []ebtypes.PutEventsRequestEntry{
			{EventBusName: aws.String("orderly-dev-events")}, {}}},
			[]string{"f: events:PutEvents on bus default", "f: events:PutEvents on bus orderly-dev-events"}},
		{"a secret by name", "Secrets Manager", "GetSecretValue", &secretsmanager.GetSecretValueInput{SecretId: aws.String("orderly/dev/payment")},
			[]string{"f: secretsmanager:GetSecretValue on secret orderly/dev/payment"}},
		{"an operation it does not know is on *", "SQS", "PurgeQueue", &sqs.PurgeQueueInput{QueueUrl: aws.String("q")},
			[]string{"f: sqs:PurgeQueue on *"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, c := range callrecord.CallsOf("f", tt.service, tt.op, tt.params) {
				got = append(got, c.String())
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// The recorder sees a real client's calls, before they are sent: a call
// that fails (here: nothing listens) is recorded too.
func TestRecorderRecordsARealClientsCalls(t *testing.T) {
	rec := callrecord.New()
	client := dynamodb.New(dynamodb.Options{
		Region: "us-east-1", BaseEndpoint: aws.String("http://127.0.0.1:1"),
		Credentials: aws.AnonymousCredentials{}, RetryMaxAttempts: 1,
	}, func(o *dynamodb.Options) { o.APIOptions = append(o.APIOptions, rec.For("submit")) })
	client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("orderly-dev-orders")})
	client.PutItem(context.Background(), &dynamodb.PutItemInput{TableName: aws.String("orderly-dev-orders")})
	got := rec.Calls()
	want := []callrecord.Call{{Function: "submit", Action: "dynamodb:PutItem", Resource: callrecord.Resource{Kind: callrecord.Table, Name: "orderly-dev-orders"}}}
	if !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
}

// A signed call to a remote service is recorded as the IAM call it needs,
// by the transport under the service's authentication; an unsigned one is
// not an AWS call.
func TestRecorderRecordsSignedRemoteCalls(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"id":"x"}`)
	}))
	defer ts.Close()
	rec := callrecord.New()
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{AccessKeyID: "AKID", SecretAccessKey: "SECRET"}, nil
	})
	fn := services.Auth{Type: services.AuthSigV4, Service: services.SigningLambda, Target: "arn:aws:lambda:us-east-1:111122223333:function:pay"}
	svcs := map[string]remote.Service{
		"payment":  {URL: ts.URL, Auth: remote.NewSigV4Auth(fn, ts.URL, creds, time.Now)},
		"shipping": {URL: ts.URL},
	}
	client := remote.NewClientFor(svcs, &http.Client{Transport: rec.HTTP("payment-agent")(http.DefaultTransport)}, ordertest.Built(order.DefaultTiming))
	for service, step := range map[string]string{"payment": ordertest.StepChargePayment, "shipping": ordertest.StepArrangeShipping} {
		if _, err := client.Call(context.Background(), service, order.StepRequest{OrderID: "O1", Step: step, IdempotencyKey: "k"}); err != nil {
			t.Fatal(err)
		}
	}
	// A function URL made since October 2025 takes both actions.
	want := []callrecord.Call{{Function: "payment-agent", Action: "lambda:InvokeFunction",
		Resource:  callrecord.Resource{Kind: callrecord.ARN, Name: fn.Target},
		Condition: callrecord.Condition{Key: "lambda:InvokedViaFunctionUrl", Value: "true"}},
		{Function: "payment-agent", Action: "lambda:InvokeFunctionUrl",
			Resource:  callrecord.Resource{Kind: callrecord.ARN, Name: fn.Target},
			Condition: callrecord.Condition{Key: "lambda:FunctionUrlAuthType", Value: "AWS_IAM"}}}
	if got := rec.Calls(); !slices.Equal(got, want) {
		t.Errorf("recorded %v, want %v", got, want)
	}
}
