package main

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The default services file (`make run`'s examples/services.local.json)
// applies to whichever named workflows call its services; a file of the
// user's decides for the services it lists, and its own mistakes are
// refused as synth refuses them.
func TestLocalServices(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	defaults := "../../examples/services.local.json"
	own := write("shop.json", `{"payment": {"url": "http://127.0.0.1:9000", "auth": {"type": "none"}}}`)
	bad := write("bad.json", `{"payment": {"url": "http://payment.example.com", "auth": {"type": "none"}}}`)
	ownFraud := write("fraud.json", `{"fraud": {"url": "http://127.0.0.1:9001", "auth": {"type": "none"}}}`)
	tests := []struct {
		name, file, defaults string
		agents               []string
		want                 []string // the services configured
		wantURL              map[string]string
		wantErr              string
	}{
		{name: "nothing given", agents: []string{"fraud"}},
		{name: "defaults, a workflow calls them", defaults: defaults, agents: []string{"inventory", "fraud"}, want: []string{"fraud"},
			wantURL: map[string]string{"fraud": "http://127.0.0.1:8081"}},
		{name: "defaults no named workflow calls", defaults: defaults, agents: []string{"inventory", "payment"}, want: []string{}},
		{name: "the user's file and the defaults", file: own, defaults: defaults, agents: []string{"payment", "fraud"}, want: []string{"fraud", "payment"}},
		{name: "the user's file decides for what it lists", file: ownFraud, defaults: defaults, agents: []string{"fraud"}, want: []string{"fraud"},
			wantURL: map[string]string{"fraud": "http://127.0.0.1:9001"}},
		{name: "the user's file is checked", file: bad, defaults: defaults, agents: []string{"payment"}, wantErr: "ORDERLY_SERVICES:"},
		{name: "a file that is not there", file: filepath.Join(dir, "missing.json"), agents: []string{"payment"}, wantErr: "ORDERLY_SERVICES: open"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := localServices(tt.file, tt.defaults, tt.agents)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error %v, want one with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := slices.Sorted(maps.Keys(got))
			if tt.want == nil && got != nil || tt.want != nil && !slices.Equal(names, tt.want) {
				t.Errorf("services %v, want %v", names, tt.want)
			}
			for name, url := range tt.wantURL {
				if got[name].URL != url {
					t.Errorf("%s at %q, want %q", name, got[name].URL, url)
				}
			}
		})
	}
}
