package cost

import (
	"math"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// ItemSize returns an item's size in bytes by DynamoDB's published rules:
// attribute names count, strings and binaries by their bytes, numbers by
// one byte per two significant digits plus one, booleans and nulls one
// byte, lists and maps 3 bytes plus 1 byte per element plus their content.
func ItemSize(item map[string]types.AttributeValue) int {
	n := 0
	for name, v := range item {
		n += len(name) + valueSize(v)
	}
	return n
}

func valueSize(v types.AttributeValue) int {
	switch v := v.(type) {
	case *types.AttributeValueMemberS:
		return len(v.Value)
	case *types.AttributeValueMemberN:
		return numberSize(v.Value)
	case *types.AttributeValueMemberB:
		return len(v.Value)
	case *types.AttributeValueMemberBOOL, *types.AttributeValueMemberNULL:
		return 1
	case *types.AttributeValueMemberSS:
		n := 0
		for _, s := range v.Value {
			n += len(s)
		}
		return n
	case *types.AttributeValueMemberNS:
		n := 0
		for _, s := range v.Value {
			n += numberSize(s)
		}
		return n
	case *types.AttributeValueMemberBS:
		n := 0
		for _, b := range v.Value {
			n += len(b)
		}
		return n
	case *types.AttributeValueMemberL:
		n := 3
		for _, e := range v.Value {
			n += 1 + valueSize(e)
		}
		return n
	case *types.AttributeValueMemberM:
		n := 3
		for k, e := range v.Value {
			n += 1 + len(k) + valueSize(e)
		}
		return n
	}
	return 0
}

// numberSize is 1 byte per two significant digits, plus 1.
func numberSize(s string) int {
	s = strings.TrimLeft(s, "+-")
	if i := strings.IndexAny(s, "eE"); i >= 0 {
		s = s[:i]
	}
	s = strings.Replace(s, ".", "", 1)
	s = strings.Trim(s, "0")
	if s == "" {
		return 1
	}
	return (len(s)+1)/2 + 1
}

// Capacity unit sizes.
const (
	writeUnitBytes = 1024
	readUnitBytes  = 4096
	// IndexEntryOverhead is what DynamoDB adds to every index entry.
	IndexEntryOverhead = 100
)

// writeUnits is the standard write units for an item of size bytes: one
// per started KB, at least one.
func writeUnits(size int) float64 {
	return math.Max(1, math.Ceil(float64(size)/writeUnitBytes))
}

// readUnits is the read units for size bytes read: one per started 4 KB
// (at least one) for a strongly consistent read, half that otherwise.
func readUnits(size int, consistent bool) float64 {
	units := math.Max(1, math.Ceil(float64(size)/readUnitBytes))
	if !consistent {
		units /= 2
	}
	return units
}
