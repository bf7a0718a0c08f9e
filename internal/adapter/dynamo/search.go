package dynamo

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"golang.org/x/sync/errgroup"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// searchBudget bounds the index items one page evaluates in each shard,
// so that a page's cost is bounded whatever the query: a page may end
// short of its limit, with a position to go on from.
const searchBudget = 1000

// listed is an order as a search index holds it.
type listed struct {
	OrderID    string `dynamodbav:"OrderID"`
	Listed     string `dynamodbav:"Listed"`
	Caller     string `dynamodbav:"Caller"`
	CustomerID string `dynamodbav:"CustomerID"`
	Workflow   string `dynamodbav:"Workflow"`
	Version    string `dynamodbav:"Version"`
	Created    int64  `dynamodbav:"Created"`
	Ended      int64  `dynamodbav:"Ended"`
	Outcome    string `dynamodbav:"Outcome"`
}

// shardPosition is where a search stands in one shard: after the item
// (Key, ID), newest first; Done once the shard has nothing more.
type shardPosition struct {
	Key  int64  `json:"k,omitempty"`
	ID   string `json:"i,omitempty"`
	Done bool   `json:"d,omitempty"`
}

// Search returns a page of the orders q matches, newest first, starting
// at position (nil: the first page; else a page's Next). It Queries one
// of the search indexes, every shard, with the filters as the index's
// filter expression, and merges the shards; it reads no order item
// except to tell the running statuses apart, which the index does not
// hold.
func (s *Store) Search(ctx context.Context, q order.Query, position []byte) (order.SearchPage, error) {
	plan, err := s.planSearch(q, position)
	if err != nil {
		return order.SearchPage{}, err
	}
	shards, err := s.readShards(ctx, plan, q.Limit)
	if err != nil {
		return order.SearchPage{}, err
	}
	page := mergePage(shards, plan.key, q.Limit)
	out := order.SearchPage{Next: nextPosition(plan.positions, shards, page, plan.key)}
	summaries, err := s.summaries(ctx, page)
	if err != nil {
		return order.SearchPage{}, err
	}
	for _, o := range summaries {
		if q.Status == "" || o.Status == q.Status {
			out.Orders = append(out.Orders, o)
		}
	}
	return out, nil
}

// searchPlan is what one page of a search reads: the index and its sort
// key, where each shard stands, and the Query of each shard still to
// read (nil for a shard that is done).
type searchPlan struct {
	index     string
	key       sortKey
	positions []shardPosition
	queries   []*dynamodb.QueryInput
	// filtered says whether the queries have a filter expression, which
	// may pass over items.
	filtered bool
}

// planSearch reads position (nil: the first page) and builds the Query
// of every shard it leaves unfinished, each going on after the item its
// shard stopped at.
func (s *Store) planSearch(q order.Query, position []byte) (searchPlan, error) {
	index, key := searchIndex(q)
	p := searchPlan{index: index, key: sortKey(key), positions: make([]shardPosition, s.shards), queries: make([]*dynamodb.QueryInput, s.shards)}
	if position != nil {
		if err := json.Unmarshal(position, &p.positions); err != nil || len(p.positions) != s.shards {
			return searchPlan{}, fmt.Errorf("search position: not one of this table's: %w", order.ErrInvalid)
		}
	}
	for i, at := range p.positions {
		if at.Done {
			continue
		}
		in, filtered, err := s.shardQuery(i, q)
		if err != nil {
			return searchPlan{}, err
		}
		if at.ID != "" {
			in.ExclusiveStartKey = map[string]types.AttributeValue{
				attrOrderID: &types.AttributeValueMemberS{Value: at.ID}, resources.AttrListed: &types.AttributeValueMemberS{Value: strconv.Itoa(i)},
				key: &types.AttributeValueMemberN{Value: strconv.FormatInt(at.Key, 10)},
			}
		}
		p.queries[i], p.filtered = in, filtered
	}
	return p, nil
}

// shardRead is what a page read of one shard: its matches, up to the
// page's limit, and the key below which the shard is still unread
// (frontier), unless it is exhausted (nil).
type shardRead struct {
	matches  []listed
	frontier *listed
}

// readShards reads the plan's shards at once: a page waits for its
// slowest shard, not for the sum of them.
func (s *Store) readShards(ctx context.Context, plan searchPlan, limit int) ([]shardRead, error) {
	shards := make([]shardRead, len(plan.queries))
	g, gctx := errgroup.WithContext(ctx)
	for i, in := range plan.queries {
		if in == nil {
			continue
		}
		g.Go(func() error {
			read, err := s.readShard(gctx, in, limit, plan.filtered)
			if err != nil {
				return fmt.Errorf("search shard %d of %s: %w", i, plan.index, err)
			}
			shards[i] = read
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return shards, nil
}

// readShard Queries one shard until it has limit matches, has evaluated
// the page's budget of index items, or is exhausted.
func (s *Store) readShard(ctx context.Context, in *dynamodb.QueryInput, limit int, filtered bool) (shardRead, error) {
	budget := cmp.Or(s.searchBudget, searchBudget)
	// The first read is a page's worth when nothing filters (the page's
	// orders may all be this shard's), more when filters will pass over
	// items; each read after it twice the one before: an unfiltered page
	// reads no more than it may list, a filtered one in few round trips.
	read := limit + 1
	if filtered {
		read = 4*limit + 16
	}
	read = cmp.Or(s.searchRead, read)
	var sh shardRead
	for evaluated := 0; ; {
		in.Limit = aws.Int32(int32(min(read, budget-evaluated)))
		if s.searchRead == 0 {
			read *= 2
		}
		out, err := s.client.Query(ctx, in)
		if err != nil {
			return shardRead{}, err
		}
		var items []listed
		if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
			return shardRead{}, err
		}
		sh.matches = append(sh.matches, items...)
		evaluated += int(out.ScannedCount)
		if out.LastEvaluatedKey == nil {
			return sh, nil
		}
		if len(sh.matches) >= limit || evaluated >= budget {
			var f listed
			if err := attributevalue.UnmarshalMap(out.LastEvaluatedKey, &f); err != nil {
				return shardRead{}, err
			}
			sh.frontier = &f
			return sh, nil
		}
		in.ExclusiveStartKey = out.LastEvaluatedKey
	}
}

// sortKey is the attribute a search index sorts its items by.
type sortKey string

// of is l's value of the sort key.
func (k sortKey) of(l listed) int64 {
	if k == resources.AttrEnded {
		return l.Ended
	}
	return l.Created
}

// newer orders items newest first. Equal times keep the order DynamoDB
// returned them in, which is not the ids' (and differs between DynamoDB
// Local and AWS): a shard goes on after the last item it listed in that
// order, so each shard's listed items must be a prefix of what it
// returned.
func (k sortKey) newer(a, b listed) int { return cmp.Compare(k.of(b), k.of(a)) }

// mergePage merges the shards' matches newest first and cuts them at
// limit. Only items no older than every unfinished shard's frontier can
// be listed: the shard's unread items are no newer than it.
func mergePage(shards []shardRead, k sortKey, limit int) []listed {
	var cutoff *listed
	for _, sh := range shards {
		if f := sh.frontier; f != nil && (cutoff == nil || k.newer(*f, *cutoff) < 0) {
			cutoff = f
		}
	}
	var all []listed
	for _, sh := range shards {
		for _, m := range sh.matches {
			if cutoff == nil || k.newer(m, *cutoff) <= 0 {
				all = append(all, m)
			}
		}
	}
	slices.SortStableFunc(all, k.newer)
	return all[:min(len(all), limit)]
}

// nextPosition is where the search goes on after page (nil: nothing
// more), from positions, where it stood before the page. Each shard goes
// on after the last item of it the page lists; a shard all of whose
// matches are listed goes on from its frontier, or is done.
func nextPosition(positions []shardPosition, shards []shardRead, page []listed, k sortKey) []byte {
	next := slices.Clone(positions)
	listedOf := map[string]int{}
	for _, l := range page {
		sh, _ := strconv.Atoi(l.Listed)
		listedOf[l.Listed]++
		next[sh].Key, next[sh].ID = k.of(l), l.OrderID
	}
	more := false
	for i, sh := range shards {
		if next[i].Done {
			continue
		}
		if listedOf[strconv.Itoa(i)] == len(sh.matches) {
			if sh.frontier == nil {
				next[i] = shardPosition{Done: true}
				continue
			}
			next[i].Key, next[i].ID = k.of(*sh.frontier), sh.frontier.OrderID
		}
		more = true
	}
	if !more {
		return nil
	}
	out, _ := json.Marshal(next) // ints and strings cannot fail
	return out
}

// searchIndex is the search index q reads (by its Window), and that
// index's sort key.
func searchIndex(q order.Query) (index, sortKey string) {
	if by, _, _ := q.Window(); by == order.WindowEnded {
		return resources.EndedIndexName, resources.AttrEnded
	}
	return resources.CreatedIndexName, resources.AttrCreated
}

// shardQuery is the newest-first Query of one shard of q's search index
// over q's window, q's other filters its filter expression (filtered
// says whether it has one), reading only the attributes named, when
// any are.
func (s *Store) shardQuery(shard int, q order.Query, names ...string) (in *dynamodb.QueryInput, filtered bool, err error) {
	index, sortKey := searchIndex(q)
	_, from, to := q.Window()
	b := expression.NewBuilder().WithKeyCondition(windowKey(shard, sortKey, from, to))
	filter, filtered := searchFilter(q, sortKey)
	if filtered {
		b = b.WithFilter(filter)
	}
	if len(names) > 0 {
		projection := expression.NamesList(expression.Name(names[0]))
		for _, n := range names[1:] {
			projection = projection.AddNames(expression.Name(n))
		}
		b = b.WithProjection(projection)
	}
	expr, err := b.Build()
	if err != nil {
		return nil, false, fmt.Errorf("build the query of shard %d of %s: %w", shard, index, err)
	}
	return &dynamodb.QueryInput{
		TableName: aws.String(s.table), IndexName: aws.String(index), ScanIndexForward: aws.Bool(false),
		KeyConditionExpression: expr.KeyCondition(), FilterExpression: expr.Filter(), ProjectionExpression: expr.Projection(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	}, filtered, nil
}

// searchFilter is q's filters on a search index's attributes, all but the
// sort key's range.
func searchFilter(q order.Query, sortKey string) (expression.ConditionBuilder, bool) {
	var conds []expression.ConditionBuilder
	equal := func(attr, v string) {
		if v != "" {
			conds = append(conds, expression.Name(attr).Equal(expression.Value(v)))
		}
	}
	equal(resources.AttrCaller, q.Caller)
	equal(resources.AttrCustomer, q.CustomerID)
	equal(resources.AttrWorkflow, q.Workflow)
	equal(resources.AttrVersion, q.Version)
	switch {
	case q.Status.Terminal():
		equal(resources.AttrOutcome, string(q.Status))
	case q.Status != "":
		// A running status: the index holds only that it runs.
		conds = append(conds, expression.AttributeNotExists(expression.Name(resources.AttrOutcome)))
	}
	// The other time's range, on the index's copy of it.
	other, from, to := resources.AttrEnded, q.EndedFrom, q.EndedTo
	if sortKey == resources.AttrEnded {
		other, from, to = resources.AttrCreated, q.CreatedFrom, q.CreatedTo
	}
	if !from.IsZero() {
		conds = append(conds, expression.Name(other).GreaterThanEqual(expression.Value(millis(from))))
	}
	if !to.IsZero() {
		conds = append(conds, expression.Name(other).LessThan(expression.Value(millis(to))))
	}
	switch len(conds) {
	case 0:
		return expression.ConditionBuilder{}, false
	case 1:
		return conds[0], true
	}
	return expression.And(conds[0], conds[1], conds[2:]...), true
}

// summaries are the page's orders; the status of those still running is
// read from their items.
func (s *Store) summaries(ctx context.Context, page []listed) ([]order.Summary, error) {
	out := make([]order.Summary, len(page))
	var running []string
	for i, l := range page {
		out[i] = order.Summary{ID: l.OrderID, Caller: l.Caller, CustomerID: l.CustomerID, Workflow: order.WorkflowOf(l.Workflow),
			Version: order.VersionOf(l.Version), Status: order.Status(l.Outcome), CreatedAt: fromMillis(l.Created), EndedAt: fromMillis(l.Ended)}
		if l.Outcome == "" {
			running = append(running, l.OrderID)
		}
	}
	status, err := s.statuses(ctx, running)
	if err != nil {
		return nil, err
	}
	for i := range out {
		if st, ok := status[out[i].ID]; ok {
			out[i].Status = st
		}
	}
	return out, nil
}
