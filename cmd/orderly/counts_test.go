package main

import (
	"encoding/json"
	"fmt"
	"hash/crc32"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"orderly/internal/order"
	"orderly/internal/resources"
)

// A bad filter is a usage error naming the flag, before any AWS call;
// counts has no --status (it counts every status) and takes no argument.
func TestCountsUsageErrors(t *testing.T) {
	noAWS(t)
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"counts", "--status", "Error"}, "unknown flag: --status"},
		{[]string{"counts", "--created-from", "soon"}, `--created-from "soon": want RFC 3339`},
		{[]string{"counts", "--ended-from", "2026-11-27", "--ended-to", "2026-11-26"}, "--ended-to: must be later than ended_from"},
		{[]string{"counts", "--customer", ""}, "--customer: must be 1 to"},
		{[]string{"counts", "--max-read", "0"}, "--max-read 0: want 1 or more"},
		{[]string{"counts", "stray"}, `unknown command "stray" for "orderly counts"`},
	} {
		stdout, stderr, code := cli(t, tt.args...)
		if code != 2 || stdout != "" || !strings.Contains(stderr, tt.want) || strings.Contains(stderr, "query parameter") {
			t.Errorf("%q: exit %d, stdout %q, stderr:\n%s\nwant exit 2 and %q, naming the flag", tt.args, code, stdout, stderr, tt.want)
		}
	}
}

// fakeSearchIndex answers a count as DynamoDB would over a table whose
// search indexes hold two orders, one Processed and one running (in
// Compensating, which its item tells); it records what each Query asked.
type fakeSearchIndex struct {
	mu      sync.Mutex
	indexes []string
	bounds  [][]int64 // each Query's numeric values: the window's bounds
}

func (f *fakeSearchIndex) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		IndexName                 string
		ExpressionAttributeValues map[string]map[string]string
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	body := `{"Count":0,"ScannedCount":0,"Items":[]}`
	switch op := strings.TrimPrefix(r.Header.Get("X-Amz-Target"), "DynamoDB_20120810."); op {
	case "Query":
		var bounds []int64
		for _, v := range req.ExpressionAttributeValues {
			if n, ok := v["N"]; ok {
				ms, _ := strconv.ParseInt(n, 10, 64)
				bounds = append(bounds, ms)
			}
		}
		slices.Sort(bounds)
		f.indexes, f.bounds = append(f.indexes, req.IndexName), append(f.bounds, bounds)
		if len(f.indexes) == 1 { // one shard holds both
			body = `{"Count":2,"ScannedCount":3,"Items":[
				{"OrderID":{"S":"RUNNINGORDERAAAAAAAAAAAAAA"},"Created":{"N":"1700000002000"}},
				{"OrderID":{"S":"DONEORDERAAAAAAAAAAAAAAAAA"},"Created":{"N":"1700000001000"},"Outcome":{"S":"Processed"}}]}`
		}
	case "BatchGetItem":
		body = `{"Responses":{"orderly-local-orders":[{"OrderID":{"S":"RUNNINGORDERAAAAAAAAAAAAAA"},"Status":{"S":"Compensating"}}]},"UnprocessedKeys":{}}`
	default:
		http.Error(w, op+" is not faked", http.StatusBadRequest)
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("X-Amz-Crc32", fmt.Sprint(crc32.ChecksumIEEE([]byte(body))))
	fmt.Fprint(w, body)
}

// counts prints every status's count, the running orders' as their items
// say, over the last 24 hours unless a time flag says otherwise; -o json
// prints order.Counts.
func TestCounts(t *testing.T) {
	day := time.Date(2026, 11, 26, 0, 0, 0, 0, time.UTC).UnixMilli()
	next := day + 24*time.Hour.Milliseconds()
	for _, tt := range []struct {
		name  string
		args  []string
		index string
		// bounds are the window's, as the Queries carry them (ms).
		bounds []int64
		want   string
	}{
		{"a day", []string{"counts", "--created-from", "2026-11-26", "--created-to", "2026-11-27"}, resources.CreatedIndexName, []int64{day, next - 1},
			"Orders created from 2026-11-26T00:00:00Z to 2026-11-27T00:00:00Z:\nSTATUS        ORDERS\nPending       0\nProcessing    0\nWaiting       0\nProcessed     1\nCompensating  1\n"},
		{"a created end alone: no default start", []string{"counts", "--created-to", "2026-11-27", "--customer", "c-1"}, resources.CreatedIndexName, []int64{next},
			"Orders created before 2026-11-27T00:00:00Z:\n"},
		{"an ended window", []string{"counts", "--ended-from", "2026-11-26"}, resources.EndedIndexName, []int64{day},
			"Orders ended from 2026-11-26T00:00:00Z on:\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			fake := withSearchIndex(t)
			stdout, stderr, code := cli(t, tt.args...)
			if code != 0 || stderr != "" || !strings.HasPrefix(stdout, tt.want) || !strings.Contains(stdout, "total         2\n") {
				t.Fatalf("exit %d, stderr %q, stdout:\n%s\nwant it to start\n%s", code, stderr, stdout, tt.want)
			}
			if len(fake.indexes) != resources.DueShards || fake.indexes[0] != tt.index || !slices.Equal(fake.bounds[0], tt.bounds) {
				t.Errorf("%d Queries of %v, the first's window %v; want one a shard (%d) of %s, window %v",
					len(fake.indexes), slices.Compact(fake.indexes), fake.bounds[0], resources.DueShards, tt.index, tt.bounds)
			}
		})
	}

	fake := withSearchIndex(t)
	before := time.Now().Add(-24 * time.Hour)
	stdout, stderr, code := cli(t, "counts", "-o", "json", "--max-read", "16")
	var got order.Counts
	if err := json.Unmarshal([]byte(stdout), &got); err != nil || code != 0 {
		t.Fatalf("counts -o json: exit %d, %v: %s%s", code, err, stdout, stderr)
	}
	want := map[order.Status]int{order.StatusProcessed: 1, order.StatusCompensating: 1}
	if !maps.Equal(got.ByStatus, want) || got.Total != 2 || got.By != order.WindowCreated || got.Evaluated != 3 || got.Partial {
		t.Errorf("counts -o json: %+v; want %v, 3 items evaluated", got, want)
	}
	if got.From.Before(before) || got.From.After(before.Add(time.Minute)) || len(fake.bounds[0]) != 1 || fake.bounds[0][0] != got.From.UnixMilli() {
		t.Errorf("counts with no time flag: from %v (the Query's %v), want the last 24 hours, from %v", got.From, fake.bounds[0], before)
	}
}

// withSearchIndex points the SDK at a fakeSearchIndex, with credentials
// and a region.
func withSearchIndex(t *testing.T) *fakeSearchIndex {
	t.Helper()
	noAWS(t)
	fake := &fakeSearchIndex{}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	t.Setenv("AWS_ENDPOINT_URL_DYNAMODB", srv.URL)
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	return fake
}
