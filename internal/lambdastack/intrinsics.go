package lambdastack

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// resolver resolves a template's intrinsic functions as CloudFormation
// would have, for the local account and region: tables by their names,
// ARNs in the local account.
type resolver struct {
	res   map[string]rawResource
	local Local
}

// refOrGetAtt returns the logical id a {"Ref": id} or {"Fn::GetAtt": [id,
// attr]} names.
func refOrGetAtt(v any) (string, bool) {
	m, ok := v.(map[string]any)
	if !ok {
		return "", false
	}
	if id, ok := m["Ref"].(string); ok {
		return id, true
	}
	if ga, ok := m["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
		id, ok := ga[0].(string)
		return id, ok
	}
	return "", false
}

// str resolves v to a string.
func (r *resolver) str(v any) (string, error) {
	switch v := v.(type) {
	case string:
		return v, nil
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64), nil
	case bool:
		return strconv.FormatBool(v), nil
	case map[string]any:
		if len(v) != 1 {
			return "", fmt.Errorf("unsupported value %v", v)
		}
		for fn, arg := range v {
			return r.intrinsic(fn, arg)
		}
	case nil:
		return "", errors.New("missing")
	}
	return "", fmt.Errorf("unsupported value %v", v)
}

// strs resolves a string or a list of strings.
func (r *resolver) strs(v any) ([]string, error) {
	if v == nil {
		return nil, nil
	}
	if l, ok := v.([]any); ok {
		out := make([]string, 0, len(l))
		for _, e := range l {
			s, err := r.str(e)
			if err != nil {
				return nil, err
			}
			out = append(out, s)
		}
		return out, nil
	}
	s, err := r.str(v)
	if err != nil {
		return nil, err
	}
	return []string{s}, nil
}

func (r *resolver) integer(v any) (int, error) {
	s, err := r.str(v)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("%q is not an integer", s)
	}
	return n, nil
}

func (r *resolver) intrinsic(fn string, arg any) (string, error) {
	switch fn {
	case "Ref":
		id, _ := arg.(string)
		return r.ref(id)
	case "Fn::GetAtt":
		ga, _ := arg.([]any)
		if len(ga) != 2 {
			return "", fmt.Errorf("Fn::GetAtt %v: want [id, attribute]", arg)
		}
		return r.getAtt(fmt.Sprint(ga[0]), fmt.Sprint(ga[1]))
	case "Fn::Join":
		l, _ := arg.([]any)
		if len(l) != 2 {
			return "", fmt.Errorf("Fn::Join %v: want [separator, list]", arg)
		}
		sep, _ := l[0].(string)
		parts, err := r.strs(l[1])
		if err != nil {
			return "", err
		}
		return strings.Join(parts, sep), nil
	case "Fn::Sub":
		s, ok := arg.(string)
		if !ok {
			return "", fmt.Errorf("Fn::Sub with variables is not supported")
		}
		return r.sub(s)
	}
	return "", fmt.Errorf("%s is not supported", fn)
}

var subVar = regexp.MustCompile(`\$\{([^}]+)\}`)

func (r *resolver) sub(s string) (string, error) {
	var firstErr error
	out := subVar.ReplaceAllStringFunc(s, func(m string) string {
		name := m[2 : len(m)-1]
		var v string
		var err error
		if id, attr, ok := strings.Cut(name, "."); ok {
			v, err = r.getAtt(id, attr)
		} else {
			v, err = r.ref(name)
		}
		if err != nil && firstErr == nil {
			firstErr = err
		}
		return v
	})
	return out, firstErr
}

func (r *resolver) ref(id string) (string, error) {
	switch id {
	case "AWS::Region":
		return r.local.Region, nil
	case "AWS::AccountId":
		return r.local.Account, nil
	case "AWS::Partition":
		return "aws", nil
	case "AWS::URLSuffix":
		return "amazonaws.com", nil
	case "AWS::StackName":
		return "local", nil
	}
	res, ok := r.res[id]
	if !ok {
		return "", fmt.Errorf("Ref %q: no such resource or pseudo parameter", id)
	}
	switch res.Type {
	case "AWS::DynamoDB::Table":
		return r.tableName(id), nil
	case "AWS::Lambda::Function":
		return r.functionName(id), nil
	}
	return id, nil
}

func (r *resolver) getAtt(id, attr string) (string, error) {
	res, ok := r.res[id]
	if !ok {
		return "", fmt.Errorf("Fn::GetAtt %s.%s: no such resource", id, attr)
	}
	switch {
	case res.Type == "AWS::DynamoDB::Table" && attr == "StreamArn":
		return r.streamARN(id), nil
	case attr == "Arn":
		return r.arn(id), nil
	}
	return "", fmt.Errorf("Fn::GetAtt %s.%s is not supported", id, attr)
}

// tableName is the table's TableName, or its logical id.
func (r *resolver) tableName(id string) string {
	if n, ok := r.res[id].Properties["TableName"].(string); ok {
		return n
	}
	return id
}

// streamARN is the table's stream ARN: the label is only known once the
// table exists, so the local label (or "*") stands for it.
func (r *resolver) streamARN(id string) string {
	label := r.local.StreamLabel
	if label == "" {
		label = "*"
	}
	return r.arn(id) + "/stream/" + label
}

// arn is a resource's ARN in the local account.
func (r *resolver) arn(id string) string {
	l := r.local
	switch r.res[id].Type {
	case "AWS::DynamoDB::Table":
		return fmt.Sprintf("arn:aws:dynamodb:%s:%s:table/%s", l.Region, l.Account, r.tableName(id))
	case "AWS::Lambda::Function":
		return fmt.Sprintf("arn:aws:lambda:%s:%s:function:%s", l.Region, l.Account, r.functionName(id))
	case "AWS::IAM::Role":
		return fmt.Sprintf("arn:aws:iam::%s:role/%s", l.Account, id)
	case "AWS::Logs::LogGroup":
		return fmt.Sprintf("arn:aws:logs:%s:%s:log-group:%s:*", l.Region, l.Account, id)
	}
	return fmt.Sprintf("arn:aws:cloudformation:%s:%s:local/%s", l.Region, l.Account, id)
}
