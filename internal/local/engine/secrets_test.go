package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"orderly/internal/adapter/services"
	"orderly/internal/local/engine"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// A service's secret header value appears in no output of the engine,
// even from a service that echoes it in every answer: not in a log line,
// an order's view or reason, its history (through the API and in the
// table) or an item. Payment takes the header from a real secret (the
// emulator's), answers a first try 500, then charges (with the key in the
// charge's id) or declines (with the key in the refusal), which undoes
// the reservation.
func TestNoSecretValueInAnyOutput(t *testing.T) {
	t.Parallel()
	secret := "sk_live_" + rand.Text()
	name := "orderly-" + testenv.Stage(t) + "-payment-api-key"
	testenv.Secret(t, testenv.AWS(t), name, secret)

	var mu sync.Mutex
	tried := map[string]bool{}
	var withoutKey int
	pay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("X-Api-Key")
		mu.Lock()
		first := !tried[r.URL.Path+r.Header.Get("Idempotency-Key")]
		tried[r.URL.Path+r.Header.Get("Idempotency-Key")] = true
		if key != secret {
			withoutKey++
		}
		mu.Unlock()
		switch {
		case key != secret:
			w.WriteHeader(http.StatusUnauthorized)
			fmt.Fprintf(w, `{"error": "key %s is not ours"}`, key)
		case first:
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, "upstream down while checking key %s", key)
		case r.URL.Path == "/payment/charges" && bytes.Contains(body, []byte("DECLINE")):
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"error": "card declined for merchant key %s"}`, key)
		default:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id": "ch_%s"}`, key)
		}
	}))
	defer pay.Close()

	var logs testenv.JSONLines
	e := start(t, func(c *engine.Config) {
		c.Log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Services = services.Config{ordertest.AgentPayment: {URL: pay.URL,
			Auth: services.Auth{Type: services.AuthHeader, Header: "X-Api-Key", Secret: name}}}
	})
	charged, declined := submit(t, e, lines("BOOK-1")), submit(t, e, lines("DECLINE-1"))
	for id, want := range map[string]order.Status{charged: order.StatusProcessed, declined: order.StatusFailed} {
		if v := await(t, e, id, 60*time.Second); v.Status != want {
			t.Fatalf("order %s: %s, want %s: %s", id, v.Status, want, testenv.Describe(v))
		}
	}

	outputs := map[string]string{}
	for _, id := range []string{charged, declined} {
		outputs["view of "+id] = get(t, e, "/orders/"+id)
		outputs["operator's view of "+id] = get(t, e, "/ops/orders/"+id)
		// The recorder writes the history after the order's end.
		testenv.Eventually(t, 30*time.Second, func() (bool, string) {
			h := get(t, e, "/orders/"+id+"/history")
			outputs["history of "+id] = h
			return strings.Contains(h, `"to":"`+string(status(t, e, id).Status)+`"`), h
		})
		outputs["operator's history of "+id] = get(t, e, "/ops/orders/"+id+"/history")
	}
	for _, table := range []string{e.Stack.Catalog.Orders.Name, e.Stack.Catalog.History.Name} {
		outputs["table "+table] = scan(t, e.Clients().DynamoDB, table)
	}
	outputs["logs"] = logs.String()

	if !strings.Contains(outputs["view of "+declined], "card declined for merchant key [redacted]") {
		t.Errorf("the declined order's view does not give the service's reason, scrubbed: %s", outputs["view of "+declined])
	}
	for what, out := range outputs {
		if strings.Contains(out, secret) || strings.Contains(out, strings.TrimPrefix(secret, "sk_live_")) {
			t.Errorf("the %s carries the secret:\n%s", what, out)
		}
	}
	if withoutKey > 0 {
		t.Errorf("payment was called %d times without its key", withoutKey)
	}
}

// get returns an API answer's body.
func get(t *testing.T, e running, path string) string {
	t.Helper()
	resp, err := http.Get(e.URL() + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: status %d: %s", path, resp.StatusCode, body)
	}
	return string(body)
}

// scan returns every item of a table as JSON lines.
func scan(t *testing.T, db *dynamodb.Client, table string) string {
	t.Helper()
	var out strings.Builder
	p := dynamodb.NewScanPaginator(db, &dynamodb.ScanInput{TableName: aws.String(table)})
	for p.HasMorePages() {
		page, err := p.NextPage(context.Background())
		if err != nil {
			t.Fatalf("scan %s: %v", table, err)
		}
		for _, item := range page.Items {
			var m map[string]any
			if err := attributevalue.UnmarshalMap(item, &m); err != nil {
				t.Fatalf("scan %s: %v", table, err)
			}
			raw, _ := json.Marshal(m)
			out.Write(raw)
			out.WriteByte('\n')
		}
	}
	return out.String()
}
