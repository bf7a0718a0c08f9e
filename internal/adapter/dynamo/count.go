package dynamo

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// DefaultCountBudget is how many index items a count evaluates at most
// unless told: at 100 to 200 bytes an item, 20 to 40 MB of index, 2,500
// to 5,000 read units (eventually consistent). Nobody counts a year of
// orders by accident.
const DefaultCountBudget = 200_000

// countStatusCost is what reading a running order's status costs, in
// index items: one item read of the order, its size rounded up to 4 KB,
// against some 200 bytes an index item. A count reads the statuses of at
// most budget/countStatusCost running orders.
const countStatusCost = 20

// counted is an index item as a count reads it: its sort key, and the
// order's outcome or, while it runs, its id.
type counted struct {
	at      int64
	id      string
	outcome string
}

// Count counts the orders q matches by status, over q's window (Query.Window),
// every status (q.Status and q.Limit are not used). It Queries every shard
// of the window's search index, newest first, for the keys and Outcome
// alone, and reads the status of those still running (which the index
// does not tell apart) from their items, BatchGetItem.
//
// It evaluates at most budget index items (DefaultCountBudget when 0 or
// less, at least one a shard) and reads the statuses of at most budget/20
// running orders (at least one batch, 100): a count that reaches either
// bound is Partial, exact from Through on. It reads the shards in turn, the one it has read
// least far back first, so that they reach back about as far and little
// of what it read is left out.
func (s *Store) Count(ctx context.Context, q order.Query, budget int) (order.Counts, error) {
	if budget <= 0 {
		budget = DefaultCountBudget
	}
	budget = max(budget, s.shards)
	q.Status, q.Limit = "", 0
	out := order.NewCounts(q)
	index, sortKey := searchIndex(q)
	// A shard's frontier is the sort key of the last item read from it:
	// what it has not read is no newer. Unread yet, it is above all.
	type shard struct {
		in       *dynamodb.QueryInput
		frontier int64
		done     bool
	}
	shards := make([]shard, s.shards)
	for i := range shards {
		in, _, err := s.shardQuery(i, q, attrOrderID, sortKey, resources.AttrOutcome)
		if err != nil {
			return order.Counts{}, err
		}
		shards[i] = shard{frontier: math.MaxInt64, in: in}
	}
	// A Query reads a quarter of the budget's share of its shard, so
	// that the shards stay close behind one another.
	perQuery := max(1, budget/(4*s.shards))
	var found []counted
	for out.Evaluated < budget {
		next := -1
		for i, sh := range shards {
			if !sh.done && (next < 0 || sh.frontier > shards[next].frontier) {
				next = i
			}
		}
		if next < 0 {
			break
		}
		sh := &shards[next]
		sh.in.Limit = aws.Int32(int32(min(perQuery, budget-out.Evaluated)))
		page, err := s.client.Query(ctx, sh.in)
		if err != nil {
			return order.Counts{}, fmt.Errorf("count shard %d of %s: %w", next, index, err)
		}
		out.Evaluated += int(page.ScannedCount)
		for _, item := range page.Items {
			c, err := countedOf(item, sortKey)
			if err != nil {
				return order.Counts{}, fmt.Errorf("count shard %d of %s: %w", next, index, err)
			}
			found = append(found, c)
		}
		if page.LastEvaluatedKey == nil {
			sh.done = true
			continue
		}
		last, err := countedOf(page.LastEvaluatedKey, sortKey)
		if err != nil {
			return order.Counts{}, fmt.Errorf("count shard %d of %s: %w", next, index, err)
		}
		sh.frontier, sh.in.ExclusiveStartKey = last.at, page.LastEvaluatedKey
	}
	// Stopped short, the count is exact above the newest frontier: every
	// shard was read past it (items at the frontier itself may be
	// unread).
	through := int64(math.MinInt64)
	for _, sh := range shards {
		switch {
		case sh.done:
		case sh.frontier == math.MaxInt64: // never read (the bound lets every shard be)
			through = math.MaxInt64
		default:
			through = max(through, sh.frontier+1)
		}
	}
	// The running orders' statuses, newest first, as many as the bound
	// lets it read; past them it is exact no further.
	var running []counted
	for _, c := range found {
		if c.outcome == "" && c.at >= through {
			running = append(running, c)
		}
	}
	slices.SortFunc(running, func(a, b counted) int { return cmp.Compare(b.at, a.at) })
	if reads := max(batchGetLimit, budget/countStatusCost); len(running) > reads {
		through = max(through, running[reads].at+1)
		running = slices.DeleteFunc(running, func(c counted) bool { return c.at < through })
	}
	ids := make([]string, len(running))
	for i, c := range running {
		ids[i] = c.id
	}
	status, err := s.statuses(ctx, ids)
	if err != nil {
		return order.Counts{}, err
	}
	if through != math.MinInt64 {
		out.Partial, out.Through = true, fromMillis(through).UTC()
	}
	for _, c := range found {
		switch {
		case c.at < through:
		case c.outcome != "":
			out.Add(order.Status(c.outcome))
		default:
			// One gone since the index listed it (expired) is not counted.
			if st, ok := status[c.id]; ok {
				out.Add(st)
			}
		}
	}
	return out, nil
}

// windowKey is the key condition of one shard of a search index over a
// window of its sort key: from inclusive, to exclusive, zero unbounded.
func windowKey(shard int, sortKey string, from, to time.Time) expression.KeyConditionBuilder {
	kc := expression.Key(resources.AttrListed).Equal(expression.Value(strconv.Itoa(shard)))
	switch {
	case !from.IsZero() && !to.IsZero():
		return kc.And(expression.Key(sortKey).Between(expression.Value(millis(from)), expression.Value(millis(to)-1)))
	case !from.IsZero():
		return kc.And(expression.Key(sortKey).GreaterThanEqual(expression.Value(millis(from))))
	case !to.IsZero():
		return kc.And(expression.Key(sortKey).LessThan(expression.Value(millis(to))))
	}
	return kc
}

// countedOf reads an index item, or a Query's last evaluated key.
func countedOf(item map[string]types.AttributeValue, sortKey string) (counted, error) {
	var l listed
	if err := attributevalue.UnmarshalMap(item, &l); err != nil {
		return counted{}, err
	}
	c := counted{at: l.Created, outcome: l.Outcome}
	if sortKey == resources.AttrEnded {
		c.at = l.Ended
	}
	if c.outcome == "" {
		c.id = l.OrderID
	}
	return c, nil
}

// statuses reads the current status of each running order, by id,
// eventually consistent: a listing or a count, not a fence. An order
// whose item is gone is left out.
func (s *Store) statuses(ctx context.Context, ids []string) (map[string]order.Status, error) {
	out := make(map[string]order.Status, len(ids))
	for len(ids) > 0 {
		chunk := ids[:min(len(ids), batchGetLimit)]
		ids = ids[len(chunk):]
		keys := make([]map[string]types.AttributeValue, len(chunk))
		for i, id := range chunk {
			keys[i] = orderKey(id)
		}
		items, err := s.batchGet(ctx, types.KeysAndAttributes{Keys: keys, ProjectionExpression: aws.String("OrderID, #s"),
			ExpressionAttributeNames: map[string]string{"#s": attrStatus}})
		if err != nil {
			return nil, fmt.Errorf("read the status of %d running orders: %w", len(keys), err)
		}
		for _, item := range items {
			var r struct{ OrderID, Status string }
			if err := attributevalue.UnmarshalMap(item, &r); err != nil {
				return nil, fmt.Errorf("read the status of a running order: %w", err)
			}
			out[r.OrderID] = order.Status(r.Status)
		}
	}
	return out, nil
}
