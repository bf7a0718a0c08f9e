package callbacktoken_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"orderly/internal/callbacktoken"
	"orderly/internal/pagetoken"
)

const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_"

var (
	now = time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	key = bytes.Repeat([]byte{7}, callbacktoken.MinKeyBytes)
)

func sealer(t testing.TB, key []byte) *callbacktoken.Sealer {
	t.Helper()
	s, err := callbacktoken.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// claim is a typical claim: an order id as long as a ULID, a step name of
// 40 characters.
func claim() callbacktoken.Claim {
	return callbacktoken.Claim{
		OrderID:   "01JTQ8ZK5XW3M6R2V9B4N7C1DE",
		Record:    3,
		Step:      "confirm-payment-with-the-card-issuer-3ds",
		Attempt:   2,
		ExpiresAt: now.Add(72 * time.Hour),
	}
}

func seal(t testing.TB, s *callbacktoken.Sealer, c callbacktoken.Claim) string {
	t.Helper()
	token, err := s.Seal(c)
	if err != nil {
		t.Fatal(err)
	}
	return token.Reveal()
}

func same(a, b callbacktoken.Claim) bool {
	return a.OrderID == b.OrderID && a.Record == b.Record && a.Step == b.Step &&
		a.Attempt == b.Attempt && a.ExpiresAt.Equal(b.ExpiresAt)
}

func TestSealAndOpen(t *testing.T) {
	s := sealer(t, key)
	long := strings.Repeat("x", callbacktoken.MaxNameBytes)
	tests := []struct {
		name   string
		change func(*callbacktoken.Claim)
	}{
		{"typical", func(*callbacktoken.Claim) {}},
		{"first record, first attempt", func(c *callbacktoken.Claim) { c.Record, c.Attempt = 0, 1 }},
		{"large record and attempt", func(c *callbacktoken.Claim) { c.Record, c.Attempt = 1<<40, 1<<50 }},
		{"names at the bound", func(c *callbacktoken.Claim) { c.OrderID, c.Step = long, long }},
		{"one-byte names", func(c *callbacktoken.Claim) { c.OrderID, c.Step = "o", "s" }},
		{"names not ASCII", func(c *callbacktoken.Claim) { c.OrderID, c.Step = "commande-é", "prüfen ✓" }},
		{"expiry with nanoseconds in another zone", func(c *callbacktoken.Claim) {
			c.ExpiresAt = time.Date(2026, 5, 4, 12, 0, 0, 123456789, time.FixedZone("CEST", 2*3600))
		}},
		{"expiry at the latest time it can hold", func(c *callbacktoken.Claim) { c.ExpiresAt = time.Unix(0, 1<<63-1) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			want := claim()
			tt.change(&want)
			token := seal(t, s, want)
			got, err := s.Open(token, now)
			if err != nil || !same(got, want) {
				t.Fatalf("open: %+v, %v; want %+v", got, err, want)
			}
			if got.ExpiresAt.Location() != time.UTC {
				t.Errorf("expiry in %s, want UTC", got.ExpiresAt.Location())
			}
			if strings.ContainsAny(token, "+/=") {
				t.Errorf("token %q is not URL-safe", token)
			}
			// The claim stays hidden: a token seen by a service tells it
			// nothing of the order it is not already told. (A name of a
			// byte or two may turn up in random bytes by chance.)
			raw, _ := base64.RawURLEncoding.DecodeString(token)
			if len(want.Step) >= 8 && bytes.Contains(raw, []byte(want.Step)) {
				t.Errorf("token %q shows the step name", token)
			}
		})
	}
	if a, b := seal(t, s, claim()), seal(t, s, claim()); a == b {
		t.Error("two seals of one claim made one token: the nonce is not fresh")
	}
}

func TestSealRefuses(t *testing.T) {
	s := sealer(t, key)
	long := strings.Repeat("x", callbacktoken.MaxNameBytes+1)
	tests := []struct {
		name, want string
		change     func(*callbacktoken.Claim)
	}{
		{"no order id", "no order id", func(c *callbacktoken.Claim) { c.OrderID = "" }},
		{"order id too long", "order id is 257 bytes, at most 256", func(c *callbacktoken.Claim) { c.OrderID = long }},
		{"no step", "no step name", func(c *callbacktoken.Claim) { c.Step = "" }},
		{"step too long", "step name is 257 bytes, at most 256", func(c *callbacktoken.Claim) { c.Step = long }},
		{"negative record", "record -1 is negative", func(c *callbacktoken.Claim) { c.Record = -1 }},
		{"attempt 0", "attempt 0 is not positive", func(c *callbacktoken.Claim) { c.Attempt = 0 }},
		{"no expiry", "no expiry", func(c *callbacktoken.Claim) { c.ExpiresAt = time.Time{} }},
		{"expiry before 1970", "outside the years", func(c *callbacktoken.Claim) { c.ExpiresAt = time.Date(1969, 12, 31, 0, 0, 0, 0, time.UTC) }},
		{"expiry after 2262", "outside the years", func(c *callbacktoken.Claim) { c.ExpiresAt = time.Date(2263, 1, 1, 0, 0, 0, 0, time.UTC) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := claim()
			tt.change(&c)
			token, err := s.Seal(c)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("seal: %v; want an error saying %q", err, tt.want)
			}
			if token.Reveal() != "" {
				t.Errorf("seal refused the claim but gave a token")
			}
		})
	}
}

func TestOpenRefuses(t *testing.T) {
	s := sealer(t, key)
	token := seal(t, s, claim())
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	otherVersion := append([]byte(nil), raw...)
	otherVersion[0]++
	otherKey := append([]byte(nil), key...)
	otherKey[31] ^= 1
	pages, err := pagetoken.New(key)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, token string
		sealer      *callbacktoken.Sealer
	}{
		{"another key", token, sealer(t, otherKey)},
		{"another version", base64.RawURLEncoding.EncodeToString(otherVersion), s},
		{"cut short by one", token[:len(token)-1], s},
		{"cut to the nonce", token[:17], s},
		{"one character too many", token + "A", s},
		{"empty", "", s},
		{"not base64", "!!" + token[2:], s},
		{"garbage", "hello, world", s},
		{"base64 garbage", base64.RawURLEncoding.EncodeToString(bytes.Repeat([]byte{1}, len(raw))), s},
		{"padded", token + "=", s},
		{"standard alphabet", base64.RawStdEncoding.EncodeToString(raw), s},
		{"a line break inside", token[:20] + "\n" + token[20:], s},
		{"a line break after", token + "\r\n", s},
		{"spaces around", " " + token + " ", s},
		{"a page token of the same key", pages.Seal("", []byte("position")), s},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.token == token {
				// Guard the table: a case must differ from the genuine token
				// or come with another key.
				if tt.sealer == s {
					t.Fatal("case is the genuine token")
				}
			}
			got, err := tt.sealer.Open(tt.token, now)
			if err != callbacktoken.ErrInvalid || got != (callbacktoken.Claim{}) {
				t.Errorf("open: %+v, %v; want ErrInvalid itself and no claim", got, err)
			}
		})
	}
}

// Every change of one character of a token, and every change of one bit
// of what it encodes, makes it invalid.
func TestOpenRefusesEveryAlteration(t *testing.T) {
	s := sealer(t, key)
	token := seal(t, s, claim())
	for i := range token {
		for _, r := range alphabet + "!.~ \n" {
			if byte(r) == token[i] {
				continue
			}
			altered := token[:i] + string(r) + token[i+1:]
			if got, err := s.Open(altered, now); err != callbacktoken.ErrInvalid {
				t.Fatalf("character %d changed to %q: %+v, %v; want ErrInvalid", i, r, got, err)
			}
		}
	}
	raw, _ := base64.RawURLEncoding.DecodeString(token)
	for i := range raw {
		for bit := range 8 {
			altered := append([]byte(nil), raw...)
			altered[i] ^= 1 << bit
			if got, err := s.Open(base64.RawURLEncoding.EncodeToString(altered), now); err != callbacktoken.ErrInvalid {
				t.Fatalf("byte %d bit %d flipped: %+v, %v; want ErrInvalid", i, bit, got, err)
			}
		}
	}
}

func TestOpenExpired(t *testing.T) {
	s := sealer(t, key)
	c := claim()
	c.ExpiresAt = time.Date(2026, 5, 4, 10, 0, 0, 500, time.UTC)
	token := seal(t, s, c)
	tests := []struct {
		name    string
		now     time.Time
		expired bool
	}{
		{"well before", c.ExpiresAt.Add(-72 * time.Hour), false},
		{"at the expiry", c.ExpiresAt, false},
		{"a nanosecond after", c.ExpiresAt.Add(time.Nanosecond), true},
		{"a year after", c.ExpiresAt.AddDate(1, 0, 0), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.Open(token, tt.now)
			if !same(got, c) {
				t.Errorf("claim %+v, want %+v", got, c)
			}
			if !tt.expired {
				if err != nil {
					t.Errorf("open: %v; want no error", err)
				}
				return
			}
			if !errors.Is(err, callbacktoken.ErrExpired) || errors.Is(err, callbacktoken.ErrInvalid) {
				t.Fatalf("open: %v; want ErrExpired", err)
			}
			if want := "callback token expired at 2026-05-04T10:00:00.0000005Z"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
		})
	}
}

func TestNewKeyLength(t *testing.T) {
	for _, n := range []int{0, 16, 31, 32, 64} {
		_, err := callbacktoken.New(bytes.Repeat([]byte{7}, n))
		if (err == nil) != (n >= callbacktoken.MinKeyBytes) {
			t.Errorf("a %d-byte key: %v", n, err)
		}
		if err != nil && !strings.Contains(err.Error(), fmt.Sprintf("%d bytes, want at least 32", n)) {
			t.Errorf("a %d-byte key: error %q does not say why", n, err)
		}
	}
}

// A token fits easily in an HTTP header, even with both names at their
// bound.
func TestTokenLength(t *testing.T) {
	s := sealer(t, key)
	long := strings.Repeat("x", callbacktoken.MaxNameBytes)
	big := claim()
	big.OrderID, big.Step, big.Record, big.Attempt = long, long, math.MaxInt, math.MaxInt
	tests := []struct {
		name string
		c    callbacktoken.Claim
		want int
	}{
		// 1 version + 12 nonce + 78 claim + 16 tag = 107 bytes.
		{"26-character order id, 40-character step", claim(), 143},
		{"names at the bound, largest numbers", big, 762},
	}
	for _, tt := range tests {
		if got := len(seal(t, s, tt.c)); got != tt.want {
			t.Errorf("%s: %d characters, want %d", tt.name, got, tt.want)
		}
	}
}

func TestTokenRedacts(t *testing.T) {
	s := sealer(t, key)
	token, err := s.Seal(claim())
	if err != nil {
		t.Fatal(err)
	}
	value := token.Reveal()
	if value == "" {
		t.Fatal("Reveal gave nothing")
	}
	if _, err := s.Open(value, now); err != nil {
		t.Fatalf("Reveal's value does not open: %v", err)
	}
	type request struct {
		URL   string
		Token callbacktoken.Token
	}
	type hidden struct{ token callbacktoken.Token }
	jsonOf := func(v any) string {
		b, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	logOf := func(h func(*bytes.Buffer) slog.Handler, args ...any) string {
		var b bytes.Buffer
		slog.New(h(&b)).Info("call", args...)
		return b.String()
	}
	jsonLog := func(b *bytes.Buffer) slog.Handler { return slog.NewJSONHandler(b, nil) }
	textLog := func(b *bytes.Buffer) slog.Handler { return slog.NewTextHandler(b, nil) }
	tests := []struct {
		name, got string
		shows     bool // whether the redaction must show (not for unexported fields)
	}{
		{"%v", fmt.Sprintf("%v", token), true},
		{"%s", fmt.Sprintf("%s", token), true},
		{"%+v", fmt.Sprintf("%+v", token), true},
		{"%#v", fmt.Sprintf("%#v", token), true},
		{"%q", fmt.Sprintf("%q", token), true},
		{"%x", fmt.Sprintf("%x", token), true},
		{"Sprint", fmt.Sprint(token), true},
		{"String", token.String(), true},
		{"in an error", fmt.Errorf("call with %v: %w", token, errors.New("refused")).Error(), true},
		{"exported field %+v", fmt.Sprintf("%+v", request{"https://x", token}), true},
		{"exported field %#v", fmt.Sprintf("%#v", request{"https://x", token}), true},
		{"pointer to struct %+v", fmt.Sprintf("%+v", &request{"https://x", token}), true},
		{"slice %v", fmt.Sprintf("%v", []callbacktoken.Token{token}), true},
		{"unexported field %v", fmt.Sprintf("%v", hidden{token}), false},
		{"unexported field %+v", fmt.Sprintf("%+v", hidden{token}), false},
		{"unexported field %#v", fmt.Sprintf("%#v", hidden{token}), false},
		{"json.Marshal", jsonOf(token), true},
		{"json.Marshal of a struct", jsonOf(request{"https://x", token}), true},
		{"slog JSON", logOf(jsonLog, "token", token), true},
		{"slog JSON any", logOf(jsonLog, slog.Any("token", token)), true},
		{"slog JSON struct", logOf(jsonLog, "request", request{"https://x", token}), true},
		{"slog text", logOf(textLog, "token", token), true},
		{"slog text struct", logOf(textLog, "request", request{"https://x", token}), true},
		{"slog text unexported field", logOf(textLog, "request", hidden{token}), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if strings.Contains(tt.got, value) || strings.Contains(tt.got, value[:20]) {
				t.Errorf("%s shows the token: %s", tt.name, tt.got)
			}
			if tt.shows && !strings.Contains(tt.got, "[callback token]") {
				t.Errorf("%s: %s; want the redaction", tt.name, tt.got)
			}
		})
	}
	if got := (callbacktoken.Token{}).Reveal(); got != "" {
		t.Errorf("the zero token reveals %q", got)
	}
}

// A Loaded source reads the key once it can, and keeps it.
func TestLoaded(t *testing.T) {
	reads, give := 0, []byte(nil)
	var fail error = errors.New("Secrets Manager could not be reached")
	source := callbacktoken.Loaded(func(context.Context) ([]byte, error) {
		reads++
		return give, fail
	})
	ctx := context.Background()
	if s, err := source(ctx); s != nil || !errors.Is(err, fail) {
		t.Fatalf("a key that cannot be read: %v, %v; want the read's error", s, err)
	}
	fail, give = nil, key[:8]
	if s, err := source(ctx); s != nil || err == nil {
		t.Fatalf("an 8-byte key: %v, %v; want an error", s, err)
	}
	give = key
	first, err := source(ctx)
	if err != nil || first == nil {
		t.Fatalf("the key once it can be read: %v", err)
	}
	give, fail = nil, errors.New("would fail now")
	if again, err := source(ctx); again != first || err != nil || reads != 3 {
		t.Errorf("read the key %d times, want 3 (failing, too short, for good); %v", reads, err)
	}
	// The loaded key is the stage's: it opens what another instance
	// sealed with it.
	token := seal(t, sealer(t, key), claim())
	if _, err := first.Open(token, now); err != nil {
		t.Errorf("open with the loaded key: %v", err)
	}
	if got, _ := callbacktoken.Fixed(first)(ctx); got != first {
		t.Error("Fixed gave another sealer")
	}
}

// FuzzOpen checks that Open never panics and accepts only tokens this
// test sealed, each giving its own claim back. Each fuzzing process seals
// its own tokens (the nonce is random), so a token is checked by the claim
// it opens to: the test's key seals nothing else. Plain go test runs only
// the seeds; go test -fuzz FuzzOpen explores from them.
func FuzzOpen(f *testing.F) {
	s := sealer(f, key)
	sealed := map[string]bool{}
	claims := map[int]callbacktoken.Claim{} // by record, distinct per claim
	for i, change := range []func(*callbacktoken.Claim){
		func(*callbacktoken.Claim) {},
		func(c *callbacktoken.Claim) { c.Attempt = 1 },
		func(c *callbacktoken.Claim) { c.ExpiresAt = now.Add(-time.Hour) }, // expired
		func(c *callbacktoken.Claim) { c.OrderID, c.Step = "o", "s" },
	} {
		c := claim()
		change(&c)
		c.Record = i
		token := seal(f, s, c)
		sealed[token], claims[c.Record] = true, c
		f.Add(token)
		f.Add(token[:len(token)-1])
		f.Add(token[:len(token)/2] + "A" + token[len(token)/2+1:])
	}
	f.Add("")
	f.Add("A")
	f.Add("AQ")
	f.Add("not a token")
	f.Add(strings.Repeat("A", 143))
	f.Add(base64.RawURLEncoding.EncodeToString(append([]byte{1}, make([]byte, 60)...)))
	f.Fuzz(func(t *testing.T, token string) {
		got, err := s.Open(token, now)
		switch {
		case err == nil || errors.Is(err, callbacktoken.ErrExpired):
			want, ok := claims[got.Record]
			if !ok || !same(got, want) {
				t.Fatalf("opened %q, which it never sealed: %+v, %v", token, got, err)
			}
			if (err != nil) != now.After(want.ExpiresAt) {
				t.Fatalf("opened %q with %v; expiry %s", token, err, want.ExpiresAt)
			}
		case err == callbacktoken.ErrInvalid:
			if sealed[token] {
				t.Fatalf("refused %q, which it sealed", token)
			}
			if got != (callbacktoken.Claim{}) {
				t.Fatalf("refused %q but gave a claim %+v", token, got)
			}
		default:
			t.Fatalf("open %q: %v; want no error, ErrExpired or ErrInvalid", token, err)
		}
	})
}
