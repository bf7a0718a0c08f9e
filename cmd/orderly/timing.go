package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// defaultCDKJSON is the CDK app's settings, from the repository's root:
// cdk synth reads the stage's timing from its context.
var defaultCDKJSON = filepath.Join("infra", "cdk.json")

// stageTimingHelp says where the stage's timing comes from, for the
// commands that take stageFlags.
const stageTimingHelp = `The stage's timing applies where a step sets none: the flags (--allowance
...), over --cdk-json's context; else the functions' variables when one
is set (` + config.EnvAllowance + `, ` + config.EnvMaxAllowance + `, ` + config.EnvFailureThreshold + `,
` + config.EnvMaxHeartbeats + `, as make run reads them); else infra/cdk.json's context
where the command runs (stepAllowance, stepMaxAllowance, maxHeartbeats, as
cdk synth reads them); else the defaults. A stage's timing the functions
refuse is a usage error (exit 2), and so is one from a cdk.json that cdk
synth refuses (a maximum allowance above 2m20s).`

// stageFlags are the flags of the stage's timing, which workflow validate
// and diff apply where a step sets none.
type stageFlags struct {
	cdkJSON                         string
	allowance, maxAllowance         time.Duration
	failureThreshold, maxHeartbeats int
}

func (f *stageFlags) add(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.cdkJSON, "cdk-json", "", "the CDK app's cdk.json whose context sets the stage's timing (default: the variables when set, else "+defaultCDKJSON+" when there)")
	cmd.Flags().DurationVar(&f.allowance, "allowance", 0, "the stage's step allowance")
	cmd.Flags().DurationVar(&f.maxAllowance, "max-allowance", 0, "the stage's maximum allowance (default the source's, else 4× the allowance)")
	cmd.Flags().IntVar(&f.failureThreshold, "failure-threshold", 0, "the stage's failure threshold")
	cmd.Flags().IntVar(&f.maxHeartbeats, "max-heartbeats", 0, "the stage's heartbeats per attempt")
}

// timing is the stage's timing (see stageTimingHelp), checked as the
// functions check it, and as cdk synth does when a cdk.json is its
// source: the agents' invocation bounds a deployed stage, not make run's.
// Its error is a usage error.
func (f *stageFlags) timing(cmd *cobra.Command) (order.Timing, error) {
	stage, maxSet, deployed, err := f.source()
	if err != nil {
		return order.Timing{}, usageError{err}
	}
	changed := cmd.Flags().Changed
	if changed("allowance") {
		stage.Allowance = f.allowance
		if !maxSet {
			// As the functions: a maximum not given keeps the default ratio.
			stage.MaxAllowance = f.allowance * (order.DefaultTiming.MaxAllowance / order.DefaultTiming.Allowance)
		}
	}
	if changed("max-allowance") {
		stage.MaxAllowance = f.maxAllowance
	}
	if changed("failure-threshold") {
		stage.FailureThreshold = f.failureThreshold
	}
	if changed("max-heartbeats") {
		stage.MaxHeartbeats = f.maxHeartbeats
	}
	check := stage.Validate
	if deployed {
		check = func() error { return definition.CheckStage(stage) }
	}
	if err := check(); err != nil {
		return order.Timing{}, usagef("the stage's timing: %w", err)
	}
	return stage, nil
}

// source is the stage's timing before the flags, whether it sets the
// maximum allowance, and whether it is a deployed stage's (a cdk.json's).
func (f *stageFlags) source() (t order.Timing, maxSet, deployed bool, err error) {
	if f.cdkJSON != "" {
		t, maxSet, err = fromCDKJSON(f.cdkJSON)
		return t, maxSet, true, err
	}
	for _, name := range []string{config.EnvAllowance, config.EnvMaxAllowance, config.EnvFailureThreshold, config.EnvMaxHeartbeats} {
		if os.Getenv(name) == "" {
			continue
		}
		env := config.FromOS()
		t = env.Timing()
		if err := env.Err(); err != nil {
			return t, false, false, fmt.Errorf("the stage's timing: %w", err)
		}
		return t, os.Getenv(config.EnvMaxAllowance) != "", false, nil
	}
	if _, err := os.Stat(defaultCDKJSON); err == nil {
		t, maxSet, err = fromCDKJSON(defaultCDKJSON)
		return t, maxSet, true, err
	}
	return order.DefaultTiming, false, false, nil
}

// name is the stage whose resources the definitions' services name (their
// agents' functions): --stage, over --cdk-json's context; else
// $ORDERLY_STAGE when set; else infra/cdk.json's context where the
// command runs; else synth's default, dev. Its error is a usage error.
func (f *stageFlags) name(cmd *cobra.Command) (string, error) {
	if flag := cmd.Flags().Lookup("stage"); flag != nil && flag.Changed {
		if flag.Value.String() == "" {
			return "", usagef("--stage: must name a stage")
		}
		return flag.Value.String(), nil
	}
	file := f.cdkJSON
	if file == "" {
		if s := os.Getenv(envStage); s != "" {
			return s, nil
		}
		if _, err := os.Stat(defaultCDKJSON); err != nil {
			return config.DefaultStage, nil
		}
		file = defaultCDKJSON
	}
	ctx, err := readCDKContext(file)
	if err != nil {
		return "", usageError{err}
	}
	// As synth reads it: anything but a name is unset.
	if s, ok := ctx[config.CtxStage].(string); ok && s != "" {
		return s, nil
	}
	return config.DefaultStage, nil
}

// readCDKContext reads a cdk.json's context.
func readCDKContext(file string) (map[string]any, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		var pathErr *fs.PathError
		if errors.As(err, &pathErr) {
			err = pathErr.Err
		}
		return nil, fmt.Errorf("%s: cannot read: %w", file, err)
	}
	var doc struct {
		Context json.RawMessage `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		return nil, fmt.Errorf("%s: not a cdk.json: %w", file, err)
	}
	var ctx map[string]any
	if len(doc.Context) > 0 && (json.Unmarshal(doc.Context, &ctx) != nil || ctx == nil) {
		return nil, fmt.Errorf("%s: not a cdk.json: \"context\" is not an object", file)
	}
	return ctx, nil
}

// fromCDKJSON reads the stage's timing from a cdk.json's context, with the
// reader cdk synth uses.
func fromCDKJSON(file string) (t order.Timing, maxSet bool, err error) {
	ctx, err := readCDKContext(file)
	if err != nil {
		return t, false, err
	}
	t, set, err := config.TimingFromContext(func(key string) any { return ctx[key] })
	if err != nil {
		return t, false, fmt.Errorf("%s: %w", file, err)
	}
	return t, set[config.EnvMaxAllowance] != "", nil
}
