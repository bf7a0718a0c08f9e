package dynamo

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"slices"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/expression"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
)

// attrUnreadable holds, on an item that did not decode, the fingerprint
// of the version of it that was reported to operators: reported once, not
// on every Supervisor run, whichever instance runs. Only such items have
// it, so it costs the others nothing.
const attrUnreadable = "Unreadable"

// unreadable describes an item that did not decode, and whether this
// version of it was reported.
func unreadable(item map[string]types.AttributeValue, err error) order.Unreadable {
	u := order.Unreadable{Err: err, Fingerprint: fingerprint(item)}
	if id, ok := item[attrOrderID].(*types.AttributeValueMemberS); ok {
		u.OrderID = id.Value
	}
	if mark, ok := item[attrUnreadable].(*types.AttributeValueMemberS); ok {
		u.Reported = mark.Value == u.Fingerprint
	}
	return u
}

// ReportUnreadable records on an item that did not decode that its version
// (u.Fingerprint) is being reported, with one conditional write: of two
// Supervisors that found it, one reports it; a version reported already
// returns order.ErrStale. The item is left as it was otherwise, in the due
// index: it is read again on every run, and counted, until it is repaired
// or removed.
func (s *Store) ReportUnreadable(ctx context.Context, u order.Unreadable) error {
	mark := expression.Name(attrUnreadable)
	cond := expression.AttributeExists(expression.Name(attrOrderID)).
		And(expression.Or(expression.AttributeNotExists(mark), mark.NotEqual(expression.Value(u.Fingerprint))))
	return s.markUnreadable(ctx, "report", u, cond, expression.Set(mark, expression.Value(u.Fingerprint)))
}

// UnreportUnreadable takes back ReportUnreadable's mark, while it is still
// u's, when the report could not be sent: the next run reports it again.
func (s *Store) UnreportUnreadable(ctx context.Context, u order.Unreadable) error {
	mark := expression.Name(attrUnreadable)
	return s.markUnreadable(ctx, "take back the report of", u, mark.Equal(expression.Value(u.Fingerprint)), expression.Remove(mark))
}

// markUnreadable makes a conditional write to an item that does not
// decode: it reads nothing back.
func (s *Store) markUnreadable(ctx context.Context, what string, u order.Unreadable, cond expression.ConditionBuilder, upd expression.UpdateBuilder) error {
	expr, err := expression.NewBuilder().WithCondition(cond).WithUpdate(upd).Build()
	if err != nil {
		return fmt.Errorf("build update: %w", err)
	}
	_, err = s.client.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: aws.String(s.table), Key: orderKey(u.OrderID),
		ConditionExpression: expr.Condition(), UpdateExpression: expr.Update(),
		ExpressionAttributeNames: expr.Names(), ExpressionAttributeValues: expr.Values(),
	})
	var ccf *types.ConditionalCheckFailedException
	if errors.As(err, &ccf) {
		return fmt.Errorf("%s unreadable order item %s: %w", what, u.OrderID, order.ErrStale)
	}
	if err != nil {
		return fmt.Errorf("%s unreadable order item %s: %w", what, u.OrderID, err)
	}
	return nil
}

// fingerprint hashes an item's content, the report mark left out, in a
// canonical form (attributes and map keys sorted): any change to the item
// gives another fingerprint.
func fingerprint(item map[string]types.AttributeValue) string {
	h := sha256.New()
	hashMap(h, item, attrUnreadable)
	return hex.EncodeToString(h.Sum(nil)[:16])
}

func hashMap(h hash.Hash, m map[string]types.AttributeValue, skip string) {
	keys := make([]string, 0, len(m))
	for k := range m {
		if k != skip {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	hashLen(h, len(keys))
	for _, k := range keys {
		hashString(h, k)
		hashValue(h, m[k])
	}
}

func hashValue(h hash.Hash, v types.AttributeValue) {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		h.Write([]byte{'S'})
		hashString(h, v.Value)
	case *types.AttributeValueMemberN:
		h.Write([]byte{'N'})
		hashString(h, v.Value)
	case *types.AttributeValueMemberB:
		h.Write([]byte{'B'})
		hashString(h, string(v.Value))
	case *types.AttributeValueMemberBOOL:
		h.Write([]byte{'T'})
		if v.Value {
			h.Write([]byte{1})
		} else {
			h.Write([]byte{0})
		}
	case *types.AttributeValueMemberNULL:
		h.Write([]byte{'0'})
	case *types.AttributeValueMemberL:
		h.Write([]byte{'L'})
		hashLen(h, len(v.Value))
		for _, e := range v.Value {
			hashValue(h, e)
		}
	case *types.AttributeValueMemberM:
		h.Write([]byte{'M'})
		hashMap(h, v.Value, "")
	case *types.AttributeValueMemberSS:
		hashSet(h, 'S', v.Value)
	case *types.AttributeValueMemberNS:
		hashSet(h, 'N', v.Value)
	case *types.AttributeValueMemberBS:
		set := make([]string, len(v.Value))
		for i, b := range v.Value {
			set[i] = string(b)
		}
		hashSet(h, 'B', set)
	default:
		h.Write([]byte{'?'})
	}
}

// hashSet hashes a set, whose order DynamoDB does not keep.
func hashSet(h hash.Hash, kind byte, set []string) {
	sorted := slices.Sorted(slices.Values(set))
	h.Write([]byte{'s', kind})
	hashLen(h, len(sorted))
	for _, e := range sorted {
		hashString(h, e)
	}
}

// hashString writes s with its length, so that values cannot run into
// each other.
func hashString(h hash.Hash, s string) {
	hashLen(h, len(s))
	h.Write([]byte(s))
}

func hashLen(h hash.Hash, n int) {
	h.Write(binary.BigEndian.AppendUint64(nil, uint64(n)))
}
