package compose_test

import (
	"context"
	"io"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"testing"

	"orderly/internal/adapter/services"
	"orderly/internal/compose"
	"orderly/internal/config"
	"orderly/internal/resources"
)

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// stageEnv is the environment the stack gives every function of a stage
// running the shipped workflow, less what one function is not given.
func stageEnv(without ...string) map[string]string {
	env := map[string]string{
		resources.EnvOrdersTable:                  "orderly-t-orders",
		resources.EnvHistoryTable:                 "orderly-t-history",
		resources.EnvPageTokenSecret:              "orderly/t/page-token-key",
		resources.EnvCallbackSecret:               "orderly/t/callback-key",
		resources.EnvAlertTopicARN:                "arn:aws:sns:eu-west-1:123456789012:orderly-t-alerts",
		resources.EnvResponseQueueURL:             "https://sqs.eu-west-1.amazonaws.com/123456789012/orderly-t-responses",
		resources.EnvEventBus:                     "orderly-t",
		resources.EnvRequestQueueURL("inventory"): "https://sqs.eu-west-1.amazonaws.com/123456789012/orderly-t-inventory",
		resources.EnvRequestQueueURL("payment"):   "https://sqs.eu-west-1.amazonaws.com/123456789012/orderly-t-payment",
		resources.EnvRequestQueueURL("shipping"):  "https://sqs.eu-west-1.amazonaws.com/123456789012/orderly-t-shipping",
		"AGENT_NAME":                              "payment",
		services.EnvURL:                           "https://payment.example.com",
		services.EnvAuth:                          `{"type":"header","header":"Authorization","secret":"orderly/t/payment-token"}`,
		"AWS_REGION":                              "eu-west-1",
	}
	for _, name := range without {
		delete(env, name)
	}
	return env
}

// Each function reports every variable it needs and is not given in one
// error, before anything is built.
func TestFromEnvNamesEveryMissingVariable(t *testing.T) {
	tests := []struct {
		function string
		needs    []string
	}{
		{resources.FunctionSubmit, []string{resources.EnvOrdersTable, resources.EnvHistoryTable, resources.EnvPageTokenSecret, resources.EnvRequestQueueURL("inventory")}},
		{resources.FunctionScheduler, []string{resources.EnvOrdersTable, resources.EnvAlertTopicARN, resources.EnvRequestQueueURL("shipping")}},
		{resources.FunctionSupervisor, []string{resources.EnvOrdersTable, resources.EnvAlertTopicARN, resources.EnvResponseQueueURL, resources.EnvRequestQueueURL("payment")}},
		{resources.FunctionRecorder, []string{resources.EnvHistoryTable, resources.EnvEventBus}},
		{"agent", []string{"AGENT_NAME", resources.EnvOrdersTable, resources.EnvResponseQueueURL, services.EnvURL, services.EnvAuth}},
	}
	for _, tt := range tests {
		t.Run(tt.function, func(t *testing.T) {
			var err error
			if tt.function == "agent" {
				_, _, err = compose.AgentFromEnv(context.Background(), quiet, config.FromMap(nil))
			} else {
				_, err = compose.FromEnv(context.Background(), quiet, config.FromMap(nil), tt.function)
			}
			if err == nil {
				t.Fatal("got no error from an empty environment")
			}
			for _, name := range tt.needs {
				if !strings.Contains(err.Error(), name) {
					t.Errorf("got %q, want it to name %s", err, name)
				}
			}
		})
	}
}

// With the stack's environment, each function gets the resources it
// uses and no more: submission only the first steps' queues, an agent
// only its own.
func TestFromEnvReadsTheStage(t *testing.T) {
	ctx := context.Background()
	sub, err := compose.FromEnv(ctx, quiet, config.FromMap(stageEnv()), resources.FunctionSubmit)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := slices.Sorted(maps.Keys(sub.Stage.RequestQueues)), sub.Stage.Workflows.FirstAgents(); !slices.Equal(got, want) {
		t.Errorf("submission's queues: got %v, want the first steps' agents %v", got, want)
	}
	if sub.Stage.OrdersTable != "orderly-t-orders" || sub.Stage.HistoryTable != "orderly-t-history" || sub.Stage.PageTokenSecret == "" || sub.Stage.CallbackSecret != "" {
		t.Errorf("submission's stage: got %+v", sub.Stage)
	}
	if _, err := compose.Submit(sub); err != nil {
		t.Errorf("build submission: %v", err)
	}
	sched, err := compose.FromEnv(ctx, quiet, config.FromMap(stageEnv()), resources.FunctionScheduler)
	if err != nil {
		t.Fatal(err)
	}
	if got := len(sched.Stage.RequestQueues); got != 3 {
		t.Errorf("the Scheduler's queues: got %d, want every agent's (3)", got)
	}
	// The recorder names what a Waiting order waits for from its
	// workflow's definition: it runs the stage's workflows too.
	rec, err := compose.FromEnv(ctx, quiet, config.FromMap(stageEnv()), resources.FunctionRecorder)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := rec.Stage.Workflows.Known(), sub.Stage.Workflows.Known(); len(got) == 0 || !slices.Equal(got, want) {
		t.Errorf("the recorder's workflows: got %v, want the stage's %v", got, want)
	}
	f, a, err := compose.AgentFromEnv(ctx, quiet, config.FromMap(stageEnv()))
	if err != nil {
		t.Fatal(err)
	}
	if got := slices.Collect(maps.Keys(f.Stage.RequestQueues)); !slices.Equal(got, []string{"payment"}) || a.Name != "payment" {
		t.Errorf("the payment agent: got queues %v and name %q, want its own queue only", got, a.Name)
	}
	if a.Service.URL != "https://payment.example.com" {
		t.Errorf("the payment agent's service: got %q", a.Service.URL)
	}
}

// A function is built from the environment of its own kind only: a name
// orderly has no function for is an error, not a half-built function.
func TestFromEnvRefusesAnUnknownFunction(t *testing.T) {
	_, err := compose.FromEnv(context.Background(), quiet, config.FromMap(stageEnv()), "billing")
	if err == nil || !strings.Contains(err.Error(), `"billing"`) {
		t.Errorf("got %v, want an error naming the function", err)
	}
	if _, err := compose.FromEnv(context.Background(), quiet, config.FromMap(stageEnv()), "agent"); err == nil {
		t.Error("FromEnv built an agent; agents need AgentFromEnv")
	}
}

// A stage whose environment misses one queue of the workflows' agents
// cannot start a Scheduler: a step of that agent would never be sent.
func TestFromEnvNeedsEveryAgentsQueue(t *testing.T) {
	_, err := compose.FromEnv(context.Background(), quiet, config.FromMap(stageEnv(resources.EnvRequestQueueURL("shipping"))), resources.FunctionScheduler)
	if err == nil || !strings.Contains(err.Error(), resources.EnvRequestQueueURL("shipping")) {
		t.Errorf("got %v, want an error naming the shipping queue's variable", err)
	}
}
