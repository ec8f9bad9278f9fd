package infra

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsses"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// SESEventTypes are the SES events the configuration set publishes for
// delivery evidence (internal/adapters/email ParseSESEvent), and the
// EventBridge detail types they arrive as.
var SESEventTypes = map[awsses.EmailSendingEvent]string{
	awsses.EmailSendingEvent_SEND:           "Email Sent",
	awsses.EmailSendingEvent_DELIVERY:       "Email Delivered",
	awsses.EmailSendingEvent_BOUNCE:         "Email Bounced",
	awsses.EmailSendingEvent_COMPLAINT:      "Email Complaint Received",
	awsses.EmailSendingEvent_REJECT:         "Email Rejected",
	awsses.EmailSendingEvent_DELIVERY_DELAY: "Email Delivery Delayed",
}

// sesEventOrder lists SESEventTypes in a stable order.
var sesEventOrder = []awsses.EmailSendingEvent{
	awsses.EmailSendingEvent_SEND, awsses.EmailSendingEvent_DELIVERY, awsses.EmailSendingEvent_BOUNCE,
	awsses.EmailSendingEvent_COMPLAINT, awsses.EmailSendingEvent_REJECT, awsses.EmailSendingEvent_DELIVERY_DELAY,
}

// ActionIDTag is the SES tag that names an email's action (the email
// adapter sets it on every send).
const ActionIDTag = "ferry_action_id"

// SESEventPattern is the EventBridge pattern of the SES events the
// sesevents function records: those of the stack's configuration set that
// carry a Ferry action id (other emails sent through the set never invoke
// it).
func SESEventPattern(configurationSet string) *awsevents.EventPattern {
	types := make([]*string, 0, len(sesEventOrder))
	for _, e := range sesEventOrder {
		types = append(types, jsii.String(SESEventTypes[e]))
	}
	return &awsevents.EventPattern{
		Source:     jsii.Strings("aws.ses"),
		DetailType: &types,
		Detail: &map[string]any{
			"mail": map[string]any{
				"tags": map[string]any{
					"ses:configuration-set": []any{configurationSet},
					ActionIDTag:             []any{map[string]any{"exists": true}},
				},
			},
		},
	}
}

// newSESEvents gives the configuration set an event destination on the
// account's default event bus (the only bus SES publishes to) and routes
// its Ferry emails' events to the sesevents function. Without a
// configuration set there is nothing to route: the function stays idle.
func (s *Stack) newSESEvents() {
	p := s.Props
	if p.SESConfigurationSet == "" {
		return
	}
	scope := constructs.NewConstruct(s.Stack, jsii.String("SESEvents"))
	events := make([]awsses.EmailSendingEvent, 0, len(sesEventOrder))
	events = append(events, sesEventOrder...)
	bus := awsevents.EventBus_FromEventBusName(scope, jsii.String("DefaultBus"), jsii.String("default"))
	s.SESDestination = awsses.NewConfigurationSetEventDestination(scope, jsii.String("Destination"), &awsses.ConfigurationSetEventDestinationProps{
		ConfigurationSet: awsses.ConfigurationSet_FromConfigurationSetName(scope, jsii.String("ConfigurationSet"), jsii.String(p.SESConfigurationSet)),
		// One destination per stack: two stacks sharing a set each add
		// their own, and each finds only its own actions.
		ConfigurationSetEventDestinationName: jsii.String("ferry-" + *s.Stack.StackName()),
		Destination:                          awsses.EventDestination_EventBus(bus),
		Events:                               &events,
	})
	s.SESRule = awsevents.NewRule(scope, jsii.String("Rule"), &awsevents.RuleProps{
		Description:  jsii.String("Hands the SES events of Ferry emails (configuration set " + p.SESConfigurationSet + ") to the sesevents function"),
		EventPattern: SESEventPattern(p.SESConfigurationSet),
		Targets: &[]awsevents.IRuleTarget{
			awseventstargets.NewLambdaFunction(s.Functions[FunctionSESEvents], &awseventstargets.LambdaFunctionProps{
				// EventBridge retries an invocation Lambda refused
				// (throttled) for up to a day.
				RetryAttempts: jsii.Number(185),
				MaxEventAge:   awscdk.Duration_Hours(jsii.Number(24)),
			}),
		},
	})
}
