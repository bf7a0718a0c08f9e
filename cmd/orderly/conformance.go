package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"orderly/internal/adapter/remote"
	"orderly/internal/definition"
	"orderly/internal/operator/conformance"
	"orderly/internal/order"
)

// errNonConformant ends `conformance` when a rule failed (exit 1); the
// rules are already printed.
var errNonConformant = errors.New("the service does not conform")

// specList collects a repeatable flag's values, parsed after the flags:
// the flag package would quote a refused value, and a header's may be a
// secret.
type specList []string

func (s *specList) String() string { return fmt.Sprint(len(*s), " values") }

func (s *specList) Set(v string) error {
	*s = append(*s, v)
	return nil
}

// conformanceCmd runs `orderly conformance`.
func conformanceCmd(args []string, out io.Writer, asJSON bool) error {
	const synopsis = "conformance --workflow FILE --url BASE [--step NAME] [--header K=V]... [--input FILE] [--openapi]"
	fs := flags("conformance", synopsis)
	file := fs.String("workflow", "", "the workflow definition `file` whose steps' calls are checked")
	base := fs.String("url", "", "the base `URL` the steps' services answer under")
	step := fs.String("step", "", "check only this `step`; the earlier steps it carries results of are called once first")
	inputFile := fs.String("input", "", "a JSON `file` with the order's input (default: the input schema's examples[0])")
	asOpenAPI := fs.Bool("openapi", false, "print the workflow's remote-service contract (OpenAPI 3.1) and check nothing")
	var headerSpecs specList
	fs.Var(&headerSpecs, "header", "`NAME=VALUE` or NAME=@FILE: a header every call carries, such as a credential (repeatable; values are never printed)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	usage := func(format string, a ...any) error {
		fs.Usage()
		return fmt.Errorf("conformance: "+format+": %w", append(a, flag.ErrHelp)...)
	}
	// cannot is a run that cannot start: exit 2, like a usage error.
	cannot := func(err error) error { return fmt.Errorf("conformance: %w: %w", err, flag.ErrHelp) }
	switch {
	case fs.NArg() > 0:
		return usage("unexpected argument %q", fs.Arg(0))
	case *file == "":
		return usage("--workflow FILE is required")
	case *base == "" && !*asOpenAPI:
		return usage("--url BASE is required")
	}
	header, err := parseHeaders(headerSpecs)
	if err != nil {
		return usage("%v", err)
	}
	w, err := loadWorkflow(*file)
	if err != nil {
		return cannot(err)
	}
	if *asOpenAPI {
		doc, err := remote.ContractJSONFor(w)
		if err != nil {
			return cannot(err)
		}
		_, err = out.Write(doc)
		return err
	}
	input, err := conformanceInput(w, *inputFile)
	if err != nil {
		return cannot(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	results, err := conformance.Run(ctx, conformance.Config{Workflow: w, Input: input, BaseURL: *base, Step: *step, Header: header})
	if err != nil {
		return cannot(err)
	}
	if asJSON {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		if err := enc.Encode(map[string]any{"workflow": w.Name, "version": w.Version, "results": results, "failed": conformance.Failed(results)}); err != nil {
			return err
		}
	} else {
		conformance.Write(out, results)
	}
	if n := conformance.Failed(results); n > 0 {
		return fmt.Errorf("%d rules failed: %w", n, errNonConformant)
	}
	return nil
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
