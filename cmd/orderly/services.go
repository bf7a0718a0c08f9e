package main

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/spf13/cobra"

	"orderly/internal/adapter/services"
	"orderly/internal/definition"
)

// servicesCmd is `orderly services`: services files, no stage, no AWS.
func (a *app) servicesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "services",
		Short: "Check services files: how the agents reach the services the workflows call",
	}
	cmd.AddCommand(a.servicesValidateCmd())
	return cmd
}

// errInvalidServices ends `services validate` when a file is invalid; its
// problems are already printed, one a line.
var errInvalidServices = errors.New("invalid services files")

func (a *app) servicesValidateCmd() *cobra.Command {
	var workflows []string
	var remoteURL string
	cmd := &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check services files (ORDERLY_SERVICES, context services) offline",
		Long: `Check services files offline, with the parser and the words of cdk synth
and make run: a file is a JSON object of services by name, each with its
url and auth, the shape of ORDERLY_SERVICES and of infra/cdk.json's
context services (see docs/remote-services.md). "FILE: valid" for each,
or one line per problem, naming the file and field. Nothing is fetched:
a secret is named, not read.

With --workflows (directories of NAME/vVERSION.json, as under workflows/,
or definition files), as cdk synth checks context services against the
workflows it deploys: every service a step names must be listed (or, with
--remote-url, a loopback URL, be called there, as make run calls the
simulator), and every service listed must be one a step names.

Exit 0 when every file is valid, 1 when one is not, 2 for a usage error
(workflows that are not valid definitions among them).`,
		Example: "  orderly services validate examples/services.local.json\n" +
			"  orderly services validate services.prod.json --workflows workflows",
		Args: cobra.MinimumNArgs(1),
		RunE: func(_ *cobra.Command, files []string) error {
			if remoteURL != "" && len(workflows) == 0 {
				return usagef("--remote-url is where services the workflows call and the file does not list go: give --workflows too")
			}
			var called []string
			if len(workflows) > 0 {
				var err error
				if called, err = a.servicesCalled(workflows); err != nil {
					return err
				}
			}
			return a.reportFiles(files, errInvalidServices, func(file string) error {
				return validateServices(file, called, remoteURL)
			})
		},
	}
	cmd.Flags().StringSliceVar(&workflows, "workflows", nil, "directories of workflow definitions (NAME/vVERSION.json) or definition files, comma-separated: check the file lists exactly the services their steps call")
	cmd.Flags().StringVar(&remoteURL, "remote-url", "", "with --workflows: a loopback base URL that services the file does not list are called at (as context remoteUrl, or make run's simulator)")
	return cmd
}

// validateServices checks one services file as synth checks context
// services: by services.Parse, and, given the services the workflows
// call, by Resolve. Its error is services.Problems, naming the file.
func validateServices(file string, called []string, remoteURL string) error {
	raw, err := os.ReadFile(file)
	if err != nil {
		return services.Problems{{Source: file, Rule: cannotRead(err)}}
	}
	cfg, err := services.Parse(file, raw)
	if err != nil || called == nil {
		return err
	}
	_, err = cfg.Resolve(called, remoteURL, file, "--remote-url")
	return err
}

// servicesCalled reads the workflows in paths (directories as synth reads
// context workflowsDir, or files as workflow validate does) and returns
// the services their steps call, each once, in the order met. Definitions
// with problems are a usage error, their problems printed.
func (a *app) servicesCalled(paths []string) ([]string, error) {
	var defs []definition.Definition
	var ps definition.Problems
	for _, path := range paths {
		info, err := os.Stat(path)
		if err != nil {
			return nil, usagef("--workflows %s: %w", path, err)
		}
		var found []definition.Definition
		if info.IsDir() {
			found, err = definition.Load(os.DirFS(path), path)
		} else {
			var def definition.Definition
			def, err = readDefinition(path)
			found = []definition.Definition{def}
		}
		var more definition.Problems
		switch {
		case errors.As(err, &more):
			ps = append(ps, more...)
		case err != nil:
			return nil, usagef("--workflows %s: %w", path, err)
		default:
			defs = append(defs, found...)
		}
	}
	if len(ps) > 0 {
		fmt.Fprintln(a.out, ps)
		return nil, usagef("--workflows: %d problems in the definitions (listed above; orderly workflow validate checks them)", len(ps))
	}
	var called []string
	for _, d := range defs {
		for _, s := range d.Steps {
			if s.Wait != nil {
				continue // it calls no service
			}
			if !slices.Contains(called, s.Service) {
				called = append(called, s.Service)
			}
		}
	}
	if len(called) == 0 {
		return nil, usagef("--workflows %v: no workflow definitions there", paths)
	}
	return called, nil
}
