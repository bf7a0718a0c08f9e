// Package cost measures what orderly costs to run. A Meter is AWS SDK
// middleware: attached to the clients the engine's functions use, it counts
// every request by service and operation and computes DynamoDB capacity
// from the real item images (table and index writes, transactions at two
// units per KB per item), because emulators do not report capacity
// faithfully. A Model turns those counts into dollars per million orders
// with a dated price table, at low and high load, next to Step Functions.
package cost

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// ItemReader reads an item back after a write, through a client the meter
// is not attached to.
type ItemReader interface {
	GetItem(ctx context.Context, in *dynamodb.GetItemInput, optFns ...func(*dynamodb.Options)) (*dynamodb.GetItemOutput, error)
}

// Op names one API operation of one service, e.g. DynamoDB UpdateItem.
type Op struct {
	Service   string
	Operation string
}

func (o Op) String() string { return o.Service + " " + o.Operation }

// Usage is what a stretch of work cost, in billable quantities.
type Usage struct {
	Calls map[Op]int
	// ConditionFailures counts, by operation, the writes whose condition
	// failed: stale or duplicate messages, lost races. They are billed
	// (and included in Calls and TableWrites); ConditionFailureWrites is
	// their share of TableWrites.
	ConditionFailures      map[Op]int
	ConditionFailureWrites float64
	// TableWrites and IndexWrites are DynamoDB write request units.
	TableWrites float64
	IndexWrites float64
	// Reads are DynamoDB read request units.
	Reads float64
	// IndexQueries and IndexQueryReads are the Supervisor's queries of the
	// due index: a fixed cost per run, whatever the number of orders.
	IndexQueries    int
	IndexQueryReads float64
	// IndexQueryItems are the entries those queries returned: none for an
	// order that waits until its wait is due.
	IndexQueryItems int
	// PauseReads and PauseReadUnits are the reads of pauses (order.Pause):
	// the Supervisor's once a run, an agent's and the submission's once
	// per instance every few seconds. Like the index queries they cost by
	// time, not by order, and are counted apart.
	PauseReads     int
	PauseReadUnits float64
	// StreamInvocations counts table changes that pass the Scheduler's
	// stream filter: each is a record Lambda delivers.
	StreamInvocations int
	// StreamRecords counts every change of a streamed table: each is a
	// record the recorder reads.
	StreamRecords int
	// RequestMessages and ReplyMessages count SQS messages sent to the
	// agents' request queues and to the response queue.
	RequestMessages int
	ReplyMessages   int
}

// Meter counts requests and capacity. It is safe for concurrent use.
type Meter struct {
	tables map[string]resources.Table
	reader ItemReader
	// replyQueue tells replies apart from requests among SendMessage calls.
	replyQueue string

	mu     sync.Mutex
	usage  Usage
	images map[string]map[string]types.AttributeValue // table/key -> last item seen
	locks  map[string]*sync.Mutex
}

// NewMeter returns a meter that reads items back through reader, which
// must not carry the meter. It learns the tables and queues from Watch.
func NewMeter(reader ItemReader) *Meter {
	m := &Meter{
		tables: map[string]resources.Table{}, reader: reader,
		images: map[string]map[string]types.AttributeValue{}, locks: map[string]*sync.Mutex{},
	}
	m.Reset()
	return m
}

// Watch tells the meter the catalog's tables (their keys, indexes and
// stream filter) and the response queue, once they are provisioned.
func (m *Meter) Watch(cat resources.Catalog, replyQueueURL string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, t := range cat.Tables() {
		m.tables[t.Name] = t
	}
	m.replyQueue = replyQueueURL
}

// Reset zeroes the counts (the item images are kept).
func (m *Meter) Reset() {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.usage = Usage{Calls: map[Op]int{}, ConditionFailures: map[Op]int{}}
}

// Usage returns a copy of the counts since the last Reset.
func (m *Meter) Usage() Usage {
	m.mu.Lock()
	defer m.mu.Unlock()
	u := m.usage
	u.Calls = maps.Clone(m.usage.Calls)
	u.ConditionFailures = maps.Clone(m.usage.ConditionFailures)
	return u
}

// AddTo attaches the meter to an SDK client's middleware stack; use it as
// an APIOptions entry.
func (m *Meter) AddTo(stack *middleware.Stack) error {
	return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("orderly-cost-meter",
		func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
			op := Op{awsmiddleware.GetServiceID(ctx), awsmiddleware.GetOperationName(ctx)}
			keys := m.writeKeys(in.Parameters)
			unlock := m.lock(keys)
			out, md, err := next.HandleInitialize(ctx, in)
			m.record(ctx, op, in.Parameters, out.Result, err, keys)
			unlock()
			return out, md, err
		}), middleware.After)
}

// writeTarget is one item a DynamoDB write touches.
type writeTarget struct {
	table         string
	key           map[string]types.AttributeValue
	transactional bool
}

func (t writeTarget) id() string {
	parts := []string{t.table}
	names := make([]string, 0, len(t.key))
	for n := range t.key {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		parts = append(parts, fmt.Sprintf("%s=%v", n, t.key[n]))
	}
	return strings.Join(parts, "/")
}

// writeKeys lists the items a DynamoDB write request touches.
func (m *Meter) writeKeys(params any) []writeTarget {
	switch in := params.(type) {
	case *dynamodb.PutItemInput:
		return []writeTarget{m.target(*in.TableName, in.Item, false)}
	case *dynamodb.UpdateItemInput:
		return []writeTarget{m.target(*in.TableName, in.Key, false)}
	case *dynamodb.DeleteItemInput:
		return []writeTarget{m.target(*in.TableName, in.Key, false)}
	case *dynamodb.TransactWriteItemsInput:
		var ts []writeTarget
		for _, it := range in.TransactItems {
			switch {
			case it.Put != nil:
				ts = append(ts, m.target(*it.Put.TableName, it.Put.Item, true))
			case it.Update != nil:
				ts = append(ts, m.target(*it.Update.TableName, it.Update.Key, true))
			case it.Delete != nil:
				ts = append(ts, m.target(*it.Delete.TableName, it.Delete.Key, true))
			case it.ConditionCheck != nil:
				ts = append(ts, m.target(*it.ConditionCheck.TableName, it.ConditionCheck.Key, true))
			}
		}
		return ts
	}
	return nil
}

// target keeps only the key attributes of item.
func (m *Meter) target(table string, item map[string]types.AttributeValue, tx bool) writeTarget {
	key := map[string]types.AttributeValue{}
	m.mu.Lock()
	t := m.tables[table]
	m.mu.Unlock()
	for _, k := range t.KeyNames() {
		if v, ok := item[k]; ok {
			key[k] = v
		}
	}
	return writeTarget{table: table, key: key, transactional: tx}
}

// lock serialises metered writes to the same item, so each write's before
// and after images are its own.
func (m *Meter) lock(targets []writeTarget) func() {
	ids := make([]string, len(targets))
	for i, t := range targets {
		ids[i] = t.id()
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	m.mu.Lock()
	locks := make([]*sync.Mutex, len(ids))
	for i, id := range ids {
		if m.locks[id] == nil {
			m.locks[id] = &sync.Mutex{}
		}
		locks[i] = m.locks[id]
	}
	m.mu.Unlock()
	for _, l := range locks {
		l.Lock()
	}
	return func() {
		for _, l := range slices.Backward(locks) {
			l.Unlock()
		}
	}
}

// readsPauses reports whether a call reads pauses only: a GetItem or
// BatchGetItem whose every key is a pause's.
func readsPauses(params any) bool {
	isPause := func(key map[string]types.AttributeValue) bool {
		id, ok := key[resources.AttrOrderID].(*types.AttributeValueMemberS)
		if !ok {
			return false
		}
		_, _, pause := order.PauseOfKey(id.Value)
		return pause
	}
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return isPause(in.Key)
	case *dynamodb.BatchGetItemInput:
		n := 0
		for _, ka := range in.RequestItems {
			for _, k := range ka.Keys {
				if !isPause(k) {
					return false
				}
				n++
			}
		}
		return n > 0
	}
	return false
}

// pauseReadUnits is what a read of pauses costs: each key read, found
// or not, at least half a read unit (eventually consistent).
func pauseReadUnits(params, result any) float64 {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		size := 0
		if out, ok := result.(*dynamodb.GetItemOutput); ok {
			size = ItemSize(out.Item)
		}
		return readUnits(size, false)
	case *dynamodb.BatchGetItemInput:
		keys := 0
		for _, ka := range in.RequestItems {
			keys += len(ka.Keys)
		}
		units := 0.0
		if out, ok := result.(*dynamodb.BatchGetItemOutput); ok {
			for _, items := range out.Responses {
				for _, it := range items {
					units += readUnits(ItemSize(it), false)
					keys--
				}
			}
		}
		return units + float64(keys)*readUnits(0, false)
	}
	return 0
}

func (m *Meter) record(ctx context.Context, op Op, params, result any, callErr error, writes []writeTarget) {
	var after []map[string]types.AttributeValue
	if callErr == nil {
		// Read the images outside m.mu: the reads are network calls.
		for _, w := range writes {
			after = append(after, m.readBack(ctx, w))
		}
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if readsPauses(params) {
		m.usage.PauseReads++
		m.usage.PauseReadUnits += pauseReadUnits(params, result)
		return
	}
	if q, ok := params.(*dynamodb.QueryInput); !ok || q.IndexName == nil {
		m.usage.Calls[op]++ // the Supervisor's index queries are counted apart
	}
	switch in := params.(type) {
	case *sqs.SendMessageInput:
		if callErr == nil {
			if *in.QueueUrl == m.replyQueue {
				m.usage.ReplyMessages++
			} else {
				m.usage.RequestMessages++
			}
		}
	case *dynamodb.GetItemInput:
		if out, ok := result.(*dynamodb.GetItemOutput); ok {
			m.usage.Reads += readUnits(ItemSize(out.Item), in.ConsistentRead != nil && *in.ConsistentRead)
		}
	case *dynamodb.BatchGetItemInput:
		if out, ok := result.(*dynamodb.BatchGetItemOutput); ok {
			for table, items := range out.Responses {
				consistent := in.RequestItems[table].ConsistentRead
				for _, it := range items {
					m.usage.Reads += readUnits(ItemSize(it), consistent != nil && *consistent)
				}
			}
		}
	case *dynamodb.QueryInput:
		if out, ok := result.(*dynamodb.QueryOutput); ok {
			size := 0
			for _, it := range out.Items {
				size += ItemSize(it)
			}
			units := readUnits(size, in.ConsistentRead != nil && *in.ConsistentRead)
			if in.IndexName != nil {
				m.usage.IndexQueries++
				m.usage.IndexQueryReads += units
				m.usage.IndexQueryItems += len(out.Items)
			} else {
				m.usage.Reads += units
			}
		}
	}
	for i, w := range writes {
		id := w.id()
		before := m.images[id]
		if callErr != nil {
			// A failed condition still costs the existing item's size;
			// nothing changed, so no index write.
			cost := m.writeCost(max(ItemSize(before), 1), w.transactional)
			m.usage.TableWrites += cost
			if i == 0 {
				m.usage.ConditionFailures[op]++
			}
			m.usage.ConditionFailureWrites += cost
			continue
		}
		now := after[i]
		m.usage.TableWrites += m.writeCost(max(ItemSize(before), ItemSize(now)), w.transactional)
		m.usage.IndexWrites += m.indexWrites(m.tables[w.table], before, now)
		if m.tables[w.table].Stream {
			m.usage.StreamRecords++
			if passes(m.tables[w.table].StreamFilter, now) {
				m.usage.StreamInvocations++
			}
		}
		if now == nil {
			delete(m.images, id)
		} else {
			m.images[id] = now
		}
	}
}

func (m *Meter) writeCost(size int, transactional bool) float64 {
	if transactional {
		return 2 * writeUnits(size)
	}
	return writeUnits(size)
}

func (m *Meter) readBack(ctx context.Context, w writeTarget) map[string]types.AttributeValue {
	consistent := true
	out, err := m.reader.GetItem(ctx, &dynamodb.GetItemInput{TableName: &w.table, Key: w.key, ConsistentRead: &consistent})
	if err != nil {
		return nil
	}
	return out.Item
}

// indexWrites counts the index write units one table write causes, by
// DynamoDB's rules: an entry appears (one write), disappears (one), moves
// to another key (two), or, for a projection that includes the changed
// attributes, is rewritten in place (one).
func (m *Meter) indexWrites(t resources.Table, before, after map[string]types.AttributeValue) float64 {
	total := 0.0
	for _, ix := range t.Indexes {
		oldEntry, newEntry := indexEntry(t, ix, before), indexEntry(t, ix, after)
		switch {
		case oldEntry == nil && newEntry == nil:
		case oldEntry == nil:
			total += writeUnits(ItemSize(newEntry) + IndexEntryOverhead)
		case newEntry == nil:
			total += writeUnits(ItemSize(oldEntry) + IndexEntryOverhead)
		case !sameValues(oldEntry, newEntry, ix.PartitionKey.Name, ix.SortKey.Name):
			total += writeUnits(ItemSize(oldEntry)+IndexEntryOverhead) + writeUnits(ItemSize(newEntry)+IndexEntryOverhead)
		case !equalItems(oldEntry, newEntry):
			total += writeUnits(max(ItemSize(oldEntry), ItemSize(newEntry)) + IndexEntryOverhead)
		}
	}
	return total
}

// indexEntry is what the index holds for item, nil when the item lacks an
// index key (a sparse index).
func indexEntry(t resources.Table, ix resources.Index, item map[string]types.AttributeValue) map[string]types.AttributeValue {
	if item == nil || item[ix.PartitionKey.Name] == nil || item[ix.SortKey.Name] == nil {
		return nil
	}
	if ix.Projection == resources.ProjectAll {
		return item
	}
	entry := map[string]types.AttributeValue{}
	for _, k := range append(t.KeyNames(), ix.PartitionKey.Name, ix.SortKey.Name) {
		entry[k] = item[k]
	}
	return entry
}

func sameValues(a, b map[string]types.AttributeValue, names ...string) bool {
	for _, n := range names {
		if !equalValue(a[n], b[n]) {
			return false
		}
	}
	return true
}

func equalItems(a, b map[string]types.AttributeValue) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !equalValue(v, b[k]) {
			return false
		}
	}
	return true
}

func equalValue(a, b types.AttributeValue) bool {
	return fmt.Sprintf("%#v", deref(a)) == fmt.Sprintf("%#v", deref(b))
}

// deref flattens an attribute value into comparable plain data.
func deref(v types.AttributeValue) any {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return "S:" + v.Value
	case *types.AttributeValueMemberN:
		return "N:" + v.Value
	case *types.AttributeValueMemberBOOL:
		return v.Value
	case *types.AttributeValueMemberL:
		out := make([]any, len(v.Value))
		for i, e := range v.Value {
			out[i] = deref(e)
		}
		return out
	case *types.AttributeValueMemberM:
		keys := make([]string, 0, len(v.Value))
		for k := range v.Value {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		out := make([]any, 0, 2*len(keys))
		for _, k := range keys {
			out = append(out, k, deref(v.Value[k]))
		}
		return out
	case nil:
		return nil
	}
	return fmt.Sprintf("%#v", v)
}

// passes applies a stream filter to a new image, as Lambda's event
// filtering does.
func passes(f resources.StreamFilter, image map[string]types.AttributeValue) bool {
	if image == nil {
		return false
	}
	for _, name := range f.Present {
		if _, ok := image[name]; !ok {
			return false
		}
	}
	return true
}
