package testenv

import (
	"net"
	"testing"
)

// FreeLoopback returns a loopback address ("127.0.0.1:PORT") with a port
// nobody listens on, for a test to start a server at: the port was free
// a moment ago, which is as much as a test can know.
func FreeLoopback(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}
