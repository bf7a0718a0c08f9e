package localrun

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

type testTable struct {
	db        *dynamodb.Client
	streams   *dynamodbstreams.Client
	name      string
	streamARN string
}

// newTestTable creates a table keyed by pk with a NEW_AND_OLD_IMAGES stream,
// and deletes it when the test ends.
func newTestTable(t *testing.T) testTable {
	t.Helper()
	cfg := integrationConfig(t, "AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_DYNAMODB_STREAMS")
	tbl := testTable{db: dynamodb.NewFromConfig(cfg), streams: dynamodbstreams.NewFromConfig(cfg), name: uniqueName("localrun-test")}
	out, err := tbl.db.CreateTable(t.Context(), &dynamodb.CreateTableInput{
		TableName:            &tbl.name,
		AttributeDefinitions: []ddbtypes.AttributeDefinition{{AttributeName: aws.String("pk"), AttributeType: ddbtypes.ScalarAttributeTypeS}},
		KeySchema:            []ddbtypes.KeySchemaElement{{AttributeName: aws.String("pk"), KeyType: ddbtypes.KeyTypeHash}},
		BillingMode:          ddbtypes.BillingModePayPerRequest,
		StreamSpecification:  &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewTypeNewAndOldImages},
	})
	if err != nil {
		t.Fatalf("create table: %v", err)
	}
	t.Cleanup(func() {
		if _, err := tbl.db.DeleteTable(cleanupContext(t), &dynamodb.DeleteTableInput{TableName: &tbl.name}); err != nil {
			t.Errorf("delete table: %v", err)
		}
	})
	tbl.streamARN = aws.ToString(out.TableDescription.LatestStreamArn)
	return tbl
}

func (tbl testTable) put(t *testing.T, item any) {
	t.Helper()
	av, err := attributevalue.MarshalMap(item)
	if err != nil {
		t.Fatalf("marshal item: %v", err)
	}
	if _, err := tbl.db.PutItem(t.Context(), &dynamodb.PutItemInput{TableName: &tbl.name, Item: av}); err != nil {
		t.Fatalf("put item: %v", err)
	}
}

func (tbl testTable) startPoller(t *testing.T, cfg StreamConfig, handler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)) {
	t.Helper()
	cfg.StreamARN = tbl.streamARN
	cfg.PollInterval = 50 * time.Millisecond
	p, err := NewStreamPoller(tbl.streams, cfg, handler, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, p.Run)
}

// streamEvents collects what a handler was given, batch by batch.
type streamEvents struct {
	mu      sync.Mutex
	batches [][]events.DynamoDBEventRecord
}

func (s *streamEvents) add(ev events.DynamoDBEvent) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.batches = append(s.batches, ev.Records)
	return len(s.batches)
}

func (s *streamEvents) records() []events.DynamoDBEventRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Concat(s.batches...)
}

// pks returns the pk of every record of every batch.
func (s *streamEvents) pks() [][]string {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out [][]string
	for _, b := range s.batches {
		var pks []string
		for _, r := range b {
			pks = append(pks, r.Change.Keys["pk"].String())
		}
		out = append(out, pks)
	}
	return out
}

// everyType is an item with an attribute of each DynamoDB type.
type everyType struct {
	PK       string            `dynamodbav:"pk"`
	Str      string            `dynamodbav:"str"`
	Num      float64           `dynamodbav:"num"`
	Bin      []byte            `dynamodbav:"bin"`
	Bool     bool              `dynamodbav:"bool"`
	Null     *string           `dynamodbav:"null"`
	Map      map[string]any    `dynamodbav:"map"`
	List     []any             `dynamodbav:"list"`
	Strings  []string          `dynamodbav:"strings,stringset"`
	Numbers  []int             `dynamodbav:"numbers,numberset"`
	Binaries [][]byte          `dynamodbav:"binaries,binaryset"`
	Extra    map[string]string `dynamodbav:"extra,omitempty"`
}

// wantEveryType is the item above as Lambda's event types spell it, sets in
// sorted order.
func wantEveryType(pk string) map[string]events.DynamoDBAttributeValue {
	return map[string]events.DynamoDBAttributeValue{
		"pk":   events.NewStringAttribute(pk),
		"str":  events.NewStringAttribute("tea"),
		"num":  events.NewNumberAttribute("12.5"),
		"bin":  events.NewBinaryAttribute([]byte{0x00, 0xff, 0x10}),
		"bool": events.NewBooleanAttribute(true),
		"null": events.NewNullAttribute(),
		"map": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{
			"qty":    events.NewNumberAttribute("2"),
			"nested": events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"ok": events.NewBooleanAttribute(false)}),
		}),
		"list": events.NewListAttribute([]events.DynamoDBAttributeValue{
			events.NewStringAttribute("x"),
			events.NewNumberAttribute("1"),
			events.NewListAttribute([]events.DynamoDBAttributeValue{}),
		}),
		"strings":  events.NewStringSetAttribute([]string{"a", "b"}),
		"numbers":  events.NewNumberSetAttribute([]string{"1", "3"}),
		"binaries": events.NewBinarySetAttribute([][]byte{{0x01}, {0x02}}),
	}
}

// imageJSON renders an image with sets sorted, since DynamoDB does not keep
// set order.
func imageJSON(t *testing.T, image map[string]events.DynamoDBAttributeValue) string {
	t.Helper()
	sorted := make(map[string]events.DynamoDBAttributeValue, len(image))
	for k, v := range image {
		sorted[k] = sortSets(v)
	}
	b, err := json.Marshal(sorted)
	if err != nil {
		t.Fatalf("marshal image: %v", err)
	}
	return string(b)
}

func sortSets(av events.DynamoDBAttributeValue) events.DynamoDBAttributeValue {
	switch av.DataType() {
	case events.DataTypeStringSet:
		return events.NewStringSetAttribute(slices.Sorted(slices.Values(av.StringSet())))
	case events.DataTypeNumberSet:
		return events.NewNumberSetAttribute(slices.Sorted(slices.Values(av.NumberSet())))
	case events.DataTypeBinarySet:
		return events.NewBinarySetAttribute(slices.SortedFunc(slices.Values(av.BinarySet()), bytes.Compare))
	case events.DataTypeMap:
		m := map[string]events.DynamoDBAttributeValue{}
		for k, v := range av.Map() {
			m[k] = sortSets(v)
		}
		return events.NewMapAttribute(m)
	case events.DataTypeList:
		var l []events.DynamoDBAttributeValue
		for _, v := range av.List() {
			l = append(l, sortSets(v))
		}
		return events.NewListAttribute(append([]events.DynamoDBAttributeValue{}, l...))
	}
	return av
}

// compareSequenceNumbers orders sequence numbers, which are decimal strings
// of varying length.
func compareSequenceNumbers(a, b string) int {
	return cmp.Or(cmp.Compare(len(a), len(b)), cmp.Compare(a, b))
}

func TestStreamPollerIntegrationDeliversChanges(t *testing.T) {
	t.Parallel()
	tbl := newTestTable(t)
	var seen streamEvents
	tbl.startPoller(t, StreamConfig{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		seen.add(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	started := time.Now()

	tbl.put(t, everyType{
		PK:       "order-1",
		Str:      "tea",
		Num:      12.5,
		Bin:      []byte{0x00, 0xff, 0x10},
		Bool:     true,
		Map:      map[string]any{"qty": 2, "nested": map[string]any{"ok": false}},
		List:     []any{"x", 1, []any{}},
		Strings:  []string{"b", "a"},
		Numbers:  []int{3, 1},
		Binaries: [][]byte{{0x02}, {0x01}},
	})
	update, err := expression.NewBuilder().WithUpdate(
		expression.Set(expression.Name("str"), expression.Value("coffee")).
			Set(expression.Name("extra"), expression.Value(map[string]string{"note": "hot"})).
			Remove(expression.Name("null")),
	).Build()
	if err != nil {
		t.Fatal(err)
	}
	key := map[string]ddbtypes.AttributeValue{"pk": &ddbtypes.AttributeValueMemberS{Value: "order-1"}}
	if _, err := tbl.db.UpdateItem(t.Context(), &dynamodb.UpdateItemInput{
		TableName:                 &tbl.name,
		Key:                       key,
		UpdateExpression:          update.Update(),
		ExpressionAttributeNames:  update.Names(),
		ExpressionAttributeValues: update.Values(),
	}); err != nil {
		t.Fatalf("update item: %v", err)
	}
	if _, err := tbl.db.DeleteItem(t.Context(), &dynamodb.DeleteItemInput{TableName: &tbl.name, Key: key}); err != nil {
		t.Fatalf("delete item: %v", err)
	}

	eventually(t, 15*time.Second, func() bool { return len(seen.records()) >= 3 }, func() string { return fmt.Sprintf("got %d stream records, want 3", len(seen.records())) })
	recs := seen.records()
	if len(recs) != 3 {
		t.Fatalf("got %d records, want exactly 3: %v", len(recs), seen.pks())
	}

	original := wantEveryType("order-1")
	modified := wantEveryType("order-1")
	modified["str"] = events.NewStringAttribute("coffee")
	modified["extra"] = events.NewMapAttribute(map[string]events.DynamoDBAttributeValue{"note": events.NewStringAttribute("hot")})
	delete(modified, "null")
	want := []struct {
		name           string
		newImg, oldImg map[string]events.DynamoDBAttributeValue
	}{
		{"INSERT", original, nil},
		{"MODIFY", modified, original},
		{"REMOVE", nil, modified},
	}
	for i, w := range want {
		r := recs[i]
		if r.EventName != w.name {
			t.Errorf("record %d eventName = %q, want %q", i, r.EventName, w.name)
		}
		if got, want := imageJSON(t, r.Change.NewImage), imageJSON(t, w.newImg); got != want {
			t.Errorf("%s NewImage\n got %s\nwant %s", w.name, got, want)
		}
		if got, want := imageJSON(t, r.Change.OldImage), imageJSON(t, w.oldImg); got != want {
			t.Errorf("%s OldImage\n got %s\nwant %s", w.name, got, want)
		}
		if got := imageJSON(t, r.Change.Keys); got != `{"pk":{"S":"order-1"}}` {
			t.Errorf("%s Keys = %s, want {\"pk\":{\"S\":\"order-1\"}}", w.name, got)
		}
		if r.EventSource != "aws:dynamodb" || r.EventSourceArn != tbl.streamARN || r.EventVersion == "" || r.EventID == "" || r.AWSRegion == "" {
			t.Errorf("%s eventSource %q, eventSourceARN %q, eventVersion %q, eventID %q, awsRegion %q; want aws:dynamodb, the stream ARN and the rest set",
				w.name, r.EventSource, r.EventSourceArn, r.EventVersion, r.EventID, r.AWSRegion)
		}
		c := r.Change
		if c.StreamViewType != "NEW_AND_OLD_IMAGES" || c.SizeBytes <= 0 || c.SequenceNumber == "" {
			t.Errorf("%s StreamViewType %q, SizeBytes %d, SequenceNumber %q", w.name, c.StreamViewType, c.SizeBytes, c.SequenceNumber)
		}
		// DynamoDB Local truncates the creation time to the minute.
		if ct := c.ApproximateCreationDateTime.Time; ct.Before(started.Add(-time.Minute)) || ct.After(time.Now().Add(time.Minute)) {
			t.Errorf("%s ApproximateCreationDateTime = %s, want about %s", w.name, ct, started)
		}
		if i > 0 && compareSequenceNumbers(recs[i-1].Change.SequenceNumber, c.SequenceNumber) >= 0 {
			t.Errorf("sequence numbers %s then %s, want increasing", recs[i-1].Change.SequenceNumber, c.SequenceNumber)
		}
	}
}

func TestStreamPollerIntegrationRetriesFromFailedRecord(t *testing.T) {
	t.Parallel()
	tbl := newTestTable(t)
	// Written before the poller starts, so its first read gets all five.
	for _, pk := range []string{"k1", "k2", "k3", "k4", "k5"} {
		tbl.put(t, map[string]string{"pk": pk})
	}
	var seen streamEvents
	tbl.startPoller(t, StreamConfig{}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		if seen.add(ev) == 1 {
			return events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{
				{ItemIdentifier: ev.Records[4].Change.SequenceNumber},
				{ItemIdentifier: ev.Records[2].Change.SequenceNumber},
			}}, nil
		}
		return events.DynamoDBEventResponse{}, nil
	})
	eventually(t, 15*time.Second, func() bool { return len(seen.pks()) >= 2 }, func() string { return fmt.Sprintf("batches %v, want a retry after the first", seen.pks()) })

	// A record written after the retry shows the reader has moved on, and
	// that nothing was delivered in between.
	tbl.put(t, map[string]string{"pk": "k6"})
	eventually(t, 15*time.Second, func() bool { return len(seen.records()) >= 9 }, func() string { return fmt.Sprintf("batches %v, want k6 delivered after the retry", seen.pks()) })
	want := [][]string{{"k1", "k2", "k3", "k4", "k5"}, {"k3", "k4", "k5"}, {"k6"}}
	if got := seen.pks(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
	recs := seen.records()
	if recs[2].Change.SequenceNumber != recs[5].Change.SequenceNumber {
		t.Errorf("retry started at sequence number %s, want %s, the failed record's", recs[5].Change.SequenceNumber, recs[2].Change.SequenceNumber)
	}
}

func TestStreamPollerIntegrationSkipsAfterMaxRetries(t *testing.T) {
	t.Parallel()
	tbl := newTestTable(t)
	var seen streamEvents
	tbl.startPoller(t, StreamConfig{MaxRetryAttempts: 2}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		seen.add(ev)
		if ev.Records[0].Change.Keys["pk"].String() == "poison" {
			return events.DynamoDBEventResponse{}, errors.New("cannot process")
		}
		return events.DynamoDBEventResponse{}, nil
	})
	tbl.put(t, map[string]string{"pk": "poison"})
	eventually(t, 15*time.Second, func() bool { return len(seen.pks()) >= 3 }, func() string { return fmt.Sprintf("batches %v, want the poison record tried 3 times", seen.pks()) })
	tbl.put(t, map[string]string{"pk": "next"})
	eventually(t, 15*time.Second, func() bool { return len(seen.pks()) >= 4 }, func() string {
		return fmt.Sprintf("batches %v, want the next record after the poison one is skipped", seen.pks())
	})
	want := [][]string{{"poison"}, {"poison"}, {"poison"}, {"next"}}
	if got := seen.pks(); !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

// countingStreams counts the GetRecords calls that succeeded, so a test can
// tell that the poller is reading.
type countingStreams struct {
	StreamsClient
	mu    sync.Mutex
	reads int
}

func (c *countingStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	out, err := c.StreamsClient.GetRecords(ctx, in, optFns...)
	if err == nil {
		c.mu.Lock()
		c.reads++
		c.mu.Unlock()
	}
	return out, err
}

func (c *countingStreams) successfulReads() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reads
}

// DynamoDB Local numbers stream records across all tables, so an iterator
// taken while a shard is empty fails with TrimmedDataAccessException once
// another table has written first. The poller must neither lose nor repeat
// records because of it.
func TestStreamPollerIntegrationSurvivesOtherTablesWriting(t *testing.T) {
	t.Parallel()
	tbl := newTestTable(t)
	other := newTestTable(t)
	client := &countingStreams{StreamsClient: tbl.streams}
	var seen streamEvents
	p, err := NewStreamPoller(client, StreamConfig{StreamARN: tbl.streamARN, PollInterval: 20 * time.Millisecond}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		seen.add(ev)
		return events.DynamoDBEventResponse{}, nil
	}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	runInBackground(t, p.Run)
	eventually(t, 10*time.Second, func() bool { return client.successfulReads() > 0 }, func() string { return "poller never read the empty shard" })

	other.put(t, map[string]string{"pk": "elsewhere-1"})
	tbl.put(t, map[string]string{"pk": "a1"})
	eventually(t, 10*time.Second, func() bool { return len(seen.records()) >= 1 }, func() string { return fmt.Sprintf("a1 never delivered; batches %v", seen.pks()) })
	other.put(t, map[string]string{"pk": "elsewhere-2"})
	tbl.put(t, map[string]string{"pk": "a2"})
	eventually(t, 10*time.Second, func() bool { return len(seen.records()) >= 2 }, func() string { return fmt.Sprintf("a2 never delivered; batches %v", seen.pks()) })
	tbl.put(t, map[string]string{"pk": "a3"})
	eventually(t, 10*time.Second, func() bool { return len(seen.records()) >= 3 }, func() string { return fmt.Sprintf("a3 never delivered; batches %v", seen.pks()) })
	if got, want := seen.pks(), [][]string{{"a1"}, {"a2"}, {"a3"}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("batches %v, want %v", got, want)
	}
}

func TestStreamPollerIntegrationMissingStream(t *testing.T) {
	t.Parallel()
	cfg := integrationConfig(t, "AWS_ENDPOINT_URL_DYNAMODB_STREAMS")
	p, err := NewStreamPoller(dynamodbstreams.NewFromConfig(cfg), StreamConfig{
		StreamARN: "arn:aws:dynamodb:ddblocal:000000000000:table/" + uniqueName("missing") + "/stream/2026-01-01T00:00:00.000",
	}, nil, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	err = p.Run(ctx)
	if _, ok := errors.AsType[*types.ResourceNotFoundException](err); !ok {
		t.Errorf("Run = %v, want a ResourceNotFoundException", err)
	}
}
