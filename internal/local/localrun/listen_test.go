package localrun_test

import (
	"net"
	"strings"
	"testing"

	"orderly/internal/local/localrun"
)

// The local servers (API, console, simulator) act without authentication:
// they listen on loopback only, and refuse any other address.
func TestListenLoopback(t *testing.T) {
	tests := []struct {
		addr string
		ok   bool
	}{
		{"127.0.0.1:0", true},
		{"localhost:0", true},
		{"127.0.0.2:0", true},
		{"[::1]:0", true},
		{":0", false},
		{"0.0.0.0:0", false},
		{"[::]:0", false},
		{"192.0.2.10:0", false},
		{"example.com:0", false},
		{"127.0.0.1", false}, // no port
	}
	for _, tt := range tests {
		t.Run(tt.addr, func(t *testing.T) {
			ln, err := localrun.ListenLoopback(tt.addr)
			if !tt.ok {
				if err == nil {
					ln.Close()
					t.Fatalf("ListenLoopback(%q) listens on %s, want it refused", tt.addr, ln.Addr())
				}
				if !strings.Contains(err.Error(), tt.addr) {
					t.Errorf("the error %q does not name the address %q", err, tt.addr)
				}
				return
			}
			if err != nil {
				if tt.addr == "[::1]:0" && strings.Contains(err.Error(), "cannot assign") {
					t.Skipf("no IPv6 loopback here: %v", err)
				}
				t.Fatalf("ListenLoopback(%q): %v", tt.addr, err)
			}
			defer ln.Close()
			if ip := ln.Addr().(*net.TCPAddr).IP; !ip.IsLoopback() {
				t.Errorf("ListenLoopback(%q) listens on %s, want loopback", tt.addr, ln.Addr())
			}
		})
	}
}
