package config

import (
	"context"
	"net"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
)

func TestCheckEndpoints(t *testing.T) {
	open, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer open.Close()
	closed, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedAddr := closed.Addr().String()
	closed.Close()

	for _, tc := range []struct {
		name     string
		endpoint *string
		wantErr  []string // parts of the one line; none means no error
	}{
		{"AWS's own endpoints are not checked", nil, nil},
		{"an emulator that answers", aws.String("http://" + open.Addr().String()), nil},
		{"an emulator that is not running", aws.String("http://" + closedAddr), []string{"DynamoDB", closedAddr, "make stop", "make emulators"}},
		{"not a URL", aws.String("::"), []string{"DynamoDB", "not a URL"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckEndpoints(context.Background(), aws.Config{Region: "us-east-1", BaseEndpoint: tc.endpoint})
			if len(tc.wantErr) == 0 {
				if err != nil {
					t.Fatalf("got %v, want no error", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("got no error, want one naming %q", tc.wantErr)
			}
			for _, part := range tc.wantErr {
				if !strings.Contains(err.Error(), part) {
					t.Errorf("got %q, want it to name %q", err, part)
				}
			}
			if strings.Contains(err.Error(), "\n") {
				t.Errorf("got %q, want one line", err)
			}
		})
	}
}
