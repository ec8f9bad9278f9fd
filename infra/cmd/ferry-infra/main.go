// Command ferry-infra is the Ferry CDK app: `cdk synth`, `cdk diff` and
// `cdk deploy` run it (see cdk.json and docs/deploy.md). It reads the stack's
// configuration from the CDK context key "ferry".
package main

import (
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
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "ferry-infra:", err)
		jsii.Close()
		os.Exit(1)
	}
}

func run() error {
	appProps := &awscdk.AppProps{}
	// The CDK CLI passes the output directory in CDK_OUTDIR; honour it when
	// the app is run by other means too.
	if dir := os.Getenv("CDK_OUTDIR"); dir != "" {
		appProps.Outdir = jsii.String(dir)
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
	account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION")
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
