package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// api answers POST with refuse (400) or 202 and a new id, and shows every
// order Processed.
func api(t *testing.T, refuse bool) *httptest.Server {
	var n atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("GET /openapi.json", func(w http.ResponseWriter, r *http.Request) {})
	mux.HandleFunc("POST /", func(w http.ResponseWriter, r *http.Request) {
		if refuse {
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprint(w, `{"error":"invalid_request","message":"the request has invalid fields"}`)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		fmt.Fprintf(w, `{"orderId":"O%d","status":"Pending"}`, n.Add(1))
	})
	mux.HandleFunc("GET /orders/{id}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"orderId":%q,"status":"Processed","updatedAt":%q}`, r.PathValue("id"), time.Now().UTC().Format(time.RFC3339Nano))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestRun(t *testing.T) {
	good, refusing := api(t, false), api(t, true)
	closed := httptest.NewServer(http.NotFoundHandler())
	closed.Close()
	body := filepath.Join(t.TempDir(), "order.json")
	if err := os.WriteFile(body, []byte(`{"customerId":"c-1","card":"4242"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	small := []string{"-orders", "5", "-clients", "2", "-sequential", "2", "-poll-every", "2ms", "-max-slowdown", "1000000"}
	tests := []struct {
		name      string
		args      []string
		wantErr   string // "" for none
		wantTable string
		wantJSON  bool
	}{
		{"a table", append([]string{"-url", good.URL}, small...), "", "no problems", false},
		{"JSON, a body of one's own", append([]string{"-url", good.URL, "-json", "-body", body, "-path", "/workflows/checkout/orders"}, small...), "", "", true},
		{"refused orders fail the run", append([]string{"-url", refusing.URL, "-max-failures", "1"}, small...), "problems (1), the first: sequential before: 2 of 2 submissions failed", "problems:", false},
		{"nothing listening", []string{"-url", closed.URL}, "is `make run` running in another shell?", "", false},
		{"a body file missing", []string{"-url", good.URL, "-body", filepath.Join(t.TempDir(), "none.json")}, "read -body", "", false},
		{"a body that is not JSON", []string{"-url", good.URL, "-body", "main.go"}, "body: want one JSON object", "", false},
		{"bad settings, all named", []string{"-orders", "-1", "-sequential", "-1"}, "orders: got -1, want 0 or more\nsequential: got -1", "", false},
		{"a stray argument", []string{"now"}, `unexpected arguments ["now"]`, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(tt.args, &out, slog.New(slog.NewJSONHandler(io.Discard, nil)))
			if got := fmt.Sprint(err); (tt.wantErr == "") != (err == nil) || !strings.Contains(got, tt.wantErr) {
				t.Fatalf("run error = %v, want %q", err, tt.wantErr)
			}
			if !strings.Contains(out.String(), tt.wantTable) {
				t.Errorf("run printed\n%s\nwant %q", out.String(), tt.wantTable)
			}
			if tt.wantJSON {
				var r struct {
					Path  string `json:"path"`
					Burst struct {
						Terminal int `json:"terminal"`
					} `json:"burst"`
					Problems []string `json:"problems"`
				}
				if err := json.Unmarshal(out.Bytes(), &r); err != nil {
					t.Fatalf("run printed %s, not JSON: %v", out.String(), err)
				}
				if r.Path != "/workflows/checkout/orders" || r.Burst.Terminal != 5 || len(r.Problems) != 0 {
					t.Errorf("report %+v, want 5 orders on /workflows/checkout/orders terminal and no problems", r)
				}
			}
		})
	}
}
