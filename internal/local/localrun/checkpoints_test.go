package localrun

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// Finding of the reliability review: the local stream poller started from
// the oldest record on every restart, so a restart after 1,000 orders made
// thousands of failed conditional writes and a larger history stalled new
// work for minutes. With checkpoints it resumes where it stopped.
func TestStreamPollerResumesFromItsCheckpoints(t *testing.T) {
	dir := t.TempDir()
	store, err := NewFileCheckpoints(filepath.Join(dir, "stream.json"), testStreamARN)
	if err != nil {
		t.Fatal(err)
	}
	// Before the restart: the closed parent was read to its end, and the
	// child up to record 4.
	if err := store.Save("parent", "2", true); err != nil {
		t.Fatal(err)
	}
	if err := store.Save("child", "4", false); err != nil {
		t.Fatal(err)
	}
	fake := &fakeStreams{shards: []*fakeShard{
		{id: "parent", closed: true, seqs: []int{1, 2}},
		{id: "child", parent: "parent", seqs: []int{3, 4, 5, 6}},
	}}
	reopened, err := NewFileCheckpoints(filepath.Join(dir, "stream.json"), testStreamARN)
	if err != nil {
		t.Fatal(err)
	}
	var inv invocations
	startStreamPoller(t, fake, StreamConfig{Checkpoints: reopened}, func(ctx context.Context, ev events.DynamoDBEvent) (events.DynamoDBEventResponse, error) {
		inv.record(ev)
		return events.DynamoDBEventResponse{}, nil
	})
	eventually(t, 10*time.Second, func() bool { return fake.emptyReadsOf("child") > 0 }, func() string { return fmt.Sprintf("child never read; invocations %v", inv.get()) })
	if got, want := inv.get(), [][]int{{5, 6}}; !slices.EqualFunc(got, want, slices.Equal) {
		t.Errorf("invocations %v, want %v: only what came after the checkpoints", got, want)
	}
	if got, want := fake.iteratorCalls(), []string{"child AFTER_SEQUENCE_NUMBER 4"}; !slices.Equal(got, want) {
		t.Errorf("GetShardIterator calls %q, want %q", got, want)
	}
	again, err := NewFileCheckpoints(filepath.Join(dir, "stream.json"), testStreamARN)
	if err != nil {
		t.Fatal(err)
	}
	if seq, finished := again.Load("child"); seq != "6" || finished {
		t.Errorf("child checkpoint %q (finished %v), want 6 saved to the file", seq, finished)
	}
}

func TestFileCheckpointsBelongToTheirStream(t *testing.T) {
	path := filepath.Join(t.TempDir(), "stream.json")
	old, err := NewFileCheckpoints(path, "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-01-01T00:00:00.000")
	if err != nil {
		t.Fatal(err)
	}
	if err := old.Save("s", "9", false); err != nil {
		t.Fatal(err)
	}
	// The table was deleted and created again: a new stream.
	fresh, err := NewFileCheckpoints(path, "arn:aws:dynamodb:us-east-1:000000000000:table/t/stream/2026-02-01T00:00:00.000")
	if err != nil {
		t.Fatal(err)
	}
	if seq, finished := fresh.Load("s"); seq != "" || finished {
		t.Errorf("a new stream got the old stream's checkpoint %q (finished %v), want none", seq, finished)
	}
}
