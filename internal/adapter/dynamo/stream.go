package dynamo

import (
	"fmt"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
)

// UnclaimedStep decodes an order image from a DynamoDB stream event, as
// Lambda delivers it, and returns its active step if that step waits for a
// Scheduler to claim it (Pending and unlocked). ok is false for every other
// change.
func UnclaimedStep(image map[string]events.DynamoDBAttributeValue) (st order.StepState, ok bool, err error) {
	item := make(map[string]types.AttributeValue, len(image))
	for k, v := range image {
		av, err := fromEvent(v)
		if err != nil {
			return order.StepState{}, false, fmt.Errorf("attribute %s: %w", k, err)
		}
		item[k] = av
	}
	rec, err := unmarshal(item)
	if err != nil {
		return order.StepState{}, false, fmt.Errorf("stream image: %w", err)
	}
	if rec.Unclaimed == "" {
		return order.StepState{}, false, nil
	}
	st, ok = rec.active()
	if !ok || st.Step != rec.Unclaimed || st.ProcessState != order.Pending || st.LockedBy != "" {
		return order.StepState{}, false, nil
	}
	return st, true, nil
}

// fromEvent converts Lambda's attribute value to the SDK's.
func fromEvent(v events.DynamoDBAttributeValue) (types.AttributeValue, error) {
	switch v.DataType() {
	case events.DataTypeString:
		return &types.AttributeValueMemberS{Value: v.String()}, nil
	case events.DataTypeNumber:
		return &types.AttributeValueMemberN{Value: v.Number()}, nil
	case events.DataTypeBinary:
		return &types.AttributeValueMemberB{Value: v.Binary()}, nil
	case events.DataTypeBoolean:
		return &types.AttributeValueMemberBOOL{Value: v.Boolean()}, nil
	case events.DataTypeNull:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case events.DataTypeStringSet:
		return &types.AttributeValueMemberSS{Value: v.StringSet()}, nil
	case events.DataTypeNumberSet:
		return &types.AttributeValueMemberNS{Value: v.NumberSet()}, nil
	case events.DataTypeBinarySet:
		return &types.AttributeValueMemberBS{Value: v.BinarySet()}, nil
	case events.DataTypeList:
		list := v.List()
		out := make([]types.AttributeValue, len(list))
		for i, e := range list {
			av, err := fromEvent(e)
			if err != nil {
				return nil, err
			}
			out[i] = av
		}
		return &types.AttributeValueMemberL{Value: out}, nil
	case events.DataTypeMap:
		m := v.Map()
		out := make(map[string]types.AttributeValue, len(m))
		for k, e := range m {
			av, err := fromEvent(e)
			if err != nil {
				return nil, err
			}
			out[k] = av
		}
		return &types.AttributeValueMemberM{Value: out}, nil
	}
	return nil, fmt.Errorf("unknown attribute type %d", v.DataType())
}

// UnclaimedStep is the package's UnclaimedStep, for a Scheduler that
// reads stream images through its store.
func (s *Store) UnclaimedStep(image map[string]events.DynamoDBAttributeValue) (order.StepState, bool, error) {
	return UnclaimedStep(image)
}
