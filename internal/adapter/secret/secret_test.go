package secret_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"

	"orderly/internal/adapter/secret"
)

type reader struct {
	value *string
	err   error
}

func (r reader) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return &secretsmanager.GetSecretValueOutput{SecretString: r.value}, r.err
}

func TestKey(t *testing.T) {
	const value = "0123456789abcdefghijklmnopqrstuvwxyz"
	tests := []struct {
		name   string
		reader reader
		want   string // "" when it fails
		says   string
	}{
		{"a long enough value", reader{value: aws.String(value)}, value, ""},
		{"too short", reader{value: aws.String(value[:10])}, "", "10 bytes, want at least 32"},
		{"binary", reader{}, "", "no string value"},
		{"refused", reader{err: &smtypes.ResourceNotFoundException{Message: aws.String("arn:aws:iam::123456789012:role/x")}}, "", "answered ResourceNotFoundException"},
		{"unreachable", reader{err: errors.New("dial tcp: role x of 123456789012")}, "", "could not be reached"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// By ARN: the errors name the secret, not the account.
			got, err := secret.Key(context.Background(), tt.reader, "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orderly-dev-page-token-key-Ab12Cd", 32)
			if tt.want != "" {
				if err != nil || string(got) != tt.want {
					t.Fatalf("Key = %q, %v", got, err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.says) || !strings.Contains(err.Error(), "orderly-dev-page-token-key") {
				t.Fatalf("error %v, want one naming the secret and saying %q", err, tt.says)
			}
			if strings.Contains(err.Error(), "123456789012") || strings.Contains(err.Error(), value[:10]) {
				t.Errorf("error %v shows an account or the value", err)
			}
		})
	}
}
