package main

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// fakeDynamoDB answers DynamoDB's JSON protocol over HTTP as a stage with
// no orders would, with alerts in its alert index, or, with missing, as
// a region without the stage's tables. It records the tables asked for.
type fakeDynamoDB struct {
	missing bool
	// alerts are the alert index's items of the first day asked for,
	// newest first.
	alerts []order.Alert

	mu     sync.Mutex
	tables []string
	today  string
}

func (f *fakeDynamoDB) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// DynamoDB's client checks each answer against its CRC32.
	rec := httptest.NewRecorder()
	f.answer(rec, r)
	body := rec.Body.Bytes()
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", fmt.Sprint(crc32.ChecksumIEEE(body)))
	w.WriteHeader(rec.Code)
	w.Write(body)
}

func (f *fakeDynamoDB) answer(w http.ResponseWriter, r *http.Request) {
	var req struct {
		TableName                 string
		IndexName                 string
		Limit                     int
		ExclusiveStartKey         map[string]map[string]string
		ExpressionAttributeValues map[string]map[string]string
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tables = append(f.tables, req.TableName)
	if f.missing {
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprint(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ResourceNotFoundException","message":"Requested resource not found"}`)
		return
	}
	switch op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."); {
	case op == "GetItem":
		fmt.Fprint(w, `{}`)
	case op == "Query" && req.IndexName == resources.AlertIndexName:
		f.alertPage(w, req.ExpressionAttributeValues[":day"]["S"], req.ExclusiveStartKey["pos"]["N"], req.Limit)
	case op == "Query":
		fmt.Fprint(w, `{"Count":0,"ScannedCount":0,"Items":[]}`)
	default:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"__type":"com.amazonaws.dynamodb.v20120810#ValidationException","message":"%s is not faked"}`, op)
	}
}

// alertPage answers a page of the alert index: up to limit items from
// position from.
func (f *fakeDynamoDB) alertPage(w http.ResponseWriter, day, from string, limit int) {
	if f.today == "" {
		f.today = day
	}
	var page []order.Alert
	pos := 0
	if day == f.today {
		fmt.Sscan(from, &pos)
		page = f.alerts[pos:min(pos+limit, len(f.alerts))]
	}
	items := make([]map[string]any, len(page))
	for i, a := range page {
		items[i] = map[string]any{
			"OrderID": map[string]string{"S": a.OrderID},
			"Seq":     map[string]string{"S": fmt.Sprint(pos + i)},
			"Alert": map[string]any{"M": map[string]any{
				"Kind":    map[string]string{"S": string(a.Kind)},
				"OrderID": map[string]string{"S": a.OrderID},
				"At":      map[string]string{"S": a.At.Format(time.RFC3339Nano)},
			}},
		}
	}
	resp := map[string]any{"Count": len(items), "ScannedCount": len(items), "Items": items}
	if next := pos + len(page); next < len(f.alerts) && len(page) > 0 {
		resp["LastEvaluatedKey"] = map[string]any{"pos": map[string]string{"N": fmt.Sprint(next)}}
	}
	json.NewEncoder(w).Encode(resp)
}

func (f *fakeDynamoDB) asked() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Compact(slices.Clone(f.tables))
}

// withDynamoDB points the SDK at fake, with credentials and a region.
func withDynamoDB(t *testing.T, fake *fakeDynamoDB) {
	t.Helper()
	noAWS(t)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
}

// A stage whose tables are not there is named, with the table, and how
// to pick another; exit 1, one line.
func TestMissingTableNamesTheStage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--stage", "prod", "list", "--status", "Error"}, `orderly: stage "prod": table orderly-prod-orders not found in us-east-1: --stage or ORDERLY_STAGE picks the stage`},
		{[]string{"show", "X", "-o", "json", "-stage", "qa"}, `orderly: stage "qa": table orderly-qa-orders not found in us-east-1`},
		{[]string{"alerts", "--stage", "qa"}, `orderly: stage "qa": table orderly-qa-history not found in us-east-1`},
	}
	for _, tt := range tests {
		withDynamoDB(t, &fakeDynamoDB{missing: true})
		stdout, stderr, code := cli(t, tt.args...)
		if code != 1 || stdout != "" || !strings.HasPrefix(stderr, tt.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 1 and one line starting %q", tt.args, code, stdout, stderr, tt.want)
		}
	}
	t.Setenv(envStage, "staging")
	if _, stderr, _ := cli(t, "versions"); !strings.Contains(stderr, `stage "staging": table orderly-staging-orders not found`) {
		t.Errorf("with %s=staging: %s", envStage, stderr)
	}
}

// -o json, wherever it is written, prints JSON a script reads; an empty
// list is [], not null. Text is the default.
func TestJSONOutput(t *testing.T) {
	tests := []struct {
		args []string
		// want is the JSON's start; text, a line of the table.
		want string
	}{
		{[]string{"list", "--status", "Error", "-o", "json"}, "[]\n"},
		{[]string{"-o", "json", "list"}, "[]\n"},
		{[]string{"alerts", "--output=json", "--kind", "UndoFailed"}, "[]\n"},
		{[]string{"versions", "-o", "json"}, `[
  {
    "workflow": "order",`},
		{[]string{"versions"}, "WORKFLOW  VERSION  IN FLIGHT  IN ERROR  IN THIS BUILD  REMOVABLE\norder     1"},
		{[]string{"list"}, "ORDER  STATUS  VERSION  RECORD  STATE  ATTEMPT  FAILURES  COMPLETE BY  LATE  LAST ERROR\n"},
	}
	for _, tt := range tests {
		fake := &fakeDynamoDB{}
		withDynamoDB(t, fake)
		stdout, stderr, code := cli(t, tt.args...)
		if code != 0 || stderr != "" || !strings.HasPrefix(stdout, tt.want) {
			t.Errorf("%q: exit %d, stderr %q, stdout:\n%s\nwant it to start\n%s", tt.args, code, stderr, stdout, tt.want)
		}
		if strings.HasPrefix(tt.want, "[") && !json.Valid([]byte(stdout)) {
			t.Errorf("%q: not JSON:\n%s", tt.args, stdout)
		}
	}
}

// alerts --kind keeps the kind before --max counts: the newest alerts of
// other kinds do not crowd out those asked for.
func TestAlertsKindBeforeMax(t *testing.T) {
	now := time.Now().UTC()
	var alerts []order.Alert
	for i, k := range []order.AlertKind{order.AlertStepFailed, order.AlertStepFailed, order.AlertStepFailed, order.AlertUndoFailed,
		order.AlertStepFailed, order.AlertUndoFailed, order.AlertUndoFailed, order.AlertStepTimedOut} {
		alerts = append(alerts, order.Alert{Kind: k, OrderID: fmt.Sprint("o", i), At: now.Add(-time.Duration(i) * time.Second)})
	}
	fake := &fakeDynamoDB{alerts: alerts}
	withDynamoDB(t, fake)
	stdout, stderr, code := cli(t, "alerts", "-kind", "UndoFailed", "-max", "2", "-o", "json")
	var got []order.Alert
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	var ids []string
	for _, a := range got {
		ids = append(ids, a.OrderID)
	}
	if want := []string{"o3", "o5"}; !slices.Equal(ids, want) {
		t.Errorf("alerts --kind UndoFailed --max 2: %v, want %v", ids, want)
	}
	if tables := fake.asked(); !slices.Equal(tables, []string{"orderly-local-history"}) {
		t.Errorf("read %v, want the local stage's history", tables)
	}
}
