package engine_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
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
// even from a service that echoes it, or the token in it, in every answer:
// not in a log line, an order's view or reason, its history (through the
// API and in the table), its status events or an item. Payment takes the
// header ("Bearer " and a token) from a real secret (the emulator's),
// answers a first try 500 (with the key and the token as is and
// URL-escaped), then charges (with the token base64-encoded in the
// charge's id) or declines (with the key, and the token JSON-escaped and
// base64-encoded, in the refusal), which undoes the reservation.
func TestNoSecretValueInAnyOutput(t *testing.T) {
	t.Parallel()
	core := rand.Text()
	// Characters that each escaping writes differently.
	token := "sk_live_" + core + "/+<&>="
	secret := "Bearer " + token
	name := "orderly-" + testenv.Stage(t) + "-payment-api-key"
	testenv.Secret(t, testenv.AWS(t), name, secret)
	jsonEscaped, _ := json.Marshal(token)
	forms := map[string]string{
		"the secret": secret, "the token": token, "the token's random part": core,
		"the token URL-escaped": url.QueryEscape(token), "the token path-escaped": url.PathEscape(token),
		"the token JSON-escaped":      strings.Trim(string(jsonEscaped), `"`),
		"the token in base64":         base64.StdEncoding.EncodeToString([]byte(token)),
		"the token in URL base64":     base64.URLEncoding.EncodeToString([]byte(token)),
		"the token in raw base64":     base64.RawStdEncoding.EncodeToString([]byte(token)),
		"the token in raw URL base64": base64.RawURLEncoding.EncodeToString([]byte(token)),
	}

	var mu sync.Mutex
	tried := map[string]bool{}
	var withoutKey int
	pay := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		key := r.Header.Get("Authorization")
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
			fmt.Fprintf(w, "upstream down while checking key %s: token %s (%s, %s)", key, token,
				forms["the token URL-escaped"], forms["the token path-escaped"])
		case r.URL.Path == "/payment/charges" && bytes.Contains(body, []byte("DECLINE")):
			w.WriteHeader(http.StatusUnprocessableEntity)
			fmt.Fprintf(w, `{"error": "card declined for merchant key %s: token %s (%s, %s, %s)"}`, key,
				forms["the token JSON-escaped"], forms["the token in base64"], forms["the token in raw base64"], forms["the token in raw URL base64"])
		default:
			w.WriteHeader(http.StatusCreated)
			fmt.Fprintf(w, `{"id": "ch_%s"}`, forms["the token in URL base64"])
		}
	}))
	defer pay.Close()

	var logs testenv.JSONLines
	e := start(t, func(c *engine.Config) {
		c.Log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
		c.Services = services.Config{ordertest.AgentPayment: {URL: pay.URL,
			Auth: services.Auth{Type: services.AuthHeader, Header: "Authorization", Secret: name}}}
	})
	charged, declined := submit(t, e, lines("BOOK-1")), submit(t, e, lines("DECLINE-1"))
	for id, want := range map[string]order.Status{charged: order.StatusProcessed, declined: order.StatusFailed} {
		if v := await(t, e, id, 60*time.Second); v.Status != want {
			t.Fatalf("order %s: %s, want %s: %s", id, v.Status, want, testenv.Describe(v))
		}
	}

	outputs := map[string]string{}
	events := &statusEvents{seen: map[string][]order.StatusChange{}}
	for id, n := range map[string]int{charged: 3, declined: 4} {
		raw, _ := json.Marshal(events.await(t, e, id, n, 30*time.Second))
		outputs["status events of "+id] = string(raw)
	}
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

	if !strings.Contains(outputs["view of "+declined], "card declined for merchant key [redacted]: token [redacted]") {
		t.Errorf("the declined order's view does not give the service's reason, scrubbed: %s", outputs["view of "+declined])
	}
	for what, out := range outputs {
		for form, value := range forms {
			if strings.Contains(out, value) {
				t.Errorf("the %s carries %s:\n%s", what, form, out)
			}
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
