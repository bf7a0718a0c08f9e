// Package services reads a stage's services configuration: for each remote
// service the workflows call, its base URL and how calls to it are
// authenticated (none, a header whose value lives in AWS Secrets Manager,
// or AWS SigV4). The CDK stack, orderly-local and the agents read it with
// the same strict parser, so every place refuses the same mistakes with
// the same messages.
package services

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"orderly/internal/strictjson"
)

// Authentication types.
const (
	// AuthNone sends no credential: loopback services (the simulator,
	// tests), or one reachable only inside a private network when
	// allowRemote says so.
	AuthNone = "none"
	// AuthHeader sends one header whose value is a Secrets Manager
	// secret's, fetched with the agent's own role and cached.
	AuthHeader = "header"
	// AuthSigV4 signs each call with the agent's role (AWS Signature
	// Version 4): a Lambda function URL with AWS_IAM auth, or an API
	// Gateway API with IAM authorization.
	AuthSigV4 = "sigv4"
)

// Signing services a sigv4 authentication signs for.
const (
	SigningLambda     = "lambda"
	SigningExecuteAPI = "execute-api"
)

// What an agent's role is granted for a sigv4 service: to invoke the
// function's URL, of the AWS_IAM auth type (the grant's condition), or
// each of its calls' methods and paths on the API's stage (APIResource).
const (
	ActionInvokeFunctionURL = "lambda:InvokeFunctionUrl"
	// Function URLs made since October 2025 also need InvokeFunction,
	// which is granted only for calls through the URL.
	ActionInvokeFunction           = "lambda:InvokeFunction"
	ConditionInvokedViaFunctionURL = "lambda:InvokedViaFunctionUrl"
	ConditionFunctionURLAuthType   = "lambda:FunctionUrlAuthType"
	FunctionURLAuthIAM             = "AWS_IAM"
	ActionInvokeAPI                = "execute-api:Invoke"
)

// APIResource is the execute-api resource of one call (method, and path
// under the stage's base URL, starting "/") on an API stage's ARN.
func APIResource(stageARN, method, path string) string {
	return stageARN + "/" + method + path
}

// Environment variables that hand an agent Lambda its one service.
const (
	// EnvURL is the service's base URL.
	EnvURL = "ORDERLY_SERVICE_URL"
	// EnvAuth is the service's authentication, as the "auth" object of
	// the configuration: {"type":"header","header":"X-Api-Key","secret":"..."}.
	EnvAuth = "ORDERLY_SERVICE_AUTH"
)

// Config maps each service's name (a step's "service" in the workflow
// definitions, which is also its agent's name) to how it is called.
type Config map[string]Service

// Service is how one remote service is reached.
type Service struct {
	// URL is the base URL a step's path is appended to, without a
	// trailing slash.
	URL  string `json:"url"`
	Auth Auth   `json:"auth"`
}

// Auth is how calls to a service are authenticated. Which fields apply
// depends on Type.
type Auth struct {
	Type string `json:"type"`

	// AllowRemote lets a "none" service have a non-loopback URL (a
	// service reachable only inside a private network). Without it, only
	// loopback services go unauthenticated.
	AllowRemote bool `json:"allowRemote,omitempty"`

	// Header names the header a "header" authentication sets, Secret the
	// Secrets Manager secret (a name, or a full ARN) whose string value
	// is the header's value, and KMSKey, when the secret is encrypted with
	// a customer managed key, that key's ARN (the agent then needs
	// kms:Decrypt through Secrets Manager).
	Header string `json:"header,omitempty"`
	Secret string `json:"secret,omitempty"`
	KMSKey string `json:"kmsKey,omitempty"`

	// Service is what a "sigv4" authentication signs for: "lambda" (a
	// function URL with AWS_IAM auth) or "execute-api" (API Gateway with
	// IAM authorization). Target is the ARN the agent's grant names: the
	// function's ("arn:aws:lambda:REGION:ACCOUNT:function:NAME"), or the
	// API stage's ("arn:aws:execute-api:REGION:ACCOUNT:API_ID/STAGE"),
	// under which each call's method and path are granted.
	Service string `json:"service,omitempty"`
	Target  string `json:"target,omitempty"`
}

// fieldsOf lists the fields each authentication type takes.
var fieldsOf = map[string][]string{
	AuthNone:   {"type", "allowRemote"},
	AuthHeader: {"type", "header", "secret", "kmsKey"},
	AuthSigV4:  {"type", "service", "target"},
}

// Problem is one thing wrong with a configuration: where it came from
// (a file, "context services", an environment variable), the field's
// path in it ("payment.auth.secret") and the rule broken.
type Problem = strictjson.Problem

// Problems is every problem found, so all of them can be fixed at once.
type Problems = strictjson.Problems

// problems collects Problems of one source.
type problems struct {
	source string
	list   Problems
}

func (p *problems) add(field, rule string, args ...any) {
	p.list = append(p.list, Problem{Source: p.source, Field: field, Rule: fmt.Sprintf(rule, args...)})
}

func (p *problems) err() error {
	if len(p.list) == 0 {
		return nil
	}
	return p.list
}

// reported says whether a problem names field or a field inside it: a
// value of the wrong kind is not also missing, and an authentication with
// problems is not checked further.
func (p *problems) reported(field string) bool {
	return slices.ContainsFunc(p.list, func(q Problem) bool {
		return q.Field == field || strings.HasPrefix(q.Field, field+".")
	})
}

// check reads raw, the document at path (the top of a file, or an
// environment variable), strictly: syntax, repeated keys, unknown fields
// and the kinds of values. It reports false for a document that is not
// JSON, which nothing more can be said of.
func (p *problems) check(path string, raw []byte, want *strictjson.Shape) bool {
	found, err := strictjson.Check(raw, want, strictjson.Options{})
	var se *strictjson.SyntaxError
	if errors.As(err, &se) {
		p.add(join(path, se.Field), "is not valid JSON: %s", strictjson.Describe(err))
		return false
	}
	for _, f := range found {
		p.add(join(path, f.Field), "%s", f.Rule)
	}
	return true
}

func join(path, field string) string {
	if path == "" || field == "" {
		return path + field
	}
	return path + "." + field
}

// The configuration's shape: services by any name, each with a url and
// an auth, whose fields' kinds are checked here and whose names, which
// depend on its type, parseAuth checks.
var (
	text      = &strictjson.Shape{Kind: strictjson.String}
	authShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"type": text, "allowRemote": {Kind: strictjson.Bool},
		"header": text, "secret": text, "kmsKey": text, "service": text, "target": text}, Others: &strictjson.Shape{}}
	serviceShape = &strictjson.Shape{Fields: map[string]*strictjson.Shape{"url": text, "auth": authShape},
		Unknown: `unknown field; a service has "url" and "auth"`}
	configShape = &strictjson.Shape{Others: serviceShape}
)

var namePattern = regexp.MustCompile(`^[a-z0-9-]{1,63}$`)

// Parse reads a configuration, a JSON object of services by name, from
// source (a file's name, "context services"): strictly (an unknown field,
// a repeated key or a value of the wrong type is a problem) and checked by
// every rule of Validate. An error is always Problems.
func Parse(source string, raw []byte) (Config, error) {
	p := &problems{source: source}
	var members map[string]json.RawMessage
	if !p.check("", raw, configShape) || json.Unmarshal(raw, &members) != nil {
		return nil, p.err() // not JSON, or not an object: the check said so
	}
	cfg := Config{}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !namePattern.MatchString(name) {
			p.add(name, "not a service name: want lower-case letters, digits and \"-\", as a step's \"service\"")
		}
		cfg[name] = parseService(p, name, members[name])
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return cfg, nil
}

// ParseService reads one service's configuration as an agent's
// environment carries it: its base URL and its "auth" object.
func ParseService(rawURL, rawAuth string) (Service, error) {
	p := &problems{source: "environment"}
	svc := Service{URL: rawURL}
	if p.check(EnvAuth, []byte(rawAuth), authShape) {
		svc.Auth = parseAuth(p, EnvAuth, json.RawMessage(rawAuth))
	}
	svc.URL = checkService(p, EnvURL, EnvAuth, svc)
	return svc, p.err()
}

// parseService checks the rules of one service that its shape cannot
// state; the check has reported values of the wrong kind.
func parseService(p *problems, path string, raw json.RawMessage) Service {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || members == nil {
		return Service{} // not an object: reported
	}
	var svc Service
	_ = json.Unmarshal(members["url"], &svc.URL) // of the wrong kind, it stays empty
	if svc.URL == "" && !p.reported(path+".url") {
		p.add(path+".url", "is required: the service's base URL")
	}
	if rawAuth, ok := members["auth"]; ok {
		svc.Auth = parseAuth(p, path+".auth", rawAuth)
	} else {
		p.add(path+".auth", `is required: {"type": "none"} (loopback only), "header" or "sigv4"`)
	}
	if svc.URL != "" {
		// The URL's own rules, and the rules of URL and authentication
		// together, even when the authentication has problems of its own.
		svc.URL = checkService(p, path+".url", path+".auth", svc)
	}
	return svc
}

// parseAuth checks the fields an authentication's type takes, and then,
// if it has no other problem, the rules of that type.
func parseAuth(p *problems, path string, raw json.RawMessage) Auth {
	var members map[string]json.RawMessage
	if json.Unmarshal(raw, &members) != nil || members == nil {
		return Auth{} // not an object: reported
	}
	// Each field by its exact name (json.Unmarshal into Auth would take
	// "Type" for "type"); a value of the wrong kind stays empty.
	value := func(key string, v any) { _ = json.Unmarshal(members[key], v) }
	var a Auth
	value("type", &a.Type)
	value("allowRemote", &a.AllowRemote)
	value("header", &a.Header)
	value("secret", &a.Secret)
	value("kmsKey", &a.KMSKey)
	value("service", &a.Service)
	value("target", &a.Target)
	_, hasType := members["type"]
	allowed, known := fieldsOf[a.Type]
	switch {
	case p.reported(path + ".type"):
	case !hasType:
		p.add(path+".type", `is required: "none", "header" or "sigv4"`)
	case !known:
		p.add(path+".type", "%q: unknown, want \"none\", \"header\" or \"sigv4\"", a.Type)
	}
	for _, key := range slices.Sorted(maps.Keys(members)) {
		switch {
		case known && !slices.Contains(allowed, key):
			p.add(path+"."+key, "not a field of a %q authentication (it takes %s)", a.Type, strings.Join(allowed, ", "))
		case !known && authShape.Fields[key] == nil:
			p.add(path+"."+key, "unknown field")
		}
	}
	if !p.reported(path) {
		checkAuth(p, path, a)
	}
	return a
}

// Headers a header authentication may not set: the client sets them, or
// the HTTP machinery does.
var reservedHeaders = []string{"Accept", "Connection", "Content-Length", "Content-Type", "Host",
	"Idempotency-Key", "Transfer-Encoding", "Te", "Trailer", "Upgrade"}

var (
	headerToken = regexp.MustCompile("^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
	// secretName is what Secrets Manager allows in a secret's name.
	secretName = regexp.MustCompile(`^[A-Za-z0-9/_+=.@-]{1,512}$`)
	arnPattern = regexp.MustCompile(`^arn:(aws|aws-cn|aws-us-gov|aws-iso|aws-iso-b|aws-iso-e|aws-iso-f|aws-eusc):([a-z0-9-]+):([a-z]{2}(-[a-z]+)+-\d):(\d{12}):(.+)$`)
	// Resources of the ARNs each field takes.
	secretResource  = regexp.MustCompile(`^secret:[A-Za-z0-9/_+=.@-]{1,512}$`)
	keyResource     = regexp.MustCompile(`^key/[A-Za-z0-9-]{1,128}$`)
	functionRes     = regexp.MustCompile(`^function:[A-Za-z0-9_-]{1,64}(:[A-Za-z0-9$_-]{1,128})?$`)
	apiStageRes     = regexp.MustCompile(`^[a-z0-9]{10}/[A-Za-z0-9_-]{1,128}$`)
	arnServiceOf    = map[string]string{"secret": "secretsmanager", "kmsKey": "kms", SigningLambda: "lambda", SigningExecuteAPI: "execute-api"}
	arnResourceOf   = map[string]*regexp.Regexp{"secret": secretResource, "kmsKey": keyResource, SigningLambda: functionRes, SigningExecuteAPI: apiStageRes}
	arnResourceHelp = map[string]string{
		"secret":          "secret:NAME-SUFFIX",
		"kmsKey":          "key/KEY_ID (a key's ARN; an alias cannot be granted)",
		SigningLambda:     "function:NAME, or function:NAME:ALIAS",
		SigningExecuteAPI: "API_ID/STAGE (the API's stage; each call's method and path are granted under it)",
	}
)

func checkAuth(p *problems, path string, a Auth) {
	switch a.Type {
	case AuthHeader:
		switch {
		case a.Header == "":
			p.add(path+".header", "is required: the header that carries the secret's value (\"X-Api-Key\", \"Authorization\")")
		case !headerToken.MatchString(a.Header):
			p.add(path+".header", "%q: not an HTTP header name", a.Header)
		case slices.ContainsFunc(reservedHeaders, func(h string) bool { return strings.EqualFold(h, a.Header) }),
			strings.HasPrefix(strings.ToLower(a.Header), "x-amz-"):
			p.add(path+".header", "%q: set by the client itself; choose another header", a.Header)
		}
		switch {
		case a.Secret == "":
			p.add(path+".secret", "is required: the Secrets Manager secret (its name, or its full ARN) whose value is the header's")
		case strings.HasPrefix(a.Secret, "arn:"):
			checkARN(p, path+".secret", "secret", a.Secret)
		case !secretName.MatchString(a.Secret):
			p.add(path+".secret", "%q: not a secret name (letters, digits and /_+=.@-) nor an ARN", a.Secret)
		}
		if a.KMSKey != "" {
			checkARN(p, path+".kmsKey", "kmsKey", a.KMSKey)
		}
	case AuthSigV4:
		switch a.Service {
		case SigningLambda, SigningExecuteAPI:
			if a.Target == "" {
				p.add(path+".target", "is required: the ARN the agent is granted to invoke (%s)", arnResourceHelp[a.Service])
			} else {
				checkARN(p, path+".target", a.Service, a.Target)
			}
		case "":
			p.add(path+".service", `is required: "lambda" (a function URL with AWS_IAM auth) or "execute-api" (API Gateway with IAM authorization)`)
		default:
			p.add(path+".service", "%q: unknown, want \"lambda\" or \"execute-api\"", a.Service)
		}
	}
}

// checkARN checks an ARN of the kind a field takes: the service's, in a
// region and an account, naming a resource of the right form.
func checkARN(p *problems, field, kind, arn string) {
	m := arnPattern.FindStringSubmatch(arn)
	switch {
	case m == nil:
		p.add(field, "not an ARN (arn:PARTITION:%s:REGION:ACCOUNT:%s)", arnServiceOf[kind], arnResourceHelp[kind])
	case m[2] != arnServiceOf[kind]:
		p.add(field, "an ARN of %s, want one of %s", m[2], arnServiceOf[kind])
	case !arnResourceOf[kind].MatchString(m[6]):
		p.add(field, "the ARN's resource must be %s", arnResourceHelp[kind])
	}
}

// checkService checks what depends on the URL and the authentication
// together, and returns the URL without a trailing slash.
func checkService(p *problems, urlField, authField string, svc Service) string {
	u, err := url.Parse(svc.URL)
	switch {
	case svc.URL == "":
		p.add(urlField, "is required: the service's base URL")
		return ""
	case err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http"):
		p.add(urlField, "%q: not an http(s) URL with a host", svc.URL)
		return ""
	case u.User != nil:
		// A credential in the URL would be logged with it; it belongs in
		// the authentication.
		p.add(urlField, "must not carry a user or password; use a header authentication")
		return ""
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(svc.URL, "?"):
		p.add(urlField, "must not have a query or fragment: a step's path is appended to it")
		return ""
	}
	loopback := IsLoopback(u.Hostname())
	if u.Scheme != "https" && !loopback {
		p.add(urlField, "%q: must be https (plain http only for a loopback host)", svc.URL)
	}
	if svc.Auth.Type == AuthNone && !loopback && !svc.Auth.AllowRemote {
		p.add(authField, "calls to %s would carry no credential: use a \"header\" or \"sigv4\" authentication, or set \"allowRemote\": true for a service reachable only inside a private network", u.Host)
	}
	return strings.TrimRight(svc.URL, "/")
}

// IsLoopback reports whether host (a URL's host, without a port) is this
// machine: localhost or a loopback address.
func IsLoopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Resolve returns the configuration of exactly the named services (every
// service the workflows call): each as c lists it, or else at fallback (a
// base URL, say the simulator's) without authentication, which the same
// rules check (so it must be a loopback URL). A service c lists that no
// workflow calls is a problem: most likely a misspelt name. fallbackSource
// names where fallback came from, for messages ("context remoteUrl").
func (c Config) Resolve(names []string, fallback, source, fallbackSource string) (Config, error) {
	p := &problems{source: source}
	out := Config{}
	for _, name := range slices.Sorted(maps.Keys(c)) {
		if !slices.Contains(names, name) {
			p.add(name, "no workflow calls a service %q (they call %s)", name, strings.Join(names, ", "))
		}
	}
	for _, name := range names {
		if svc, ok := c[name]; ok {
			out[name] = svc
			continue
		}
		if fallback == "" {
			p.add(name, "not configured: give the service's url and auth (or, for loopback services, set %s)", fallbackSource)
			continue
		}
		u, err := url.Parse(fallback)
		if err != nil || u.Host == "" || (u.Scheme != "http" && u.Scheme != "https") || !IsLoopback(u.Hostname()) {
			// The fallback carries no credential, so it is for loopback
			// services only: a deployed stage lists its services.
			p.add(name, "not configured, and %s %q is not a loopback http(s) URL (its calls carry no credential): give the service's url and auth", fallbackSource, fallback)
			continue
		}
		svc := Service{URL: strings.TrimRight(fallback, "/"), Auth: Auth{Type: AuthNone}}
		out[name] = svc
	}
	if err := p.err(); err != nil {
		return nil, err
	}
	return out, nil
}

// Region is the region of a sigv4 authentication's target, where
// requests are signed for.
func (a Auth) Region() string {
	if m := arnPattern.FindStringSubmatch(a.Target); m != nil {
		return m[3]
	}
	return ""
}

// SecretRegion is the region of a header authentication's secret when
// it is given by ARN; empty for a name (the stage's region).
func (a Auth) SecretRegion() string {
	if m := arnPattern.FindStringSubmatch(a.Secret); m != nil {
		return m[3]
	}
	return ""
}

// SecretName is the secret's name as it may be shown: its ARN's resource
// name without the account, or the name as configured. Errors and logs
// name a secret by it.
func (a Auth) SecretName() string { return SecretShown(a.Secret) }

// SecretShown is a secret, given by name or ARN, as it may be shown: its
// name, without an ARN's account and region.
func SecretShown(secret string) string {
	if m := arnPattern.FindStringSubmatch(secret); m != nil {
		return strings.TrimPrefix(m[6], "secret:")
	}
	return secret
}

// JSON is the authentication as EnvAuth carries it.
func (a Auth) JSON() string {
	raw, _ := json.Marshal(a)
	return string(raw)
}
