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
	// Account and region come from the CLI's environment at deploy time;
	// synth needs neither, so it runs without credentials.
	props.Env = &awscdk.Environment{
		Account: jsii.String(os.Getenv("CDK_DEFAULT_ACCOUNT")),
		Region:  jsii.String(os.Getenv("CDK_DEFAULT_REGION")),
	}
	if _, err := stack.New(app, "Orderly-"+props.Stage, props); err != nil {
		fmt.Fprintln(os.Stderr, "orderly infra:", err)
		os.Exit(1)
	}
	stack.Check(app)
	app.Synth(nil)
}
