package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

const testStreamARN = "arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000"

type fakeShard struct {
	id, parent string
	closed     bool
	seqs       []int
}

// fakeStreams serves shards of numbered records. Iterators are
// "shard/position"; an iterator listed in failOnce fails once with the
// error given.
type fakeStreams struct {
	mu         sync.Mutex
	shards     []*fakeShard
	failOnce   map[string]error
	iterators  []string // "shard type seq" of every GetShardIterator call
	emptyReads map[string]int
}

func (f *fakeStreams) shard(id string) *fakeShard {
	for _, s := range f.shards {
		if s.id == id {
			return s
		}
	}
	return nil
}

func (f *fakeStreams) DescribeStream(ctx context.Context, in *dynamodbstreams.DescribeStreamInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	// One shard per page, to exercise pagination.
	start := 0
	if in.ExclusiveStartShardId != nil {
		for i, s := range f.shards {
			if s.id == *in.ExclusiveStartShardId {
				start = i + 1
			}
		}
	}
	desc := &types.StreamDescription{StreamArn: in.StreamArn}
	if start < len(f.shards) {
		s := f.shards[start]
		shard := types.Shard{ShardId: aws.String(s.id), SequenceNumberRange: &types.SequenceNumberRange{}}
		if s.parent != "" {
			shard.ParentShardId = aws.String(s.parent)
		}
		if s.closed {
			shard.SequenceNumberRange.EndingSequenceNumber = aws.String("999")
		}
		desc.Shards = []types.Shard{shard}
		if start < len(f.shards)-1 {
			desc.LastEvaluatedShardId = aws.String(s.id)
		}
	}
	return &dynamodbstreams.DescribeStreamOutput{StreamDescription: desc}, nil
}

func (f *fakeStreams) GetShardIterator(ctx context.Context, in *dynamodbstreams.GetShardIteratorInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.iterators = append(f.iterators, fmt.Sprintf("%s %s %s", *in.ShardId, in.ShardIteratorType, aws.ToString(in.SequenceNumber)))
	s := f.shard(*in.ShardId)
	if s == nil {
		return nil, &types.ResourceNotFoundException{Message: aws.String("no shard " + *in.ShardId)}
	}
	pos := 0
	switch in.ShardIteratorType {
	case types.ShardIteratorTypeLatest:
		pos = len(s.seqs)
	case types.ShardIteratorTypeAtSequenceNumber, types.ShardIteratorTypeAfterSequenceNumber:
		seq, _ := strconv.Atoi(*in.SequenceNumber)
		pos = slices.Index(s.seqs, seq)
		if pos < 0 {
			return nil, fmt.Errorf("sequence number %d not in shard %s", seq, s.id)
		}
		if in.ShardIteratorType == types.ShardIteratorTypeAfterSequenceNumber {
			pos++
		}
	}
	return &dynamodbstreams.GetShardIteratorOutput{ShardIterator: aws.String(fmt.Sprintf("%s/%d", s.id, pos))}, nil
}

func (f *fakeStreams) GetRecords(ctx context.Context, in *dynamodbstreams.GetRecordsInput, _ ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err, ok := f.failOnce[*in.ShardIterator]; ok {
		delete(f.failOnce, *in.ShardIterator)
		return nil, err
	}
	id, posText, _ := strings.Cut(*in.ShardIterator, "/")
	pos, _ := strconv.Atoi(posText)
	s := f.shard(id)
	end := min(pos+int(aws.ToInt32(in.Limit)), len(s.seqs))
	out := &dynamodbstreams.GetRecordsOutput{}
	for _, seq := range s.seqs[pos:end] {
		out.Records = append(out.Records, types.Record{
			EventID:   aws.String(fmt.Sprint("event-", seq)),
			EventName: types.OperationTypeInsert,
			Dynamodb: &types.StreamRecord{
				SequenceNumber: aws.String(strconv.Itoa(seq)),
				Keys:           map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: fmt.Sprint("item-", seq)}},
			},
		})
	}
	if len(out.Records) == 0 {
		if f.emptyReads == nil {
			f.emptyReads = map[string]int{}
		}
		f.emptyReads[id]++
	}
	if !s.closed || end < len(s.seqs) {
		out.NextShardIterator = aws.String(fmt.Sprintf("%s/%d", id, end))
	}
	return out, nil
}

func (f *fakeStreams) emptyReadsOf(shardID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.emptyReads[shardID]
}

func (f *fakeStreams) iteratorCalls() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.iterators)
}

// invocations records the sequence numbers of every batch a handler saw.
type invocations struct {
	mu      sync.Mutex
	batches [][]int
}

func (inv *invocations) record(ev events.DynamoDBEvent) int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	var seqs []int
	for _, r := range ev.Records {
		seq, _ := strconv.Atoi(r.Change.SequenceNumber)
		seqs = append(seqs, seq)
	}
	inv.batches = append(inv.batches, seqs)
	return len(inv.batches)
}

func (inv *invocations) get() [][]int {
	inv.mu.Lock()
	defer inv.mu.Unlock()
	return slices.Clone(inv.batches)
}

func startStreamPoller(t *testing.T, client StreamsClient, cfg StreamConfig, handler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)) {
	t.Helper()
	cfg.StreamARN = testStreamARN
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 5 * time.Millisecond
	}
	if cfg.DiscoveryInterval == 0 {
		cfg.DiscoveryInterval = 10 * time.Millisecond
	}
	p, err := NewStreamPoller(client, cfg, handler, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run = %v, want nil after cancellation", err)
		}
	})
}

func TestStreamPollerReadsParentsBeforeChildren(t *testing.T) {
	fake := &fakeStreams{shards: []*fakeShard{
		{id: "child-a", parent: "parent", seqs: []int{3, 4}},
		{id: "parent", parent: "trimmed-away", closed: true, seqs: []int{1, 2}},
		{id: "child-b", parent: "parent", closed: true, seqs: []int{5}},
		{id: "grandchild", parent: "child-b", seqs: []int{6}},
		{id: "orphan", parent: "trimmed-away", seqs: []int{7}},
	}}
	var inv invocations
	startStreamPoller(t, fake, StreamConfig{BatchSize: 1}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		inv.record(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	eventually(t, 5*time.Second, func() bool { return len(inv.get()) == 7 }, func() string { return fmt.Sprintf("invocations %v, want 7 single-record batches", inv.get()) })

	position := map[int]int{}
	for i, b := range inv.get() {
		position[b[0]] = i
	}
	for _, before := range [][2]int{{1, 2}, {2, 3}, {2, 5}, {3, 4}, {5, 6}} {
		if position[before[0]] > position[before[1]] {
			t.Errorf("record %d delivered after %d; order %v", before[0], before[1], inv.get())
		}
	}
}

func TestStreamPollerLatestSkipsExistingRecords(t *testing.T) {
	fake := &fakeStreams{shards: []*fakeShard{
		{id: "old", closed: true, seqs: []int{1}},
		{id: "current", parent: "old", seqs: []int{2}},
	}}
	var inv invocations
	startStreamPoller(t, fake, StreamConfig{StartingPosition: types.ShardIteratorTypeLatest}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		inv.record(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	eventually(t, 5*time.Second, func() bool { return fake.emptyReadsOf("current") > 0 }, func() string { return "shard current never polled" })
	fake.mu.Lock()
	fake.shard("current").seqs = append(fake.shard("current").seqs, 3)
	fake.mu.Unlock()
	eventually(t, 5*time.Second, func() bool { return len(inv.get()) > 0 }, func() string { return "record written after start never delivered" })
	if got := inv.get(); !slices.EqualFunc(got, [][]int{{3}}, slices.Equal) {
		t.Errorf("invocations %v, want only [[3]], the record written after start", got)
	}
	if calls := fake.iteratorCalls(); !slices.Equal(calls, []string{"current LATEST "}) {
		t.Errorf("GetShardIterator calls %q, want only LATEST on the open shard", calls)
	}
}

func TestStreamPollerRetries(t *testing.T) {
	failSeq := func(seqs ...int) events.DynamoDBEventResponse {
		var resp events.DynamoDBEventResponse
		for _, s := range seqs {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.DynamoDBBatchItemFailure{ItemIdentifier: strconv.Itoa(s)})
		}
		return resp
	}
	type outcome struct {
		resp  events.DynamoDBEventResponse
		err   error
		panic bool
	}
	tests := []struct {
		name       string
		seqs       []int
		batchSize  int
		maxRetries int
		// outcomes[i] is what invocation i+1 returns; later ones succeed.
		outcomes        []outcome
		alwaysFailFirst int // fail every batch starting with this record
		want            [][]int
		wantIterators   []string
	}{
		{
			name:          "batch item failure retries from that record",
			seqs:          []int{1, 2, 3, 4, 5},
			outcomes:      []outcome{{resp: failSeq(4, 3)}},
			want:          [][]int{{1, 2, 3, 4, 5}, {3, 4, 5}},
			wantIterators: []string{"s TRIM_HORIZON ", "s AT_SEQUENCE_NUMBER 3"},
		},
		{
			name:          "handler error retries the whole batch",
			seqs:          []int{1, 2, 3},
			outcomes:      []outcome{{err: errors.New("boom")}, {err: errors.New("boom")}},
			want:          [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}},
			wantIterators: []string{"s TRIM_HORIZON ", "s AT_SEQUENCE_NUMBER 1", "s AT_SEQUENCE_NUMBER 1"},
		},
		{
			name:          "panic retries the whole batch",
			seqs:          []int{1, 2},
			outcomes:      []outcome{{panic: true}},
			want:          [][]int{{1, 2}, {1, 2}},
			wantIterators: []string{"s TRIM_HORIZON ", "s AT_SEQUENCE_NUMBER 1"},
		},
		{
			name:          "unknown item identifier fails the whole batch",
			seqs:          []int{1, 2, 3},
			outcomes:      []outcome{{resp: failSeq(2, 42)}},
			want:          [][]int{{1, 2, 3}, {1, 2, 3}},
			wantIterators: []string{"s TRIM_HORIZON ", "s AT_SEQUENCE_NUMBER 1"},
		},
		{
			name:      "empty item identifier fails the whole batch",
			seqs:      []int{1, 2},
			outcomes:  []outcome{{resp: events.DynamoDBEventResponse{BatchItemFailures: []events.DynamoDBBatchItemFailure{{}}}}},
			want:      [][]int{{1, 2}, {1, 2}},
			batchSize: 10,
		},
		{
			// Finding 11 of the reliability review: the poller used to
			// skip the whole rest of the batch; Lambda bisects it and
			// gives up the failing record alone.
			name:            "a failing batch is split until the bad record is skipped alone",
			seqs:            []int{1, 2, 3, 4},
			batchSize:       3,
			maxRetries:      2,
			alwaysFailFirst: 1,
			want:            [][]int{{1, 2, 3}, {1, 2, 3}, {1, 2, 3}, {1, 2}, {1, 2}, {1, 2}, {1}, {1}, {1}, {2, 3, 4}},
		},
		{
			name:       "a record a batch item failure names is skipped alone",
			seqs:       []int{1, 2, 3},
			batchSize:  3,
			maxRetries: 1,
			outcomes:   []outcome{{resp: failSeq(2)}, {resp: failSeq(2)}},
			want:       [][]int{{1, 2, 3}, {2, 3}, {3}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeStreams{shards: []*fakeShard{{id: "s", seqs: tt.seqs}}}
			var inv invocations
			startStreamPoller(t, fake, StreamConfig{BatchSize: tt.batchSize, MaxRetryAttempts: tt.maxRetries}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				n := inv.record(ev)
				if tt.alwaysFailFirst != 0 && ev.Records[0].Change.SequenceNumber == strconv.Itoa(tt.alwaysFailFirst) {
					return events.DynamoDBEventResponse{}, errors.New("poison record")
				}
				if n > len(tt.outcomes) {
					return events.DynamoDBEventResponse{}, nil
				}
				o := tt.outcomes[n-1]
				if o.panic {
					panic("handler bug")
				}
				return o.resp, o.err
			})
			// The shard is read sequentially, so once a read comes back
			// empty every record has been dealt with.
			eventually(t, 10*time.Second, func() bool { return fake.emptyReadsOf("s") > 0 }, func() string { return fmt.Sprintf("shard never fully read; invocations %v", inv.get()) })
			if got := inv.get(); !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Errorf("invocations %v, want %v", got, tt.want)
			}
			if tt.wantIterators != nil {
				if got := fake.iteratorCalls(); !slices.Equal(got, tt.wantIterators) {
					t.Errorf("GetShardIterator calls %q, want %q", got, tt.wantIterators)
				}
			}
		})
	}
}

func TestStreamPollerReacquiresInvalidIterators(t *testing.T) {
	expired := &types.ExpiredIteratorException{Message: aws.String("expired")}
	trimmed := &types.TrimmedDataAccessException{Message: aws.String("trimmed")}
	tests := []struct {
		name          string
		failOnce      map[string]error
		wantIterators []string
	}{
		{
			name:          "expired after a checkpoint resumes after it",
			failOnce:      map[string]error{"s/1": expired},
			wantIterators: []string{"s TRIM_HORIZON ", "s AFTER_SEQUENCE_NUMBER 1"},
		},
		{
			name:          "trimmed after a checkpoint resumes after it",
			failOnce:      map[string]error{"s/2": trimmed},
			wantIterators: []string{"s TRIM_HORIZON ", "s AFTER_SEQUENCE_NUMBER 2"},
		},
		{
			name:          "trimmed before any record starts at the trim horizon",
			failOnce:      map[string]error{"s/0": trimmed},
			wantIterators: []string{"s TRIM_HORIZON ", "s TRIM_HORIZON "},
		},
		{
			name:          "repeated failures keep going",
			failOnce:      map[string]error{"s/0": errors.New("connection reset"), "s/1": trimmed, "s/2": expired},
			wantIterators: []string{"s TRIM_HORIZON ", "s AFTER_SEQUENCE_NUMBER 1", "s AFTER_SEQUENCE_NUMBER 2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fake := &fakeStreams{shards: []*fakeShard{{id: "s", seqs: []int{1, 2, 3}}}, failOnce: tt.failOnce}
			var inv invocations
			startStreamPoller(t, fake, StreamConfig{BatchSize: 1}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
				inv.record(ev)
				return events.DynamoDBEventResponse{}, nil
			})
			eventually(t, 5*time.Second, func() bool { return fake.emptyReadsOf("s") > 0 }, func() string { return fmt.Sprintf("shard never fully read; invocations %v", inv.get()) })
			if got, want := inv.get(), [][]int{{1}, {2}, {3}}; !slices.EqualFunc(got, want, slices.Equal) {
				t.Errorf("invocations %v, want %v", got, want)
			}
			if got := fake.iteratorCalls(); !slices.Equal(got, tt.wantIterators) {
				t.Errorf("GetShardIterator calls %q, want %q", got, tt.wantIterators)
			}
		})
	}
}

func TestLambdaAttributeValue(t *testing.T) {
	tests := []struct {
		name string
		in   types.AttributeValue
		want string
	}{
		{"S", &types.AttributeValueMemberS{Value: "tea"}, `{"S":"tea"}`},
		{"N", &types.AttributeValueMemberN{Value: "-12.50"}, `{"N":"-12.50"}`},
		{"B", &types.AttributeValueMemberB{Value: []byte{1, 2, 0xff}}, `{"B":"AQL/"}`},
		{"BOOL", &types.AttributeValueMemberBOOL{Value: true}, `{"BOOL":true}`},
		{"NULL", &types.AttributeValueMemberNULL{Value: true}, `{"NULL":true}`},
		{"SS", &types.AttributeValueMemberSS{Value: []string{"a", "b"}}, `{"SS":["a","b"]}`},
		{"NS", &types.AttributeValueMemberNS{Value: []string{"1", "2.5"}}, `{"NS":["1","2.5"]}`},
		{"BS", &types.AttributeValueMemberBS{Value: [][]byte{{1}, {2}}}, `{"BS":["AQ==","Ag=="]}`},
		{"empty L", &types.AttributeValueMemberL{Value: []types.AttributeValue{}}, `{"L":[]}`},
		{"empty M", &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}, `{"M":{}}`},
		{
			"nested M and L",
			&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
				"lines": &types.AttributeValueMemberL{Value: []types.AttributeValue{
					&types.AttributeValueMemberM{Value: map[string]types.AttributeValue{
						"sku": &types.AttributeValueMemberS{Value: "x"},
						"qty": &types.AttributeValueMemberN{Value: "2"},
					}},
					&types.AttributeValueMemberNULL{Value: true},
				}},
			}},
			`{"M":{"lines":{"L":[{"M":{"qty":{"N":"2"},"sku":{"S":"x"}}},{"NULL":true}]}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			av, err := lambdaAttributeValue(tt.in)
			if err != nil {
				t.Fatalf("lambdaAttributeValue: %v", err)
			}
			got, err := json.Marshal(av)
			if err != nil {
				t.Fatalf("marshal: %v", err)
			}
			if string(got) != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
	nested := &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.UnknownUnionMember{Tag: "VECTOR"}}}
	if _, err := lambdaAttributeValue(nested); err == nil || !strings.Contains(err.Error(), "VECTOR") {
		t.Errorf("unknown member: err = %v, want one naming VECTOR", err)
	}
}

func TestLambdaDynamoDBRecord(t *testing.T) {
	created := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	rec := types.Record{
		AwsRegion:    aws.String("eu-west-1"),
		EventID:      aws.String("c4ca4238a0b923820dcc509a6f75849b"),
		EventName:    types.OperationTypeModify,
		EventSource:  aws.String("aws:dynamodb"),
		EventVersion: aws.String("1.1"),
		UserIdentity: &types.Identity{Type: aws.String("Service"), PrincipalId: aws.String("dynamodb.amazonaws.com")},
		Dynamodb: &types.StreamRecord{
			ApproximateCreationDateTime: &created,
			Keys:                        map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORDER#1"}},
			NewImage:                    map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORDER#1"}, "state": &types.AttributeValueMemberS{Value: "PAID"}},
			OldImage:                    map[string]types.AttributeValue{"pk": &types.AttributeValueMemberS{Value: "ORDER#1"}, "state": &types.AttributeValueMemberS{Value: "NEW"}},
			SequenceNumber:              aws.String("111"),
			SizeBytes:                   aws.Int64(26),
			StreamViewType:              types.StreamViewTypeNewAndOldImages,
		},
	}
	got, err := lambdaDynamoDBRecord(rec, testStreamARN, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, err := json.Marshal(got)
	if err != nil {
		t.Fatal(err)
	}
	// The shape of a record in a DynamoDB event Lambda delivers.
	want := `{"awsRegion":"eu-west-1","dynamodb":{"ApproximateCreationDateTime":1767323045,` +
		`"Keys":{"pk":{"S":"ORDER#1"}},"NewImage":{"pk":{"S":"ORDER#1"},"state":{"S":"PAID"}},` +
		`"OldImage":{"pk":{"S":"ORDER#1"},"state":{"S":"NEW"}},"SequenceNumber":"111","SizeBytes":26,` +
		`"StreamViewType":"NEW_AND_OLD_IMAGES"},"eventID":"c4ca4238a0b923820dcc509a6f75849b","eventName":"MODIFY",` +
		`"eventSource":"aws:dynamodb","eventVersion":"1.1","eventSourceARN":"` + testStreamARN + `",` +
		`"userIdentity":{"type":"Service","principalId":"dynamodb.amazonaws.com"}}`
	if string(gotJSON) != want {
		t.Errorf("record JSON\n got %s\nwant %s", gotJSON, want)
	}

	// A KEYS_ONLY record leaves both images out, and the region falls back
	// to the stream ARN's.
	rec.AwsRegion, rec.UserIdentity = nil, nil
	rec.Dynamodb.NewImage, rec.Dynamodb.OldImage = nil, nil
	got, err = lambdaDynamoDBRecord(rec, testStreamARN, "eu-west-1")
	if err != nil {
		t.Fatal(err)
	}
	gotJSON, _ = json.Marshal(got)
	if strings.Contains(string(gotJSON), "Image") || got.AWSRegion != "eu-west-1" {
		t.Errorf("keys-only record = %s, want no images and awsRegion eu-west-1", gotJSON)
	}
}

func TestNewStreamPollerValidatesConfig(t *testing.T) {
	valid := StreamConfig{StreamARN: testStreamARN}
	tests := []struct {
		name   string
		modify func(*StreamConfig)
	}{
		{"malformed ARN", func(c *StreamConfig) { c.StreamARN = "stream" }},
		{"batch size above 1000", func(c *StreamConfig) { c.BatchSize = 1001 }},
		{"iterator type not a starting position", func(c *StreamConfig) { c.StartingPosition = types.ShardIteratorTypeAtSequenceNumber }},
	}
	if _, err := NewStreamPoller(&fakeStreams{}, valid, nil, testLogger(t)); err != nil {
		t.Fatalf("valid config rejected: %v", err)
	}
	for _, tt := range tests {
		cfg := valid
		tt.modify(&cfg)
		if _, err := NewStreamPoller(&fakeStreams{}, cfg, nil, testLogger(t)); err == nil {
			t.Errorf("%s: NewStreamPoller accepted %+v", tt.name, cfg)
		}
	}
}
