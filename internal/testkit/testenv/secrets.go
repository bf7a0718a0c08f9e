package testenv

import (
	"context"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
)

// Secret creates a Secrets Manager secret holding value, deletes it when
// the test ends, and returns a function that rotates it to a new value
// (the new version becomes AWSCURRENT, as a rotation's does).
func Secret(t testing.TB, cfg aws.Config, name, value string) (rotate func(value string)) {
	t.Helper()
	client := secretsmanager.NewFromConfig(cfg)
	ctx := context.Background()
	if _, err := client.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("create secret %s: %v", name, err)
	}
	t.Cleanup(func() {
		if _, err := client.DeleteSecret(context.Background(), &secretsmanager.DeleteSecretInput{
			SecretId: aws.String(name), ForceDeleteWithoutRecovery: aws.Bool(true)}); err != nil {
			t.Logf("delete secret %s: %v", name, err)
		}
	})
	return func(value string) {
		t.Helper()
		if _, err := client.PutSecretValue(context.Background(), &secretsmanager.PutSecretValueInput{
			SecretId: aws.String(name), SecretString: aws.String(value)}); err != nil {
			t.Fatalf("rotate secret %s: %v", name, err)
		}
	}
}
