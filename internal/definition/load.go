package definition

import (
	"cmp"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"

	"orderly/internal/order"
	"orderly/workflows"
)

// Load reads and checks every definition in fsys (NAME/vVERSION.json, as
// under workflows/), naming each file prefix + its path. Its error is
// Problems, for every file at once.
func Load(fsys fs.FS, prefix string) ([]Definition, error) {
	files, err := fs.Glob(fsys, "*/*.json")
	if err != nil {
		return nil, fmt.Errorf("list workflow definitions: %w", err)
	}
	var defs []Definition
	var ps Problems
	for _, f := range files {
		data, err := fs.ReadFile(fsys, f)
		if err != nil {
			return nil, fmt.Errorf("read workflow definition %s: %w", f, err)
		}
		def, err := Parse(path.Join(prefix, f), data)
		if err != nil {
			ps = append(ps, err.(Problems)...)
			continue
		}
		ps = append(ps, def.CheckPlace(f)...)
		defs = append(defs, def)
	}
	if len(ps) > 0 {
		return nil, ps
	}
	return defs, nil
}

// CheckPlace reports a definition whose place under workflows/, rel
// ("order/v1.json"), does not say its name and version: a copy made for a
// new version whose "version" was left as it was would otherwise replace
// the old one.
func (d Definition) CheckPlace(rel string) Problems {
	var ps Problems
	dir, base := path.Split(path.Clean(rel))
	if want := path.Base(dir); d.Name != want {
		ps = append(ps, Problem{File: d.File, Field: "name", Rule: fmt.Sprintf("%q: must be the directory's name, %q", d.Name, want)})
	}
	if want := "v" + d.Version + ".json"; base != want {
		ps = append(ps, Problem{File: d.File, Field: "version", Rule: fmt.Sprintf("%q: the file must be named %s", d.Version, want)})
	}
	return ps
}

// Versions is the named workflow's versions in defs, for the stage's
// timing t, oldest first: numeric versions by number, the rest after them
// by name. The last is the latest, which new orders get.
func Versions(defs []Definition, name string, t order.Timing) (order.Versions, error) {
	var mine []Definition
	for _, d := range defs {
		if d.Name == name {
			mine = append(mine, d)
		}
	}
	if len(mine) == 0 {
		return order.Versions{}, fmt.Errorf("workflow %q: no definition: %w", name, order.ErrInvalid)
	}
	slices.SortFunc(mine, func(a, b Definition) int {
		na, errA := strconv.Atoi(a.Version)
		nb, errB := strconv.Atoi(b.Version)
		switch {
		case errA == nil && errB == nil:
			return cmp.Compare(na, nb)
		case errA == nil:
			return -1
		case errB == nil:
			return 1
		}
		return cmp.Compare(a.Version, b.Version)
	})
	var wfs []order.Workflow
	var ps Problems
	for _, d := range mine {
		w, err := d.Workflow(t)
		if err != nil {
			ps = append(ps, err.(Problems)...)
			continue
		}
		wfs = append(wfs, w)
	}
	if len(ps) > 0 {
		return order.Versions{}, ps
	}
	return order.NewVersions(wfs...)
}

// ShippedWorkflow names the workflow the functions run.
const ShippedWorkflow = "order"

// Shipped returns the versions of the shipped workflow, read from the
// files built into the binary (package workflows), with the stage's
// timing t. The files are checked by this package's tests, so an error
// is a broken build, or a timing that does not fit a step's own.
func Shipped(t order.Timing) (order.Versions, error) {
	defs, err := Load(workflows.FS, "workflows")
	if err != nil {
		return order.Versions{}, err
	}
	return Versions(defs, ShippedWorkflow, t)
}

// MustShipped is Shipped for mains and tests, which cannot go on without it.
func MustShipped(t order.Timing) order.Versions {
	v, err := Shipped(t)
	if err != nil {
		panic(fmt.Sprintf("the shipped workflow: %v", err))
	}
	return v
}
