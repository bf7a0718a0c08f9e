package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"orderly/internal/adapter/services"
	"orderly/internal/definition"
	"orderly/internal/order"
)

// workflowCmd is `orderly workflow`: definition files, offline (no
// deployed stage, no AWS).
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
	var flags stageFlags
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check workflow definition files (workflows/NAME/vVERSION.json)",
		Long: `Check workflow definition files (workflows/NAME/vVERSION.json) as cdk synth
and the functions do, the file's place and the stage's timing included:
"FILE: valid" for each, or one line per problem, naming the file and
field, in synth's words. Exit 1 when a file is invalid, 2 for a usage
error.

A service's agent is the Lambda function orderly-STAGE-SERVICE-agent, at
most 64 characters, for the stage synth deploys: --stage, over
--cdk-json's context stage; else $` + envStage + ` when set; else
infra/cdk.json's context stage where the command runs; else dev, synth's
default.

` + stageTimingHelp,
		Example: "  orderly workflow validate workflows/order/*.json\n" +
			"  orderly workflow validate --cdk-json infra/cdk.json workflows/shop/v1.json\n" +
			"  orderly workflow validate --stage prod workflows/shop/v1.json",
		Args: cobra.MinimumNArgs(1),
		RunE: func(cmd *cobra.Command, files []string) error {
			stage, err := flags.timing(cmd)
			if err != nil {
				return err
			}
			stageName, err := flags.name(cmd)
			if err != nil {
				return err
			}
			return a.reportFiles(files, errInvalidDefinitions, func(file string) error {
				def, err := readDefinition(file)
				if err == nil {
					// The stage's timing must fit the steps' own, as at
					// deploy.
					_, err = def.Workflow(stage)
				}
				// Every problem at once: the file's, then its agents'
				// names in the stage.
				if ps := def.CheckAgentNames(stageName); len(ps) > 0 {
					var more definition.Problems
					switch {
					case err == nil:
						err = ps
					case errors.As(err, &more):
						err = append(more, ps...)
					}
				}
				if err == nil {
					// On stderr, so -o json stays one document: a warning
					// does not make the file invalid.
					for _, w := range def.Warnings() {
						fmt.Fprintln(cmd.ErrOrStderr(), "warning: "+w.String())
					}
				}
				return err
			})
		},
	}
	flags.add(cmd)
	return cmd
}

// reportFiles checks each file, printing "FILE: valid" or its problems,
// one a line (with -o json, one document of every file's), for workflow
// validate and services validate alike. Its error wraps invalid when a
// file is invalid.
func (a *app) reportFiles(files []string, invalid error, check func(file string) error) error {
	var report []validated
	failed := 0
	for _, file := range files {
		err := check(file)
		report = append(report, validated{File: file, Valid: err == nil, Problems: problemsOf(err)})
		if err != nil {
			failed++
		}
		switch {
		case a.asJSON():
		case err != nil:
			fmt.Fprintln(a.out, err)
		default:
			fmt.Fprintf(a.out, "%s: valid\n", file)
		}
	}
	if a.asJSON() {
		if err := writeJSON(a.out, report); err != nil {
			return err
		}
	}
	if failed > 0 {
		return fmt.Errorf("%d of %d files: %w", failed, len(files), invalid)
	}
	return nil
}

// problemsOf is a definition's or a services file's error as -o json
// reports it.
func problemsOf(err error) []problemReport {
	if err == nil {
		return nil
	}
	var ps []definition.Problem
	var defProblems definition.Problems
	var svcProblems services.Problems
	switch {
	case errors.As(err, &defProblems):
		ps = defProblems
	case errors.As(err, &svcProblems):
		ps = svcProblems
	default:
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
	var flags stageFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "diff OLD NEW",
		Short: "What orders in flight under definition OLD would do if moved to NEW",
		Long: `What orders in flight under definition OLD would do if moved to NEW (orderly
move), for each place they can be at.

Exit 0 when every one can move, 1 when some cannot, 2 for a usage error or an
invalid file.

` + stageTimingHelp,
		Example: "  orderly workflow diff workflows/order/v1.json workflows/order/v2.json",
		Args:    cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, files []string) error {
			stage, err := flags.timing(cmd)
			if err != nil {
				return err
			}
			return workflowDiff(a.out, files[0], files[1], stage, asJSON || a.asJSON())
		},
	}
	flags.add(cmd)
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
		return definition.Definition{}, definition.Problems{{Source: file, Rule: cannotRead(err)}}
	}
	return validateFile(file, data)
}

// cannotRead is the rule of a file that could not be read, in a problem
// that names the file already.
func cannotRead(err error) string {
	var pathErr *os.PathError
	if errors.As(err, &pathErr) {
		err = pathErr.Err
	}
	return "cannot read: " + err.Error()
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
