package expr

import (
	"sort"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Projection is a parsed ProjectionExpression (Developer Guide, "Using
// projection expressions"): a list of document paths whose values are
// returned with their nesting kept.
type Projection struct {
	paths []docPath
	root  *projNode
}

// projNode is a node of the tree of projected paths: a leaf takes the whole
// value; otherwise keys select map entries or idx selects list elements
// (never both: such paths conflict and are refused).
type projNode struct {
	leaf bool
	keys map[string]*projNode
	idx  map[int]*projNode
}

// ParseProjection parses a ProjectionExpression; overlapping paths ("a" and
// "a.b") and conflicting ones ("a.b" and "a[0]") are refused, as DynamoDB
// does.
func ParseProjection(s string, u *Usage) (*Projection, error) {
	p := newParser(s, kindProjection, u)
	pr := &Projection{}
	err := p.run(func() {
		for {
			pr.paths = append(pr.paths, p.parsePath())
			if p.peek().kind != tokComma {
				return
			}
			p.next()
		}
	})
	if err != nil {
		return nil, err
	}
	if err := checkPaths(kindProjection, pr.paths); err != nil {
		return nil, err
	}
	pr.root = projectionTree(pr.paths)
	return pr, nil
}

// projectionTree builds the tree of paths that Apply walks; the paths must
// neither overlap nor conflict.
func projectionTree(paths []docPath) *projNode {
	root := &projNode{keys: map[string]*projNode{}}
	for _, path := range paths {
		n := root
		for _, e := range path {
			n = n.child(e)
		}
		n.leaf = true
	}
	return root
}

func (n *projNode) child(e pathElem) *projNode {
	if e.isIndex {
		if n.idx == nil {
			n.idx = map[int]*projNode{}
		}
		c := n.idx[e.index]
		if c == nil {
			c = &projNode{}
			n.idx[e.index] = c
		}
		return c
	}
	if n.keys == nil {
		n.keys = map[string]*projNode{}
	}
	c := n.keys[e.name]
	if c == nil {
		c = &projNode{}
		n.keys[e.name] = c
	}
	return c
}

// TopLevelAttributes returns the top-level attribute names the projection
// reads, each once, in expression order.
func (pr *Projection) TopLevelAttributes() []string {
	var names []string
	seen := map[string]bool{}
	for _, p := range pr.paths {
		if !seen[p[0].name] {
			seen[p[0].name] = true
			names = append(names, p[0].name)
		}
	}
	return names
}

// Apply returns a new item holding only the projected paths of item, deep
// copied. Selected list elements keep their order and are packed together
// ("a[1], a[3]" gives a two-element list); paths that do not exist are left
// out, and so is a map or list none of whose selected children exist.
func (pr *Projection) Apply(item map[string]types.AttributeValue) map[string]types.AttributeValue {
	out := map[string]types.AttributeValue{}
	for name, n := range pr.root.keys {
		v, ok := item[name]
		if !ok || v == nil {
			continue
		}
		if pv, ok := n.project(v); ok {
			out[name] = pv
		}
	}
	return out
}

func (n *projNode) project(v types.AttributeValue) (types.AttributeValue, bool) {
	if n.leaf {
		return CopyValue(v), true
	}
	if n.keys != nil {
		m, ok := v.(*types.AttributeValueMemberM)
		if !ok {
			return nil, false
		}
		out := map[string]types.AttributeValue{}
		for k, c := range n.keys {
			if cv, ok := m.Value[k]; ok && cv != nil {
				if pv, ok := c.project(cv); ok {
					out[k] = pv
				}
			}
		}
		return &types.AttributeValueMemberM{Value: out}, len(out) > 0
	}
	l, ok := v.(*types.AttributeValueMemberL)
	if !ok {
		return nil, false
	}
	indexes := make([]int, 0, len(n.idx))
	for i := range n.idx {
		indexes = append(indexes, i)
	}
	sort.Ints(indexes)
	var out []types.AttributeValue
	for _, i := range indexes {
		if i < len(l.Value) && l.Value[i] != nil {
			if pv, ok := n.idx[i].project(l.Value[i]); ok {
				out = append(out, pv)
			}
		}
	}
	return &types.AttributeValueMemberL{Value: out}, len(out) > 0
}
