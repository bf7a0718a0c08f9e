package api_test

import (
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/actor/api"
	"orderly/internal/order"
)

// Identities as API Gateway's IAM authorization fills
// requestContext.identity for each kind of signer (the fixtures in events/
// carry the same, in whole requests).
func TestPrincipalOf(t *testing.T) {
	const account = "123456789012"
	tests := []struct {
		name       string
		identity   events.APIGatewayRequestIdentity
		want       order.Principal
		wantReject bool
	}{
		{
			name: "IAM user: its unique id, as before",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "AIDAQXJ4OPSUSER00001", User: "AIDAQXJ4OPSUSER00001",
				UserArn: "arn:aws:iam::123456789012:user/ops-alice", AccessKey: "AKIAQXJ4EXAMPLEKEY02"},
			want: order.Principal{ID: "AIDAQXJ4OPSUSER00001"},
		},
		{
			name: "assumed role: the role and the session",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a",
				User: "AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a", UserArn: "arn:aws:sts::123456789012:assumed-role/checkout-web/checkout-web-7f3a"},
			want: order.Principal{ID: "AROAQXJ4CHECKOUTWEB01:checkout-web-7f3a", Legacy: "AROAQXJ4CHECKOUTWEB01"},
		},
		{
			name: "IAM Identity Center permission set: the role and the user's session",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "AROAQXJ4SSOCLIENTS001:alice@example.com",
				User:    "AROAQXJ4SSOCLIENTS001:alice@example.com",
				UserArn: "arn:aws:sts::123456789012:assumed-role/AWSReservedSSO_OrderlyClient_3f2a9c0d1e7b6a54/alice@example.com"},
			want: order.Principal{ID: "AROAQXJ4SSOCLIENTS001:alice@example.com", Legacy: "AROAQXJ4SSOCLIENTS001"},
		},
		{
			name: "Cognito identity pool: the identity, since every one shares the role and its session name",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "AROAQXJ4COGNITOAUTH01:CognitoIdentityCredentials",
				User: "AROAQXJ4COGNITOAUTH01:CognitoIdentityCredentials", UserArn: "arn:aws:sts::123456789012:assumed-role/Cognito_ShopAuth_Role/CognitoIdentityCredentials",
				CognitoIdentityPoolID: "eu-west-1:8c1f3a52-5e4b-4f7d-9a06-2d7b1e9c4f30", CognitoIdentityID: "eu-west-1:4f1e2d3c-b5a6-4c7d-8e9f-0a1b2c3d4e5f",
				CognitoAuthenticationType:     "authenticated",
				CognitoAuthenticationProvider: "cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Sh0pP00l1,cognito-idp.eu-west-1.amazonaws.com/eu-west-1_Sh0pP00l1:CognitoSignIn:6b1f0c2e-7d3a-4e8b-9f5c-1a2b3c4d5e6f"},
			want: order.Principal{ID: "cognito:eu-west-1:4f1e2d3c-b5a6-4c7d-8e9f-0a1b2c3d4e5f", Legacy: "AROAQXJ4COGNITOAUTH01"},
		},
		{
			name: "Cognito guest: its own identity too",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "AROAQXJ4COGNITOGUEST1:CognitoIdentityCredentials",
				UserArn:               "arn:aws:sts::123456789012:assumed-role/Cognito_ShopUnauth_Role/CognitoIdentityCredentials",
				CognitoIdentityPoolID: "eu-west-1:8c1f3a52-5e4b-4f7d-9a06-2d7b1e9c4f30", CognitoIdentityID: "eu-west-1:0e9d8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b",
				CognitoAuthenticationType: "unauthenticated"},
			want: order.Principal{ID: "cognito:eu-west-1:0e9d8c7b-6a5f-4e3d-2c1b-a09f8e7d6c5b", Legacy: "AROAQXJ4COGNITOGUEST1"},
		},
		{
			name: "federated user (GetFederationToken): its name, not the account id before it",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: "123456789012:partner-bob", User: "123456789012:partner-bob",
				UserArn: "arn:aws:sts::123456789012:federated-user/partner-bob"},
			want: order.Principal{ID: "federated:partner-bob", Legacy: account},
		},
		{
			name:     "root user: no account id stored",
			identity: events.APIGatewayRequestIdentity{AccountID: account, Caller: account, User: account, UserArn: "arn:aws:iam::123456789012:root"},
			want:     order.Principal{ID: "root", Legacy: account},
		},
		{
			name:     "the local gateway's one caller, as it is",
			identity: events.APIGatewayRequestIdentity{Caller: "LOCAL:make-run", User: "LOCAL:make-run"},
			want:     order.Principal{ID: "LOCAL:make-run", Legacy: "LOCAL"},
		},
		{name: "no identity", identity: events.APIGatewayRequestIdentity{SourceIP: "203.0.113.42"}, wantReject: true},
		{name: "only a user agent", identity: events.APIGatewayRequestIdentity{UserAgent: "curl/8.5.0", AccountID: account}, wantReject: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := api.PrincipalOf(tt.identity)
			if tt.wantReject {
				if err == nil {
					t.Fatalf("PrincipalOf(%+v) = %+v, want an error", tt.identity, got)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("PrincipalOf() = %+v, %v; want %+v", got, err, tt.want)
			}
			// No account id in what is stored with the order.
			if strings.Contains(got.ID, account) {
				t.Errorf("principal %q names the account", got.ID)
			}
		})
	}
}
