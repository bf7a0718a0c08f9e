package engine_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/feature/dynamodb/attributevalue"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"orderly/internal/local/engine"
	"orderly/internal/metrics"
	"orderly/internal/order"
	"orderly/internal/resources"
	"orderly/internal/testkit/ordertest"
	"orderly/internal/testkit/testenv"
)

// burstClients is how many clients submit at once, as in the burst the
// reliability issue describes.
const burstClients = 20

// BenchmarkBurst submits b.N orders from burstClients concurrent clients
// as fast as the API takes them and waits until every one is Processed
// (counted from the engine's own OrdersProcessed metric, so the wait adds
// no load on the emulators). It reports orders/s and, per order, the CPU
// milliseconds each process spent: this process (the engine and the
// clients) and each emulator. Run it with -benchtime 1000x.
func BenchmarkBurst(b *testing.B) {
	// The reliability issue's burst: short deadlines that a backlog
	// outlasts. Back-pressure must keep them from turning into retries
	// and alerts.
	short := order.DefaultTiming
	short.Allowance, short.MaxAllowance, short.ClaimWithin = 3*time.Second, 12*time.Second, 10*time.Second
	// The same without the agents' late-start writes and heartbeats, to
	// show what they cost and what they save.
	noBeats := short
	noBeats.MaxHeartbeats = 0
	for _, tc := range []struct {
		name   string
		timing order.Timing
	}{{"default-timing", order.DefaultTiming}, {"3s-allowance", short}, {"3s-allowance-no-heartbeats", noBeats}} {
		b.Run(tc.name, func(b *testing.B) { benchmarkBurst(b, tc.timing) })
	}
}

func benchmarkBurst(b *testing.B, timing order.Timing) {
	processed := make(chan struct{}, 1<<16)
	r, w, err := os.Pipe()
	if err != nil {
		b.Fatal(err)
	}
	counts := &metricCounts{n: map[string]int{}}
	go countMetrics(r, counts, metrics.OrdersProcessed, processed)
	e := start(b, func(c *engine.Config) {
		c.Timing, c.SupervisorEvery, c.Metrics = timing, engine.DefaultSupervisorEvery, w
	})
	sub := ordertest.Submission{CustomerID: "c-burst", Lines: []order.Line{{SKU: "BOOK-1", Quantity: 1}}}
	cpu := startCPU(b)
	began := time.Now()
	b.ResetTimer()

	next := make(chan int)
	var wg sync.WaitGroup
	for range burstClients {
		wg.Go(func() {
			for range next {
				if _, err := submitOrder(e.URL(), sub); err != nil {
					b.Error(err)
				}
			}
		})
	}
	for i := range b.N {
		next <- i
	}
	close(next)
	wg.Wait()
	submitted := time.Since(began)
	timeout := time.After(10 * time.Minute)
	for range b.N {
		select {
		case <-processed:
		case <-timeout:
			b.Fatalf("not every order Processed within 10 minutes")
		}
	}
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	b.ReportMetric(float64(b.N)/submitted.Seconds(), "submitted/s")
	for name, secs := range cpu.since() {
		b.ReportMetric(secs*1000/float64(b.N), name+"-cpu-ms/order")
	}
	for _, m := range []string{metrics.StepsRetried, metrics.StepsDeferred, metrics.AlertsSent, metrics.OrdersFailed, metrics.Heartbeats, metrics.StaleRequests} {
		b.ReportMetric(float64(counts.get(m)), m)
	}
}

// BenchmarkEmulatorCeiling makes the AWS requests of one happy-path order
// (one PutItem and three UpdateItem calls on one item; six messages sent,
// received and deleted) straight through the SDK, from burstClients
// clients, with no engine at all: the orders/s the emulators allow at the
// engine's requests per order. BenchmarkBurst's orders/s against this
// shows how much of the ceiling the engine reaches.
func BenchmarkEmulatorCeiling(b *testing.B) {
	cfg := testenv.AWS(b)
	stack, clients := testenv.Provision(b, cfg, resources.New(testenv.Stage(b), ordertest.OrderWorkflow(order.DefaultTiming).Agents()))
	table, queue := stack.Catalog.Orders.Name, stack.ResponseQueue.URL
	ctx := context.Background()
	item, err := attributevalue.MarshalMap(map[string]any{
		"OrderID": "x", "CustomerID": "c-burst", "Status": "Pending",
		"Lines": []order.Line{{SKU: "BOOK-1", Quantity: 1}}, "Updated": time.Now().UnixMilli(),
	})
	if err != nil {
		b.Fatal(err)
	}
	cpu := startCPU(b)
	began := time.Now()
	b.ResetTimer()
	var n atomic.Int64
	var wg sync.WaitGroup
	for range burstClients {
		wg.Go(func() {
			for n.Add(1) <= int64(b.N) {
				if err := oneOrdersRequests(ctx, clients.DynamoDB, clients.SQS, table, queue, item); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(began)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "orders/s")
	for name, secs := range cpu.since() {
		b.ReportMetric(secs*1000/float64(b.N), name+"-cpu-ms/order")
	}
}

func oneOrdersRequests(ctx context.Context, db *dynamodb.Client, q *awssqs.Client, table, queue string, item map[string]dbtypes.AttributeValue) error {
	id := order.NewID()
	it := make(map[string]dbtypes.AttributeValue, len(item))
	for k, v := range item {
		it[k] = v
	}
	it["OrderID"] = &dbtypes.AttributeValueMemberS{Value: id}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String(table), Item: it}); err != nil {
		return fmt.Errorf("put: %w", err)
	}
	for i := range 3 {
		_, err := db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
			TableName: aws.String(table), Key: map[string]dbtypes.AttributeValue{"OrderID": &dbtypes.AttributeValueMemberS{Value: id}},
			UpdateExpression:          aws.String("SET #u = :u"),
			ExpressionAttributeNames:  map[string]string{"#u": "Updated"},
			ExpressionAttributeValues: map[string]dbtypes.AttributeValue{":u": &dbtypes.AttributeValueMemberN{Value: strconv.Itoa(i)}},
			ReturnValues:              "ALL_NEW",
		})
		if err != nil {
			return fmt.Errorf("update: %w", err)
		}
	}
	for range 6 {
		if _, err := q.SendMessage(ctx, &awssqs.SendMessageInput{QueueUrl: aws.String(queue), MessageBody: aws.String(id)}); err != nil {
			return fmt.Errorf("send: %w", err)
		}
		out, err := q.ReceiveMessage(ctx, &awssqs.ReceiveMessageInput{QueueUrl: aws.String(queue), MaxNumberOfMessages: 1})
		if err != nil {
			return fmt.Errorf("receive: %w", err)
		}
		var entries []sqstypes.DeleteMessageBatchRequestEntry
		for i, m := range out.Messages {
			entries = append(entries, sqstypes.DeleteMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), ReceiptHandle: m.ReceiptHandle})
		}
		if len(entries) > 0 {
			if _, err := q.DeleteMessageBatch(ctx, &awssqs.DeleteMessageBatchInput{QueueUrl: aws.String(queue), Entries: entries}); err != nil {
				return fmt.Errorf("delete: %w", err)
			}
		}
	}
	return nil
}

// metricCounts counts EMF lines by metric name.
type metricCounts struct {
	mu sync.Mutex
	n  map[string]int
}

func (c *metricCounts) get(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n[name]
}

// countMetrics counts every EMF line by the metrics it carries, and sends
// on out for every line of the named one.
func countMetrics(r *os.File, counts *metricCounts, name string, out chan<- struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var line struct {
			AWS struct {
				CloudWatchMetrics []struct {
					Metrics []struct{ Name string }
				}
			} `json:"_aws"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		for _, d := range line.AWS.CloudWatchMetrics {
			for _, m := range d.Metrics {
				counts.mu.Lock()
				counts.n[m.Name]++
				counts.mu.Unlock()
				if m.Name == name {
					out <- struct{}{}
				}
			}
		}
	}
}

// cpuClock reads the CPU time of this process and of the emulators.
type cpuClock struct {
	start map[string]float64
	pids  map[string]int
}

func startCPU(b *testing.B) *cpuClock {
	c := &cpuClock{pids: map[string]int{}}
	if dir := os.Getenv("ORDERLY_EMULATOR_RUN_DIR"); dir != "" {
		for _, name := range []string{"moto", "elasticmq", "dynamodb"} {
			data, err := os.ReadFile(filepath.Join(dir, name+".pid"))
			if pid, perr := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && perr == nil {
				c.pids[name] = pid
			}
		}
	}
	if len(c.pids) == 0 {
		b.Log("emulator CPU not measured: ORDERLY_EMULATOR_RUN_DIR names no pid files")
	}
	c.start = c.read()
	return c
}

func (c *cpuClock) since() map[string]float64 {
	now, out := c.read(), map[string]float64{}
	for k, v := range now {
		out[k] = v - c.start[k]
	}
	return out
}

func (c *cpuClock) read() map[string]float64 {
	out := map[string]float64{}
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) == nil {
		out["engine"] = time.Duration(ru.Utime.Nano() + ru.Stime.Nano()).Seconds()
	}
	for name, pid := range c.pids {
		if secs, ok := procCPU(pid); ok {
			out[name] = secs
		}
	}
	return out
}

// procCPU reads a process's user and system time from /proc (Linux), in
// clock ticks of 1/100 s.
func procCPU(pid int) (float64, bool) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, false
	}
	// Fields after the command name, which is in parentheses.
	fields := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	if len(fields) < 13 {
		return 0, false
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, false
	}
	return (utime + stime) / 100, true
}
