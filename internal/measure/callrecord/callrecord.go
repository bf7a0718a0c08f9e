// Package callrecord records, per function, the AWS calls the functions make
// through their SDK clients, and the SigV4-signed calls the agents make to
// their remote services: the IAM action each call needs and the resource
// it names. The role check (infra/iamcheck) holds every recorded call
// against the function's role in the synthesized stack, so a role is proven
// enough, and no more than enough, by what the code really calls.
package callrecord

import (
	"cmp"
	"context"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dynamodbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/adapter/remote"
)

// Resource kinds a call names.
const (
	Table  = "table"
	Index  = "index"  // a table's index: Name is the table, Index the index
	Stream = "stream" // a table's stream: Name is the table
	Queue  = "queue"
	Topic  = "topic"
	Bus    = "bus"
	// Secret is a Secrets Manager secret: Name is the id the call gives,
	// a name or an ARN.
	Secret = "secret"
	// ARN is a resource outside the stage, named by its ARN (a remote
	// service's function or API).
	ARN = "arn"
	// Any is a call with no resource-level permission (IAM's "*").
	Any = "*"
)

// Resource is what a call acts on, by the name the stage gave it.
type Resource struct {
	Kind  string
	Name  string
	Index string `json:",omitempty"`
}

func (r Resource) String() string {
	switch r.Kind {
	case Any:
		return "*"
	case Index:
		return "index " + r.Name + "/" + r.Index
	}
	return r.Kind + " " + r.Name
}

// Call is one kind of call one function made: the IAM action it needs on
// one resource. A request touching several resources (a batch read of two
// tables) is one Call per resource.
type Call struct {
	Function string
	Action   string
	Resource Resource
	// Condition is the request's value of the condition key a grant of
	// its action may test, if any.
	Condition Condition `json:",omitzero"`
}

// Condition is one IAM condition key's value in a request's context
// ("lambda:FunctionUrlAuthType" = "AWS_IAM").
type Condition struct {
	Key, Value string
}

func (c Call) String() string {
	s := c.Function + ": " + c.Action + " on " + c.Resource.String()
	if c.Condition.Key != "" {
		s += " with " + c.Condition.Key + "=" + c.Condition.Value
	}
	return s
}

// Recorder collects calls. It is safe for concurrent use.
type Recorder struct {
	mu    sync.Mutex
	calls map[Call]int
}

// New returns an empty recorder.
func New() *Recorder { return &Recorder{calls: map[Call]int{}} }

// leadingKey is the dynamodb:LeadingKeys value of a read of one item by
// its partition key alone (the orders table's key): a grant may be
// limited to some keys (an agent reads only its own service's pause).
func leadingKey(key map[string]dynamodbtypes.AttributeValue) Condition {
	if len(key) != 1 {
		return Condition{}
	}
	for _, v := range key {
		if s, ok := v.(*dynamodbtypes.AttributeValueMemberS); ok {
			return Condition{Key: "dynamodb:LeadingKeys", Value: s.Value}
		}
	}
	return Condition{}
}

// For returns SDK middleware (an APIOptions entry) that records the calls
// of the named function's clients.
func (r *Recorder) For(function string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("orderly-call-record",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				service, op := awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)
				r.mu.Lock()
				for _, c := range CallsOf(function, service, op, in.Parameters) {
					r.calls[c]++
				}
				r.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.Before)
	}
}

// HTTP returns a wrapper of the HTTP transport the named function calls
// its remote service through, under the service's authentication: it
// records the IAM call of each signed request (remote.IAMCallOf).
func (r *Recorder) HTTP(function string) func(http.RoundTripper) http.RoundTripper {
	return func(next http.RoundTripper) http.RoundTripper {
		return roundTripper(func(req *http.Request) (*http.Response, error) {
			ics, _ := remote.IAMCallOf(req)
			for _, ic := range ics {
				c := Call{Function: function, Action: ic.Action, Resource: Resource{Kind: ARN, Name: ic.Resource},
					Condition: Condition{Key: ic.ConditionKey, Value: ic.ConditionVal}}
				r.mu.Lock()
				r.calls[c]++
				r.mu.Unlock()
			}
			return next.RoundTrip(req)
		})
	}
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Calls returns every distinct call recorded, sorted.
func (r *Recorder) Calls() []Call {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make([]Call, 0, len(r.calls))
	for c := range r.calls {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Call) int {
		return cmp.Or(cmp.Compare(a.Function, b.Function), cmp.Compare(a.Action, b.Action),
			cmp.Compare(a.Resource.String(), b.Resource.String()), cmp.Compare(a.String(), b.String()))
	})
	return out
}

// prefixes maps the SDK's service ids to IAM's service prefixes.
var prefixes = map[string]string{
	"DynamoDB": "dynamodb", "DynamoDB Streams": "dynamodb", "SQS": "sqs", "SNS": "sns", "EventBridge": "events",
	"Secrets Manager": "secretsmanager",
}

// batchActions are operations IAM authorises as another action: a batch
// needs the permission of the single call.
var batchActions = map[string]string{
	"sqs:SendMessageBatch":             "sqs:SendMessage",
	"sqs:DeleteMessageBatch":           "sqs:DeleteMessage",
	"sqs:ChangeMessageVisibilityBatch": "sqs:ChangeMessageVisibility",
}

// CallsOf returns the calls one SDK request makes: its IAM action on each
// resource its input names. An operation it does not know is recorded on
// "*" under its own name, so the check fails on it rather than missing it.
func CallsOf(function, service, operation string, params any) []Call {
	prefix, ok := prefixes[service]
	if !ok {
		prefix = strings.ToLower(strings.ReplaceAll(service, " ", ""))
	}
	action := prefix + ":" + operation
	if a, ok := batchActions[action]; ok {
		action = a
	}
	one := func(action string, r Resource) Call { return Call{Function: function, Action: action, Resource: r} }
	var out []Call
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		c := one(action, table(in.TableName))
		c.Condition = leadingKey(in.Key)
		out = append(out, c)
	case *dynamodb.PutItemInput:
		out = append(out, one(action, table(in.TableName)))
	case *dynamodb.UpdateItemInput:
		out = append(out, one(action, table(in.TableName)))
	case *dynamodb.DeleteItemInput:
		out = append(out, one(action, table(in.TableName)))
	case *dynamodb.QueryInput:
		out = append(out, one(action, indexOrTable(in.TableName, in.IndexName)))
	case *dynamodb.ScanInput:
		out = append(out, one(action, indexOrTable(in.TableName, in.IndexName)))
	case *dynamodb.BatchGetItemInput:
		for name := range in.RequestItems {
			out = append(out, one(action, Resource{Kind: Table, Name: name}))
		}
	case *dynamodb.BatchWriteItemInput:
		for name := range in.RequestItems {
			out = append(out, one(action, Resource{Kind: Table, Name: name}))
		}
	case *dynamodb.TransactWriteItemsInput:
		// IAM authorises each item of a transaction as its single write.
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				out = append(out, one("dynamodb:PutItem", table(it.Put.TableName)))
			case it.Update != nil:
				out = append(out, one("dynamodb:UpdateItem", table(it.Update.TableName)))
			case it.Delete != nil:
				out = append(out, one("dynamodb:DeleteItem", table(it.Delete.TableName)))
			case it.ConditionCheck != nil:
				out = append(out, one("dynamodb:ConditionCheckItem", table(it.ConditionCheck.TableName)))
			}
		}
	case *dynamodbstreams.DescribeStreamInput:
		out = append(out, one(action, streamOf(in.StreamArn)))
	case *sqs.SendMessageInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.SendMessageBatchInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.ReceiveMessageInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.DeleteMessageInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.DeleteMessageBatchInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.ChangeMessageVisibilityInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.ChangeMessageVisibilityBatchInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sqs.GetQueueUrlInput:
		out = append(out, one(action, Resource{Kind: Queue, Name: deref(in.QueueName)}))
	case *sqs.GetQueueAttributesInput:
		out = append(out, one(action, queue(in.QueueUrl)))
	case *sns.PublishInput:
		out = append(out, one(action, Resource{Kind: Topic, Name: lastOf(deref(in.TopicArn), ":")}))
	case *eventbridge.PutEventsInput:
		buses := map[string]bool{}
		for _, e := range in.Entries {
			buses[lastOf(cmp.Or(deref(e.EventBusName), "default"), "/")] = true
		}
		for _, b := range slices.Sorted(maps.Keys(buses)) {
			out = append(out, one(action, Resource{Kind: Bus, Name: b}))
		}
	case *secretsmanager.GetSecretValueInput:
		out = append(out, one(action, Resource{Kind: Secret, Name: deref(in.SecretId)}))
	default:
		out = append(out, one(action, Resource{Kind: Any}))
	}
	return out
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// lastOf is what follows the last sep in s: a queue URL's or an ARN's name.
func lastOf(s, sep string) string { return s[strings.LastIndex(s, sep)+1:] }

func table(name *string) Resource { return Resource{Kind: Table, Name: lastOf(deref(name), "/")} }

func indexOrTable(name, index *string) Resource {
	if index == nil {
		return table(name)
	}
	return Resource{Kind: Index, Name: lastOf(deref(name), "/"), Index: *index}
}

// streamOf names a stream by its table: arn:...:table/NAME/stream/LABEL.
func streamOf(arn *string) Resource {
	s := deref(arn)
	if i := strings.Index(s, ":table/"); i >= 0 {
		s = s[i+len(":table/"):]
	}
	name, _, _ := strings.Cut(s, "/")
	return Resource{Kind: Stream, Name: name}
}

func queue(url *string) Resource { return Resource{Kind: Queue, Name: lastOf(deref(url), "/")} }
