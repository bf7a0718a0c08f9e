// Command orderly-cost is `make cost`: it runs the engine on the emulators
// with every AWS request of its functions metered, over the happy path and
// each failure path, and through steps that wait (the clock moved through
// a day of waiting), and prints the cost per order and per million orders
// next to Step Functions and Lambda durable functions, ending with one
// summary line for scripts.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"time"

	"github.com/aws/aws-sdk-go-v2/config"

	"orderly/internal/measure/cost"
	"orderly/internal/order"
	"orderly/internal/prices"
	"orderly/internal/testkit/ordertest"
)

func main() {
	orders := flag.Int("orders", 100, "orders per scenario")
	waitOrders := flag.Int("wait-orders", 25, "orders per scenario with waits (their counts are exact; each wait pauses the run)")
	concurrency := flag.Int("concurrency", 10, "orders in flight at once")
	prices := flag.String("prices", "cost/prices.json", "price table file")
	httpAPI := flag.Bool("http-api", false, "price the API as an HTTP API instead of REST")
	flag.Parse()
	if err := run(*orders, *waitOrders, *concurrency, *prices, *httpAPI); err != nil {
		fmt.Fprintln(os.Stderr, "orderly-cost:", err)
		os.Exit(1)
	}
}

func run(orders, waitOrders, concurrency int, pricesPath string, httpAPI bool) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	p, err := prices.Load(pricesPath)
	if err != nil {
		return err
	}
	awsCfg, err := config.LoadDefaultConfig(ctx)
	if err != nil {
		return fmt.Errorf("AWS configuration: %w", err)
	}
	// A stage of its own per run: a table's stream holds every change of
	// earlier runs, and the recorder would read them again.
	stage := fmt.Sprintf("cost%d", time.Now().Unix())
	results, err := cost.Run(ctx, awsCfg, cost.Options{Stage: stage, Orders: orders, WaitOrders: waitOrders, Concurrency: concurrency})
	if err != nil {
		return err
	}
	steps := len(ordertest.Built(order.DefaultTiming).Latest().Steps)
	return cost.Report(os.Stdout, results, p, steps, httpAPI)
}
