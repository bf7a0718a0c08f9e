// Command orderly is the operator's tool: it reads and changes a stage's
// orders (a local run or a deployed stack) with the caller's usual AWS
// configuration (profile, region, endpoint variables), through the same
// packages and fenced transitions as the functions. `orderly help` lists
// its commands; each takes --help.
//
//	orderly [--stage NAME] [-o text|json] COMMAND [ARGS] [FLAGS]
//	orderly list [--late 5m | --status Error|Pending|Processing|Compensating|Cancelling] [--max 100]
//	orderly show ID
//	orderly history ID
//	orderly search [--customer C] [--status S] [--workflow W] [--version V] [--created-from T] [--created-to T] [--ended-from T] [--ended-to T] [--max 100]
//	orderly counts [--customer C] [--workflow W] [--version V] [--created-from T] ... [--max-read 200000]
//	orderly watch ID [--every 1s] [--timeout 10m]
//	orderly cancel ID
//	orderly redrive ID [--action retry|compensate]
//	orderly send-event ID NAME [--data JSON | --data-file FILE]
//	orderly bulk redrive|cancel|move|send-event [search's filters] [--step S] [--max 1000] [--rate 10] [--journal FILE] [--yes]
//	orderly dlq list
//	orderly dlq show QUEUE [--max 10]
//	orderly dlq redrive QUEUE [--max N] [--dry-run]
//	orderly alerts [--since 24h] [--kind UndoFailed] [--max 100]
//	orderly versions
//	orderly move ID --version V
//	orderly console [--addr 127.0.0.1:8082] [--host NAME[:PORT],...]
//	orderly workflow validate [--cdk-json FILE] [--allowance D] [--max-allowance D] [--failure-threshold N] [--max-heartbeats N] FILE...
//	orderly workflow diff [--json] [--cdk-json FILE] [--allowance D] ... OLD NEW
//	orderly services validate [--workflows DIR|FILE,...] [--remote-url URL] FILE...
//	orderly conformance --workflow FILE --url BASE [--step NAME] [--header K=V]... [--input FILE] [--openapi]
//	orderly version
//	orderly completion bash|zsh|fish|powershell
//
// Exit status: 0 done, 1 the operation failed, 2 a usage error, as
// `orderly --help` details.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run carries out the command line args, printing its output and help on
// out and what went wrong on errOut, and returns the exit status.
func run(ctx context.Context, args []string, out, errOut io.Writer) int {
	cmd, err := execute(ctx, args, out, errOut)
	if err == nil {
		return 0
	}
	fmt.Fprintln(errOut, "orderly:", explain(err))
	if isUsage(err) && cmd != nil {
		fmt.Fprintf(errOut, "Run '%s --help' for usage.\n", cmd.CommandPath())
	}
	return exitCode(err)
}

// execute carries out the command line args and returns the command it
// ran (or found wrong) and its error.
func execute(ctx context.Context, args []string, out, errOut io.Writer) (*cobra.Command, error) {
	root := newRoot(out, errOut)
	root.SetArgs(doubleDash(root, args))
	return root.ExecuteContextC(ctx)
}

// usageError is a command line orderly cannot carry out: an unknown
// command or flag, a flag's bad value, the wrong arguments (exit 2).
type usageError struct{ err error }

func (u usageError) Error() string { return u.err.Error() }
func (u usageError) Unwrap() error { return u.err }

// usagef returns a usage error; %w wraps as fmt.Errorf does.
func usagef(format string, a ...any) error {
	return usageError{fmt.Errorf(format, a...)}
}

func isUsage(err error) bool {
	var u usageError
	return errors.As(err, &u)
}

// exitCode is the status for execute's error: 2 for a usage error, a
// definition `workflow diff` could not compare or a conformance run that
// cannot start, else 1.
func exitCode(err error) int {
	if isUsage(err) || errors.Is(err, errNotCompared) || errors.Is(err, errCannotStart) {
		return 2
	}
	return 1
}

// explain is err as the one line to print: what to set, when the stage's
// AWS configuration lacks something, in place of the SDK's error.
func explain(err error) error {
	var setup *awsConfigError
	if errors.As(err, &setup) {
		return setup
	}
	var table *missingTableError
	if errors.As(err, &table) {
		return table
	}
	return err
}
