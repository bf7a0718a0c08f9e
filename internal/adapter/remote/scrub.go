package remote

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strings"
	"unicode"
)

// minSecretPartBytes is the shortest part of a credential scrubbed on its
// own when it may not be secret: a shorter one (a user name like "bob", a
// realm, a word of a value without a scheme) is too likely to be ordinary
// text. A part known to be secret (see secretParts) is scrubbed at any
// length.
const minSecretPartBytes = 8

// authSchemes are the HTTP authentication schemes (the IANA registry's)
// that open a credential: words, not secrets, never scrubbed on their own.
var authSchemes = []string{"aws4-hmac-sha256", "basic", "bearer", "concealed", "digest", "dpop", "gnap", "hoba",
	"mutual", "negotiate", "ntlm", "oauth", "privatetoken", "scram-sha-1", "scram-sha-256", "token", "vapid"}

// Scrubber takes credentials out of what a service wrote. A service may
// echo a credential whole or in part (the token after "Bearer ", a Basic
// credential's password), as it is or escaped the way URLs, JSON and
// base64 write it: each of those is replaced by [redacted]. It prints as
// [redacted] too.
type Scrubber struct {
	// forms are every way each value and each of its secret parts is
	// written, longest first: a longer form is never broken by replacing
	// a shorter one inside it first.
	forms [][]byte
}

// NewScrubber returns the scrubber of values (a header's value, a session
// token): each whole, and each part of it that may be secret on its own.
func NewScrubber(values ...string) *Scrubber {
	var forms []string
	for _, v := range values {
		if strings.TrimSpace(v) == "" {
			continue
		}
		for _, p := range secretParts(v) {
			for _, f := range writtenForms(p) {
				if !slices.Contains(forms, f) {
					forms = append(forms, f)
				}
			}
		}
	}
	s := &Scrubber{}
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	for _, f := range forms {
		s.forms = append(s.forms, []byte(f))
	}
	return s
}

// Scrub returns text with every form of every part replaced.
func (s *Scrubber) Scrub(text string) string { return s.replace(text, redacted) }

// replace returns text with every form of every part replaced by with.
func (s *Scrubber) replace(text, with string) string {
	if s == nil {
		return text
	}
	for _, f := range s.forms {
		text = strings.ReplaceAll(text, string(f), with)
	}
	return text
}

// scrubBytes is Scrub of a body.
func (s *Scrubber) scrubBytes(raw []byte) []byte {
	if s == nil {
		return raw
	}
	for _, f := range s.forms {
		raw = bytes.ReplaceAll(raw, f, []byte(redacted))
	}
	return raw
}

// scrubJSON scrubs a JSON document's strings (keys too) as they read once
// decoded, which catches a part written with any JSON escape (\u0074ok,
// \/). A document that holds none is returned as it is; one that does is
// written again, its keys sorted. Anything not JSON is returned as it is.
func (s *Scrubber) scrubJSON(raw []byte) []byte {
	// Without a backslash, every string reads decoded as it is written,
	// and scrubBytes saw it.
	if s == nil || len(s.forms) == 0 || !bytes.ContainsRune(raw, '\\') {
		return raw
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var doc any
	if dec.Decode(&doc) != nil {
		return raw
	}
	if _, err := dec.Token(); err != io.EOF {
		return raw
	}
	doc, changed := s.scrubValue(doc)
	if !changed {
		return raw
	}
	var out bytes.Buffer
	enc := json.NewEncoder(&out)
	enc.SetEscapeHTML(false)
	if enc.Encode(doc) != nil {
		return raw
	}
	return bytes.TrimSuffix(out.Bytes(), []byte("\n"))
}

func (s *Scrubber) scrubValue(v any) (any, bool) {
	switch v := v.(type) {
	case string:
		out := s.Scrub(v)
		return out, out != v
	case []any:
		changed := false
		for i, e := range v {
			var c bool
			v[i], c = s.scrubValue(e)
			changed = changed || c
		}
		return v, changed
	case map[string]any:
		changed := false
		out := make(map[string]any, len(v))
		for k, e := range v {
			e, c := s.scrubValue(e)
			sk := s.Scrub(k)
			out[sk] = e
			changed = changed || c || sk != k
		}
		return out, changed
	}
	return v, false
}

func (*Scrubber) String() string                { return redacted }
func (*Scrubber) GoString() string              { return redacted }
func (*Scrubber) LogValue() slog.Value          { return slog.StringValue(redacted) }
func (*Scrubber) Format(f fmt.State, verb rune) { io.WriteString(f, redacted) }

// secretParts are value and the parts of it a service may echo on their
// own: each word (split at white space, commas and semicolons, as
// authorization headers are written) with and without its base64 padding,
// the value of a name=value parameter (quotes taken off), and a Basic
// credential decoded, with its user and password. The value, the token
// after a known scheme ("Bearer abc1234") and a Basic credential's
// password are secrets whatever their length; the other parts are kept
// only from minSecretPartBytes, and scheme words never.
func secretParts(value string) []string {
	value = strings.TrimSpace(value)
	always := []string{value}
	var parts []string
	fields := strings.FieldsFunc(value, func(r rune) bool { return unicode.IsSpace(r) || r == ',' || r == ';' })
	schemed := len(fields) > 1 && slices.Contains(authSchemes, strings.ToLower(fields[0]))
	for i, f := range fields {
		// A base64 token may be echoed without its padding.
		forms := []string{f, strings.Trim(f, `"'`), strings.TrimRight(f, "=")}
		name, v, isParam := strings.Cut(f, "=")
		isParam = isParam && isToken(name) && strings.Trim(v, "=") != ""
		if isParam {
			parts = append(parts, strings.Trim(v, `"'`))
		}
		if i == 1 && schemed && !isParam {
			// The credential itself (a token68), not a parameter.
			always = append(always, forms...)
		} else {
			parts = append(parts, forms...)
		}
		if i == 1 && strings.EqualFold(fields[0], "basic") {
			for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.RawStdEncoding} {
				if raw, err := enc.DecodeString(f); err == nil {
					user, password, _ := strings.Cut(string(raw), ":")
					always = append(always, string(raw), password)
					parts = append(parts, user)
					break
				}
			}
		}
	}
	var out []string
	for _, p := range always {
		if p != "" && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	for _, p := range parts {
		if len(p) >= minSecretPartBytes && !slices.Contains(authSchemes, strings.ToLower(p)) && !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	return out
}

// isToken reports whether s is an HTTP token (RFC 9110): a parameter's
// name. A base64 value's '=' padding or a token with '/' in it is not
// split at its '='.
func isToken(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > unicode.MaxASCII || !(unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("!#$%&'*+-.^_`|~", r)) {
			return false
		}
	}
	return true
}

// writtenForms are the ways a service may write part in an answer: as it
// is; URL-escaped for a query and for a path; JSON-escaped with and
// without HTML escaping, and with '/' escaped as some encoders do; and in
// base64, standard and URL-safe, padded and raw.
func writtenForms(part string) []string {
	forms := []string{part, url.QueryEscape(part), url.PathEscape(part)}
	html, _ := json.Marshal(part)
	var plain bytes.Buffer
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	enc.Encode(part)
	for _, j := range []string{string(html), strings.TrimSpace(plain.String())} {
		j = strings.TrimSuffix(strings.TrimPrefix(j, `"`), `"`)
		forms = append(forms, j, strings.ReplaceAll(j, "/", `\/`))
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding, base64.RawStdEncoding, base64.RawURLEncoding} {
		forms = append(forms, enc.EncodeToString([]byte(part)))
	}
	return forms
}
