package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"

	"orderly/internal/local/engine"
	"orderly/internal/local/provision"
	"orderly/internal/measure/loadgen"
)

// Warm-up: DynamoDB Local and ElasticMQ run on the JVM, which compiles
// their hot paths only after they have served some hundreds of requests;
// until then each order takes several times as long. `make run` warms
// them (ORDERLY_WARMUP=1) before it says it is ready, so the first orders
// a user submits are as fast as later ones.
const (
	// warmUpBudget bounds `make run`'s warm-up: on a busy machine it stops
	// there, warm or not.
	warmUpBudget = 30 * time.Second
	// warmUpWarm is the sequential p50 taken as warm.
	warmUpWarm = 50 * time.Millisecond
	// warmUpPlateau: a round whose p50 is no better than this share of the
	// best one before it means more rounds would not help.
	warmUpPlateau = 0.9
)

// warmUpRound is one round: a few orders one at a time, a burst, then a
// few one at a time again, whose p50 says how warm the emulators are.
var warmUpRound = loadgen.Config{Orders: 20, Clients: 4, Sequential: 5}

// warmUpResult is what the warm-up did, for its log line.
type warmUpResult struct {
	Rounds int
	Orders int
	P50    time.Duration // the last round's sequential p50 after its burst
	Took   time.Duration
}

// warmUp runs throwaway orders through a stage of its own, stage-warmup,
// built from the shipped workflows with every service at a simulator of
// its own, then deletes that stage. Nothing of it reaches the user's
// stage: not its tables, queues, event bus, simulator ledger or services.
// It stops once its orders are fast (warmUpWarm), stop getting faster,
// or budget is spent.
func warmUp(ctx context.Context, awsCfg aws.Config, cfg engine.Config, budget time.Duration) (warmUpResult, error) {
	start := time.Now()
	wcfg := engine.Config{
		Stage:           cfg.Stage + "-warmup",
		APIAddr:         "127.0.0.1:0",
		SimulatorAddr:   "127.0.0.1:0",
		Timing:          cfg.Timing,
		SupervisorEvery: cfg.SupervisorEvery,
		Schedulers:      cfg.Schedulers,
		QueueVisibility: cfg.QueueVisibility,
		WithoutTableTTL: true,
		Log:             slog.New(slog.DiscardHandler),
	}
	e, err := engine.New(ctx, awsCfg, wcfg)
	if err != nil {
		return warmUpResult{}, fmt.Errorf("start the warm-up stage %s: %w", wcfg.Stage, err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- e.Run(runCtx) }()
	res, runErr := warmUpRounds(ctx, e.URL(), start.Add(budget))
	stop()
	if err := <-done; err != nil && runErr == nil {
		runErr = fmt.Errorf("warm-up stage %s: %w", wcfg.Stage, err)
	}
	// Deleted even when interrupted: nothing of it may outlive the warm-up.
	if err := provision.Delete(context.WithoutCancel(ctx), e.Clients(), e.Stack); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("delete the warm-up stage %s: %w", wcfg.Stage, err))
	}
	res.Took = time.Since(start)
	return res, runErr
}

// warmUpRounds runs rounds until the emulators are warm, stop getting
// faster, or the deadline.
func warmUpRounds(ctx context.Context, url string, deadline time.Time) (warmUpResult, error) {
	var res warmUpResult
	client, err := loadgen.NewClient(url, loadgen.DefaultPath, []byte(loadgen.DefaultBody), nil, warmUpRound.Clients+loadgen.Defaults().Pollers)
	if err != nil {
		return res, fmt.Errorf("warm-up client: %w", err)
	}
	best := time.Duration(0)
	for ctx.Err() == nil {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		round := warmUpRound
		round.Timeout, round.OrderTimeout = left, left
		r, err := loadgen.Run(ctx, client, round)
		if err != nil {
			return res, fmt.Errorf("warm-up round %d: %w", res.Rounds+1, err)
		}
		res.Rounds++
		if r.Burst != nil {
			res.Orders += r.Burst.Submitted
		}
		for _, s := range []*loadgen.Sequential{r.Before, r.After} {
			if s != nil {
				res.Orders += s.Submitted
			}
		}
		if !r.OK() && (r.After == nil || r.After.Latency.Count == 0) {
			// Out of time on a busy machine: what ran has warmed them.
			if !time.Now().Before(deadline) {
				break
			}
			return res, fmt.Errorf("warm-up round %d: %s", res.Rounds, r.Problems[0])
		}
		res.P50 = time.Duration(r.After.Latency.P50 * float64(time.Millisecond))
		if res.P50 <= warmUpWarm || (best > 0 && float64(res.P50) > warmUpPlateau*float64(best)) {
			break
		}
		if best == 0 || res.P50 < best {
			best = res.P50
		}
	}
	return res, nil
}
