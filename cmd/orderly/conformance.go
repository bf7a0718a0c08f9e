package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"orderly/internal/adapter/remote"
	"orderly/internal/definition"
	"orderly/internal/operator/conformance"
	"orderly/internal/order"
)

// errNonConformant ends `conformance` when a rule failed (exit 1); the
// rules are already printed.
var errNonConformant = errors.New("the service does not conform")

// errCannotStart ends `conformance` when the run cannot start: a workflow,
// input or URL it cannot use (exit 2, like a usage error).
var errCannotStart = errors.New("conformance cannot start")

// cannotStart is err, said as it is, as errCannotStart.
type cannotStart struct{ err error }

func (c cannotStart) Error() string   { return c.err.Error() }
func (c cannotStart) Unwrap() []error { return []error{c.err, errCannotStart} }

// conformanceCmd is `orderly conformance`: a service and a definition
// file, no stage, no AWS.
func (a *app) conformanceCmd() *cobra.Command {
	var file, base, step, inputFile, unknownFile, callbackListen string
	var callbackWait, pollWait time.Duration
	var asOpenAPI bool
	var headerSpecs []string
	cmd := &cobra.Command{
		Use: "conformance --workflow FILE --url BASE [--step NAME] [--header K=V]... [--input FILE] [--unknown-input FILE] " +
			"[--callback-listen HOST:PORT] [--callback-wait D] [--poll-wait D] [--openapi]",
		DisableFlagsInUseLine: true,
		Short:                 "Check a team's services against the remote-service contract",
		Long: `Check a team's services against the remote-service contract, calling them as
the agents do: one line per rule per step. Exit 1 when a rule fails, 2 when
the run cannot start (a usage error, or a workflow, input or URL it cannot
use). --openapi prints the workflow's own contract (OpenAPI 3.1) and checks
nothing. A step whose service calls back is called back at a receiver this
command serves for the run (127.0.0.1 on a free port, or --callback-listen):
the service must be able to reach it. A step whose service is polled has its
status URL checked until it says done or failed, within --poll-wait.`,
		Example: "  orderly conformance --workflow examples/workflows/checkout/v1.json --url http://127.0.0.1:8081 --step fraud-check --header Authorization=@token.txt",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case file == "":
				return usagef("conformance: --workflow FILE is required")
			case base == "" && !asOpenAPI:
				return usagef("conformance: --url BASE is required")
			case callbackWait <= 0:
				return usagef("conformance: --callback-wait %s: want a positive duration", callbackWait)
			case pollWait <= 0:
				return usagef("conformance: --poll-wait %s: want a positive duration", pollWait)
			}
			header, err := parseHeaders(headerSpecs)
			if err != nil {
				return usagef("conformance: %w", err)
			}
			cannot := func(err error) error { return cannotStart{fmt.Errorf("conformance: %w", err)} }
			w, err := loadWorkflow(file)
			if err != nil {
				return cannot(err)
			}
			if asOpenAPI {
				doc, err := remote.ContractJSONFor(w)
				if err != nil {
					return cannot(err)
				}
				_, err = a.out.Write(doc)
				return err
			}
			input, err := conformanceInput(w, inputFile)
			if err != nil {
				return cannot(err)
			}
			var unknown json.RawMessage
			if unknownFile != "" {
				if unknown, err = conformanceInput(w, unknownFile); err != nil {
					return cannot(fmt.Errorf("--unknown-input: %w", err))
				}
			}
			results, err := conformance.Run(cmd.Context(), conformance.Config{Workflow: w, Input: input, UnknownInput: unknown, BaseURL: base, Step: step, Header: header,
				CallbackListen: callbackListen, CallbackWait: callbackWait, PollWait: pollWait})
			if err != nil {
				return cannot(err)
			}
			if a.asJSON() {
				if err := writeJSON(a.out, map[string]any{"workflow": w.Name, "version": w.Version, "results": results, "failed": conformance.Failed(results)}); err != nil {
					return err
				}
			} else {
				conformance.Write(a.out, results)
			}
			if n := conformance.Failed(results); n > 0 {
				return fmt.Errorf("%d rules failed: %w", n, errNonConformant)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&file, "workflow", "", "the workflow definition `file` whose steps' calls are checked")
	cmd.Flags().StringVar(&base, "url", "", "the base `URL` the steps' services answer under")
	cmd.Flags().StringVar(&step, "step", "", "check only this `step`; the earlier steps it carries results of are called once first")
	cmd.Flags().StringVar(&inputFile, "input", "", "a JSON `file` with the order's input (default: the input schema's examples[0])")
	cmd.Flags().StringVar(&unknownFile, "unknown-input", "", "a JSON `file` with an order's input naming what the services do not know, for the unknown-entity rule (default: the input with its strings made unknown)")
	cmd.Flags().StringVar(&callbackListen, "callback-listen", "", "`HOST:PORT` where the callback receiver listens, the address a service that calls back reaches this machine at (default: 127.0.0.1 on a free port)")
	cmd.Flags().DurationVar(&callbackWait, "callback-wait", conformance.DefaultCallbackWait, "the longest `duration` to wait for one call's callback, where the step's callback timeout is longer")
	cmd.Flags().DurationVar(&pollWait, "poll-wait", conformance.DefaultPollWait, "the longest `duration` to check one accepted call's status URL, where the step's poll timeout is longer")
	cmd.Flags().BoolVar(&asOpenAPI, "openapi", false, "print the workflow's remote-service contract (OpenAPI 3.1) and check nothing")
	// StringArray, not StringSlice: a header's value may hold commas. Its
	// Set never fails, so no error quotes a value, which may be a secret.
	cmd.Flags().StringArrayVar(&headerSpecs, "header", nil, "`NAME=VALUE` or NAME=@FILE: a header every call carries, such as a credential (repeatable; values are never printed)")
	return cmd
}

// loadWorkflow reads a definition file as the functions run it, with the
// stage's default timing for what its steps leave out.
func loadWorkflow(file string) (order.Workflow, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return order.Workflow{}, fmt.Errorf("--workflow: %w", err)
	}
	def, err := definition.Parse(file, data)
	if err != nil {
		return order.Workflow{}, err
	}
	return def.Workflow(order.DefaultTiming)
}

// conformanceInput is the order's input: the file's, or the schema's first
// example; checked against the input schema, as the API would.
func conformanceInput(w order.Workflow, file string) (json.RawMessage, error) {
	var input json.RawMessage
	if file == "" {
		example, err := conformance.ExampleInput(w)
		if err != nil {
			return nil, fmt.Errorf("%w (--input FILE)", err)
		}
		input = example
	} else {
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("--input: %w", err)
		}
		if !json.Valid(data) {
			return nil, fmt.Errorf("--input %s: not JSON", file)
		}
		input = data
	}
	if err := conformance.CheckInput(w, input); err != nil {
		return nil, err
	}
	return input, nil
}

// parseHeaders reads --header values: NAME=VALUE, or NAME=@FILE for a
// value kept off the command line (the file's content, without its
// trailing line break). No error quotes a value.
func parseHeaders(specs []string) (http.Header, error) {
	h := http.Header{}
	for _, spec := range specs {
		name, value, ok := strings.Cut(spec, "=")
		if !ok || name == "" || strings.ContainsAny(name, " \t:") {
			return nil, fmt.Errorf("--header %q: want NAME=VALUE or NAME=@FILE", name)
		}
		if path, fromFile := strings.CutPrefix(value, "@"); fromFile {
			data, err := os.ReadFile(path)
			if err != nil {
				return nil, fmt.Errorf("--header %s: %w", name, err)
			}
			value = strings.TrimRight(string(data), "\r\n")
		}
		if value == "" {
			return nil, fmt.Errorf("--header %s: empty value", name)
		}
		h.Add(name, value)
	}
	return h, nil
}
