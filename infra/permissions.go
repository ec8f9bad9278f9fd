package infra

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"

	"github.com/ferryhq/ferry/internal/functionroles"
)

// TableGrant is one statement of a function's table access: actions on the
// table itself (Index "") or on one of its indexes.
type TableGrant struct {
	Index   string
	Actions []string
}

// TableGrants is, per function, exactly the DynamoDB actions its code
// calls: internal/functionroles/roles.json, which a test of the runtime
// module derives from the requests each function's code makes (every item
// of a transaction by its own action: there is no IAM action
// "dynamodb:TransactWriteItems"). After a change to what the engine calls,
// regenerate that file (docs/deploy.md, "Permissions"); the stack follows.
var TableGrants = mustTableGrants()

func mustTableGrants() map[FunctionName][]TableGrant {
	roles, err := functionroles.Load()
	if err != nil {
		panic(err)
	}
	out := map[FunctionName][]TableGrant{}
	for _, fn := range functionroles.Functions {
		for _, res := range roles.Resources(fn) {
			g := TableGrant{Actions: roles[fn][res]}
			if res != functionroles.TableResource {
				index, ok := strings.CutPrefix(res, "index/")
				if !ok {
					panic(fmt.Sprintf("functionroles: %s: resource %q is neither the table nor an index", fn, res))
				}
				g.Index = index
			}
			out[FunctionName(fn)] = append(out[FunctionName(fn)], g)
		}
	}
	return out
}

// StreamReadActions are what the drainer's event-source mapping needs on the
// table's stream; ListStreams is granted on the table's streams separately.
var StreamReadActions = []string{"dynamodb:DescribeStream", "dynamodb:GetRecords", "dynamodb:GetShardIterator"}

// KMSTableActions are what a function needs on a customer-managed table key,
// through DynamoDB only.
var KMSTableActions = []string{"kms:Decrypt", "kms:DescribeKey", "kms:Encrypt", "kms:GenerateDataKey"}

// grantFunction adds fn's statements to its role.
func (s *Stack) grantFunction(fn FunctionName, role awsiam.Role) {
	tableArn := *s.Table.TableArn()
	for _, g := range TableGrants[fn] {
		res := tableArn
		if g.Index != "" {
			res = tableArn + "/index/" + g.Index
		}
		role.AddToPrincipalPolicy(statement(g.Actions, res))
	}
	if fn == FunctionDrainer {
		role.AddToPrincipalPolicy(statement(StreamReadActions, *s.Table.TableStreamArn()))
		// ListStreams cannot name the stream: its label is only known once
		// deployed. The resource stays within this table's streams.
		role.AddToPrincipalPolicy(statement([]string{"dynamodb:ListStreams"}, tableArn+"/stream/*"))
		s.grantProviders(role)
	}
	if s.key != nil {
		role.AddToPrincipalPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect:    awsiam.Effect_ALLOW,
			Actions:   jsii.Strings(KMSTableActions...),
			Resources: jsii.Strings(*s.key.KeyArn()),
			Conditions: &map[string]any{
				"StringEquals": map[string]any{
					"kms:ViaService": "dynamodb." + *awscdk.Aws_REGION() + ".amazonaws.com",
				},
			},
		}))
	}
}

// grantProviders adds the drainer's provider statements: SES identities and
// configuration set, EventBridge buses and the webhook secret, each only
// when configured.
func (s *Stack) grantProviders(role awsiam.Role) {
	p := s.Props
	if len(p.SESIdentityARNs) > 0 {
		res := append([]string(nil), p.SESIdentityARNs...)
		if p.SESConfigurationSet != "" {
			res = append(res, s.configurationSetARN())
		}
		role.AddToPrincipalPolicy(statement([]string{"ses:SendEmail"}, res...))
	}
	if len(p.EventBusARNs) > 0 {
		role.AddToPrincipalPolicy(statement([]string{"events:PutEvents"}, p.EventBusARNs...))
	}
	secret, _ := s.webhookSecretResource()
	role.AddToPrincipalPolicy(statement([]string{"secretsmanager:GetSecretValue"}, secret))
}

// DefaultWebhookSecretNameFormat is where the drainer looks for a
// workspace's webhook signing secrets when WebhookSecretsARN is not set
// (the webhook adapter's default: one secret per workspace).
const DefaultWebhookSecretNameFormat = "ferry/webhook/%s"

// webhookSecretResource is the resource the drainer may read its webhook
// signing secrets from, and whether it is a pattern. WebhookSecretsARN (or
// the default) is a secret's ARN or name, or a name format whose %s is the
// workspace: a format becomes a pattern over the workspaces' secrets, and a
// name matches Secrets Manager's six-character suffix.
func (s *Stack) webhookSecretResource() (string, bool) {
	v := s.Props.WebhookSecretsARN
	if v == "" {
		v = DefaultWebhookSecretNameFormat
	}
	isARN := strings.HasPrefix(v, "arn:")
	if !isARN {
		v = *s.Stack.FormatArn(&awscdk.ArnComponents{
			Service:      jsii.String("secretsmanager"),
			Resource:     jsii.String("secret"),
			ResourceName: jsii.String(v),
			ArnFormat:    awscdk.ArnFormat_COLON_RESOURCE_NAME,
		})
	}
	if strings.Contains(v, "%s") {
		v = strings.ReplaceAll(v, "%s", "*")
		if !strings.HasSuffix(v, "*") {
			v += "-??????"
		}
		return v, true
	}
	if !isARN {
		v += "-??????"
	}
	return v, false
}

// configurationSetARN is the ARN of the configured SES configuration set in
// the stack's account and region.
func (s *Stack) configurationSetARN() string {
	return *s.Stack.FormatArn(&awscdk.ArnComponents{
		Service:      jsii.String("ses"),
		Resource:     jsii.String("configuration-set"),
		ResourceName: jsii.String(s.Props.SESConfigurationSet),
		ArnFormat:    awscdk.ArnFormat_SLASH_RESOURCE_NAME,
	})
}

func statement(actions []string, resources ...string) awsiam.PolicyStatement {
	return awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: jsii.Strings(resources...),
	})
}
