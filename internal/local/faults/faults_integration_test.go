package faults_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/local/faults"
	"orderly/internal/testkit/testenv"
)

// Each kind of fault, injected with certainty into a real SQS client's
// SendMessage, has the effect it promises on a real queue.
func TestEachFaultDoesWhatItSays(t *testing.T) {
	cfg := testenv.AWS(t)
	plain := awssqs.NewFromConfig(cfg)
	tests := []struct {
		kind      faults.Kind
		wantErr   bool
		wantSent  int // messages that reached the queue
		throttled bool
	}{
		{faults.Throttle, true, 0, true},
		{faults.Server, true, 0, false},
		{faults.Timeout, true, 0, false},
		{faults.Ambiguous, true, 1, false},
		{faults.Drop, false, 0, false},
		{faults.Duplicate, false, 2, false},
		{faults.Crash, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.kind), func(t *testing.T) {
			ctx := context.Background()
			q, err := plain.CreateQueue(ctx, &awssqs.CreateQueueInput{QueueName: aws.String(testenv.Stage(t) + "-faults")})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _, _ = plain.DeleteQueue(context.Background(), &awssqs.DeleteQueueInput{QueueUrl: q.QueueUrl}) })
			var logs bytes.Buffer
			in := faults.New(faults.Rates{tt.kind: 1}, 1, slog.New(slog.NewJSONHandler(&logs, nil)).With("service", "faults"))
			killed := 0
			faults.SetKill(in, func() { killed++ })
			c := awssqs.NewFromConfig(cfg, func(o *awssqs.Options) { o.APIOptions = append(o.APIOptions, in.AddTo) })

			_, sendErr := c.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("m")})
			err = sendErr
			if (err != nil) != tt.wantErr {
				t.Errorf("SendMessage error = %v, want an error: %v", err, tt.wantErr)
			}
			if tt.throttled && !retry.IsErrorThrottles(retry.DefaultThrottles).IsErrorThrottle(err).Bool() {
				t.Errorf("error %v is not recognised as throttling", err)
			}
			if tt.kind == faults.Timeout && !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("error %v does not say it timed out", err)
			}
			if tt.kind == faults.Crash && killed != 1 {
				t.Errorf("process killed %d times, want 1", killed)
			}
			// Receive until two receives in a row come back empty: one
			// receive may miss a message on a busy emulator.
			sent := 0
			for empty := 0; empty < 2; {
				got, err := plain.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: q.QueueUrl, MaxNumberOfMessages: 10, WaitTimeSeconds: 1})
				if err != nil {
					t.Fatal(err)
				}
				if sent += len(got.Messages); len(got.Messages) == 0 {
					empty++
				}
			}
			if sent != tt.wantSent {
				t.Errorf("%d messages reached the queue, want %d (SendMessage said: %v)", sent, tt.wantSent, sendErr)
			}
			// One JSON line, whose keys are not the logger's own again.
			var rec struct {
				Msg       string `json:"msg"`
				Service   string `json:"service"`
				Operation string `json:"operation"`
				Point     string `json:"point"`
			}
			line := logs.String()
			if err := json.Unmarshal(logs.Bytes(), &rec); err != nil || strings.Count(line, `"service":`) != 1 ||
				rec.Msg != "fault injected" || rec.Service != "faults" || rec.Operation != "SendMessage" || rec.Point == "" {
				t.Errorf("fault log line %q (%v): want one line naming the call and its point, and one service key", line, err)
			}
			if n := in.Injected()[tt.kind]; n != 1 {
				t.Errorf("injected %d %s faults, want 1", n, tt.kind)
			}
		})
	}
}

// Rates are written kind=probability, comma-separated.
func TestRatesParse(t *testing.T) {
	tests := []struct {
		spec    string
		want    string
		wantErr bool
	}{
		{"", "", false},
		{"throttle=0.02, 5xx=0.01,crash=0.0002", "crash=0.0002,throttle=0.02,5xx=0.01", false},
		{"drop=1,duplicate=0", "drop=1", false},
		{"throttle", "", true},
		{"meteor=0.1", "", true},
		{"throttle=2", "", true},
		{"throttle=-0.1", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			r, err := faults.Parse(tt.spec)
			if (err != nil) != tt.wantErr {
				t.Fatalf("Parse(%q) error = %v, want an error: %v", tt.spec, err, tt.wantErr)
			}
			if err == nil && r.String() != tt.want {
				t.Errorf("Parse(%q) = %s, want %s", tt.spec, r, tt.want)
			}
		})
	}
}
