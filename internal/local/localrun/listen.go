package localrun

import (
	"fmt"
	"net"
)

// ListenLoopback listens on addr ("host:port", port 0 for any) for one of
// the local servers (the API, the console, the simulator), which act
// without authentication and with the operator's credentials: so only on a
// loopback address (127.0.0.0/8, ::1, or localhost). Any other address,
// the wildcard ("", 0.0.0.0, ::) included, is refused: reach a local
// server from another machine through an SSH tunnel instead.
func ListenLoopback(addr string) (net.Listener, error) {
	if err := CheckLoopback(addr); err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	// localhost is resolved by the system; make sure it resolved to loopback.
	if a, ok := ln.Addr().(*net.TCPAddr); !ok || !a.IP.IsLoopback() {
		ln.Close()
		return nil, fmt.Errorf("listen on %q: it resolved to %s, not a loopback address", addr, ln.Addr())
	}
	return ln, nil
}

// CheckLoopback reports, before anything listens, whether addr is one
// ListenLoopback takes.
func CheckLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("listen on %q: %w", addr, err)
	}
	if ip := net.ParseIP(host); host != "localhost" && (ip == nil || !ip.IsLoopback()) {
		return fmt.Errorf("listen on %q: not a loopback address; orderly's local servers listen only on 127.0.0.1, ::1 or localhost (use an SSH tunnel to reach one from elsewhere)", addr)
	}
	return nil
}
