// Package docslug gives the anchors GitHub makes of a Markdown document's
// headings, so that tests can check a link's #anchor names one: the docs'
// link check, and the stack's check that every alarm's runbook link lands.
package docslug

import (
	"fmt"
	"regexp"
	"strings"
	"unicode"
)

var (
	heading  = regexp.MustCompile(`(?m)^#{1,6}\s+(.+?)\s*#*\s*$`)
	fence    = regexp.MustCompile("(?ms)^```.*?^```")
	explicit = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// WithoutCodeBlocks is doc with its fenced code blocks removed: a line in
// one that starts with # is not a heading, nor is a [text](target) a link.
func WithoutCodeBlocks(doc string) string { return fence.ReplaceAllString(doc, "") }

// Anchors are the anchors of doc's headings: each heading's Slug, a
// repeated one numbered (-1, -2) as GitHub does, plus any explicit
// <a id> or <a name>.
func Anchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	for _, m := range heading.FindAllStringSubmatch(WithoutCodeBlocks(doc), -1) {
		s := Slug(m[1])
		if n := seen[s]; n > 0 {
			out[fmt.Sprintf("%s-%d", s, n)] = true
		} else {
			out[s] = true
		}
		seen[s]++
	}
	for _, m := range explicit.FindAllStringSubmatch(doc, -1) {
		out[m[1]] = true
	}
	return out
}

// Slug is the anchor GitHub gives a heading's title: lower case, a link
// reduced to its text, punctuation dropped, spaces as hyphens.
func Slug(title string) string {
	title = linkText.ReplaceAllString(title, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	return b.String()
}
