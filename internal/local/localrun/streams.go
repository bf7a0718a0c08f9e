package localrun

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/arn"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams"
	"github.com/aws/aws-sdk-go-v2/service/dynamodbstreams/types"
)

// StreamsClient is the part of *dynamodbstreams.Client that StreamPoller
// calls.
type StreamsClient interface {
	DescribeStream(ctx context.Context, params *dynamodbstreams.DescribeStreamInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.DescribeStreamOutput, error)
	GetShardIterator(ctx context.Context, params *dynamodbstreams.GetShardIteratorInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetShardIteratorOutput, error)
	GetRecords(ctx context.Context, params *dynamodbstreams.GetRecordsInput, optFns ...func(*dynamodbstreams.Options)) (*dynamodbstreams.GetRecordsOutput, error)
}

var _ StreamsClient = (*dynamodbstreams.Client)(nil)

// StreamConfig says which stream a StreamPoller reads and how, mirroring the
// settings of a Lambda DynamoDB event source mapping with
// ReportBatchItemFailures on.
type StreamConfig struct {
	StreamARN string
	// BatchSize is the most records handed to one invocation, 1 to 1000;
	// zero means 100, Lambda's default.
	BatchSize int
	// PollInterval is the pause after a read that found nothing new; zero
	// means 200ms.
	PollInterval time.Duration
	// StartingPosition is TRIM_HORIZON or LATEST for the shards open when Run
	// starts; zero means TRIM_HORIZON, since local tables live in memory
	// and are created just before the poller. Shards that appear later are
	// read from their start.
	StartingPosition types.ShardIteratorType
	// MaxRetryAttempts bounds the retries of a failing batch. Then, like
	// Lambda with BisectBatchOnFunctionError and an on-failure destination,
	// a batch that failed as a whole is split in two and retried, until
	// the record that fails stands alone; that record alone is logged at
	// ERROR and skipped. Zero means 10; negative means retry forever.
	MaxRetryAttempts int
	// DiscoveryInterval is how often DescribeStream looks for new shards;
	// zero means 1s.
	DiscoveryInterval time.Duration
	// Timeout bounds each invocation, like a function's timeout; zero means
	// 30s. The handler's context is cancelled then, but the poller still
	// waits for it to return.
	Timeout time.Duration
	// Checkpoints, when set, keeps where each shard was left, so that a
	// restarted poller resumes there; StartingPosition then applies only
	// to shards without a checkpoint.
	Checkpoints Checkpoints
}

// StreamPoller is a local stand-in for Lambda's DynamoDB Streams event
// source mapping: it reads every shard of one stream in order, a parent shard
// before its children, and checkpoints what the handler reports as
// processed.
type StreamPoller struct {
	client            StreamsClient
	handler           func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error)
	streamARN         string
	region            string
	batchSize         int32
	pollInterval      time.Duration
	startingPosition  types.ShardIteratorType
	maxRetryAttempts  int
	discoveryInterval time.Duration
	timeout           time.Duration
	checkpoints       Checkpoints
	log               *slog.Logger
}

// NewStreamPoller returns a poller for the stream in cfg; it does nothing
// until Run.
func NewStreamPoller(client StreamsClient, cfg StreamConfig, handler func(context.Context, events.DynamoDBEvent) (events.DynamoDBEventResponse, error), log *slog.Logger) (*StreamPoller, error) {
	streamARN, err := arn.Parse(cfg.StreamARN)
	if err != nil {
		return nil, fmt.Errorf("stream poller: stream ARN %q: %w", cfg.StreamARN, err)
	}
	if cfg.BatchSize == 0 {
		cfg.BatchSize = 100
	}
	if cfg.BatchSize < 1 || cfg.BatchSize > 1000 {
		return nil, fmt.Errorf("stream poller: batch size %d outside 1-1000", cfg.BatchSize)
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = 200 * time.Millisecond
	}
	switch cfg.StartingPosition {
	case "":
		cfg.StartingPosition = types.ShardIteratorTypeTrimHorizon
	case types.ShardIteratorTypeTrimHorizon, types.ShardIteratorTypeLatest:
	default:
		return nil, fmt.Errorf("stream poller: starting position %q is neither TRIM_HORIZON nor LATEST", cfg.StartingPosition)
	}
	if cfg.MaxRetryAttempts == 0 {
		cfg.MaxRetryAttempts = 10
	}
	if cfg.DiscoveryInterval == 0 {
		cfg.DiscoveryInterval = time.Second
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 30 * time.Second
	}
	return &StreamPoller{
		client:            client,
		handler:           handler,
		streamARN:         cfg.StreamARN,
		region:            streamARN.Region,
		batchSize:         int32(cfg.BatchSize),
		pollInterval:      cfg.PollInterval,
		startingPosition:  cfg.StartingPosition,
		maxRetryAttempts:  cfg.MaxRetryAttempts,
		discoveryInterval: cfg.DiscoveryInterval,
		timeout:           cfg.Timeout,
		checkpoints:       cfg.Checkpoints,
		log:               log.With("stream_arn", cfg.StreamARN),
	}, nil
}

type shardState int

const (
	shardWaiting shardState = iota // for its parent to finish
	shardReading
	shardDone
)

type shard struct {
	parentID string
	state    shardState
	// startAt is where to start reading; empty means TRIM_HORIZON.
	startAt types.ShardIteratorType
}

// Run reads the stream until ctx is cancelled, then waits for batches
// already in the handler and returns nil. It returns an error only if the
// stream does not exist; other failures are logged and retried.
func (p *StreamPoller) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		cancel()
		wg.Wait()
	}()

	shards := map[string]*shard{}
	finished := make(chan string)
	startReady := func() {
		for id, s := range shards {
			if s.state != shardWaiting {
				continue
			}
			// A parent the stream no longer lists has been trimmed away.
			if parent, ok := shards[s.parentID]; ok && parent.state != shardDone {
				continue
			}
			s.state = shardReading
			start := types.ShardIteratorTypeTrimHorizon
			if s.startAt != "" {
				start = s.startAt
			}
			reader := &shardReader{poller: p, shardID: id, start: start, log: p.log.With("shard_id", id)}
			if p.checkpoints != nil {
				reader.checkpoint, _ = p.checkpoints.Load(id)
			}
			wg.Go(func() {
				reader.run(ctx)
				select {
				case finished <- id:
				case <-ctx.Done():
				}
			})
		}
	}

	first := true
	discover := func() error {
		described, err := p.describeShards(ctx)
		if err != nil {
			if _, ok := errors.AsType[*types.ResourceNotFoundException](err); ok {
				return err
			}
			if ctx.Err() == nil {
				p.log.WarnContext(ctx, "describe stream failed; retrying", "error", err)
			}
			return nil
		}
		for _, d := range described {
			id := aws.ToString(d.ShardId)
			if _, known := shards[id]; known {
				continue
			}
			s := &shard{parentID: aws.ToString(d.ParentShardId)}
			closed := d.SequenceNumberRange != nil && d.SequenceNumberRange.EndingSequenceNumber != nil
			seq, finished := "", false
			if p.checkpoints != nil {
				seq, finished = p.checkpoints.Load(id)
			}
			switch {
			case finished:
				s.state = shardDone // read to its end before a restart
			case seq != "":
				// resumes after its checkpoint, whatever StartingPosition says
			case first && p.startingPosition == types.ShardIteratorTypeLatest && closed:
				// Nothing new can ever arrive in a closed shard.
				s.state = shardDone
			case first:
				s.startAt = p.startingPosition
			}
			shards[id] = s
		}
		first = false
		startReady()
		return nil
	}

	if err := discover(); err != nil {
		return err
	}
	ticker := time.NewTicker(p.discoveryInterval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case id := <-finished:
			shards[id].state = shardDone
			startReady()
		case <-ticker.C:
			if err := discover(); err != nil {
				return err
			}
		}
	}
}

func (p *StreamPoller) describeShards(ctx context.Context) ([]types.Shard, error) {
	var all []types.Shard
	in := &dynamodbstreams.DescribeStreamInput{StreamArn: &p.streamARN}
	for {
		out, err := p.client.DescribeStream(ctx, in)
		if err != nil {
			return nil, fmt.Errorf("describe stream %s: %w", p.streamARN, err)
		}
		all = append(all, out.StreamDescription.Shards...)
		if out.StreamDescription.LastEvaluatedShardId == nil {
			return all, nil
		}
		in.ExclusiveStartShardId = out.StreamDescription.LastEvaluatedShardId
	}
}

// shardReader reads one shard from start to end, one batch at a time.
type shardReader struct {
	poller  *StreamPoller
	shardID string
	start   types.ShardIteratorType
	log     *slog.Logger

	// checkpoint is the sequence number of the last record the handler
	// finished with (or that was skipped after too many retries).
	checkpoint string
	// retrySeq is the first record of the batch being retried, and
	// attempts how many times a batch starting there has failed.
	retrySeq string
	attempts int
	// limit, when set, is the size of a batch split to find the record
	// that fails it (Lambda's BisectBatchOnFunctionError).
	limit int32
}

func (r *shardReader) batchLimit() *int32 {
	if r.limit > 0 {
		return &r.limit
	}
	return &r.poller.batchSize
}

func (r *shardReader) run(ctx context.Context) {
	p := r.poller
	iterator, ok := r.resume(ctx, r.start)
	if r.checkpoint != "" {
		r.log.InfoContext(ctx, "resuming after the checkpoint", "checkpoint", r.checkpoint)
	}
	failures := 0
	for ok && ctx.Err() == nil {
		out, err := p.client.GetRecords(ctx, &dynamodbstreams.GetRecordsInput{ShardIterator: &iterator, Limit: r.batchLimit()})
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			failures++
			if failures > 1 && !sleep(ctx, backoff(failures-1, 100*time.Millisecond, 5*time.Second)) {
				return
			}
			if _, expired := errors.AsType[*types.ExpiredIteratorException](err); expired {
				r.log.InfoContext(ctx, "shard iterator expired; acquiring a new one", "checkpoint", r.checkpoint)
				iterator, ok = r.resume(ctx, r.start)
				continue
			}
			if _, trimmed := errors.AsType[*types.TrimmedDataAccessException](err); trimmed {
				// On AWS this means records aged out of the stream before
				// being read. DynamoDB Local also says it when an iterator
				// taken on a still-empty shard is used after another table
				// has written: it numbers records across all tables, so
				// the shard's first record is past the iterator's position.
				// Either way, what is left starts at the trim horizon.
				r.log.WarnContext(ctx, "shard iterator points before the oldest record; acquiring a new one", "checkpoint", r.checkpoint)
				iterator, ok = r.resume(ctx, types.ShardIteratorTypeTrimHorizon)
				continue
			}
			if _, gone := errors.AsType[*types.ResourceNotFoundException](err); gone {
				r.log.ErrorContext(ctx, "shard no longer exists; giving it up", "error", err)
				return
			}
			r.log.WarnContext(ctx, "get records failed; retrying", "error", err, "attempt", failures)
			continue
		}
		failures = 0
		if len(out.Records) > 0 {
			if retryAt := r.deliver(ctx, out.Records); retryAt != "" {
				if !sleep(ctx, backoff(r.attempts, 100*time.Millisecond, 2*time.Second)) {
					return
				}
				iterator, ok = r.iterator(ctx, types.ShardIteratorTypeAtSequenceNumber, retryAt)
				continue
			}
		}
		if out.NextShardIterator == nil {
			r.log.InfoContext(ctx, "shard closed and fully read", "checkpoint", r.checkpoint)
			r.save(ctx, true)
			return
		}
		iterator = *out.NextShardIterator
		if len(out.Records) == 0 {
			sleep(ctx, p.pollInterval)
		}
	}
}

// save keeps the checkpoint, if the poller keeps checkpoints. A checkpoint
// that cannot be written only means replaying more after a restart.
func (r *shardReader) save(ctx context.Context, finished bool) {
	if r.poller.checkpoints == nil || (r.checkpoint == "" && !finished) {
		return
	}
	if err := r.poller.checkpoints.Save(r.shardID, r.checkpoint, finished); err != nil {
		r.log.WarnContext(ctx, "checkpoint not saved; a restart replays from the previous one", "error", err)
	}
}

// resume returns an iterator just after the checkpoint, or at fresh if
// nothing has been processed yet.
func (r *shardReader) resume(ctx context.Context, fresh types.ShardIteratorType) (string, bool) {
	if r.checkpoint == "" {
		return r.iterator(ctx, fresh, "")
	}
	return r.iterator(ctx, types.ShardIteratorTypeAfterSequenceNumber, r.checkpoint)
}

// iterator acquires a shard iterator, retrying transient failures until ctx
// is done. It reports false if there is nothing left to read.
func (r *shardReader) iterator(ctx context.Context, typ types.ShardIteratorType, sequenceNumber string) (string, bool) {
	in := &dynamodbstreams.GetShardIteratorInput{StreamArn: &r.poller.streamARN, ShardId: &r.shardID, ShardIteratorType: typ}
	if sequenceNumber != "" {
		in.SequenceNumber = &sequenceNumber
	}
	for attempt := 1; ; attempt++ {
		out, err := r.poller.client.GetShardIterator(ctx, in)
		switch {
		case err == nil && out.ShardIterator != nil:
			return *out.ShardIterator, true
		case err == nil:
			// LATEST on a closed shard has no iterator: nothing left to read.
			return "", false
		case ctx.Err() != nil:
			return "", false
		}
		if _, gone := errors.AsType[*types.ResourceNotFoundException](err); gone {
			r.log.ErrorContext(ctx, "shard no longer exists; giving it up", "error", err)
			return "", false
		}
		if _, trimmed := errors.AsType[*types.TrimmedDataAccessException](err); trimmed && typ != types.ShardIteratorTypeTrimHorizon {
			r.log.WarnContext(ctx, "sequence number trimmed; continuing from the trim horizon", "sequence_number", sequenceNumber)
			in.ShardIteratorType, in.SequenceNumber = types.ShardIteratorTypeTrimHorizon, nil
			continue
		}
		wait := backoff(attempt, 100*time.Millisecond, 5*time.Second)
		r.log.WarnContext(ctx, "get shard iterator failed; retrying", "error", err, "iterator_type", typ, "attempt", attempt, "retry_in", wait)
		if !sleep(ctx, wait) {
			return "", false
		}
	}
}

// deliver invokes the handler with one batch and moves the checkpoint past
// what it processed. It returns the sequence number to re-read from, or ""
// to carry on after the batch.
func (r *shardReader) deliver(ctx context.Context, records []types.Record) (retryAt string) {
	p := r.poller
	// A batch that reached the handler is finished even during shutdown.
	ctx = context.WithoutCancel(ctx)
	seqs := make([]string, len(records))
	for i, rec := range records {
		if rec.Dynamodb != nil {
			seqs[i] = aws.ToString(rec.Dynamodb.SequenceNumber)
		}
	}
	failedAt, requestID, err := r.invoke(ctx, records, seqs)
	log := r.log.With("request_id", requestID, "batch_size", len(records))
	if err != nil {
		log.WarnContext(ctx, "batch failed", "error", err)
	}
	if failedAt < 0 {
		r.checkpoint = seqs[len(seqs)-1]
		r.retrySeq, r.attempts, r.limit = "", 0, 0
		r.save(ctx, false)
		return ""
	}
	if failedAt > 0 {
		r.checkpoint = seqs[failedAt-1]
		r.save(ctx, false)
	}
	failedSeq := seqs[failedAt]
	if failedSeq != r.retrySeq {
		// Progress resets the count: it bounds retries of one record, not
		// of a batch that is getting through one record at a time.
		r.retrySeq, r.attempts = failedSeq, 0
	}
	r.attempts++
	if p.maxRetryAttempts >= 0 && r.attempts > p.maxRetryAttempts {
		// Like Lambda with BisectBatchOnFunctionError: a batch that fails
		// as a whole is split until the record that fails it stands
		// alone; only that record is given up, and the rest go on.
		if rest := len(records) - failedAt; err != nil && rest > 1 {
			r.limit, r.attempts = int32((rest+1)/2), 0
			log.WarnContext(ctx, "batch failed too often; splitting it to find the record that fails it",
				"sequence_number", failedSeq, "batch_size", r.limit)
			return failedSeq
		}
		log.ErrorContext(ctx, "record failed too often; skipping it",
			"attempt", r.attempts, "sequence_number", failedSeq, "keys", recordKeysJSON(records[failedAt]))
		r.checkpoint = failedSeq
		r.retrySeq, r.attempts, r.limit = "", 0, 0
		r.save(ctx, false)
		if failedAt+1 < len(records) {
			return seqs[failedAt+1] // the rest of the batch goes on
		}
		return ""
	}
	log.WarnContext(ctx, "retrying batch from the first failed record", "sequence_number", failedSeq, "attempt", r.attempts)
	return failedSeq
}

// invoke hands the batch to the handler and returns the index of the first
// record to retry, or -1 if the handler processed them all.
func (r *shardReader) invoke(ctx context.Context, records []types.Record, seqs []string) (failedAt int, requestID string, err error) {
	p := r.poller
	event, err := lambdaDynamoDBEvent(records, p.streamARN, p.region)
	if err != nil {
		return 0, "", err
	}
	ctx, cancel := context.WithTimeout(ctx, p.timeout)
	defer cancel()
	resp, requestID, err := invoke(ctx, r.log, p.handler, event)
	if err == nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		// Lambda ends a function at its timeout: what it returns late is
		// lost, and the whole batch is retried.
		err = fmt.Errorf("handler ran past its %s timeout", p.timeout)
	}
	if err != nil {
		return 0, requestID, err
	}
	failedAt, err = firstFailure(seqs, resp)
	return failedAt, requestID, err
}

// recordKeysJSON renders a record's keys in the attribute-value JSON that
// Lambda events and the DynamoDB console use, for an operator to act on.
func recordKeysJSON(rec types.Record) string {
	if rec.Dynamodb == nil {
		return "null"
	}
	keys, err := lambdaAttributeMap(rec.Dynamodb.Keys)
	if err != nil {
		return fmt.Sprint(rec.Dynamodb.Keys)
	}
	b, err := json.Marshal(keys)
	if err != nil {
		return fmt.Sprint(rec.Dynamodb.Keys)
	}
	return string(b)
}

// firstFailure returns the index of the earliest record the handler reported
// as failed, or -1 if it processed them all. Like Lambda, it treats an empty
// or unknown sequence number as a failure of the whole batch.
func firstFailure(seqs []string, resp events.DynamoDBEventResponse) (int, error) {
	index := make(map[string]int, len(seqs))
	for i, seq := range seqs {
		index[seq] = i
	}
	first := -1
	for _, f := range resp.BatchItemFailures {
		i, ok := index[f.ItemIdentifier]
		if !ok || f.ItemIdentifier == "" {
			return 0, fmt.Errorf("item identifier %q is not a sequence number of the batch", f.ItemIdentifier)
		}
		if first < 0 || i < first {
			first = i
		}
	}
	return first, nil
}

// lambdaDynamoDBEvent builds the event Lambda would send for records read
// from the stream.
func lambdaDynamoDBEvent(records []types.Record, streamARN, region string) (events.DynamoDBEvent, error) {
	event := events.DynamoDBEvent{Records: make([]events.DynamoDBEventRecord, len(records))}
	for i, rec := range records {
		converted, err := lambdaDynamoDBRecord(rec, streamARN, region)
		if err != nil {
			return events.DynamoDBEvent{}, err
		}
		event.Records[i] = converted
	}
	return event, nil
}

func lambdaDynamoDBRecord(rec types.Record, streamARN, region string) (events.DynamoDBEventRecord, error) {
	out := events.DynamoDBEventRecord{
		AWSRegion:      aws.ToString(rec.AwsRegion),
		EventID:        aws.ToString(rec.EventID),
		EventName:      string(rec.EventName),
		EventSource:    aws.ToString(rec.EventSource),
		EventVersion:   aws.ToString(rec.EventVersion),
		EventSourceArn: streamARN,
	}
	if out.AWSRegion == "" {
		out.AWSRegion = region
	}
	if out.EventSource == "" {
		out.EventSource = "aws:dynamodb"
	}
	if rec.UserIdentity != nil {
		out.UserIdentity = &events.DynamoDBUserIdentity{
			Type:        aws.ToString(rec.UserIdentity.Type),
			PrincipalID: aws.ToString(rec.UserIdentity.PrincipalId),
		}
	}
	if rec.Dynamodb == nil {
		return out, nil
	}
	d := rec.Dynamodb
	out.Change = events.DynamoDBStreamRecord{
		SequenceNumber: aws.ToString(d.SequenceNumber),
		SizeBytes:      aws.ToInt64(d.SizeBytes),
		StreamViewType: string(d.StreamViewType),
	}
	if d.ApproximateCreationDateTime != nil {
		out.Change.ApproximateCreationDateTime = events.SecondsEpochTime{Time: *d.ApproximateCreationDateTime}
	}
	var err error
	if out.Change.Keys, err = lambdaAttributeMap(d.Keys); err != nil {
		return out, fmt.Errorf("record %s keys: %w", out.Change.SequenceNumber, err)
	}
	if out.Change.NewImage, err = lambdaAttributeMap(d.NewImage); err != nil {
		return out, fmt.Errorf("record %s new image: %w", out.Change.SequenceNumber, err)
	}
	if out.Change.OldImage, err = lambdaAttributeMap(d.OldImage); err != nil {
		return out, fmt.Errorf("record %s old image: %w", out.Change.SequenceNumber, err)
	}
	return out, nil
}

// lambdaAttributeMap converts an item image; a missing image stays nil so
// that it is left out of the event, as Lambda leaves it out.
func lambdaAttributeMap(m map[string]types.AttributeValue) (map[string]events.DynamoDBAttributeValue, error) {
	if m == nil {
		return nil, nil
	}
	out := make(map[string]events.DynamoDBAttributeValue, len(m))
	for k, v := range m {
		converted, err := lambdaAttributeValue(v)
		if err != nil {
			return nil, fmt.Errorf("attribute %q: %w", k, err)
		}
		out[k] = converted
	}
	return out, nil
}

// lambdaAttributeValue converts one attribute value from the Streams SDK's
// union to the type Lambda events use.
func lambdaAttributeValue(av types.AttributeValue) (events.DynamoDBAttributeValue, error) {
	switch v := av.(type) {
	case *types.AttributeValueMemberS:
		return events.NewStringAttribute(v.Value), nil
	case *types.AttributeValueMemberN:
		return events.NewNumberAttribute(v.Value), nil
	case *types.AttributeValueMemberB:
		return events.NewBinaryAttribute(v.Value), nil
	case *types.AttributeValueMemberBOOL:
		return events.NewBooleanAttribute(v.Value), nil
	case *types.AttributeValueMemberNULL:
		return events.NewNullAttribute(), nil
	case *types.AttributeValueMemberSS:
		return events.NewStringSetAttribute(v.Value), nil
	case *types.AttributeValueMemberNS:
		return events.NewNumberSetAttribute(v.Value), nil
	case *types.AttributeValueMemberBS:
		return events.NewBinarySetAttribute(v.Value), nil
	case *types.AttributeValueMemberM:
		m, err := lambdaAttributeMap(v.Value)
		if err != nil {
			return events.DynamoDBAttributeValue{}, err
		}
		if m == nil {
			m = map[string]events.DynamoDBAttributeValue{}
		}
		return events.NewMapAttribute(m), nil
	case *types.AttributeValueMemberL:
		l := make([]events.DynamoDBAttributeValue, len(v.Value))
		for i, item := range v.Value {
			converted, err := lambdaAttributeValue(item)
			if err != nil {
				return events.DynamoDBAttributeValue{}, fmt.Errorf("list item %d: %w", i, err)
			}
			l[i] = converted
		}
		return events.NewListAttribute(l), nil
	case *types.UnknownUnionMember:
		return events.DynamoDBAttributeValue{}, fmt.Errorf("unknown attribute value type %q", v.Tag)
	default:
		return events.DynamoDBAttributeValue{}, fmt.Errorf("unsupported attribute value %T", av)
	}
}
