package docs_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// maxReadmeLines bounds README: what orderly is, its guarantees, a
// quickstart, the picture, deploying, what to do when an alarm fires, and
// links; everything else lives in docs/.
const maxReadmeLines = 250

func TestReadmeIsShortAndLinksEveryTopic(t *testing.T) {
	raw, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	if n := strings.Count(readme, "\n"); n > maxReadmeLines {
		t.Errorf("README.md has %d lines, want at most %d: move the detail to a page in docs/", n, maxReadmeLines)
	}
	pages, err := filepath.Glob("*.md")
	if err != nil {
		t.Fatal(err)
	}
	if len(pages) == 0 {
		t.Fatal("no topic page in docs/")
	}
	for _, page := range pages {
		if !strings.Contains(readme, "](docs/"+page+")") && !strings.Contains(readme, "](docs/"+page+"#") {
			t.Errorf("README.md does not link docs/%s", page)
		}
	}
}
