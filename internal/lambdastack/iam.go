package lambdastack

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/ferryhq/ferry/internal/iamaction"
)

// Authorization is one IAM check a request needs: an action on a resource,
// with the request's condition keys (e.g. "dynamodb:LeadingKeys").
type Authorization struct {
	Action   string
	Resource string
	Context  map[string][]string
}

// RequestMapper maps one DynamoDB (or DynamoDB Streams) request, named by
// its X-Amz-Target operation ("PutItem", "GetRecords"), to the checks IAM
// makes for it: one per TransactWriteItems item besides the call itself.
type RequestMapper func(operation string, body []byte) ([]Authorization, error)

// Denial is a request the caller's role did not allow.
type Denial struct {
	Function, Action, Resource, Message string
}

// RoleGate enforces each function's role on the DynamoDB requests it
// sends: a request is let through to Next only if the role's statements
// allow every check the request needs, and otherwise answered with
// AccessDeniedException as AWS words it. A function is known by the access
// key of its credentials (each function's environment carries its own, as
// each gets its role's on AWS); requests signed with another key (the
// developer's own tools) are not checked.
type RoleGate struct {
	Next   http.Handler
	Map    RequestMapper
	Local  Local
	Logs   *Logs
	byKey  map[string]*Function
	mu     sync.Mutex
	denied []Denial
}

// AccessKeyID is the access key ferry local gives function fn.
func AccessKeyID(fn string) string { return "ASIAFERRYLOCAL" + strings.ToUpper(fn) }

// Register makes the gate enforce f's role on requests signed with f's
// access key.
func (g *RoleGate) Register(f *Function) {
	if g.byKey == nil {
		g.byKey = map[string]*Function{}
	}
	g.byKey[AccessKeyID(f.Name)] = f
}

// Denials returns the requests refused so far.
func (g *RoleGate) Denials() []Denial {
	g.mu.Lock()
	defer g.mu.Unlock()
	return append([]Denial(nil), g.denied...)
}

func (g *RoleGate) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f := g.byKey[accessKey(r.Header.Get("Authorization"))]
	if f == nil || g.Map == nil {
		g.Next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	_, op, _ := strings.Cut(r.Header.Get("X-Amz-Target"), ".")
	checks, err := g.Map(op, body)
	if err != nil {
		// A request the mapping cannot read is DynamoDB's to refuse.
		g.Next.ServeHTTP(w, r)
		return
	}
	for _, c := range checks {
		allowed, explicit := Evaluate(f.Role.Statements, c)
		if allowed {
			continue
		}
		msg := g.message(f, c, explicit)
		g.mu.Lock()
		g.denied = append(g.denied, Denial{Function: f.Name, Action: c.Action, Resource: c.Resource, Message: msg})
		g.mu.Unlock()
		if g.Logs != nil {
			g.Logs.Event(f.Name, f.Name, "AccessDeniedException on "+op+": "+msg)
		}
		writeDenied(w, msg)
		return
	}
	g.Next.ServeHTTP(w, r)
}

// writeDenied answers AccessDeniedException as DynamoDB does, with the
// CRC32 of the body the SDKs verify on every answer (without it they log
// a checksum warning beside the refusal).
func writeDenied(w http.ResponseWriter, msg string) {
	body := fmt.Appendf(nil, `{"__type":"com.amazon.coral.service#AccessDeniedException","Message":%q}`, msg)
	h := w.Header()
	h.Set("Content-Type", "application/x-amz-json-1.0")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	h.Set("X-Amz-Crc32", strconv.FormatUint(uint64(crc32.ChecksumIEEE(body)), 10))
	h.Set("X-Amzn-Requestid", newRequestID())
	w.WriteHeader(http.StatusBadRequest)
	_, _ = w.Write(body)
}

// message is AWS's wording of a refusal: the caller is the role's session
// named after the function, as Lambda names it.
func (g *RoleGate) message(f *Function, c Authorization, explicit bool) string {
	caller := fmt.Sprintf("arn:aws:sts::%s:assumed-role/%s/%s", g.Local.Account, f.Role.LogicalID, f.Name)
	why := "because no identity-based policy allows the " + c.Action + " action"
	if explicit {
		why = "with an explicit deny in an identity-based policy"
	}
	return fmt.Sprintf("User: %s is not authorized to perform: %s on resource: %s %s", caller, c.Action, c.Resource, why)
}

// accessKey reads the access key id of a SigV4 Authorization header.
func accessKey(h string) string {
	_, rest, ok := strings.Cut(h, "Credential=")
	if !ok {
		return ""
	}
	key, _, _ := strings.Cut(rest, "/")
	return key
}

// Evaluate decides one check against a role's statements as IAM does for
// identity-based policies: allowed when a statement allows it and none
// denies it (explicit reports a deny).
func Evaluate(statements []Statement, c Authorization) (allowed, explicit bool) {
	for _, s := range statements {
		if !s.applies(c) {
			continue
		}
		if strings.EqualFold(s.Effect, "Deny") {
			return false, true
		}
		allowed = true
	}
	return allowed, false
}

func (s Statement) applies(c Authorization) bool {
	actionOK := false
	for _, a := range s.Actions {
		if wildcardMatch(strings.ToLower(a), strings.ToLower(c.Action)) {
			actionOK = true
		}
	}
	if !actionOK {
		return false
	}
	resourceOK := false
	for _, r := range s.Resources {
		if wildcardMatch(r, c.Resource) {
			resourceOK = true
		}
	}
	return resourceOK && s.conditionsHold(c.Context)
}

// conditionsHold evaluates a statement's condition block: every operator
// and key must hold. A key the request does not carry fails every
// operator except the ...IfExists ones and Null ("true").
func (s Statement) conditionsHold(ctx map[string][]string) bool {
	for op, keys := range s.Condition {
		base, ifExists := strings.CutSuffix(op, "IfExists")
		for key, want := range keys {
			got, present := ctx[key]
			if base == "Null" {
				if (len(want) > 0 && want[0] == "true") == present {
					return false
				}
				continue
			}
			if !present {
				if ifExists {
					continue
				}
				return false
			}
			if !conditionHolds(base, got, want) {
				return false
			}
		}
	}
	return true
}

func conditionHolds(op string, got, want []string) bool {
	set, op := "", op
	if s, rest, ok := strings.Cut(op, ":"); ok {
		set, op = s, rest
	}
	one := func(v string) bool {
		for _, w := range want {
			switch op {
			case "StringEquals", "ArnEquals":
				if v == w {
					return true
				}
			case "StringEqualsIgnoreCase":
				if strings.EqualFold(v, w) {
					return true
				}
			case "StringLike", "ArnLike":
				if wildcardMatch(w, v) {
					return true
				}
			case "StringNotEquals", "ArnNotEquals":
				if v == w {
					return false
				}
			case "StringNotLike", "ArnNotLike":
				if wildcardMatch(w, v) {
					return false
				}
			}
		}
		return strings.Contains(op, "Not")
	}
	if set == "ForAllValues" {
		for _, v := range got {
			if !one(v) {
				return false
			}
		}
		return true
	}
	for _, v := range got {
		if one(v) {
			return true
		}
	}
	return false
}

// MapRequests is the role gate's mapping in the local account and region:
// iamaction's, each permission's resource as its ARN.
func MapRequests(local Local) RequestMapper {
	return func(operation string, body []byte) ([]Authorization, error) {
		perms, err := iamaction.ForRequest(operation, body)
		if err != nil {
			return nil, err
		}
		out := make([]Authorization, len(perms))
		for i, p := range perms {
			out[i] = Authorization{Action: p.Action, Resource: p.Resource.ARN("aws", local.Region, local.Account)}
			if operation == "GetRecords" {
				out[i].Resource = iteratorStream(body, out[i].Resource)
			}
		}
		return out, nil
	}
}

// iteratorStream is the stream a GetRecords request reads: a shard
// iterator starts with its stream's ARN ("arn:…/stream/<label>|…"), on AWS
// as in the embedded DynamoDB, and IAM checks the request against that
// stream. Without one, def.
func iteratorStream(body []byte, def string) string {
	var in struct{ ShardIterator string }
	if json.Unmarshal(body, &in) != nil {
		return def
	}
	arn, _, ok := strings.Cut(in.ShardIterator, "|")
	if !ok || !strings.HasPrefix(arn, "arn:") || !strings.Contains(arn, "/stream/") {
		return def
	}
	return arn
}
