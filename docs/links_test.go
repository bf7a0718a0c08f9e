// Package docs_test checks the repository's Markdown: every relative link
// names a file that exists, and every anchor a heading of its target, so
// a moved or renamed section breaks `make test`, not a reader's click.
package docs_test

import (
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"orderly/internal/docslug"
)

// skipped are the folders whose Markdown is not the repository's own.
var skipped = map[string]bool{"node_modules": true, ".tools": true, ".local": true, "cdk.out": true, ".git": true}

var link = regexp.MustCompile(`\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

func TestRelativeLinksResolve(t *testing.T) {
	root := ".."
	anchors := map[string]map[string]bool{}
	anchorsOf := func(path string) (map[string]bool, error) {
		if a, ok := anchors[path]; ok {
			return a, nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return nil, err
		}
		a := docslug.Anchors(string(raw))
		anchors[path] = a
		return a, nil
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && skipped[d.Name()] {
			return filepath.SkipDir
		}
		if d.IsDir() || filepath.Ext(path) != ".md" {
			return nil
		}
		raw, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		text := docslug.WithoutCodeBlocks(string(raw))
		for _, m := range link.FindAllStringSubmatch(text, -1) {
			target := m[1]
			u, err := url.Parse(target)
			if err != nil || u.Scheme != "" || strings.HasPrefix(target, "//") {
				continue // not a relative link
			}
			checked++
			file := path
			if u.Path != "" {
				file = filepath.Join(filepath.Dir(path), u.Path)
				if _, err := os.Stat(file); err != nil {
					t.Errorf("%s: link %s: no file %s", rel(root, path), target, rel(root, file))
					continue
				}
			}
			if u.Fragment == "" || filepath.Ext(file) != ".md" {
				continue
			}
			a, err := anchorsOf(file)
			if err != nil {
				t.Errorf("%s: link %s: %v", rel(root, path), target, err)
				continue
			}
			if !a[u.Fragment] {
				t.Errorf("%s: link %s: %s has no heading #%s", rel(root, path), target, rel(root, file), u.Fragment)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no relative link found: the check checks nothing")
	}
	t.Logf("%d relative links resolve", checked)
}

func rel(root, path string) string {
	if r, err := filepath.Rel(root, path); err == nil {
		return r
	}
	return path
}
