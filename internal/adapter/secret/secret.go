// Package secret reads a stage's own key material from Secrets Manager.
// Its errors name the secret and what is wrong, never its value, nor the
// SDK's message (which may name the role and account).
package secret

import (
	"context"
	"errors"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/smithy-go"

	"orderly/internal/adapter/services"
)

// Reader is the Secrets Manager call Key makes.
type Reader interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Key reads the current value of the secret id (a name or an ARN) as a
// key of at least min bytes. Its errors name the secret without an ARN's
// account.
func Key(ctx context.Context, r Reader, id string, min int) ([]byte, error) {
	out, err := r.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)})
	name := services.SecretShown(id)
	var apiErr smithy.APIError
	switch {
	case errors.As(err, &apiErr):
		return nil, fmt.Errorf("read secret %s: Secrets Manager answered %s", name, apiErr.ErrorCode())
	case err != nil:
		return nil, fmt.Errorf("read secret %s: Secrets Manager could not be reached", name)
	case out.SecretString == nil:
		return nil, fmt.Errorf("read secret %s: it has no string value (a binary secret)", name)
	case len(*out.SecretString) < min:
		return nil, fmt.Errorf("read secret %s: its value is %d bytes, want at least %d", name, len(*out.SecretString), min)
	}
	return []byte(*out.SecretString), nil
}
