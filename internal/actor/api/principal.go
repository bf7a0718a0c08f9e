package api

import (
	"fmt"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"orderly/internal/order"
)

// PrincipalOf names the client that signed a request, from what API
// Gateway's IAM authorization puts in requestContext.identity. Its orders
// are its own: no other principal reads, cancels or replays into them.
// It is the full principal, so people and services behind one shared role
// are told apart, and it never holds the account id (the API takes only
// its own account's principals):
//
//   - an IAM user: its unique id (caller "AIDA…");
//   - a role's session (AssumeRole, IAM Identity Center, web identity,
//     SAML): the role's unique id and the session name (caller
//     "AROA…:session"), so two sessions of one role are two callers;
//   - a Cognito identity pool's identity: "cognito:" and the identity id,
//     since every identity of a pool signs as the same role and session
//     name (CognitoIdentityCredentials);
//   - a federated user (GetFederationToken, caller "<account>:name"):
//     "federated:" and its name;
//   - the account's root user (caller "<account>"): "root";
//   - anything else (the local gateway's one caller): as it is.
//
// Legacy is the caller as orders submitted before sessions counted stored
// it: the caller up to its first colon.
func PrincipalOf(id events.APIGatewayRequestIdentity) (order.Principal, error) {
	caller := id.Caller
	if caller == "" {
		return order.Principal{}, fmt.Errorf("the request has no caller identity; sign it with SigV4: %w", errNoCaller)
	}
	var p order.Principal
	first, rest, named := strings.Cut(caller, ":")
	switch {
	case id.CognitoIdentityID != "":
		p.ID = "cognito:" + id.CognitoIdentityID
	case isAccountID(first) && !named:
		p.ID = "root"
	case isAccountID(first) && rest != "":
		p.ID = "federated:" + rest
	default:
		p.ID = caller
	}
	if first != p.ID {
		p.Legacy = first
	}
	return p, nil
}

// isAccountID reports whether s is an AWS account id: 12 digits.
func isAccountID(s string) bool {
	if len(s) != 12 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
