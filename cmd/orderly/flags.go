package main

import (
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// doubleDash rewrites each single-dash argument that names a long flag of
// the command args run (-status Error, -dry-run, -stage=prod) into the
// double-dash form pflag parses (--status Error), so that command lines
// written for the flag package, which took both, keep working. Shorthands
// (-o json, -h), flag values, every argument after "--" and whatever names
// no flag of the command are left as they are: an unknown flag stays an
// error.
func doubleDash(root *cobra.Command, args []string) []string {
	if len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd) {
		return args // a shell asking what may follow what is typed so far
	}
	flags := flagsOf(commandOf(root, args))
	out := make([]string, 0, len(args))
	for i := 0; i < len(args); i++ {
		arg := args[i]
		if arg == "--" {
			return append(out, args[i:]...)
		}
		name, _, hasValue := strings.Cut(strings.TrimLeft(arg, "-"), "=")
		var f *pflag.Flag
		switch {
		case strings.HasPrefix(arg, "--"):
			f = flags.Lookup(name)
		case strings.HasPrefix(arg, "-") && len(name) > 1:
			if f = flags.Lookup(name); f != nil {
				arg = "-" + arg
			}
		case strings.HasPrefix(arg, "-") && len(name) == 1:
			f = flags.ShorthandLookup(name)
		}
		out = append(out, arg)
		// The flag's value, when it is the next argument, is left as it
		// is, even if it starts with a dash.
		if f != nil && !hasValue && f.NoOptDefVal == "" && i+1 < len(args) {
			i++
			out = append(out, args[i])
		}
	}
	return out
}

// commandOf is the command args run, found as cobra finds it once the
// single-dash long flags are written with two dashes (cobra takes the
// argument after an unknown single-dash one for a command's name).
func commandOf(root *cobra.Command, args []string) *cobra.Command {
	long := map[string]bool{}
	var collect func(*cobra.Command)
	collect = func(c *cobra.Command) {
		for _, fs := range []*pflag.FlagSet{c.Flags(), c.PersistentFlags()} {
			fs.VisitAll(func(f *pflag.Flag) { long[f.Name] = true })
		}
		for _, sub := range c.Commands() {
			collect(sub)
		}
	}
	collect(root)
	found := make([]string, len(args))
	for i, arg := range args {
		name, _, _ := strings.Cut(strings.TrimPrefix(arg, "-"), "=")
		if !strings.HasPrefix(arg, "--") && strings.HasPrefix(arg, "-") && len(name) > 1 && long[name] {
			arg = "-" + arg
		}
		found[i] = arg
	}
	cmd, _, err := root.Find(found)
	if err != nil || cmd == nil {
		return root
	}
	return cmd
}

// flagsOf is every flag cmd takes: its own, its ancestors' persistent
// ones and --help.
func flagsOf(cmd *cobra.Command) *pflag.FlagSet {
	cmd.InitDefaultHelpFlag()
	fs := pflag.NewFlagSet(cmd.Name(), pflag.ContinueOnError)
	fs.AddFlagSet(cmd.LocalFlags())
	fs.AddFlagSet(cmd.InheritedFlags())
	return fs
}
