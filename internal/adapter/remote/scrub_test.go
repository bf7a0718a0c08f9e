package remote_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"testing"

	"orderly/internal/adapter/remote"
)

func TestScrubberTakesOutEachSecretPart(t *testing.T) {
	const token = "tok_SECRET_123456"
	b64 := base64.StdEncoding.EncodeToString
	basic := "Basic " + b64([]byte("bob:hunter2-password"))
	tests := []struct {
		name, value, text, want string
	}{
		{"the whole value", "Bearer " + token, "got Bearer " + token + "!", "got [redacted]!"},
		{"the token after its scheme", "Bearer " + token, `{"error":"token ` + token + ` is not allowed"}`,
			`{"error":"token [redacted] is not allowed"}`},
		{"the token query-escaped", "Bearer tok/SECRET+12&3", "?t=" + url.QueryEscape("tok/SECRET+12&3"), "?t=[redacted]"},
		{"the token path-escaped", "Bearer tok/SECRET+12&3", "/t/" + url.PathEscape("tok/SECRET+12&3"), "/t/[redacted]"},
		{"the token JSON-escaped", "Bearer tok<SECRET>&123", `"tok\u003cSECRET\u003e\u0026123"`, `"[redacted]"`},
		{"the token JSON-escaped with its slash", "Bearer tok/SECRET/123", `"tok\/SECRET\/123"`, `"[redacted]"`},
		{"the token in base64", "Bearer " + token, "t=" + b64([]byte(token)), "t=[redacted]"},
		{"the token in URL base64", "Bearer tok?SECRET>>12", "t=" + base64.URLEncoding.EncodeToString([]byte("tok?SECRET>>12")), "t=[redacted]"},
		{"the token in raw base64", "Bearer " + token, "t=" + base64.RawStdEncoding.EncodeToString([]byte(token)), "t=[redacted]"},
		{"the token in raw URL base64", "Bearer " + token, "t=" + base64.RawURLEncoding.EncodeToString([]byte(token)), "t=[redacted]"},
		{"a token with base64 padding", "Bearer dG9rX1NFQ1JFVA==", "t=dG9rX1NFQ1JFVA== t=dG9rX1NFQ1JFVA", "t=[redacted] t=[redacted]"},
		{"a Basic credential's password, decoded", basic, "password hunter2-password refused for bob", "password [redacted] refused for bob"},
		{"a Basic credential, decoded", basic, "bob:hunter2-password", "[redacted]"},
		{"a Basic credential as sent", basic, "got " + basic[len("Basic "):], "got [redacted]"},
		{"a parameter's value", `Digest username="merchant", response="6629fae49393a05397450978507c4ef1"`,
			"response 6629fae49393a05397450978507c4ef1 is wrong", "response [redacted] is wrong"},
		{"a value without a scheme", "sk_live_0123456789", "key sk_live_0123456789", "key [redacted]"},
		{"the scheme word is kept", "Negotiate YIIGhgYJKoZIhvcSAQICAQBuggZ1", "Negotiate failed", "Negotiate failed"},
		{"a short password of a Basic credential", "Basic " + b64([]byte("bob:hunter2")), "wrong password hunter2 for bob",
			"wrong password [redacted] for bob"},
		{"a short bearer token", "Bearer abc1234", "token abc1234 expired", "token [redacted] expired"},
		{"a short token after any scheme", "token k3y", "k3y refused", "[redacted] refused"},
		{"a short word of a value without a scheme is kept", "Custom abc 0123456789abcdef", "abc is not 0123456789abcdef", "abc is not [redacted]"},
		{"a short user name is kept", "Basic " + b64([]byte("bob:hunter2")), "bob, try again", "bob, try again"},
		{"a short value is taken out whole", "k3y-42", "key k3y-42 refused", "key [redacted] refused"},
		{"nothing to take out", "", "the same text", "the same text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := remote.NewScrubber(tt.value).Scrub(tt.text); got != tt.want {
				t.Errorf("Scrub(%q) = %q, want %q", tt.text, got, tt.want)
			}
		})
	}
}

// A scrubber holds the secrets' forms, so it never shows them itself.
func TestScrubberPrintsRedacted(t *testing.T) {
	s := remote.NewScrubber("Bearer tok_SECRET_123456")
	var logs bytes.Buffer
	slog.New(slog.NewJSONHandler(&logs, nil)).Info("scrubber", "s", s)
	raw, _ := json.Marshal(struct{ S *remote.Scrubber }{s})
	for what, out := range map[string]string{
		"fmt": fmt.Sprintf("%v %+v %#v %s %q %x", s, s, s, s, s, s), "slog": logs.String(), "json": string(raw),
	} {
		if strings.Contains(out, "SECRET") {
			t.Errorf("%s shows the secret: %s", what, out)
		}
	}
}
