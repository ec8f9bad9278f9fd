package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"
	"github.com/cdklabs/cdk-nag-go/cdknag/v2"
)

// Suppression is one cdk-nag finding the stack accepts, and why.
type Suppression struct {
	Rule   string
	Reason string
	// AppliesTo narrows the suppression to these findings (a string, or a
	// regular expression written /…/), so a new wildcard still fails.
	AppliesTo []string
}

// Why each accepted finding is acceptable.
const (
	reasonXRay = "X-Ray's PutTraceSegments and PutTelemetryRecords support no resource-level permissions; " +
		"Lambda active tracing needs them on \"*\"."
	reasonListStreams = "dynamodb:ListStreams cannot name a stream whose label is only known after deployment; " +
		"the resource is limited to this table's streams (<table arn>/stream/*)."
	reasonWebhookSecrets = "The webhook signing secrets are one secret per workspace, named by a format " +
		"(WebhookSecretsARN or the adapter's default ferry/webhook/%s); workspaces are only known at run time, " +
		"so the drainer may read the secrets that format names, and nothing else."
)

// Suppressions returns the findings accepted on fn's role (and its default
// policy).
func (s *Stack) Suppressions(fn FunctionName) []Suppression {
	var out []Suppression
	if s.Props.Tracing != TracingOff {
		out = append(out, Suppression{Rule: "AwsSolutions-IAM5", Reason: reasonXRay, AppliesTo: []string{"Resource::*"}})
	}
	if fn == FunctionDrainer {
		out = append(out, Suppression{Rule: "AwsSolutions-IAM5", Reason: reasonListStreams,
			AppliesTo: []string{"/^Resource::<Table\\.Arn>\\/stream\\/\\*$/"}})
		if _, pattern := s.webhookSecretResource(); pattern {
			out = append(out, Suppression{Rule: "AwsSolutions-IAM5", Reason: reasonWebhookSecrets,
				AppliesTo: []string{"/^Resource::arn:.*:secretsmanager:.*:secret:.*\\*.*$/"}})
		}
	}
	return out
}

// applyNag adds cdk-nag's AwsSolutions pack to the stack, with the written
// suppressions of Suppressions.
func (s *Stack) applyNag() {
	for _, fn := range Functions {
		sups := s.Suppressions(fn)
		if len(sups) == 0 {
			continue
		}
		list := make([]*cdknag.NagPackSuppression, 0, len(sups))
		for _, sup := range sups {
			ns := &cdknag.NagPackSuppression{Id: jsii.String(sup.Rule), Reason: jsii.String(sup.Reason)}
			if len(sup.AppliesTo) > 0 {
				applies := make([]any, 0, len(sup.AppliesTo))
				for _, a := range sup.AppliesTo {
					if len(a) > 1 && a[0] == '/' {
						applies = append(applies, &cdknag.RegexAppliesTo{Regex: jsii.String(a)})
					} else {
						applies = append(applies, a)
					}
				}
				ns.AppliesTo = &applies
			}
			list = append(list, ns)
		}
		cdknag.NagSuppressions_AddResourceSuppressions(s.Roles[fn], &list, jsii.Bool(true))
	}
	awscdk.Aspects_Of(s.Stack).Add(cdknag.NewAwsSolutionsChecks(&cdknag.NagPackProps{Verbose: jsii.Bool(true)}), nil)
}
