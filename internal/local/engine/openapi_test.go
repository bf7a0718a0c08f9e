package engine_test

import (
	"bytes"
	"io"
	"net/http"
	"testing"

	"orderly/internal/actor/api/openapi"
	"orderly/internal/order"
	"orderly/internal/testkit/ordertest"
)

// The local API serves its OpenAPI description; the gateway still answers
// every other path.
func TestServesItsOpenAPIDescription(t *testing.T) {
	t.Parallel()
	e := start(t, nil)
	resp, err := http.Get(e.URL() + "/openapi.json")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" || !bytes.Equal(body, openapi.JSON(ordertest.Built(order.DefaultTiming))) {
		t.Errorf("GET /openapi.json: %d %s, %d bytes; want the document", resp.StatusCode, resp.Header.Get("Content-Type"), len(body))
	}
	if resp, err := http.Post(e.URL()+"/openapi.json", "application/json", nil); err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("POST /openapi.json: %v, %v; want the gateway's 404", resp.StatusCode, err)
	}
}
