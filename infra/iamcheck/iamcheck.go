// Package iamcheck proves each function's role against the calls the
// function makes: it reads a synthesized CloudFormation template, finds each
// function's role and its statements, and holds every call (recorded from
// the running functions by package callrecord, plus the calls Lambda makes
// for a function: its event sources, logs, tracing, dead-letter queue) against
// them. A call no statement allows is a missing grant; a grant no call uses
// is more privilege than the code needs, unless it is listed as one that
// only a rare path uses.
package iamcheck

import (
	"cmp"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"orderly/internal/adapter/services"
	"orderly/internal/measure/callrecord"
)

// Template is the part of a synthesized template the check reads.
type Template struct {
	Resources map[string]struct {
		Type       string
		Properties map[string]any
	}
}

// Parse reads a CloudFormation template in JSON.
func Parse(raw []byte) (*Template, error) {
	var t Template
	if err := json.Unmarshal(raw, &t); err != nil {
		return nil, fmt.Errorf("parse template: %w", err)
	}
	return &t, nil
}

// Grant is one action on one resource that a role's statements allow.
// Resource is the statement's resource with intrinsic functions rendered
// as ${LogicalId.Attribute} (${LogicalId} for a Ref), "*" for any.
// Condition, when set, is the one StringEquals condition the statement
// puts on it, as "key=value".
type Grant struct {
	Role      string
	Action    string
	Resource  string
	Condition string
}

func (g Grant) String() string {
	s := fmt.Sprintf("%s: %s on %s", readable(g.Role), g.Action, readable(g.Resource))
	if g.Condition != "" {
		s += " if " + g.Condition
	}
	return s
}

// Missing is a call no statement of the function's role allows.
type Missing struct {
	Call callrecord.Call
	Role string
	// Add is the grant that would allow it.
	Add Grant
	// Why says what went wrong when the call could not be placed at all
	// (a function or resource the template does not have).
	Why string
}

func (m Missing) String() string {
	if m.Why != "" {
		return fmt.Sprintf("%s: %s", m.Call, m.Why)
	}
	return fmt.Sprintf("%s is not allowed: grant %s", m.Call, m.Add)
}

// Report is what a check found.
type Report struct {
	Missing []Missing
	// Unused are grants no call used and no rare path accounts for.
	Unused []Grant
	// Used counts, per grant, the distinct calls it allowed.
	Used map[Grant]int
}

// Checker holds one template's functions and roles.
type Checker struct {
	t     *Template
	stage string
	// roleOf maps a function's short name (resources.FunctionSubmit...)
	// to its role's logical id; functionOf a function's logical id to its
	// short name.
	roleOf, functionOf map[string]string
	// named maps a resource kind and physical name to its logical id.
	named map[string]string
	// grants lists each role's grants.
	grants map[string][]Grant
}

// New reads the template of a stage whose functions are named
// orderly-<stage>-<function>.
func New(t *Template, stage string) (*Checker, error) {
	c := &Checker{t: t, stage: stage, roleOf: map[string]string{}, functionOf: map[string]string{}, named: map[string]string{}, grants: map[string][]Grant{}}
	nameProps := map[string]struct{ kind, prop string }{
		"AWS::DynamoDB::Table":  {callrecord.Table, "TableName"},
		"AWS::SQS::Queue":       {callrecord.Queue, "QueueName"},
		"AWS::SNS::Topic":       {callrecord.Topic, "TopicName"},
		"AWS::Events::EventBus": {callrecord.Bus, "Name"},
	}
	prefix := "orderly-" + stage + "-"
	for id, r := range t.Resources {
		switch r.Type {
		case "AWS::Lambda::Function":
			name, _ := r.Properties["FunctionName"].(string)
			role, err := render(r.Properties["Role"])
			if err != nil || !strings.HasSuffix(role, ".Arn}") {
				return nil, fmt.Errorf("function %s: role %v is not a role of the template", id, r.Properties["Role"])
			}
			c.roleOf[strings.TrimPrefix(name, prefix)] = strings.TrimSuffix(strings.TrimPrefix(role, "${"), ".Arn}")
			c.functionOf[id] = strings.TrimPrefix(name, prefix)
		case "AWS::IAM::Policy":
			if err := c.addPolicy(r.Properties, list(r.Properties["Roles"])...); err != nil {
				return nil, fmt.Errorf("policy %s: %w", id, err)
			}
		case "AWS::IAM::ManagedPolicy":
			// A managed policy is a principal of its own (see Principal).
			if err := c.addPolicy(r.Properties, map[string]any{"Ref": id}); err != nil {
				return nil, fmt.Errorf("managed policy %s: %w", id, err)
			}
		case "AWS::IAM::Role":
			for _, p := range list(r.Properties["Policies"]) {
				if pm, ok := p.(map[string]any); ok {
					if err := c.addPolicy(pm, map[string]any{"Ref": id}); err != nil {
						return nil, fmt.Errorf("role %s: %w", id, err)
					}
				}
			}
		}
		if np, ok := nameProps[r.Type]; ok {
			if name, ok := r.Properties[np.prop].(string); ok {
				c.named[np.kind+" "+name] = id
			}
		}
	}
	return c, nil
}

func (c *Checker) addPolicy(props map[string]any, roles ...any) error {
	doc, _ := props["PolicyDocument"].(map[string]any)
	for _, role := range roles {
		ref, err := render(role)
		if err != nil {
			return err
		}
		role := strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")
		for _, st := range list(doc["Statement"]) {
			s, _ := st.(map[string]any)
			cond, condErr := condition(s["Condition"])
			if s["Effect"] != "Allow" || condErr != nil || s["NotAction"] != nil || s["NotResource"] != nil {
				// The stack only allows, with at most one StringEquals
				// condition; anything else needs reading by a person, so
				// the check refuses to guess.
				return fmt.Errorf("role %s: a statement this check cannot evaluate: %v", role, s)
			}
			for _, a := range list(s["Action"]) {
				for _, res := range list(s["Resource"]) {
					r, err := render(res)
					if err != nil {
						return fmt.Errorf("role %s: %w", role, err)
					}
					c.grants[role] = append(c.grants[role], Grant{Role: role, Action: a.(string), Resource: r, Condition: cond})
				}
			}
		}
	}
	return nil
}

// condition renders a statement's condition, which may be none or one
// StringEquals, ForAllValues:StringEquals or Bool test of one key against
// one value, as "key=value". ForAllValues:StringEquals is how a grant
// names the one key (dynamodb:LeadingKeys) a read of one item may have.
func condition(v any) (string, error) {
	if v == nil {
		return "", nil
	}
	ops, _ := v.(map[string]any)
	var eq map[string]any
	for _, op := range []string{"StringEquals", "ForAllValues:StringEquals", "Bool"} {
		if eq == nil {
			eq, _ = ops[op].(map[string]any)
		}
	}
	if len(ops) != 1 || len(eq) != 1 {
		return "", fmt.Errorf("a condition other than one StringEquals or Bool of one key: %v", v)
	}
	for key, val := range eq {
		r, err := render(val)
		if err != nil {
			return "", err
		}
		return key + "=" + r, nil
	}
	return "", nil
}

// allows reports whether grant g allows a call of action on arn with the
// request's condition key value cond (a Call's).
func (g Grant) allows(action, arn string, cond callrecord.Condition) bool {
	if !glob(g.Action, action, true) || !glob(g.Resource, arn, false) {
		return false
	}
	if g.Condition == "" {
		return true
	}
	key, want, _ := strings.Cut(g.Condition, "=")
	return cond.Key == key && cond.Value == want
}

// Principal names the holder of a managed policy as calls name a
// function, so that calls recorded from, say, the operators' CLI are held
// against the policy they are given. policy is the policy's logical id
// without the CDK's hash.
func (c *Checker) Principal(name, policy string) error {
	for id, r := range c.t.Resources {
		if r.Type == "AWS::IAM::ManagedPolicy" && readable(id) == policy {
			c.roleOf[name] = id
			return nil
		}
	}
	return fmt.Errorf("the template has no managed policy %s", policy)
}

// Functions lists the short names of the template's functions.
func (c *Checker) Functions() []string {
	return slices.Sorted(maps.Values(c.functionOf))
}

// Grants returns every role's grants.
func (c *Checker) Grants() []Grant {
	var out []Grant
	for _, gs := range c.grants {
		out = append(out, gs...)
	}
	slices.SortFunc(out, compareGrants)
	return out
}

// Check holds calls (with names as the template's stage names them)
// against the roles of the functions (or principals) that made them, and
// reports the grants of those roles that no call used. rare lists grants
// only rare paths use, as
// Grant.String writes them ("SupervisorRole: sqs:GetQueueAttributes on
// RequestQueuePayment.Arn"); they are not reported unused.
func (c *Checker) Check(calls []callrecord.Call, rare []string) Report {
	rep := Report{Used: map[Grant]int{}}
	// Only the roles of the functions (or principals) that made calls are
	// checked, with the calls Lambda makes for those functions.
	checked := map[string]bool{}
	for _, call := range calls {
		checked[c.roleOf[call.Function]] = true
	}
	all := slices.Clone(calls)
	for _, call := range c.PlatformCalls(calls) {
		if checked[c.roleOf[call.Function]] {
			all = append(all, call)
		}
	}
	for _, call := range all {
		role, ok := c.roleOf[call.Function]
		if !ok {
			rep.Missing = append(rep.Missing, Missing{Call: call, Why: "the template has no function orderly-" + c.stage + "-" + call.Function})
			continue
		}
		arn, err := c.arnOf(call.Resource)
		if err != nil {
			rep.Missing = append(rep.Missing, Missing{Call: call, Role: role, Why: err.Error()})
			continue
		}
		allowed := false
		for _, g := range c.grants[role] {
			if g.allows(call.Action, arn, call.Condition) {
				rep.Used[g]++
				allowed = true
			}
		}
		if !allowed {
			add := Grant{Role: role, Action: call.Action, Resource: arn}
			if call.Condition.Key != "" {
				add.Condition = call.Condition.Key + "=" + call.Condition.Value
			}
			rep.Missing = append(rep.Missing, Missing{Call: call, Role: role, Add: add})
		}
	}
	for _, g := range c.Grants() {
		if checked[g.Role] && rep.Used[g] == 0 && !slices.Contains(rare, g.String()) {
			rep.Unused = append(rep.Unused, g)
		}
	}
	slices.SortFunc(rep.Missing, func(a, b Missing) int { return cmp.Compare(a.String(), b.String()) })
	rep.Missing = slices.CompactFunc(rep.Missing, func(a, b Missing) bool { return a.String() == b.String() })
	return rep
}

// arnOf renders a called resource as the template refers to it.
func (c *Checker) arnOf(r callrecord.Resource) (string, error) {
	switch r.Kind {
	case callrecord.Any:
		return "*", nil
	case kindLogGroup, kindKey:
		return "${" + r.Name + ".Arn}", nil
	case callrecord.ARN:
		return r.Name, nil
	case callrecord.Secret:
		if strings.HasPrefix(r.Name, "arn:") {
			return r.Name, nil
		}
		// A secret's ARN is its name and a suffix of six random
		// characters Secrets Manager adds.
		return "arn:${AWS::Partition}:secretsmanager:${AWS::Region}:${AWS::AccountId}:secret:" + r.Name + "-Ab12Cd", nil
	}
	kind := r.Kind
	if kind == callrecord.Index || kind == callrecord.Stream {
		kind = callrecord.Table
	}
	id, ok := c.named[kind+" "+r.Name]
	if !ok {
		return "", fmt.Errorf("the template has no %s named %s", kind, r.Name)
	}
	switch r.Kind {
	case callrecord.Index:
		return "${" + id + ".Arn}/index/" + r.Index, nil
	case callrecord.Stream:
		return "${" + id + ".StreamArn}", nil
	case callrecord.Topic:
		return "${" + id + "}", nil // a topic's Ref is its ARN
	}
	return "${" + id + ".Arn}", nil
}

// Lambda's own calls for a function, made with the function's role.
var (
	streamPolling = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}
	// ChangeMessageVisibility and GetQueueUrl are granted with every SQS
	// event source by the CDK (grantConsumeMessages); Lambda's poller
	// needs the other three.
	queuePolling = []string{"sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes",
		"sqs:ChangeMessageVisibility", "sqs:GetQueueUrl"}
	// A failure destination is checked and sent to (the CDK grants all
	// three with one); a dead-letter queue is sent to.
	queueDelivery = []string{"sqs:SendMessage", "sqs:GetQueueAttributes", "sqs:GetQueueUrl"}
)

// PlatformCalls are the calls Lambda and the services make with a
// function's role, derived from the template: polling its event sources,
// delivering failures to their destinations and its dead-letter queue,
// writing its logs and traces, and using the key of an encrypted topic the
// function publishes to (from the recorded calls).
func (c *Checker) PlatformCalls(recorded []callrecord.Call) []callrecord.Call {
	var out []callrecord.Call
	add := func(fn string, res callrecord.Resource, actions ...string) {
		for _, a := range actions {
			out = append(out, callrecord.Call{Function: fn, Action: a, Resource: res})
		}
	}
	for _, id := range slices.Sorted(maps.Keys(c.t.Resources)) {
		r := c.t.Resources[id]
		switch r.Type {
		case "AWS::Lambda::Function":
			fn := c.functionOf[id]
			if lc, ok := r.Properties["LoggingConfig"].(map[string]any); ok {
				if res, ok := c.resourceOf(lc["LogGroup"]); ok {
					add(fn, res, "logs:CreateLogStream", "logs:PutLogEvents")
				}
			}
			if tc, ok := r.Properties["TracingConfig"].(map[string]any); ok && tc["Mode"] == "Active" {
				add(fn, callrecord.Resource{Kind: callrecord.Any}, "xray:PutTraceSegments", "xray:PutTelemetryRecords")
			}
			if dl, ok := r.Properties["DeadLetterConfig"].(map[string]any); ok {
				if res, ok := c.resourceOf(dl["TargetArn"]); ok {
					add(fn, res, "sqs:SendMessage")
				}
			}
		case "AWS::Lambda::EventInvokeConfig":
			ref, _ := render(r.Properties["FunctionName"])
			fn := c.functionOf[strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")]
			if res, ok := c.onFailure(r.Properties); ok {
				add(fn, res, queueDelivery...)
			}
		case "AWS::Lambda::EventSourceMapping":
			ref, _ := render(r.Properties["FunctionName"])
			fn := c.functionOf[strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}")]
			src, _ := c.resourceOf(r.Properties["EventSourceArn"])
			switch src.Kind {
			case callrecord.Stream:
				add(fn, src, streamPolling...)
				add(fn, callrecord.Resource{Kind: callrecord.Any}, "dynamodb:ListStreams")
			case callrecord.Queue:
				add(fn, src, queuePolling...)
			}
			if res, ok := c.onFailure(r.Properties); ok {
				add(fn, res, queueDelivery...)
			}
		}
	}
	// SNS encrypts with the topic's key as the publisher.
	for _, call := range recorded {
		if call.Action != "sns:Publish" {
			continue
		}
		id := c.named[callrecord.Topic+" "+call.Resource.Name]
		if key, ok := c.resourceOf(c.t.Resources[id].Properties["KmsMasterKeyId"]); ok {
			add(call.Function, key, "kms:GenerateDataKey", "kms:Decrypt")
		}
	}
	// Secrets Manager decrypts a secret with its customer managed key as
	// the reader: the agent's service configuration names the key.
	for _, call := range recorded {
		if call.Action != "secretsmanager:GetSecretValue" {
			continue
		}
		auth, ok := c.serviceAuth(call.Function)
		if !ok || auth.Secret != call.Resource.Name || auth.KMSKey == "" {
			continue
		}
		region := cmp.Or(auth.SecretRegion(), "${AWS::Region}")
		out = append(out, callrecord.Call{Function: call.Function, Action: "kms:Decrypt",
			Resource:  callrecord.Resource{Kind: callrecord.ARN, Name: auth.KMSKey},
			Condition: callrecord.Condition{Key: "kms:ViaService", Value: "secretsmanager." + region + ".amazonaws.com"}})
	}
	slices.SortFunc(out, func(a, b callrecord.Call) int { return cmp.Compare(a.String(), b.String()) })
	return slices.Compact(out)
}

// serviceAuth is the service authentication the template gives a
// function in its environment (an agent's), if any.
func (c *Checker) serviceAuth(function string) (services.Auth, bool) {
	for id, fn := range c.functionOf {
		if fn != function {
			continue
		}
		env, _ := c.t.Resources[id].Properties["Environment"].(map[string]any)
		vars, _ := env["Variables"].(map[string]any)
		raw, _ := vars[services.EnvAuth].(string)
		url, _ := vars[services.EnvURL].(string)
		if svc, err := services.ParseService(url, raw); err == nil {
			return svc.Auth, true
		}
	}
	return services.Auth{}, false
}

// onFailure is the queue a mapping's or an asynchronous invocation's
// failures are delivered to, if any.
func (c *Checker) onFailure(props map[string]any) (callrecord.Resource, bool) {
	dc, _ := props["DestinationConfig"].(map[string]any)
	of, _ := dc["OnFailure"].(map[string]any)
	res, ok := c.resourceOf(of["Destination"])
	return res, ok && res.Kind == callrecord.Queue
}

// Kinds of resource the platform's calls name that calls of the code do
// not: the checker knows them by logical id.
const (
	kindLogGroup = "log-group"
	kindKey      = "key"
)

// resourceOf turns a template reference (GetAtt, Ref) into the resource a
// call names, by the physical name the template gives it.
func (c *Checker) resourceOf(v any) (callrecord.Resource, bool) {
	ref, err := render(v)
	if err != nil || !strings.HasPrefix(ref, "${") {
		return callrecord.Resource{}, false
	}
	id, attr, _ := strings.Cut(strings.TrimSuffix(strings.TrimPrefix(ref, "${"), "}"), ".")
	r := c.t.Resources[id]
	name := func(prop string) string { s, _ := r.Properties[prop].(string); return s }
	switch {
	case r.Type == "AWS::DynamoDB::Table" && attr == "StreamArn":
		return callrecord.Resource{Kind: callrecord.Stream, Name: name("TableName")}, true
	case r.Type == "AWS::SQS::Queue":
		return callrecord.Resource{Kind: callrecord.Queue, Name: name("QueueName")}, true
	case r.Type == "AWS::Logs::LogGroup":
		return callrecord.Resource{Kind: kindLogGroup, Name: id}, true
	case r.Type == "AWS::KMS::Key":
		return callrecord.Resource{Kind: kindKey, Name: id}, true
	}
	return callrecord.Resource{}, false
}

// render writes a resource reference as a string: literals as they are,
// GetAtt as ${Id.Attr}, Ref as ${Id}, joins concatenated.
func render(v any) (string, error) {
	switch r := v.(type) {
	case string:
		return r, nil
	case map[string]any:
		if ga, ok := r["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			return fmt.Sprintf("${%v.%v}", ga[0], ga[1]), nil
		}
		if ref, ok := r["Ref"].(string); ok {
			return "${" + ref + "}", nil
		}
		if join, ok := r["Fn::Join"].([]any); ok && len(join) == 2 {
			var parts []string
			for _, p := range list(join[1]) {
				s, err := render(p)
				if err != nil {
					return "", err
				}
				parts = append(parts, s)
			}
			sep, _ := join[0].(string)
			return strings.Join(parts, sep), nil
		}
	}
	return "", fmt.Errorf("cannot read the reference %v", v)
}

func list(v any) []any {
	if l, ok := v.([]any); ok {
		return l
	}
	if v == nil {
		return nil
	}
	return []any{v}
}

// glob matches IAM's wildcards (* and ?) in pattern against s; actions
// match without regard to case, as IAM's do.
func glob(pattern, s string, fold bool) bool {
	var b strings.Builder
	if fold {
		b.WriteString("(?i)")
	}
	b.WriteString("^")
	for _, r := range pattern {
		switch r {
		case '*':
			b.WriteString(".*")
		case '?':
			b.WriteString(".")
		default:
			b.WriteString(regexp.QuoteMeta(string(r)))
		}
	}
	b.WriteString("$")
	return regexp.MustCompile(b.String()).MatchString(s)
}

// hashSuffix is the 8-character hash the CDK appends to a logical id,
// which starts a message or a reference (not an ARN's account id).
var hashSuffix = regexp.MustCompile(`(^|\$\{)([A-Za-z0-9]+?)[0-9A-F]{8}\b`)

// readable drops the CDK's hashes from logical ids in a message.
func readable(s string) string { return hashSuffix.ReplaceAllString(s, "$1$2") }

func compareGrants(a, b Grant) int {
	return cmp.Or(cmp.Compare(a.Role, b.Role), cmp.Compare(a.Action, b.Action), cmp.Compare(a.Resource, b.Resource),
		cmp.Compare(a.Condition, b.Condition))
}
