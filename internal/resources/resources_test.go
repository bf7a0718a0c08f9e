package resources_test

import (
	"strings"
	"testing"

	"orderly/internal/order"
	"orderly/internal/resources"
)

func TestCatalog(t *testing.T) {
	c := resources.New("prod", order.OrderWorkflow(order.DefaultTiming).Agents())
	queues := []resources.Queue{c.ResponseQueue}
	for _, agent := range []string{order.AgentInventory, order.AgentPayment, order.AgentShipping} {
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
	ix := c.State.Indexes
	if len(ix) != 1 || ix[0].PartitionKey.Name != resources.AttrDueShard || ix[0].SortKey != (resources.Key{Name: resources.AttrCompleteBy, Type: resources.Number}) {
		t.Errorf("got state indexes %+v, want the sparse due index on DueShard, CompleteBy (number)", ix)
	}
	if !c.State.Stream || c.Orders.Stream {
		t.Errorf("got streams state=%v orders=%v, want only the state table streamed", c.State.Stream, c.Orders.Stream)
	}
	if got := resources.EnvRequestQueueURL("payment"); got != "REQUEST_QUEUE_URL_PAYMENT" {
		t.Errorf("got %s", got)
	}
}
