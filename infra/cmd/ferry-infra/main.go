// Command ferry-infra is the Ferry CDK app: `cdk synth`, `cdk diff` and
// `cdk deploy` run it (see cdk.json and docs/deploy.md). It reads the stack's
// configuration from the CDK context key "ferry".
package main

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"github.com/ferryhq/ferry/infra"
)

// defaultStackName names the stack (and its template file in cdk.out)
// unless the configuration's stackName says otherwise.
const defaultStackName = "Ferry"

func main() {
	defer jsii.Close()
	if err := run(os.Getenv); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-infra:", err)
		jsii.Close()
		os.Exit(1)
	}
}

// run synthesizes the app. The CDK CLI passes the output directory in
// CDK_OUTDIR and the context (cdk.json's and -c's) in CDK_CONTEXT_JSON; both
// are read through getenv and handed to the App explicitly, so they hold
// whoever runs the app (jsii's node process only sees the environment it
// was started with).
func run(getenv func(string) string) error {
	appProps := &awscdk.AppProps{}
	if dir := getenv("CDK_OUTDIR"); dir != "" {
		appProps.Outdir = jsii.String(dir)
	}
	if raw := getenv("CDK_CONTEXT_JSON"); raw != "" {
		var ctx map[string]any
		if err := json.Unmarshal([]byte(raw), &ctx); err != nil {
			return fmt.Errorf("CDK_CONTEXT_JSON: %w", err)
		}
		appProps.Context = &ctx
	}
	app := awscdk.NewApp(appProps)
	cfg, err := infra.ConfigFromContext(app.Node().TryGetContext(jsii.String(infra.ContextKey)))
	if err != nil {
		return err
	}
	props, err := cfg.Props()
	if err != nil {
		return err
	}
	// Deploy to the account and region of the CLI's credentials when known;
	// otherwise the template is environment-agnostic.
	account, region := getenv("CDK_DEFAULT_ACCOUNT"), getenv("CDK_DEFAULT_REGION")
	if account != "" && region != "" {
		props.StackProps.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	name := cfg.StackName
	if name == "" {
		name = defaultStackName
	}
	if _, err := infra.NewStack(app, name, props); err != nil {
		return err
	}
	app.Synth(nil)
	return nil
}
