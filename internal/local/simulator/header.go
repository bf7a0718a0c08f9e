package simulator

import (
	"crypto/subtle"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"strings"

	"orderly/internal/order"
)

// RequiredHeader is a header a service requires on every call, as a real
// service requires its credential: a call without it, or with another
// value, is answered 401. Value never prints (order.Secret).
type RequiredHeader struct {
	Service string
	Name    string
	Value   order.Secret
}

// WithRequiredHeader makes service answer 401 to a call whose header name
// is not value (the checkout example's fraud service takes an
// Authorization header), so a stage's credential for it is checked end to
// end. Neither the error nor the log says the value.
func WithRequiredHeader(service, name, value string) Option {
	return func(s *Server) {
		s.required[service] = RequiredHeader{Service: service, Name: http.CanonicalHeaderKey(name), Value: order.Secret(value)}
	}
}

// authenticate checks the header service requires, if any.
func (s *Server) authenticate(service string, r *http.Request) (reply, bool) {
	h, ok := s.required[service]
	if !ok {
		return reply{}, true
	}
	got := r.Header.Get(h.Name)
	// In constant time, so timing does not tell how much of a guess was right.
	if got != "" && subtle.ConstantTimeCompare([]byte(got), []byte(h.Value)) == 1 {
		return reply{}, true
	}
	what := "is missing"
	if got != "" {
		what = "is not the expected value"
	}
	return fail(http.StatusUnauthorized, "%s: the %s header %s", service, h.Name, what), false
}

// ParseRequiredHeader reads a -require-header value,
// SERVICE=HEADER=$VARIABLE or SERVICE=HEADER=@FILE: the header's value is
// the environment variable's (lookupEnv), or the file's content without
// its trailing line break. The value itself is never on the command line,
// where other users of the machine could read it, nor in an error.
func ParseRequiredHeader(spec string, lookupEnv func(string) (string, bool)) (RequiredHeader, error) {
	const want = "want SERVICE=HEADER=$VARIABLE or SERVICE=HEADER=@FILE"
	service, rest, ok1 := strings.Cut(spec, "=")
	name, source, ok2 := strings.Cut(rest, "=")
	if !ok1 || !ok2 || service == "" || name == "" {
		return RequiredHeader{}, fmt.Errorf("-require-header %q: %s", redactSource(spec), want)
	}
	if !validHeaderName(name) {
		return RequiredHeader{}, fmt.Errorf("-require-header %q: header name %q: want letters, digits and !#$%%&'*+-.^_`|~", redactSource(spec), name)
	}
	at := fmt.Sprintf("-require-header %s=%s", service, name)
	var value string
	switch {
	case strings.HasPrefix(source, "$"):
		v, set := lookupEnv(source[1:])
		switch {
		case !set:
			return RequiredHeader{}, fmt.Errorf("%s: %s is not set", at, source)
		case v == "":
			return RequiredHeader{}, fmt.Errorf("%s: %s is empty", at, source)
		}
		value = v
	case strings.HasPrefix(source, "@"):
		raw, err := os.ReadFile(source[1:])
		if err != nil {
			var pathErr *fs.PathError
			if errors.As(err, &pathErr) {
				err = pathErr.Err
			}
			return RequiredHeader{}, fmt.Errorf("%s: read %s: %w", at, source[1:], err)
		}
		if value = strings.TrimRight(string(raw), "\r\n"); value == "" {
			return RequiredHeader{}, fmt.Errorf("%s: %s is empty", at, source[1:])
		}
	default:
		return RequiredHeader{}, fmt.Errorf("%s: the value: want $VARIABLE or @FILE, so that it is not on the command line", at)
	}
	return RequiredHeader{Service: service, Name: http.CanonicalHeaderKey(name), Value: order.Secret(value)}, nil
}

// Option is the simulator option for h.
func (h RequiredHeader) Option() Option {
	return WithRequiredHeader(h.Service, h.Name, string(h.Value))
}

// redactSource leaves out a spec's value part, which may be a literal
// value given by mistake.
func redactSource(spec string) string {
	service, rest, _ := strings.Cut(spec, "=")
	name, _, hasValue := strings.Cut(rest, "=")
	if !hasValue {
		return spec
	}
	return service + "=" + name + "=…"
}

// validHeaderName reports whether name is an HTTP token (RFC 9110).
func validHeaderName(name string) bool {
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("!#$%&'*+-.^_`|~", c)) {
			return false
		}
	}
	return name != ""
}
