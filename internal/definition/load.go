package definition

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strconv"
	"strings"

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
		var more Problems
		if errors.As(err, &more) {
			ps = append(ps, more...)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read workflow definition %s: %w", f, err)
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
		ps = append(ps, Problem{Source: d.File, Field: "name", Rule: fmt.Sprintf("%q: must be the directory's name, %q", d.Name, want)})
	}
	if want := "v" + d.Version + ".json"; base != want {
		ps = append(ps, Problem{Source: d.File, Field: "version", Rule: fmt.Sprintf("%q: the file must be named %s", d.Version, want)})
	}
	return ps
}

// Build is every workflow in defs, each in its versions, for the stage's
// timing t, with def the stage's default workflow (POST /orders). Versions
// are ordered oldest first: numeric versions by number, the rest after
// them by name; the last is the latest, which new orders get.
func Build(defs []Definition, def string, t order.Timing) (order.Versions, error) {
	byName := map[string][]Definition{}
	var names []string
	for _, d := range defs {
		if byName[d.Name] == nil {
			names = append(names, d.Name)
		}
		byName[d.Name] = append(byName[d.Name], d)
	}
	if byName[def] == nil {
		return order.Versions{}, fmt.Errorf("default workflow %q: no definition (there are: %s): %w", def, strings.Join(names, ", "), order.ErrInvalid)
	}
	slices.Sort(names)
	// The default first: NewVersions takes the first as the default.
	names = slices.DeleteFunc(names, func(n string) bool { return n == def })
	names = append([]string{def}, names...)
	var wfs []order.Workflow
	var ps Problems
	for _, name := range names {
		mine := byName[name]
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
		for _, d := range mine {
			w, err := d.Workflow(t)
			var more Problems
			if errors.As(err, &more) {
				ps = append(ps, more...)
				continue
			}
			if err != nil {
				return order.Versions{}, fmt.Errorf("workflow %s version %s: %w", d.Name, d.Version, err)
			}
			wfs = append(wfs, w)
		}
	}
	if len(ps) > 0 {
		return order.Versions{}, ps
	}
	return order.NewVersions(wfs...)
}

// ShippedWorkflow names the workflow the shipped stages default to.
const ShippedWorkflow = "order"

// NoExamplesTag is the build tag that leaves the examples out of a binary:
// make build builds the functions with it unless EXAMPLES=1, and the stack
// reads it from their build information.
const NoExamplesTag = "noexamples"

// source is a directory of definitions built into the binary.
type source struct {
	dir  string // as under the repository: workflows, examples/workflows
	fsys fs.FS
}

// shippedSource is every workflow under workflows/; exampleSource, the
// examples under examples/workflows/, is nil in a binary built with
// -tags noexamples (examples.go), as make build builds the functions.
var shippedSource = source{dir: "workflows", fsys: workflows.FS}

// Embedded reads the definitions built into the binary: every workflow
// under workflows/, and the examples under examples/workflows/ (none in a
// binary built with -tags noexamples). A stage runs an example only when
// it names it.
func Embedded() (shipped, examples []Definition, err error) {
	if shipped, err = Load(shippedSource.fsys, shippedSource.dir); err != nil {
		return nil, nil, err
	}
	if exampleSource == nil {
		return shipped, nil, nil
	}
	if examples, err = Load(exampleSource.fsys, exampleSource.dir); err != nil {
		return nil, nil, err
	}
	return shipped, examples, nil
}

// Deployed is the workflows a stage runs, from the definitions built into
// the binary, with the stage's timing t: those named (every one under
// workflows/ when none is; an example only when named), def the default.
// The stack passes the functions the names it deployed
// (config.EnvWorkflows) and the Digest of their definitions
// (config.EnvWorkflowsDigest; "" skips the check): a binary built with
// others refuses, so that a deploy without `make build` after a
// definition changed does not run the old steps under the new version's
// name.
func Deployed(t order.Timing, names []string, def, digest string) (order.Versions, error) {
	shipped, examples, err := Embedded()
	if err != nil {
		return order.Versions{}, err
	}
	mine, err := selectDefinitions(append(shipped, examples...), shipped, names)
	if err != nil {
		return order.Versions{}, err
	}
	if got := Digest(mine); digest != "" && got != digest {
		return order.Versions{}, fmt.Errorf("this function was built with other workflow definitions (digest %.12s) than the stack deployed (%.12s): run make build, then deploy again: %w", got, digest, order.ErrInvalid)
	}
	return Build(mine, def, t)
}

// selectDefinitions is the definitions of the named workflows in all (of
// every one in unnamed when names is empty).
func selectDefinitions(all, unnamed []Definition, names []string) ([]Definition, error) {
	if len(names) == 0 {
		return unnamed, nil
	}
	var mine []Definition
	for _, name := range names {
		n := len(mine)
		for _, d := range all {
			if d.Name == name {
				mine = append(mine, d)
			}
		}
		if len(mine) == n {
			return nil, fmt.Errorf("workflow %q: not built into this binary, %s: %w", name, notBuiltIn, order.ErrInvalid)
		}
	}
	return mine, nil
}

// Digest fingerprints definitions, whatever their order or the files they
// were read from.
func Digest(defs []Definition) string {
	sorted := slices.Clone(defs)
	slices.SortFunc(sorted, func(a, b Definition) int {
		return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Version, b.Version))
	})
	h := sha256.New()
	for _, d := range sorted {
		raw, _ := json.Marshal(d) // strings, numbers and raw JSON: it cannot fail
		h.Write(raw)
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))
}
