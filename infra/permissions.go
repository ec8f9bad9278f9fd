package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/jsii-runtime-go"
)

// TableGrant is one statement of a function's table access: actions on the
// table itself (Index "") or on one of its indexes.
type TableGrant struct {
	Index   string
	Actions []string
}

// TableGrants is, per function, exactly the DynamoDB actions its code calls
// (docs/deploy.md, "Permissions", says why each is there). Transactions need
// the action of each item they hold (PutItem, UpdateItem, DeleteItem,
// ConditionCheckItem) besides TransactWriteItems itself.
var TableGrants = map[FunctionName][]TableGrant{
	// enqueue: enqueue (a conditional put, or a transaction with the seq
	// counter, lane tail and idempotency record), get and list (GetItem,
	// Query on the table), admit and cancel (UpdateItem), and erasure (Query
	// on the subject index, then deletes).
	FunctionEnqueue: {
		{Actions: []string{
			"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query",
			"dynamodb:TransactWriteItems", "dynamodb:UpdateItem",
		}},
		{Index: IndexSubject, Actions: []string{"dynamodb:Query"}},
	},
	// drainer: candidates from the due index, the claim transaction (fence
	// check, per-action updates, predecessor checks), the fence and outcome
	// writes, and the lane-tail delete when a lane's last action ends.
	FunctionDrainer: {
		{Actions: []string{
			"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem",
			"dynamodb:TransactWriteItems", "dynamodb:UpdateItem",
		}},
		{Index: IndexDue, Actions: []string{"dynamodb:Query"}},
	},
	// reaper: expired leases and unstarted expired actions from the due
	// index, ended like the drainer ends them; the gauges are Query counts.
	FunctionReaper: {
		{Actions: []string{
			"dynamodb:ConditionCheckItem", "dynamodb:DeleteItem", "dynamodb:GetItem",
			"dynamodb:TransactWriteItems", "dynamodb:UpdateItem",
		}},
		{Index: IndexDue, Actions: []string{"dynamodb:Query"}},
	},
	// retention: TTL-lagging and over-cap ended actions from the ended index
	// (keys only, so GetItem reads the idempotency key), erasure through the
	// subject index, and deletes.
	FunctionRetention: {
		{Actions: []string{
			"dynamodb:BatchWriteItem", "dynamodb:ConditionCheckItem", "dynamodb:DeleteItem",
			"dynamodb:GetItem", "dynamodb:TransactWriteItems",
		}},
		{Index: IndexEnded, Actions: []string{"dynamodb:Query"}},
		{Index: IndexSubject, Actions: []string{"dynamodb:Query"}},
	},
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
	if p.WebhookSecretsARN != "" {
		role.AddToPrincipalPolicy(statement([]string{"secretsmanager:GetSecretValue"}, p.WebhookSecretsARN))
	}
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
