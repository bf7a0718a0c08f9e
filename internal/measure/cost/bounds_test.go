package cost_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/adapter/dynamo"
	"orderly/internal/adapter/sqs"
	"orderly/internal/definition"
	"orderly/internal/measure/cost"
	"orderly/internal/order"
	"orderly/internal/resources"
)

// TestLargestOrderFits builds the largest definitions Validate lets
// through (the most kept results; the most records), then their largest
// order: an input of the submission's limit that is all customerId, every
// kept result at its maxBytes, every record with an undo record beside it,
// every name, reference and reason at its longest, and "<" wherever
// escaping could grow it. Marshalled as the adapters send and store it,
// its request must fit an SQS message and its item a DynamoDB item, and
// the overheads definition.Sizes assumes must cover what is measured.
func TestLargestOrderFits(t *testing.T) {
	tests := []struct {
		name string
		// build makes a definition of the given size.
		build func(n int) definition.Definition
		from  int
	}{
		{"the most kept results: 12 steps, each result carried on", func(maxBytes int) definition.Definition {
			return largeDefinition(12, maxBytes)
		}, order.MaxResultBytes},
		{"the most records: steps with undos, results of 64 bytes", func(steps int) definition.Definition {
			return largeDefinition(steps, 64)
		}, 80},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// The largest size Validate takes.
			n := tt.from
			for ; n > 0 && len(tt.build(n).Validate()) > 0; n-- {
			}
			def := tt.build(n)
			if n == 0 || n == tt.from {
				t.Fatalf("Validate takes sizes up to %d of 1 to %d: not a largest definition", n, tt.from)
			}
			z := def.Sizes()
			o, states, req := largestOrder(t, def)

			// The request, as the SQS adapter sends it.
			message, own := messageSize(t, req), 0
			for _, r := range o.Results {
				own += len(r)
			}
			own = message - len(o.Input) - own
			req.Results = nil
			bare := messageSize(t, req) - len(o.Input)
			t.Logf("request: %d bytes (bound %d, limit %d); its own fields %d bytes, %d without results (%d kept)",
				message, z.Message, definition.MaxMessageBytes, own, bare, z.Kept)
			if message > z.Message || z.Message > definition.MaxMessageBytes {
				t.Errorf("request of %d bytes, bound %d: want it within the bound, and the bound within %d", message, z.Message, definition.MaxMessageBytes)
			}
			if bare > definition.RequestOverheadBytes || own > definition.RequestOverheadBytes+z.Kept*definition.ResultOverheadBytes {
				t.Errorf("the request's own fields take %d bytes (%d without results), over RequestOverheadBytes %d + %d × ResultOverheadBytes %d",
					own, bare, definition.RequestOverheadBytes, z.Kept, definition.ResultOverheadBytes)
			}

			// The item, as the DynamoDB adapter writes it, with what only
			// later writes set.
			item := storedItem(t, o, states)
			size := cost.ItemSize(item)
			item[attrSteps] = &types.AttributeValueMemberL{}
			fixed := cost.ItemSize(item) - len(o.Input) - len(o.CustomerID)
			perRecord := 0
			for _, rec := range storedItem(t, o, states)[attrSteps].(*types.AttributeValueMemberL).Value {
				m := rec.(*types.AttributeValueMemberM).Value
				result := 0
				if r, ok := m["Result"].(*types.AttributeValueMemberS); ok {
					result = len(r.Value)
				}
				// One byte for its place in the list.
				perRecord = max(perRecord, 1+cost.ItemSize(map[string]types.AttributeValue{"": rec})-result)
			}
			t.Logf("item: %d bytes (bound %d, limit %d); its own attributes %d bytes, a record at most %d besides its result (%d records)",
				size, z.Item, definition.MaxItemBytes, fixed, perRecord, z.Records)
			if size > z.Item || z.Item > definition.MaxItemBytes {
				t.Errorf("item of %d bytes, bound %d: want it within the bound, and the bound within %d", size, z.Item, definition.MaxItemBytes)
			}
			if fixed > definition.ItemOverheadBytes || perRecord > definition.RecordOverheadBytes {
				t.Errorf("the item's own attributes take %d bytes and a record %d, over ItemOverheadBytes %d or RecordOverheadBytes %d",
					fixed, perRecord, definition.ItemOverheadBytes, definition.RecordOverheadBytes)
			}
		})
	}
}

const attrSteps = "Steps"

// longName is a name of the most characters a definition takes, told
// apart by i.
func longName(prefix string, i, length int) string {
	s := fmt.Sprintf("%s-%d", prefix, i)
	return s + strings.Repeat("x", length-len(s))
}

// largeDefinition has steps steps, each with an undo, each carrying the
// step before's result, the last one's undo its own: every result kept,
// at maxBytes.
func largeDefinition(steps, maxBytes int) definition.Definition {
	d := definition.Definition{Name: longName("w", 0, 63), Version: longName("v", 0, 63), Input: json.RawMessage(`{"type":"object"}`)}
	for i := range steps {
		name := longName("step", i, 63)
		s := definition.Step{Name: name, Service: longName("service", i%3, 48),
			Call:    &definition.Call{Method: "POST", Path: "/work"},
			Undo:    &definition.Undo{Method: "POST", Path: "/undo", Description: "undo it"},
			Request: &definition.Request{Carries: []string{definition.CarriesOrder}},
			Result:  &definition.Result{MaxBytes: &maxBytes},
		}
		if i > 0 {
			s.Request.Carries = append(s.Request.Carries, d.Steps[i-1].Name)
		}
		if i == steps-1 {
			s.Undo.Carries = []string{definition.CarriesOrder, name}
		}
		d.Steps = append(d.Steps, s)
	}
	return d
}

// largestOrder is def's largest order, its records (every step done and
// being undone), and the largest request an agent may get for it.
func largestOrder(t *testing.T, def definition.Definition) (order.Order, []order.StepState, order.StepRequest) {
	t.Helper()
	w, err := def.Workflow(order.DefaultTiming)
	if err != nil {
		t.Fatal(err)
	}
	// Nanoseconds make the longest timestamps.
	now := time.Date(2025, 3, 14, 12, 34, 56, 123456789, time.UTC)
	// The input is all customerId, which the item keeps a copy of, and
	// "<", which HTML escaping would make six bytes.
	input := `{"customerId":""}`
	input = `{"customerId":"` + strings.Repeat("<", order.MaxInputBytes-len(input)) + `"}`
	o := order.Order{ID: order.NewID(), Workflow: w.Name, Version: w.Version, Status: order.StatusPending,
		RequestHash: strings.Repeat("h", 64), IdempotencyKey: strings.Repeat("k", order.MaxIdempotencyKeyLen), KeyNonce: order.NewKeyNonce(),
		Caller: strings.Repeat("c", 1024), LastError: strings.Repeat("e", 1024), CreatedAt: now, UpdatedAt: now,
	}.WithInput(json.RawMessage(input))
	if len(o.Input) != order.MaxInputBytes {
		t.Fatalf("input of %d bytes, want %d", len(o.Input), order.MaxInputBytes)
	}
	o.Results = map[string]json.RawMessage{}
	// A reference of 256 characters of 4 bytes each, a reason of 1 KiB, an
	// owner as config.InstanceID makes one.
	reference := strings.Repeat("𝄞", 256)
	reason := strings.Repeat("r", 1024)
	owner := "scheduler/2025/03/14/[$LATEST]0123456789abcdef0123456789abcdef/ABCDEFGH"
	record := func(d order.StepDef, i int, undo bool) order.StepState {
		return order.StepState{OrderID: o.ID, Workflow: w.Name, Version: w.Version, Step: d.Name, Index: i, Undo: undo, Agent: d.Agent,
			ProcessState: order.Processed, LockedBy: owner, CompleteBy: now.Add(time.Hour), FailureCount: 99, PastFailures: 999_999, Attempt: 999_999,
			Nudges: 999_999, Releases: 999_999, Deferrals: 999_999, Heartbeats: 450, LastError: reason, Reference: reference, UpdatedAt: now}
	}
	var states []order.StepState
	for i, d := range w.Steps {
		st := record(d, i, false)
		if w.Keeps(d.Name) {
			// "<" is one byte stored and would be six escaped.
			head := `{"id":"r","x":"`
			st.Result = json.RawMessage(head + strings.Repeat("<", d.ResultMaxBytes-len(head)-2) + `"}`)
			o.Results[d.Name] = st.Result
		}
		states = append(states, st)
	}
	for k := range w.Steps {
		d := w.Steps[len(w.Steps)-1-k]
		states = append(states, record(d, len(states), true))
	}
	// The undo being claimed: the active record, in the due index.
	active := &states[len(states)-1]
	active.ProcessState, active.AlertPending, active.AlertKind = order.Processing, true, order.AlertUndoTimedOut
	active.UpdatedAt = active.CompleteBy.Add(-resources.AgentTimeout)
	return o, states, order.NewRequest(o, *active)
}

// queue records the messages sent to it.
type queue struct{ sent []*awssqs.SendMessageInput }

func (q *queue) SendMessage(_ context.Context, in *awssqs.SendMessageInput, _ ...func(*awssqs.Options)) (*awssqs.SendMessageOutput, error) {
	q.sent = append(q.sent, in)
	return &awssqs.SendMessageOutput{}, nil
}

func (q *queue) GetQueueAttributes(context.Context, *awssqs.GetQueueAttributesInput, ...func(*awssqs.Options)) (*awssqs.GetQueueAttributesOutput, error) {
	return &awssqs.GetQueueAttributesOutput{}, nil
}

// messageSize is the size SQS counts of req as the adapter sends it: the
// body, and each attribute's name, type and value.
func messageSize(t *testing.T, req order.StepRequest) int {
	t.Helper()
	q := &queue{}
	if err := sqs.NewRequests(q, map[string]string{"a": "url"}).SendRequest(t.Context(), "a", req); err != nil {
		t.Fatal(err)
	}
	in := q.sent[0]
	n := len(*in.MessageBody)
	for name, a := range in.MessageAttributes {
		n += len(name) + len(*a.DataType) + len(*a.StringValue)
	}
	return n
}

// table records the item put in it.
type table struct {
	dynamo.Client
	item map[string]types.AttributeValue
}

func (tb *table) PutItem(_ context.Context, in *dynamodb.PutItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.PutItemOutput, error) {
	tb.item = in.Item
	return &dynamodb.PutItemOutput{}, nil
}

// storedItem is the order item as the DynamoDB adapter writes it, with the
// attributes only later writes set at their largest.
func storedItem(t *testing.T, o order.Order, states []order.StepState) map[string]types.AttributeValue {
	t.Helper()
	tb := &table{}
	if _, err := dynamo.NewStore(tb, "orders").As("operator redrive").CreateOrder(t.Context(), o, states); err != nil {
		t.Fatal(err)
	}
	n := func(v int64) types.AttributeValue { return &types.AttributeValueMemberN{Value: fmt.Sprint(v)} }
	later := map[string]types.AttributeValue{
		resources.AttrExpiresAt: n(o.CreatedAt.Add(resources.DefaultRetention).Unix()),
		resources.AttrInError:   &types.AttributeValueMemberS{Value: "9"}, resources.AttrInErrorSince: n(o.CreatedAt.UnixMilli()),
		resources.AttrEnded: n(o.CreatedAt.UnixMilli()), resources.AttrOutcome: &types.AttributeValueMemberS{Value: string(order.StatusError)},
		"Cancel": &types.AttributeValueMemberBOOL{Value: true}, "UndoFloor": n(999_999),
		"Parked": &types.AttributeValueMemberS{Value: o.Version},
		"By":     &types.AttributeValueMemberS{Value: "scheduler scheduler/2025/03/14/[$LATEST]0123456789abcdef0123456789abcdef/ABCDEFGH"},
	}
	for name, v := range later {
		tb.item[name] = v
	}
	return tb.item
}
