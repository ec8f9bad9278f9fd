package expr

import (
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// pathElem is one step of a document path: a map key (or top-level
// attribute name), or a list index.
type pathElem struct {
	name    string
	index   int
	isIndex bool
}

// docPath is a resolved document path: #names already replaced by the names
// they stand for.
type docPath []pathElem

// String renders the path the way DynamoDB's messages do: [a, b, [2]].
func (p docPath) String() string {
	parts := make([]string, len(p))
	for i, e := range p {
		if e.isIndex {
			parts[i] = "[" + strconv.Itoa(e.index) + "]"
		} else {
			parts[i] = e.name
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// get returns the value at the path in item, and whether it exists.
func (p docPath) get(item map[string]types.AttributeValue) (types.AttributeValue, bool) {
	if len(p) == 0 || item == nil {
		return nil, false
	}
	v, ok := item[p[0].name]
	if !ok || v == nil {
		return nil, false
	}
	for _, e := range p[1:] {
		v, ok = step(v, e)
		if !ok {
			return nil, false
		}
	}
	return v, true
}

// step descends one element into a map or list value.
func step(v types.AttributeValue, e pathElem) (types.AttributeValue, bool) {
	if e.isIndex {
		l, ok := v.(*types.AttributeValueMemberL)
		if !ok || e.index < 0 || e.index >= len(l.Value) {
			return nil, false
		}
		return l.Value[e.index], l.Value[e.index] != nil
	}
	m, ok := v.(*types.AttributeValueMemberM)
	if !ok {
		return nil, false
	}
	c, ok := m.Value[e.name]
	return c, ok && c != nil
}

// pathRelation tells how two document paths relate for DynamoDB's overlap
// and conflict rules (Developer Guide, "Using update expressions" and
// "Using projection expressions").
type pathRelation int

const (
	pathsDisjoint pathRelation = iota
	pathsOverlap               // one is a prefix of the other (or equal)
	pathsConflict              // same prefix, then a map key against a list index
)

func relatePaths(a, b docPath) pathRelation {
	n := min(len(a), len(b))
	for i := 0; i < n; i++ {
		x, y := a[i], b[i]
		if x.isIndex != y.isIndex {
			return pathsConflict
		}
		if x.isIndex && x.index != y.index || !x.isIndex && x.name != y.name {
			return pathsDisjoint
		}
	}
	return pathsOverlap
}

// checkPaths refuses overlapping or conflicting paths with DynamoDB's
// messages.
func checkPaths(kind string, paths []docPath) error {
	for i := range paths {
		for j := 0; j < i; j++ {
			switch relatePaths(paths[j], paths[i]) {
			case pathsOverlap:
				return errorf("Invalid %s: Two document paths overlap with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", kind, paths[j], paths[i])
			case pathsConflict:
				return errorf("Invalid %s: Two document paths conflict with each other; must remove or rewrite one of these paths; path one: %s, path two: %s", kind, paths[j], paths[i])
			}
		}
	}
	return nil
}
