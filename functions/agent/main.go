// Command agent is an agent Lambda. One binary serves every agent; each
// deployed function names its agent (inventory, payment, shipping) in
// AGENT_NAME and its remote service in REMOTE_URL.
package main

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	awssqs "github.com/aws/aws-sdk-go-v2/service/sqs"

	"orderly/internal/agent"
	"orderly/internal/config"
	"orderly/internal/metrics"
	"orderly/internal/remote"
	"orderly/internal/resources"
	"orderly/internal/sqs"
)

func main() {
	log := config.Logger("agent")
	env := config.FromOS()
	name := env.Required("AGENT_NAME")
	remoteURL := env.Required("REMOTE_URL")
	responseQueue := env.Required(resources.EnvResponseQueueURL)
	margin := env.Duration(config.EnvReplyMargin, agent.DefaultReplyMargin)
	tryTimeout := env.Duration(config.EnvTryTimeout, agent.DefaultTryTimeout)
	awsCfg, err := config.Load(context.Background(), env)
	if err != nil {
		log.Error("cannot start", "error", err)
		os.Exit(1)
	}
	svc := agent.New(agent.Config{
		Name:        name,
		Remote:      remote.NewClient(remoteURL, &http.Client{}),
		Replies:     sqs.NewReplies(awssqs.NewFromConfig(awsCfg), responseQueue),
		ReplyMargin: margin,
		TryTimeout:  tryTimeout,
		Now:         time.Now,
		Log:         log,
		Metrics:     metrics.New(os.Stdout, name+"-agent"),
	})
	lambda.Start(svc.Handle)
}
