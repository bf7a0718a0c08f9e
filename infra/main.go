// Command infra is orderly's CDK app: `cdk synth` and `cdk deploy` run it
// (see cdk.json). Settings come from CDK context; cdk-nag's AWS Solutions
// and Serverless rule packs check the result.
package main

import (
	"fmt"
	"os"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/jsii-runtime-go"

	"orderly/infra/stack"
)

func main() {
	defer jsii.Close()
	app := awscdk.NewApp(nil)
	props, err := stack.FromContext(app)
	if err != nil {
		fmt.Fprintln(os.Stderr, "orderly infra:", err)
		os.Exit(1)
	}
	// With credentials, the CLI names the account and region and the stack
	// is bound to them; without, the stack stays environment-agnostic, so
	// synth runs on a machine with no AWS account at all.
	if account, region := os.Getenv("CDK_DEFAULT_ACCOUNT"), os.Getenv("CDK_DEFAULT_REGION"); account != "" && region != "" {
		props.Env = &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	}
	if _, err := stack.New(app, "Orderly-"+props.Stage, props); err != nil {
		fmt.Fprintln(os.Stderr, "orderly infra:", err)
		os.Exit(1)
	}
	stack.Check(app)
	app.Synth(nil)
}
