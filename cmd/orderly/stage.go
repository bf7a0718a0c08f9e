package main

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials/ec2rolecreds"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	dbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go/middleware"

	"orderly/internal/config"
	"orderly/internal/definition"
	"orderly/internal/operator/ops"
	"orderly/internal/order"
)

// localHint is how a local run (make run) gets its AWS variables.
const localHint = `for a local run: eval "$(bash localstack/emulators.sh env)"`

// open opens the stage --stage names with the caller's AWS configuration,
// once it has credentials and a region, and the stage's workflows as the
// functions are told them (ORDERLY_WORKFLOWS; every one under workflows/
// when unset).
func (a *app) open(ctx context.Context) (*ops.Stage, error) {
	if a.opened != nil {
		return a.opened, nil
	}
	awsCfg, err := config.AWS(ctx)
	var noProfile awsconfig.SharedConfigProfileNotExistError
	if errors.As(err, &noProfile) {
		return nil, &awsConfigError{msg: fmt.Sprintf("AWS profile %q not found: set AWS_PROFILE to a profile of your AWS configuration, or %s", noProfile.Profile, localHint), err: err}
	}
	if err != nil {
		return nil, err
	}
	if err := checkCredentials(ctx, awsCfg); err != nil {
		return nil, err
	}
	if awsCfg.Region == "" {
		return nil, &awsConfigError{msg: "no AWS region: set AWS_REGION (or a region in your AWS profile), or " + localHint}
	}
	names, def := config.FromOS().Workflows()
	wfs, err := definition.Deployed(order.DefaultTiming, names, def, "")
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvWorkflows, err)
	}
	db := dynamodb.NewFromConfig(awsCfg, func(o *dynamodb.Options) {
		o.APIOptions = append(o.APIOptions, nameMissingTable(a.stage, o.Region))
	})
	return ops.Open(a.stage, db, sqs.NewFromConfig(awsCfg), wfs), nil
}

// awsConfigError says what to set when the AWS configuration lacks
// something the stage's calls need (credentials, a region, the profile it
// names); err is the SDK's, not printed.
type awsConfigError struct {
	msg string
	err error
}

func (e *awsConfigError) Error() string { return e.msg }
func (e *awsConfigError) Unwrap() error { return e.err }

// checkCredentials retrieves the credentials before the first call, so
// that their absence is said once, plainly. The SDK falls back on the EC2
// instance role when neither the environment nor a profile names any: its
// failure there means none were set, not that the instance is unreachable.
func checkCredentials(ctx context.Context, cfg aws.Config) error {
	if cfg.Credentials == nil {
		return &awsConfigError{msg: noCredentials}
	}
	_, err := cfg.Credentials.Retrieve(ctx)
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return err
	case aws.IsCredentialsProvider(cfg.Credentials, (*ec2rolecreds.Provider)(nil)):
		return &awsConfigError{msg: noCredentials, err: err}
	}
	return fmt.Errorf("AWS credentials: %w", err)
}

const noCredentials = "no AWS credentials found: set AWS_PROFILE (or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), or " + localHint

// missingTableError is a DynamoDB table of the stage that is not there:
// another stage's name, or another account or region.
type missingTableError struct {
	stage, table, region string
	err                  error
}

func (e *missingTableError) Error() string {
	table := "a table of the stage"
	if e.table != "" {
		table = "table " + e.table
	}
	where := ""
	if e.region != "" {
		where = " in " + e.region
	}
	return fmt.Sprintf("stage %q: %s not found%s: --stage or %s picks the stage (and AWS_PROFILE, AWS_REGION the account and region)", e.stage, table, where, envStage)
}

func (e *missingTableError) Unwrap() error { return e.err }

// nameMissingTable is DynamoDB middleware that turns a request's
// ResourceNotFoundException into a missingTableError naming the table the
// request named.
func nameMissingTable(stage, region string) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("OrderlyNameMissingTable",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				out, md, err := next.HandleInitialize(ctx, in)
				var missing *dbtypes.ResourceNotFoundException
				if errors.As(err, &missing) {
					err = &missingTableError{stage: stage, table: tableOf(in.Parameters), region: region, err: err}
				}
				return out, md, err
			}), middleware.After)
	}
}

// tableOf is the table a DynamoDB request names: the operations the
// stage's stores call.
func tableOf(params any) string {
	switch in := params.(type) {
	case *dynamodb.GetItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.QueryInput:
		return aws.ToString(in.TableName)
	case *dynamodb.PutItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.UpdateItemInput:
		return aws.ToString(in.TableName)
	case *dynamodb.BatchGetItemInput:
		return strings.Join(slices.Sorted(maps.Keys(in.RequestItems)), " or ")
	}
	return ""
}
