package provision_test

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"orderly/internal/order"
	"orderly/internal/ordertest"
	"orderly/internal/provision"
	"orderly/internal/resources"
	"orderly/internal/testenv"
)

// A stage made by an older version, whose tables lack an index declared
// since, gets the index when provisioned again: `make run` keeps its
// tables across upgrades.
func TestProvisionAddsIndexesAnOlderVersionLacks(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	cfg := testenv.AWS(t)
	clients := testenv.Clients(cfg)
	cat := resources.New(testenv.Stage(t), ordertest.OrderWorkflow(order.DefaultTiming).Agents())
	old := cat
	old.History.Indexes = nil
	stack, err := provision.Create(context.Background(), clients, old)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { testenv.Cleanup(t, clients, stack) })
	if _, err := provision.Create(context.Background(), clients, cat); err != nil {
		t.Fatalf("provision again: %v", err)
	}
	out, err := clients.DynamoDB.DescribeTable(context.Background(), &dynamodb.DescribeTableInput{TableName: aws.String(cat.History.Name)})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(out.Table.GlobalSecondaryIndexes); n != 1 || aws.ToString(out.Table.GlobalSecondaryIndexes[0].IndexName) != resources.AlertIndexName ||
		out.Table.GlobalSecondaryIndexes[0].IndexStatus != "ACTIVE" {
		t.Errorf("history table's indexes after the upgrade: %+v, want %s, active", out.Table.GlobalSecondaryIndexes, resources.AlertIndexName)
	}
	// Both tables expire items by their ExpiresAt (retention).
	for _, table := range cat.Tables() {
		ttl, err := clients.DynamoDB.DescribeTimeToLive(context.Background(), &dynamodb.DescribeTimeToLiveInput{TableName: aws.String(table.Name)})
		if err != nil {
			t.Fatal(err)
		}
		if d := ttl.TimeToLiveDescription; d == nil || aws.ToString(d.AttributeName) != resources.AttrExpiresAt || d.TimeToLiveStatus != dbtypes.TimeToLiveStatusEnabled {
			t.Errorf("table %s TTL %+v, want enabled on %s", table.Name, d, resources.AttrExpiresAt)
		}
	}
}
