package localrun

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Checkpoints remembers, per shard of one stream, the last record the
// handler finished with and whether the shard was read to its end, so a
// restarted poller resumes where it stopped instead of replaying the
// stream from its oldest record, as Lambda's event source mapping does.
type Checkpoints interface {
	Load(shardID string) (sequenceNumber string, finished bool)
	Save(shardID, sequenceNumber string, finished bool) error
}

// FileCheckpoints keeps checkpoints in a JSON file. The file names the
// stream it belongs to: a file left by another stream (a table deleted and
// created again has a new stream) is ignored and overwritten.
type FileCheckpoints struct {
	path      string
	streamARN string

	mu     sync.Mutex
	shards map[string]fileCheckpoint
}

type fileCheckpoint struct {
	SequenceNumber string `json:"sequenceNumber,omitempty"`
	Finished       bool   `json:"finished,omitempty"`
}

type checkpointFile struct {
	StreamARN string                    `json:"streamArn"`
	Shards    map[string]fileCheckpoint `json:"shards"`
}

// NewFileCheckpoints reads the checkpoints of streamARN from path, if it
// holds them; a missing file is an empty start.
func NewFileCheckpoints(path, streamARN string) (*FileCheckpoints, error) {
	c := &FileCheckpoints{path: path, streamARN: streamARN, shards: map[string]fileCheckpoint{}}
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read stream checkpoints: %w", err)
	}
	var f checkpointFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("read stream checkpoints %s: %w", path, err)
	}
	if f.StreamARN == streamARN && f.Shards != nil {
		c.shards = f.Shards
	}
	return c, nil
}

// Load returns a shard's checkpoint; "" and false when there is none.
func (c *FileCheckpoints) Load(shardID string) (string, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cp := c.shards[shardID]
	return cp.SequenceNumber, cp.Finished
}

// Save records a shard's checkpoint and writes the file, whole, through a
// temporary file and a rename, so a crash leaves the old or the new one.
func (c *FileCheckpoints) Save(shardID, sequenceNumber string, finished bool) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shards[shardID] = fileCheckpoint{SequenceNumber: sequenceNumber, Finished: finished}
	data, err := json.MarshalIndent(checkpointFile{StreamARN: c.streamARN, Shards: c.shards}, "", "  ")
	if err != nil {
		return fmt.Errorf("encode stream checkpoints: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(c.path), 0o755); err != nil {
		return fmt.Errorf("write stream checkpoints: %w", err)
	}
	tmp := c.path + ".tmp"
	if err := os.WriteFile(tmp, data, 0o644); err != nil {
		return fmt.Errorf("write stream checkpoints: %w", err)
	}
	if err := os.Rename(tmp, c.path); err != nil {
		return fmt.Errorf("write stream checkpoints: %w", err)
	}
	return nil
}
