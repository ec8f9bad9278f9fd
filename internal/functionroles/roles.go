package functionroles

import (
	_ "embed"
	"encoding/json"
	"fmt"
	"slices"
)

// The functions, by the name infra/ gives them.
const (
	Enqueue   = "enqueue"
	Drainer   = "drainer"
	Reaper    = "reaper"
	Retention = "retention"
	SESEvents = "sesevents"
)

// Functions lists the functions roles.json covers.
var Functions = []string{Enqueue, Drainer, Reaper, Retention, SESEvents}

// TableResource names the table itself in Roles; an index is
// "index/<name>".
const TableResource = "table"

// Roles is, per function, per resource of the Ferry table ("table",
// "index/due", …), the sorted DynamoDB actions the function's code uses.
type Roles map[string]map[string][]string

//go:embed roles.json
var rolesJSON []byte

// Load returns the roles in roles.json.
func Load() (Roles, error) {
	var r Roles
	if err := json.Unmarshal(rolesJSON, &r); err != nil {
		return nil, fmt.Errorf("functionroles: roles.json: %w", err)
	}
	for _, fn := range Functions {
		if _, ok := r[fn]; !ok {
			return nil, fmt.Errorf("functionroles: roles.json has no function %q", fn)
		}
	}
	return r, nil
}

// Resources returns fn's resources, the table first, then its indexes by
// name.
func (r Roles) Resources(fn string) []string {
	var out []string
	for res := range r[fn] {
		out = append(out, res)
	}
	slices.SortFunc(out, func(a, b string) int {
		switch {
		case a == b:
			return 0
		case a == TableResource:
			return -1
		case b == TableResource:
			return 1
		case a < b:
			return -1
		}
		return 1
	})
	return out
}
