package resources_test

import (
	"reflect"
	"regexp"
	"strings"
	"testing"

	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
)

func TestCatalog(t *testing.T) {
	c := resources.New("prod", ordertest.OrderWorkflow(order.DefaultTiming).Agents())
	queues := []resources.Queue{c.ResponseQueue}
	for _, agent := range []string{ordertest.AgentInventory, ordertest.AgentPayment, ordertest.AgentShipping} {
		q, ok := c.RequestQueues[agent]
		if !ok {
			t.Fatalf("no request queue for agent %s", agent)
		}
		queues = append(queues, q)
	}
	for _, q := range queues {
		if q.VisibilityTimeout < resources.VisibilityFactor*q.ConsumerTimeout {
			t.Errorf("queue %s: visibility %s is under %d× its consumer's timeout %s", q.Name, q.VisibilityTimeout, resources.VisibilityFactor, q.ConsumerTimeout)
		}
		if q.MaxReceiveCount != 5 || q.DeadLetterName != q.Name+"-dlq" {
			t.Errorf("queue %s: got redrive after %d receives to %q, want 5 to %s-dlq", q.Name, q.MaxReceiveCount, q.DeadLetterName, q.Name)
		}
		if !strings.HasPrefix(q.Name, "orderly-prod-") {
			t.Errorf("queue %s: want the orderly-prod- prefix", q.Name)
		}
	}
	// Agents wait for remote services up to the largest allowance.
	if d := order.DefaultTiming; resources.AgentTimeout <= d.MaxAllowance {
		t.Errorf("agent timeout %s does not cover the largest allowance %s", resources.AgentTimeout, d.MaxAllowance)
	}
	want := []resources.Index{
		{Name: resources.DueIndexName, PartitionKey: resources.Key{Name: resources.AttrDueShard, Type: resources.String},
			SortKey: resources.Key{Name: resources.AttrDueAt, Type: resources.Number}, Projection: resources.ProjectKeysOnly},
		{Name: resources.ErrorIndexName, PartitionKey: resources.Key{Name: resources.AttrInError, Type: resources.String},
			SortKey: resources.Key{Name: resources.AttrInErrorSince, Type: resources.Number}, Projection: resources.ProjectKeysOnly},
		{Name: resources.CreatedIndexName, PartitionKey: resources.Key{Name: resources.AttrListed, Type: resources.String},
			SortKey: resources.Key{Name: resources.AttrCreated, Type: resources.Number}, Projection: resources.ProjectInclude,
			NonKey: []string{resources.AttrCaller, resources.AttrCustomer, resources.AttrWorkflow, resources.AttrVersion, resources.AttrOutcome, resources.AttrEnded}},
		{Name: resources.EndedIndexName, PartitionKey: resources.Key{Name: resources.AttrListed, Type: resources.String},
			SortKey: resources.Key{Name: resources.AttrEnded, Type: resources.Number}, Projection: resources.ProjectInclude,
			NonKey: []string{resources.AttrCaller, resources.AttrCustomer, resources.AttrWorkflow, resources.AttrVersion, resources.AttrOutcome, resources.AttrCreated}},
	}
	if ix := c.Orders.Indexes; !reflect.DeepEqual(ix, want) {
		t.Errorf("got indexes %+v, want the sparse, keys-only due and error indexes and the two search indexes %+v", ix, want)
	}
	if !c.Orders.Stream || len(c.Orders.StreamFilter.Present) == 0 {
		t.Errorf("got stream %v with filter %+v, want the orders table streamed and filtered", c.Orders.Stream, c.Orders.StreamFilter)
	}
	if got := c.Tables(); len(got) != 2 || got[0].Name != c.Orders.Name || got[1].Name != c.History.Name {
		t.Errorf("got tables %+v, want the orders table and the history table", got)
	}
	if h := c.History; h.Stream || h.SortKey == nil || h.SortKey.Name != resources.AttrSeq || h.PartitionKey.Name != resources.AttrOrderID {
		t.Errorf("got history table %+v, want keyed by order and sequence, not streamed", h)
	}
	// Lambda takes variable names of letters, digits and "_" only; a
	// service's name may hold "-".
	for agent, want := range map[string]string{"payment": "REQUEST_QUEUE_URL_PAYMENT", "payment-gateway": "REQUEST_QUEUE_URL_PAYMENT_GATEWAY"} {
		if got := resources.EnvRequestQueueURL(agent); got != want || !regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9_]+$`).MatchString(got) {
			t.Errorf("EnvRequestQueueURL(%s) = %s, want %s", agent, got, want)
		}
	}
}
