package main

import (
	"fmt"
	"maps"
	"os"
	"slices"

	"orderly/internal/adapter/services"
)

// localServices reads the services a run calls other than at the
// simulator: file (ORDERLY_SERVICES) decides for the services it lists,
// and defaults (ORDERLY_SERVICES_DEFAULTS: `make run` gives the checkout
// example's, examples/services.local.json) for the services of the named
// workflows (agents) that file leaves out. A default no named workflow
// calls is left out, so that the defaults apply whatever workflows are
// named; file's own entries are checked as synth checks them.
func localServices(file, defaults string, agents []string) (services.Config, error) {
	read := func(variable, file string) (services.Config, error) {
		if file == "" {
			return nil, nil
		}
		raw, err := os.ReadFile(file)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", variable, err)
		}
		cfg, err := services.Parse(file, raw)
		if err != nil {
			return nil, fmt.Errorf("%s:\n%w", variable, err)
		}
		return cfg, nil
	}
	own, err := read("ORDERLY_SERVICES", file)
	if err != nil {
		return nil, err
	}
	fallback, err := read("ORDERLY_SERVICES_DEFAULTS", defaults)
	if err != nil {
		return nil, err
	}
	if own == nil && fallback == nil {
		return nil, nil
	}
	out := maps.Clone(own)
	if out == nil {
		out = services.Config{}
	}
	for name, svc := range fallback {
		if _, listed := out[name]; !listed && slices.Contains(agents, name) {
			out[name] = svc
		}
	}
	return out, nil
}
