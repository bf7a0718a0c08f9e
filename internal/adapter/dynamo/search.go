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
	positions := make([]shardPosition, s.shards)
	if position != nil {
		if err := json.Unmarshal(position, &positions); err != nil || len(positions) != s.shards {
			return order.SearchPage{}, fmt.Errorf("search position: not one of this table's: %w", order.ErrInvalid)
		}
	}
	index, sortKey := searchIndex(q)
	budget := cmp.Or(s.searchBudget, searchBudget)
	// Every shard's matches, up to the limit, and the key below which the
	// shard is still unread (frontier) unless it is exhausted.
	type shard struct {
		matches  []listed
		frontier *listed
	}
	shards := make([]shard, s.shards)
	// The shards are read at once: a page waits for its slowest shard,
	// not for the sum of them.
	g, gctx := errgroup.WithContext(ctx)
	for i := range shards {
		if positions[i].Done {
			continue
		}
		in, hasFilter, err := s.shardQuery(i, q)
		if err != nil {
			return order.SearchPage{}, err
		}
		if p := positions[i]; p.ID != "" {
			in.ExclusiveStartKey = map[string]types.AttributeValue{
				attrOrderID: &types.AttributeValueMemberS{Value: p.ID}, resources.AttrListed: &types.AttributeValueMemberS{Value: strconv.Itoa(i)},
				sortKey: &types.AttributeValueMemberN{Value: strconv.FormatInt(p.Key, 10)},
			}
		}
		g.Go(func() error {
			// The first read is a page's worth when nothing filters (the
			// page's orders may all be this shard's), more when filters
			// will pass over items; each read after it twice the one
			// before: an unfiltered page reads no more than it may list, a
			// filtered one in few round trips.
			read := q.Limit + 1
			if hasFilter {
				read = 4*q.Limit + 16
			}
			read = cmp.Or(s.searchRead, read)
			for evaluated := 0; ; {
				in.Limit = aws.Int32(int32(min(read, budget-evaluated)))
				if s.searchRead == 0 {
					read *= 2
				}
				out, err := s.client.Query(gctx, in)
				if err != nil {
					return fmt.Errorf("search shard %d of %s: %w", i, index, err)
				}
				var items []listed
				if err := attributevalue.UnmarshalListOfMaps(out.Items, &items); err != nil {
					return fmt.Errorf("search shard %d of %s: %w", i, index, err)
				}
				shards[i].matches = append(shards[i].matches, items...)
				evaluated += int(out.ScannedCount)
				if out.LastEvaluatedKey == nil {
					return nil
				}
				if len(shards[i].matches) >= q.Limit || evaluated >= budget {
					var f listed
					if err := attributevalue.UnmarshalMap(out.LastEvaluatedKey, &f); err != nil {
						return fmt.Errorf("search shard %d of %s: %w", i, index, err)
					}
					shards[i].frontier = &f
					return nil
				}
				in.ExclusiveStartKey = out.LastEvaluatedKey
			}
		})
	}
	if err := g.Wait(); err != nil {
		return order.SearchPage{}, err
	}
	key := func(l listed) int64 {
		if sortKey == resources.AttrEnded {
			return l.Ended
		}
		return l.Created
	}
	// newer orders items newest first. Equal times keep the order
	// DynamoDB returned them in, which is not the ids' (and differs
	// between DynamoDB Local and AWS): a shard goes on after the last item
	// it listed in that order, so each shard's listed items must be a
	// prefix of what it returned.
	newer := func(a, b listed) int { return cmp.Compare(key(b), key(a)) }
	// Only items no older than every unfinished shard's frontier can be
	// listed: the shard's unread items are no newer than it.
	var cutoff *listed
	for _, sh := range shards {
		if f := sh.frontier; f != nil && (cutoff == nil || newer(*f, *cutoff) < 0) {
			cutoff = f
		}
	}
	var all []listed
	for _, sh := range shards {
		for _, m := range sh.matches {
			if cutoff == nil || newer(m, *cutoff) <= 0 {
				all = append(all, m)
			}
		}
	}
	slices.SortStableFunc(all, newer)
	page := all[:min(len(all), q.Limit)]
	// Each shard goes on after the last item of it this page lists; a
	// shard all of whose matches are listed goes on from its frontier, or
	// is done.
	listedOf := map[string]int{}
	for i := range page {
		sh, _ := strconv.Atoi(page[i].Listed)
		listedOf[page[i].Listed]++
		positions[sh].Key, positions[sh].ID = key(page[i]), page[i].OrderID
	}
	more := false
	for i, sh := range shards {
		if positions[i].Done {
			continue
		}
		if listedOf[strconv.Itoa(i)] == len(sh.matches) {
			if sh.frontier == nil {
				positions[i] = shardPosition{Done: true}
				continue
			}
			positions[i].Key, positions[i].ID = key(*sh.frontier), sh.frontier.OrderID
		}
		more = true
	}
	out := order.SearchPage{}
	if more {
		out.Next, _ = json.Marshal(positions) // ints and strings cannot fail
	}
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
