package cost

import "testing"

// A message delivered twice costs one failed condition and one message
// more; Over takes both as the same noise, up to the budget's bound, and
// nothing else.
func TestOverToleratesDuplicateDeliveryNoise(t *testing.T) {
	budget := ScenarioBudget{
		Calls:             map[string]float64{"SQS SendMessage": 4, "DynamoDB UpdateItem": 3},
		ConditionFailures: 0.34, Messages: 4, TableWrites: 4, HighLoadDollars: 11.45, LowLoadDollars: 15.72,
	}
	measured := func(sends, failures, updates, high float64) ScenarioBudget {
		return ScenarioBudget{
			Calls:             map[string]float64{"SQS SendMessage": sends, "DynamoDB UpdateItem": updates},
			ConditionFailures: failures, Messages: sends, TableWrites: 4, HighLoadDollars: high, LowLoadDollars: 15.72,
		}
	}
	tests := []struct {
		name     string
		measured ScenarioBudget
		wantOver int
	}{
		{"exact", measured(4, 0, 3, 11.45), 0},
		{"one duplicate in six orders", measured(4.17, 0.17, 3, 11.54), 0},
		{"a message more with no failed condition", measured(4.17, 0, 3, 11.54), 3},
		{"more messages than failed conditions", measured(4.5, 0.17, 3, 11.45), 2},
		{"noise does not excuse another request", measured(4, 0.17, 3.17, 11.45), 1},
		{"more failed conditions than the budget", measured(4, 0.5, 3, 11.45), 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if over := budget.Over(tt.measured); len(over) != tt.wantOver {
				t.Errorf("Over() = %q, want %d findings", over, tt.wantOver)
			}
		})
	}
}
