package main

import (
	"fmt"
	"io"
	"runtime/debug"

	"github.com/spf13/cobra"
)

// buildVersion is what `orderly version` prints: the module's version and
// the commit it was built from, when the build recorded them.
type buildVersion struct {
	Version  string `json:"version"`
	Revision string `json:"revision,omitempty"`
	Time     string `json:"time,omitempty"`
	Modified bool   `json:"modified,omitempty"`
}

// versionOf reads a build's version from its build information: "devel"
// for a build with no module version (go run, go build in a checkout
// without VCS stamping).
func versionOf(info *debug.BuildInfo, ok bool) buildVersion {
	v := buildVersion{Version: "devel"}
	if !ok {
		return v
	}
	if mv := info.Main.Version; mv != "" && mv != "(devel)" {
		v.Version = mv
	}
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			v.Revision = s.Value
		case "vcs.time":
			v.Time = s.Value
		case "vcs.modified":
			v.Modified = s.Value == "true"
		}
	}
	return v
}

func (v buildVersion) String() string {
	s := "orderly " + v.Version
	if v.Revision != "" {
		s += " (" + v.Revision
		if v.Time != "" {
			s += ", " + v.Time
		}
		if v.Modified {
			s += ", modified"
		}
		s += ")"
	}
	return s
}

func (a *app) versionCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print orderly's version and the commit it was built from",
		Args:  cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			v := versionOf(debug.ReadBuildInfo())
			return a.print(v, func(w io.Writer) { fmt.Fprintln(w, v) })
		},
	}
}
