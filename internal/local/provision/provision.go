// Package provision creates the resources of a resources.Catalog through the
// AWS API, for local emulators, LocalStack and throwaway test stacks; real
// deployments use the CDK stack, which builds from the same catalog. Every
// call is idempotent, so provisioning an existing stack is a no-op.
package provision

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	ebtypes "github.com/aws/aws-sdk-go-v2/service/eventbridge/types"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/aws/aws-sdk-go-v2/service/sns"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/compose"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// Queue is a provisioned queue and its dead-letter queue.
type Queue struct {
	URL, ARN             string
	DeadLetterURL, DLARN string
}

// Stack is what provisioning created: what functions need to be told.
type Stack struct {
	Catalog resources.Catalog
	// StreamARN is the orders table's stream, which invokes the Scheduler.
	StreamARN     string
	RequestQueues map[string]Queue // by agent
	ResponseQueue Queue
	AlertTopicARN string
	// StatusQueue receives the event bus's status events (a rule on the
	// bus targets it), for watching them locally.
	StatusQueue Queue
}

// Env returns the environment variables the functions read.
func (s Stack) Env() map[string]string {
	env := map[string]string{
		resources.EnvOrdersTable:      s.Catalog.Orders.Name,
		resources.EnvResponseQueueURL: s.ResponseQueue.URL,
		resources.EnvAlertTopicARN:    s.AlertTopicARN,
		resources.EnvHistoryTable:     s.Catalog.History.Name,
		resources.EnvEventBus:         s.Catalog.EventBus,
		resources.EnvPageTokenSecret:  s.Catalog.PageTokenSecret,
		resources.EnvCallbackSecret:   s.Catalog.CallbackSecret,
	}
	for agent, q := range s.RequestQueues {
		env[resources.EnvRequestQueueURL(agent)] = q.URL
	}
	return env
}

// Stage is what the stage's functions are told of it (package compose),
// running workflows and keeping ended orders for retention (zero: the
// default). Its CallbackURL is the caller's to set: the API's address is
// not provisioned.
func (s Stack) Stage(workflows order.Versions, retention time.Duration) compose.Stage {
	return compose.Stage{
		OrdersTable: s.Catalog.Orders.Name, HistoryTable: s.Catalog.History.Name,
		RequestQueues: s.RequestQueueURLs(), ResponseQueue: s.ResponseQueue.URL,
		AlertTopicARN: s.AlertTopicARN, EventBus: s.Catalog.EventBus, PageTokenSecret: s.Catalog.PageTokenSecret,
		CallbackSecret: s.Catalog.CallbackSecret,
		Retention:      retention, Workflows: workflows,
	}
}

// RequestQueueURLs maps agents to their request queue URLs.
func (s Stack) RequestQueueURLs() map[string]string {
	urls := make(map[string]string, len(s.RequestQueues))
	for agent, q := range s.RequestQueues {
		urls[agent] = q.URL
	}
	return urls
}

// Clients are the SDK clients provisioning uses.
type Clients struct {
	DynamoDB *dynamodb.Client
	SQS      *sqs.Client
	// Deliveries is the SQS of the queues that SNS and EventBridge deliver
	// to: the status queue and alert inboxes. In AWS and on LocalStack it
	// is the same service as SQS. Locally, where SQS is ElasticMQ but SNS
	// and EventBridge are moto, which delivers only to its own queues, it
	// is moto's SQS (see NewClients).
	Deliveries  *sqs.Client
	SNS         *sns.Client
	EventBridge *eventbridge.Client
	// SecretsManager holds the stage's page token and callback keys.
	SecretsManager *secretsmanager.Client
}

// NewClients builds the clients from cfg. Each service's endpoint is the
// SDK's own setting (AWS_ENDPOINT_URL_<SERVICE>, or AWS_ENDPOINT_URL);
// Deliveries goes wherever SNS goes, so that the queues SNS and EventBridge
// deliver to are on the emulator that delivers (in AWS, both resolve to the
// region's own endpoints).
func NewClients(cfg aws.Config) Clients {
	return Clients{
		DynamoDB:       dynamodb.NewFromConfig(cfg),
		SQS:            sqs.NewFromConfig(cfg),
		Deliveries:     DeliveriesSQS(cfg),
		SNS:            sns.NewFromConfig(cfg),
		EventBridge:    eventbridge.NewFromConfig(cfg),
		SecretsManager: secretsmanager.NewFromConfig(cfg),
	}
}

// DeliveriesSQS is an SQS client at SNS's endpoint: see Clients.Deliveries.
func DeliveriesSQS(cfg aws.Config) *sqs.Client {
	endpoint := sns.NewFromConfig(cfg).Options().BaseEndpoint
	return sqs.NewFromConfig(cfg, func(o *sqs.Options) { o.BaseEndpoint = endpoint })
}

// deliveries is the client of the status queue; Clients made by hand
// without one keep it on SQS.
func (c Clients) deliveries() *sqs.Client {
	if c.Deliveries != nil {
		return c.Deliveries
	}
	return c.SQS
}

// Create provisions every resource of the catalog.
func Create(ctx context.Context, c Clients, cat resources.Catalog) (Stack, error) {
	st := Stack{Catalog: cat, RequestQueues: map[string]Queue{}}
	arn, err := createTable(ctx, c.DynamoDB, cat.Orders)
	if err != nil {
		return st, err
	}
	st.StreamARN = arn
	for agent, q := range cat.RequestQueues {
		pq, err := createQueue(ctx, c.SQS, q)
		if err != nil {
			return st, err
		}
		st.RequestQueues[agent] = pq
	}
	if st.ResponseQueue, err = createQueue(ctx, c.SQS, cat.ResponseQueue); err != nil {
		return st, err
	}
	topic, err := c.SNS.CreateTopic(ctx, &sns.CreateTopicInput{Name: aws.String(cat.AlertTopic)})
	if err != nil {
		return st, fmt.Errorf("create topic %s: %w", cat.AlertTopic, err)
	}
	st.AlertTopicARN = aws.ToString(topic.TopicArn)
	if _, err := createTable(ctx, c.DynamoDB, cat.History); err != nil {
		return st, err
	}
	if st.StatusQueue, err = createQueue(ctx, c.deliveries(), cat.StatusQueue); err != nil {
		return st, err
	}
	if err := createBus(ctx, c.EventBridge, cat, st.StatusQueue.ARN); err != nil {
		return st, err
	}
	if err := createKey(ctx, c.SecretsManager, cat.PageTokenSecret, "keys the cursors of orderly's search pages"); err != nil {
		return st, err
	}
	if err := createKey(ctx, c.SecretsManager, cat.CallbackSecret, "keys the tokens of orderly's callbacks"); err != nil {
		return st, err
	}
	return st, nil
}

// createKey creates one of the stage's keys (the page token key, the
// callback key), random, unless the secret exists: a key that changes
// breaks the cursors and callback tokens handed out.
func createKey(ctx context.Context, client *secretsmanager.Client, name, description string) error {
	if client == nil || name == "" {
		return nil
	}
	_, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name),
		Description: aws.String(description), SecretString: aws.String(rand.Text() + rand.Text())})
	var exists *smtypes.ResourceExistsException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("create secret %s: %w", name, err)
	}
	return nil
}

// createBus creates the event bus and a rule that sends every status event
// to queueARN.
func createBus(ctx context.Context, client *eventbridge.Client, cat resources.Catalog, queueARN string) error {
	_, err := client.CreateEventBus(ctx, &eventbridge.CreateEventBusInput{Name: aws.String(cat.EventBus)})
	var exists *ebtypes.ResourceAlreadyExistsException
	if err != nil && !errors.As(err, &exists) {
		return fmt.Errorf("create event bus %s: %w", cat.EventBus, err)
	}
	rule := cat.StatusQueue.Name
	match := map[string]any{"source": []string{resources.EventSource}}
	if len(cat.StatusEvents) > 0 {
		types := make([]string, len(cat.StatusEvents))
		for i, s := range cat.StatusEvents {
			types[i] = resources.EventTypePrefix + s
		}
		match["detail-type"] = types
	}
	pattern, _ := json.Marshal(match)
	if _, err := client.PutRule(ctx, &eventbridge.PutRuleInput{Name: aws.String(rule), EventBusName: aws.String(cat.EventBus),
		EventPattern: aws.String(string(pattern))}); err != nil {
		return fmt.Errorf("create rule %s: %w", rule, err)
	}
	_, err = client.PutTargets(ctx, &eventbridge.PutTargetsInput{Rule: aws.String(rule), EventBusName: aws.String(cat.EventBus),
		Targets: []ebtypes.Target{{Id: aws.String("status-queue"), Arn: aws.String(queueARN)}}})
	if err != nil {
		return fmt.Errorf("target rule %s at %s: %w", rule, queueARN, err)
	}
	return nil
}

// Delete removes every resource of the catalog; tests use it to clean up.
func Delete(ctx context.Context, c Clients, st Stack) error {
	var errs []error
	for _, t := range []string{st.Catalog.Orders.Name, st.Catalog.History.Name} {
		_, err := c.DynamoDB.DeleteTable(ctx, &dynamodb.DeleteTableInput{TableName: aws.String(t)})
		var nf *dbtypes.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("delete table %s: %w", t, err))
		}
	}
	if st.Catalog.EventBus != "" && c.EventBridge != nil {
		rule := aws.String(st.Catalog.StatusQueue.Name)
		bus := aws.String(st.Catalog.EventBus)
		_, _ = c.EventBridge.RemoveTargets(ctx, &eventbridge.RemoveTargetsInput{Rule: rule, EventBusName: bus, Ids: []string{"status-queue"}})
		_, _ = c.EventBridge.DeleteRule(ctx, &eventbridge.DeleteRuleInput{Name: rule, EventBusName: bus})
		_, _ = c.EventBridge.DeleteEventBus(ctx, &eventbridge.DeleteEventBusInput{Name: bus})
	}
	type placed struct {
		Queue
		on *sqs.Client
	}
	queues := []placed{{st.ResponseQueue, c.SQS}, {st.StatusQueue, c.deliveries()}}
	for _, q := range st.RequestQueues {
		queues = append(queues, placed{q, c.SQS})
	}
	for _, q := range queues {
		for _, url := range []string{q.URL, q.DeadLetterURL} {
			if url == "" {
				continue
			}
			if _, err := q.on.DeleteQueue(ctx, &sqs.DeleteQueueInput{QueueUrl: aws.String(url)}); err != nil {
				errs = append(errs, fmt.Errorf("delete queue %s: %w", url, err))
			}
		}
	}
	for _, name := range []string{st.Catalog.PageTokenSecret, st.Catalog.CallbackSecret} {
		if name == "" || c.SecretsManager == nil {
			continue
		}
		_, err := c.SecretsManager.DeleteSecret(ctx, &secretsmanager.DeleteSecretInput{SecretId: aws.String(name),
			ForceDeleteWithoutRecovery: aws.Bool(true)})
		var nf *smtypes.ResourceNotFoundException
		if err != nil && !errors.As(err, &nf) {
			errs = append(errs, fmt.Errorf("delete secret %s: %w", name, err))
		}
	}
	if st.AlertTopicARN != "" {
		if _, err := c.SNS.DeleteTopic(ctx, &sns.DeleteTopicInput{TopicArn: aws.String(st.AlertTopicARN)}); err != nil {
			errs = append(errs, fmt.Errorf("delete topic %s: %w", st.AlertTopicARN, err))
		}
	}
	return errors.Join(errs...)
}

// createTable creates an on-demand table and returns its stream ARN ("" if
// it has no stream).
func createTable(ctx context.Context, client *dynamodb.Client, t resources.Table) (string, error) {
	attrs := map[string]dbtypes.ScalarAttributeType{}
	keySchema := func(pk resources.Key, sk *resources.Key) []dbtypes.KeySchemaElement {
		ks := []dbtypes.KeySchemaElement{{AttributeName: aws.String(pk.Name), KeyType: dbtypes.KeyTypeHash}}
		attrs[pk.Name] = dbtypes.ScalarAttributeType(pk.Type)
		if sk != nil {
			ks = append(ks, dbtypes.KeySchemaElement{AttributeName: aws.String(sk.Name), KeyType: dbtypes.KeyTypeRange})
			attrs[sk.Name] = dbtypes.ScalarAttributeType(sk.Type)
		}
		return ks
	}
	in := &dynamodb.CreateTableInput{
		TableName:   aws.String(t.Name),
		BillingMode: dbtypes.BillingModePayPerRequest,
		KeySchema:   keySchema(t.PartitionKey, t.SortKey),
	}
	for _, ix := range t.Indexes {
		sk := ix.SortKey
		in.GlobalSecondaryIndexes = append(in.GlobalSecondaryIndexes, dbtypes.GlobalSecondaryIndex{
			IndexName:  aws.String(ix.Name),
			KeySchema:  keySchema(ix.PartitionKey, &sk),
			Projection: &dbtypes.Projection{ProjectionType: dbtypes.ProjectionType(ix.Projection), NonKeyAttributes: ix.NonKey},
		})
	}
	for name, typ := range attrs {
		in.AttributeDefinitions = append(in.AttributeDefinitions, dbtypes.AttributeDefinition{
			AttributeName: aws.String(name), AttributeType: typ,
		})
	}
	if t.Stream {
		in.StreamSpecification = &dbtypes.StreamSpecification{
			StreamEnabled: aws.Bool(true), StreamViewType: dbtypes.StreamViewTypeNewAndOldImages,
		}
	}
	_, err := client.CreateTable(ctx, in)
	var inUse *dbtypes.ResourceInUseException
	if err != nil && !errors.As(err, &inUse) {
		return "", fmt.Errorf("create table %s: %w", t.Name, err)
	}
	waiter := dynamodb.NewTableExistsWaiter(client)
	if err := waiter.Wait(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)}, time.Minute); err != nil {
		return "", fmt.Errorf("wait for table %s: %w", t.Name, err)
	}
	out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
	if err != nil {
		return "", fmt.Errorf("describe table %s: %w", t.Name, err)
	}
	if err := addIndexes(ctx, client, t, out.Table, in); err != nil {
		return "", err
	}
	if err := enableTTL(ctx, client, t); err != nil {
		return "", err
	}
	return aws.ToString(out.Table.LatestStreamArn), nil
}

// enableTTL turns on the table's TTL attribute, unless it is on already.
func enableTTL(ctx context.Context, client *dynamodb.Client, t resources.Table) error {
	if t.TTL == "" {
		return nil
	}
	cur, err := client.DescribeTimeToLive(ctx, &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(t.Name)})
	if err != nil {
		return fmt.Errorf("describe TTL of table %s: %w", t.Name, err)
	}
	if d := cur.TimeToLiveDescription; d != nil && aws.ToString(d.AttributeName) == t.TTL &&
		(d.TimeToLiveStatus == dbtypes.TimeToLiveStatusEnabled || d.TimeToLiveStatus == dbtypes.TimeToLiveStatusEnabling) {
		return nil
	}
	if _, err := client.UpdateTimeToLive(ctx, &dynamodb.UpdateTimeToLiveInput{TableName: aws.String(t.Name),
		TimeToLiveSpecification: &dbtypes.TimeToLiveSpecification{AttributeName: aws.String(t.TTL), Enabled: aws.Bool(true)}}); err != nil {
		return fmt.Errorf("enable TTL on table %s: %w", t.Name, err)
	}
	return nil
}

// indexWait bounds the wait for an added index to become active.
const indexWait = 2 * time.Minute

// addIndexes adds the indexes a table made by an older version lacks, so
// a local run kept across an upgrade gets them (the stack's tables get
// them from CloudFormation), and waits until they are active.
func addIndexes(ctx context.Context, client *dynamodb.Client, t resources.Table, have *dbtypes.TableDescription, create *dynamodb.CreateTableInput) error {
	existing := map[string]bool{}
	for _, ix := range have.GlobalSecondaryIndexes {
		existing[aws.ToString(ix.IndexName)] = true
	}
	added := false
	for _, ix := range create.GlobalSecondaryIndexes {
		if existing[aws.ToString(ix.IndexName)] {
			continue
		}
		_, err := client.UpdateTable(ctx, &dynamodb.UpdateTableInput{
			TableName:                   aws.String(t.Name),
			AttributeDefinitions:        create.AttributeDefinitions,
			GlobalSecondaryIndexUpdates: []dbtypes.GlobalSecondaryIndexUpdate{{Create: &dbtypes.CreateGlobalSecondaryIndexAction{IndexName: ix.IndexName, KeySchema: ix.KeySchema, Projection: ix.Projection}}},
		})
		if err != nil {
			return fmt.Errorf("add index %s to table %s: %w", aws.ToString(ix.IndexName), t.Name, err)
		}
		added = true
	}
	// A table whose index stays CREATING cannot be written (DynamoDB
	// Local fails every write meanwhile): wait, but not for ever.
	giveUp := time.Now().Add(indexWait)
	for added {
		out, err := client.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String(t.Name)})
		if err != nil {
			return fmt.Errorf("describe table %s: %w", t.Name, err)
		}
		added = false
		for _, ix := range out.Table.GlobalSecondaryIndexes {
			if ix.IndexStatus != dbtypes.IndexStatusActive {
				added = true
				if time.Now().After(giveUp) {
					return fmt.Errorf("index %s of table %s is still %s after %s: restart the emulators (make stop) if it is DynamoDB Local",
						aws.ToString(ix.IndexName), t.Name, ix.IndexStatus, indexWait)
				}
			}
		}
		if added {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(200 * time.Millisecond):
			}
		}
	}
	return nil
}

func createQueue(ctx context.Context, client *sqs.Client, q resources.Queue) (Queue, error) {
	retention := strconv.Itoa(int(q.Retention.Seconds()))
	dl, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{
		QueueName:  aws.String(q.DeadLetterName),
		Attributes: map[string]string{string(sqstypes.QueueAttributeNameMessageRetentionPeriod): strconv.Itoa(14 * 24 * 3600)},
	})
	if err != nil {
		return Queue{}, fmt.Errorf("create dead-letter queue %s: %w", q.DeadLetterName, err)
	}
	dlARN, err := queueARN(ctx, client, aws.ToString(dl.QueueUrl))
	if err != nil {
		return Queue{}, err
	}
	redrive, err := json.Marshal(map[string]string{
		"deadLetterTargetArn": dlARN,
		"maxReceiveCount":     strconv.Itoa(q.MaxReceiveCount),
	})
	if err != nil {
		return Queue{}, fmt.Errorf("marshal redrive policy: %w", err)
	}
	attrs := map[string]string{
		string(sqstypes.QueueAttributeNameVisibilityTimeout):      strconv.Itoa(int(q.VisibilityTimeout.Seconds())),
		string(sqstypes.QueueAttributeNameMessageRetentionPeriod): retention,
		string(sqstypes.QueueAttributeNameRedrivePolicy):          string(redrive),
	}
	var url string
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(q.Name), Attributes: attrs})
	var exists *sqstypes.QueueNameExists
	switch {
	case errors.As(err, &exists): // there with other settings: look it up, then update it
		got, err := client.GetQueueUrl(ctx, &sqs.GetQueueUrlInput{QueueName: aws.String(q.Name)})
		if err != nil {
			return Queue{}, fmt.Errorf("look up queue %s: %w", q.Name, err)
		}
		url = aws.ToString(got.QueueUrl)
	case err != nil:
		return Queue{}, fmt.Errorf("create queue %s: %w", q.Name, err)
	default:
		url = aws.ToString(out.QueueUrl)
	}
	// Set the attributes so a changed setting takes effect on an existing
	// stack too.
	if _, err := client.SetQueueAttributes(ctx, &sqs.SetQueueAttributesInput{QueueUrl: aws.String(url), Attributes: attrs}); err != nil {
		return Queue{}, fmt.Errorf("set attributes of queue %s: %w", q.Name, err)
	}
	arn, err := queueARN(ctx, client, url)
	if err != nil {
		return Queue{}, err
	}
	return Queue{URL: url, ARN: arn, DeadLetterURL: aws.ToString(dl.QueueUrl), DLARN: dlARN}, nil
}

func queueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl:       aws.String(url),
		AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameQueueArn},
	})
	if err != nil {
		return "", fmt.Errorf("get ARN of queue %s: %w", url, err)
	}
	return out.Attributes[string(sqstypes.QueueAttributeNameQueueArn)], nil
}
