package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// workflowCmd is `orderly workflow`: definition files, no stage, no AWS.
func (a *app) workflowCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Check workflow definition files, and what moving orders between two versions does",
	}
	cmd.AddCommand(a.workflowValidateCmd(), a.workflowDiffCmd())
	return cmd
}

// errInvalidDefinitions ends `workflow validate` when a file is invalid; its
// problems are already printed, one a line.
var errInvalidDefinitions = errors.New("invalid workflow definitions")

// validated is one file as `workflow validate -o json` prints it.
type validated struct {
	File     string          `json:"file"`
	Valid    bool            `json:"valid"`
	Problems []problemReport `json:"problems,omitempty"`
}

type problemReport struct {
	Field string `json:"field,omitempty"`
	Rule  string `json:"rule"`
}

func (a *app) workflowValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow definition files (workflows/NAME/vVERSION.json)",
		Long: `Check workflow definition files (workflows/NAME/vVERSION.json) as cdk synth
and the functions do, the file's place included: "FILE: valid" for each, or
one line per problem, naming the file and field. Exit 1 when a file is
invalid.`,
		Example: "  orderly workflow validate workflows/order/*.json",
		Args:    cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			var report []validated
			invalid := 0
			for _, file := range files {
				_, err := readDefinition(file)
				report = append(report, validated{File: file, Valid: err == nil, Problems: problemsOf(err)})
				if err != nil {
					invalid++
				}
				if a.asJSON() {
					continue
				}
				if err != nil {
					fmt.Fprintln(a.out, err)
				} else {
					fmt.Fprintf(a.out, "%s: valid\n", file)
				}
			}
			if a.asJSON() {
				if err := writeJSON(a.out, report); err != nil {
					return err
				}
			}
			if invalid > 0 {
				return fmt.Errorf("%d of %d files: %w", invalid, len(files), errInvalidDefinitions)
			}
			return nil
		},
	}
}

// problemsOf is a definition's error as -o json reports it.
func problemsOf(err error) []problemReport {
	if err == nil {
		return nil
	}
	var ps definition.Problems
	if !errors.As(err, &ps) {
		return []problemReport{{Rule: err.Error()}}
	}
	out := make([]problemReport, len(ps))
	for i, p := range ps {
		out[i] = problemReport{Field: p.Field, Rule: p.Rule}
	}
	return out
}

// errNotCompared ends `workflow diff` when OLD or NEW is not a valid
// definition (exit 2, like a usage error): its problems are printed.
var errNotCompared = errors.New("workflow definitions not compared")

// errCannotMove ends `workflow diff` when an order at some position of OLD
// cannot move to NEW safely (exit 1): the diff says which.
var errCannotMove = errors.New("some orders in flight cannot move")

// workflowDiffCmd is `orderly workflow diff OLD NEW`: what orders in flight
// under OLD would do under NEW (definition.Compare), for a stage's timing.
func (a *app) workflowDiffCmd() *cobra.Command {
	env := config.FromOS()
	stage := env.Timing()
	var maxAllowance time.Duration
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "What orders in flight under definition OLD would do if moved to NEW",
		Long: `What orders in flight under definition OLD would do if moved to NEW (orderly
move), for each place they can be at.

Exit 0 when every one can move, 1 when some cannot, 2 for a usage error or an
invalid file. The stage's timing applies where a step sets none: the flags,
else ` + config.EnvAllowance + `, ` + config.EnvMaxAllowance + `, ` + config.EnvFailureThreshold + ` and
` + config.EnvMaxHeartbeats + `, else the defaults.`,
		Example: "  orderly workflow diff workflows/order/v1.json workflows/order/v2.json",
		Args:    cobra.ExactArgs(2),
		RunE: func(_ *cobra.Command, files []string) error {
			if err := env.Err(); err != nil {
				return usagef("workflow diff: the stage's timing: %w", err)
			}
			switch {
			case maxAllowance > 0:
				stage.MaxAllowance = maxAllowance
			case os.Getenv(config.EnvMaxAllowance) == "":
				// As the functions: a maximum not given keeps the default ratio.
				stage.MaxAllowance = stage.Allowance * (order.DefaultTiming.MaxAllowance / order.DefaultTiming.Allowance)
			}
			if err := stage.Validate(); err != nil {
				return usagef("workflow diff: the stage's timing: %w", err)
			}
			return workflowDiff(a.out, files[0], files[1], stage, asJSON || a.asJSON())
		},
	}
	cmd.Flags().DurationVar(&stage.Allowance, "allowance", stage.Allowance, "the stage's step allowance")
	cmd.Flags().DurationVar(&maxAllowance, "max-allowance", 0, "the stage's maximum allowance (default "+config.EnvMaxAllowance+", else 4× the allowance)")
	cmd.Flags().IntVar(&stage.FailureThreshold, "failure-threshold", stage.FailureThreshold, "the stage's failure threshold")
	cmd.Flags().IntVar(&stage.MaxHeartbeats, "max-heartbeats", stage.MaxHeartbeats, "the stage's heartbeats per attempt")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print JSON (as -o json)")
	return cmd
}

// workflowDiff compares the definitions in two files under a stage's
// timing and prints the diff.
func workflowDiff(out io.Writer, oldFile, newFile string, stage order.Timing, asJSON bool) error {
	var defs []definition.Definition
	var ps definition.Problems
	for _, file := range []string{oldFile, newFile} {
		def, err := readDefinition(file)
		if err == nil {
			// The stage's timing must fit the steps' own, as at deploy.
			_, err = def.Workflow(stage)
		}
		var fileProblems definition.Problems
		if errors.As(err, &fileProblems) {
			ps = append(ps, fileProblems...)
		} else if err != nil {
			return err
		}
		defs = append(defs, def)
	}
	var d definition.Diff
	if len(ps) == 0 {
		var err error
		if d, err = definition.Compare(defs[0], defs[1], stage); err != nil && !errors.As(err, &ps) {
			return err
		}
	}
	if len(ps) > 0 {
		fmt.Fprintln(out, ps)
		return fmt.Errorf("problems found: %d: %w", len(ps), errNotCompared)
	}
	if asJSON {
		if err := writeJSON(out, d); err != nil {
			return err
		}
	} else {
		fmt.Fprint(out, d.Text())
	}
	if !d.Moves {
		return fmt.Errorf("version %s -> %s: %w", d.From, d.To, errCannotMove)
	}
	return nil
}

// readDefinition reads and checks one definition file; its error is
// Problems, naming the file.
func readDefinition(file string) (definition.Definition, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		rule := err.Error()
		var pathErr *os.PathError
		if errors.As(err, &pathErr) {
			rule = pathErr.Err.Error() // the file is named already
		}
		return definition.Definition{}, definition.Problems{{Source: file, Rule: "cannot read: " + rule}}
	}
	return validateFile(file, data)
}

// validateFile checks one definition, and that its place names it
// (NAME/vVERSION.json), as cdk synth and the functions check under
// workflows/: wherever it is, so a copy made for a new version whose
// "version" was left as it was is caught before it is moved there. Every
// problem at once: a file that decodes gets its place checked too, for
// each field not already wrong.
func validateFile(file string, data []byte) (definition.Definition, error) {
	def, err := definition.Parse(file, data)
	var ps definition.Problems
	if err != nil && !errors.As(err, &ps) {
		return def, err
	}
	if slices.ContainsFunc(ps, func(p definition.Problem) bool { return p.Field == "" }) {
		return def, ps // not a definition at all: it names nothing to place
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return def, fmt.Errorf("%s: %w", file, err)
	}
	rel := filepath.Base(filepath.Dir(abs)) + "/" + filepath.Base(abs)
	for _, p := range def.CheckPlace(rel) {
		if !slices.ContainsFunc(ps, func(q definition.Problem) bool { return q.Field == p.Field }) {
			ps = append(ps, p)
		}
	}
	if len(ps) > 0 {
		return def, ps
	}
	return def, nil
}
