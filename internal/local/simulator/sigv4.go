package simulator

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
)

// signingService is the SigV4 service of API Gateway's deployed APIs.
const signingService = "execute-api"

// SigV4 returns a transport that signs each request with AWS Signature
// Version 4 for API Gateway (execute-api), with cfg's credentials in its
// region, and sends it through next (http.DefaultTransport when nil): a
// deployed stage's routes take IAM. cfg is typically
// config.LoadDefaultConfig's, from the standard environment.
func SigV4(cfg aws.Config, next http.RoundTripper) http.RoundTripper {
	if next == nil {
		next = http.DefaultTransport
	}
	return &sigV4{creds: cfg.Credentials, region: cfg.Region, signer: v4.NewSigner(), next: next}
}

type sigV4 struct {
	creds  aws.CredentialsProvider
	region string
	signer *v4.Signer
	next   http.RoundTripper
}

func (s *sigV4) RoundTrip(req *http.Request) (*http.Response, error) {
	var body []byte
	if req.Body != nil {
		var err error
		body, err = io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, fmt.Errorf("sign %s %s: read the body: %w", req.Method, req.URL.Path, err)
		}
	}
	if s.creds == nil {
		return nil, errors.New("sign " + req.Method + " " + req.URL.Path + ": no AWS credentials (set them as for the AWS CLI)")
	}
	ctx := req.Context()
	creds, err := s.creds.Retrieve(ctx)
	if err != nil {
		// The provider's message may name a role or a profile's file.
		return nil, fmt.Errorf("sign %s %s: the AWS credentials are unavailable", req.Method, req.URL.Path)
	}
	// A RoundTripper leaves the caller's request as it was: sign a copy.
	out := req.Clone(ctx)
	out.Body, out.ContentLength = http.NoBody, 0
	if len(body) > 0 {
		out.Body, out.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
		out.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
	}
	sum := sha256.Sum256(body)
	hash := hex.EncodeToString(sum[:])
	out.Header.Set("X-Amz-Content-Sha256", hash)
	if err := s.signer.SignHTTP(ctx, creds, out, hash, signingService, s.region, time.Now()); err != nil {
		return nil, fmt.Errorf("sign %s %s: %w", req.Method, req.URL.Path, err)
	}
	return s.next.RoundTrip(out)
}
