package cost

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/resources"
)

func s(v string) types.AttributeValue { return &types.AttributeValueMemberS{Value: v} }
func n(v string) types.AttributeValue { return &types.AttributeValueMemberN{Value: v} }

func TestItemSize(t *testing.T) {
	tests := []struct {
		name string
		item map[string]types.AttributeValue
		want int
	}{
		{"string counts name and bytes", map[string]types.AttributeValue{"ab": s("héllo")}, 2 + 6},
		{"number: one byte per two significant digits, plus one", map[string]types.AttributeValue{"n": n("1741944414369")}, 1 + 7 + 1},
		{"number: zeros trimmed", map[string]types.AttributeValue{"n": n("1000")}, 1 + 1 + 1},
		{"number zero", map[string]types.AttributeValue{"n": n("0")}, 1 + 1},
		{"bool and null", map[string]types.AttributeValue{"b": &types.AttributeValueMemberBOOL{Value: true}, "z": &types.AttributeValueMemberNULL{Value: true}}, 2 + 2},
		{"list: 3 bytes plus 1 per element", map[string]types.AttributeValue{"l": &types.AttributeValueMemberL{Value: []types.AttributeValue{s("ab"), s("c")}}}, 1 + 3 + (1 + 2) + (1 + 1)},
		{"map: names count inside", map[string]types.AttributeValue{"m": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{"SKU": s("A-1")}}}, 1 + 3 + 1 + 3 + 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ItemSize(tt.item); got != tt.want {
				t.Errorf("ItemSize() = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestCapacityUnits(t *testing.T) {
	tests := []struct {
		name      string
		got, want float64
	}{
		{"a write of under 1 KB is one unit", writeUnits(10), 1},
		{"a write of exactly 1 KB is one unit", writeUnits(1024), 1},
		{"a write of 1 KB and a byte is two", writeUnits(1025), 2},
		{"an empty read still costs", readUnits(0, true), 1},
		{"an eventually consistent read is half", readUnits(4096, false), 0.5},
		{"a strongly consistent 4 KB and a byte is two", readUnits(4097, true), 2},
	}
	for _, tt := range tests {
		if tt.got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, tt.got, tt.want)
		}
	}
}

// TestIndexWrites checks the index write units one table write costs, for
// both projections, by DynamoDB's rules.
func TestIndexWrites(t *testing.T) {
	keysOnly := resources.Table{Name: "t", PartitionKey: resources.Key{Name: "PK", Type: resources.String},
		Indexes: []resources.Index{{Name: "i", PartitionKey: resources.Key{Name: "Shard", Type: resources.String},
			SortKey: resources.Key{Name: "Due", Type: resources.Number}, Projection: resources.ProjectKeysOnly}}}
	all := keysOnly
	all.Indexes = []resources.Index{keysOnly.Indexes[0]}
	all.Indexes[0].Projection = resources.ProjectAll

	item := func(kv ...string) map[string]types.AttributeValue {
		m := map[string]types.AttributeValue{"PK": s("order-1")}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "Due" {
				m[kv[i]] = n(kv[i+1])
			} else {
				m[kv[i]] = s(kv[i+1])
			}
		}
		return m
	}
	tests := []struct {
		name          string
		table         resources.Table
		before, after map[string]types.AttributeValue
		want          float64
	}{
		{"put into the sparse index", keysOnly, nil, item("Shard", "1", "Due", "5"), 1},
		{"no index keys: no index write", keysOnly, item("X", "a"), item("X", "b"), 0},
		{"keys only, other attribute changed: no index write", keysOnly, item("Shard", "1", "Due", "5", "X", "a"), item("Shard", "1", "Due", "5", "X", "b"), 0},
		{"all projected, other attribute changed: one rewrite", all, item("Shard", "1", "Due", "5", "X", "a"), item("Shard", "1", "Due", "5", "X", "b"), 1},
		{"key moved: delete and put", keysOnly, item("Shard", "1", "Due", "5"), item("Shard", "1", "Due", "9"), 2},
		{"left the index: one delete", keysOnly, item("Shard", "1", "Due", "5"), item("X", "a"), 1},
		{"item deleted: one delete", keysOnly, item("Shard", "1", "Due", "5"), nil, 1},
	}
	m := &Meter{}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := m.indexWrites(tt.table, tt.before, tt.after); got != tt.want {
				t.Errorf("indexWrites() = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestStreamFilterMatchesAsLambdaWould(t *testing.T) {
	f := resources.StreamFilter{Present: []string{"Unclaimed"}}
	if passes(f, map[string]types.AttributeValue{"OrderID": s("a")}) {
		t.Error("an image without Unclaimed passed the filter")
	}
	if !passes(f, map[string]types.AttributeValue{"OrderID": s("a"), "Unclaimed": s("step")}) {
		t.Error("an image with Unclaimed did not pass the filter")
	}
	if passes(f, nil) {
		t.Error("a deleted item passed the filter")
	}
}

func TestWithoutConditionFailures(t *testing.T) {
	update := Op{"DynamoDB", "UpdateItem"}
	u := PerOrder{
		Calls:             map[Op]float64{update: 3.5, {"SQS", "SendMessage"}: 6},
		ConditionFailures: map[Op]float64{update: 0.5}, ConditionFailureWrites: 0.5,
		TableWrites: 4.5, IndexWrites: 2,
	}
	got := u.WithoutConditionFailures()
	if got.Calls[update] != 3 || got.Calls[Op{"SQS", "SendMessage"}] != 6 || got.TableWrites != 4 || got.IndexWrites != 2 {
		t.Errorf("WithoutConditionFailures() = %+v, want 3 updates, 6 sends, 4 + 2 write units", got)
	}
	if u.Calls[update] != 3.5 {
		t.Errorf("the original was changed: %v", u.Calls)
	}
}
