package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/jsii-runtime-go"

	"orderly/internal/resources"
)

// data holds the orders table (each order and its steps' states, its
// stream and the due index), the history table the recorder writes, and
// the key of the search API's cursors.
type data struct {
	orders, history awsdynamodb.Table
	// pageTokenKey keys the cursors of search pages (pagetoken): random,
	// made at deployment, read by the submission function at start. It
	// guards no data at rest, so it goes with the stack: a new key only
	// makes the cursors handed out before it fail with a 400.
	pageTokenKey awssecretsmanager.Secret
	// callbackKey keys the tokens of services that call back
	// (callbacktoken): made at deployment like pageTokenKey, read by the
	// submission function and by the agents of steps that call back. A
	// new key only makes the tokens of calls waiting for their callback
	// fail with a 401; those steps time out and are called again.
	callbackKey awssecretsmanager.Secret
}

func newData(s *Stack) *data {
	return &data{orders: table(s, "OrdersTable", s.cat.Orders), history: table(s, "HistoryTable", s.cat.History),
		pageTokenKey: key(s, "PageTokenKey", s.cat.PageTokenSecret, "keys the cursors of orderly's search pages"),
		callbackKey:  key(s, "CallbackKey", s.cat.CallbackSecret, "keys the tokens of orderly's callbacks")}
}

// key is one of the stage's own keys: a random secret made at
// deployment, which goes with the stack.
func key(s *Stack, id, name, description string) awssecretsmanager.Secret {
	return awssecretsmanager.NewSecret(s.Stack, jsii.String(id), &awssecretsmanager.SecretProps{
		SecretName:  jsii.String(name),
		Description: jsii.String(description),
		GenerateSecretString: &awssecretsmanager.SecretStringGenerator{
			PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true), IncludeSpace: jsii.Bool(false),
		},
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}

// table builds an on-demand, point-in-time-recoverable table from its
// declaration. Tables are retained when the stack is deleted: orders are
// business records, and losing them to a `cdk destroy` is never intended.
func table(s *Stack, id string, t resources.Table) awsdynamodb.Table {
	props := &awsdynamodb.TableProps{
		TableName:    jsii.String(t.Name),
		PartitionKey: attribute(t.PartitionKey),
		BillingMode:  awsdynamodb.BillingMode_PAY_PER_REQUEST,
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
		DeletionProtection: jsii.Bool(true),
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	}
	if t.SortKey != nil {
		props.SortKey = attribute(*t.SortKey)
	}
	if t.Stream {
		props.Stream = awsdynamodb.StreamViewType_NEW_AND_OLD_IMAGES
	}
	if t.TTL != "" {
		props.TimeToLiveAttribute = jsii.String(t.TTL)
	}
	tbl := awsdynamodb.NewTable(s.Stack, jsii.String(id), props)
	for _, ix := range t.Indexes {
		gsi := &awsdynamodb.GlobalSecondaryIndexProps{
			IndexName:      jsii.String(ix.Name),
			PartitionKey:   attribute(ix.PartitionKey),
			SortKey:        attribute(ix.SortKey),
			ProjectionType: projection(ix.Projection),
		}
		if len(ix.NonKey) > 0 {
			gsi.NonKeyAttributes = jsii.Strings(ix.NonKey...)
		}
		tbl.AddGlobalSecondaryIndex(gsi)
	}
	return tbl
}

func projection(p resources.Projection) awsdynamodb.ProjectionType {
	switch p {
	case resources.ProjectKeysOnly:
		return awsdynamodb.ProjectionType_KEYS_ONLY
	case resources.ProjectInclude:
		return awsdynamodb.ProjectionType_INCLUDE
	}
	return awsdynamodb.ProjectionType_ALL
}

func attribute(k resources.Key) *awsdynamodb.Attribute {
	typ := awsdynamodb.AttributeType_STRING
	if k.Type == resources.Number {
		typ = awsdynamodb.AttributeType_NUMBER
	}
	return &awsdynamodb.Attribute{Name: jsii.String(k.Name), Type: typ}
}
