package loadgen

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"orderly/internal/order"
)

func TestNewClientRefuses(t *testing.T) {
	tests := []struct {
		name           string
		url, path      string
		body           string
		wantInErr      []string
		wantNotInError string
	}{
		{"not http", "ftp://127.0.0.1:8080", "/orders", DefaultBody, []string{`url "ftp://127.0.0.1:8080"`}, "path"},
		{"no host", "http://", "/orders", DefaultBody, []string{"url"}, "path"},
		{"a query", "http://127.0.0.1:8080?x=1", "/orders", DefaultBody, []string{"no query"}, "path"},
		{"relative path", "http://127.0.0.1:8080", "orders", DefaultBody, []string{`path "orders"`}, "url"},
		{"body not JSON", "http://127.0.0.1:8080", "/orders", `{"customerId":`, []string{"body: want one JSON object"}, "url"},
		{"body an array", "http://127.0.0.1:8080", "/orders", `[{"customerId":"c"}]`, []string{"body: want one JSON object"}, "url"},
		{"body null", "http://127.0.0.1:8080", "/orders", `null`, []string{"body: want one JSON object", "got null"}, "url"},
		{"every problem at once", "ftp://x", "orders", `[]`, []string{"url", "path", "body"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := NewClient(tt.url, tt.path, []byte(tt.body), nil, 1)
			if err == nil {
				t.Fatalf("NewClient = %+v, nil; want an error", c)
			}
			for _, want := range tt.wantInErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("NewClient error = %q, want it to contain %q", err, want)
				}
			}
			if tt.wantNotInError != "" && strings.Contains(err.Error(), tt.wantNotInError) {
				t.Errorf("NewClient error = %q, want nothing about %s", err, tt.wantNotInError)
			}
		})
	}
}

func TestClientAnswers(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		answer     string
		wantID     string
		wantSeen   Seen
		wantErrHas string // "" for no error
	}{
		{"accepted", http.StatusAccepted, `{"orderId":"O1","status":"Pending"}`, "O1", Seen{Status: order.StatusPending}, ""},
		{"refused, the problem quoted", http.StatusBadRequest, `{"error":"invalid_request","fields":[{"field":"lines"}]}`, "", Seen{}, `answered 400 Bad Request: {"error":"invalid_request"`},
		{"a server error", http.StatusInternalServerError, ``, "", Seen{}, "answered 500 Internal Server Error: (no body)"},
		{"202 without an id", http.StatusAccepted, `{"status":"Pending"}`, "", Seen{}, "answered 202 without an orderId"},
		{"200, not 202", http.StatusOK, `{"orderId":"O1"}`, "", Seen{}, "answered 200 OK"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.answer)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL, "/workflows/checkout/orders", []byte(`{"customerId":"c"}`), nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			id, err := c.Submit(context.Background(), "k-1")
			if got := errText(err); id != tt.wantID || !containsOrEmpty(got, tt.wantErrHas) {
				t.Errorf("Submit = %q, %q; want %q and an error holding %q", id, got, tt.wantID, tt.wantErrHas)
			}
			if err != nil && !strings.Contains(err.Error(), "POST /workflows/checkout/orders") {
				t.Errorf("Submit error = %q, want it to name the route", err)
			}
		})
	}
}

func TestClientReadsOrders(t *testing.T) {
	tests := []struct {
		name       string
		status     int
		answer     string
		want       order.Status
		wantErrHas string
	}{
		{"terminal", http.StatusOK, `{"orderId":"O1","status":"Processed","updatedAt":"2026-11-25T10:00:00.123Z"}`, order.StatusProcessed, ""},
		{"moving", http.StatusOK, `{"orderId":"O1","status":"Compensating","updatedAt":"2026-11-25T10:00:00.123Z"}`, order.StatusCompensating, ""},
		{"not found", http.StatusNotFound, `{"error":"not_found"}`, "", "GET /orders/O1 answered 404 Not Found"},
		{"no status", http.StatusOK, `{"orderId":"O1"}`, "", "answered 200 without a status"},
		{"not JSON", http.StatusOK, `<html>`, "", "answered 200 without a status: <html>"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.Method != http.MethodGet || r.URL.Path != "/orders/O1" {
					t.Errorf("request %s %s, want GET /orders/O1", r.Method, r.URL.Path)
				}
				w.WriteHeader(tt.status)
				fmt.Fprint(w, tt.answer)
			}))
			defer srv.Close()
			c, err := NewClient(srv.URL+"/", DefaultPath, []byte(DefaultBody), nil, 1)
			if err != nil {
				t.Fatal(err)
			}
			seen, err := c.Order(context.Background(), "O1")
			if got := errText(err); seen.Status != tt.want || !containsOrEmpty(got, tt.wantErrHas) {
				t.Errorf("Order = %q, %q; want %q and an error holding %q", seen.Status, got, tt.want, tt.wantErrHas)
			}
			if err == nil && seen.UpdatedAt.UnixMilli()%1000 != 123 {
				t.Errorf("Order updatedAt = %v, want the answer's, .123", seen.UpdatedAt)
			}
		})
	}
}

func TestReachable(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	c, err := NewClient(srv.URL, DefaultPath, []byte(DefaultBody), nil, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Reachable(context.Background()); err != nil {
		t.Errorf("Reachable with a server answering 404 = %v, want nil: any answer will do", err)
	}
	srv.Close()
	if err := c.Reachable(context.Background()); err == nil || !strings.Contains(err.Error(), "nothing answers at "+srv.URL) {
		t.Errorf("Reachable with the server closed = %v, want nothing answers at %s", err, srv.URL)
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// containsOrEmpty: both empty (no error wanted, none got), or got holds
// want.
func containsOrEmpty(got, want string) bool {
	if want == "" {
		return got == ""
	}
	return strings.Contains(got, want)
}
