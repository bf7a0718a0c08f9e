package testenv

import (
	"bufio"
	"encoding/hex"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Listener is a TCP socket in the LISTEN state.
type Listener struct {
	Addr  netip.AddrPort
	Inode uint64
}

// Loopback reports whether it listens on a loopback address only
// (127.0.0.0/8, ::1, or 127.0.0.1 mapped into IPv6), not on the wildcard
// address or an interface other machines reach.
func (l Listener) Loopback() bool { return l.Addr.Addr().Unmap().IsLoopback() }

// Listeners returns the TCP sockets listening in process pid's network
// namespace, from Linux's /proc/<pid>/net/tcp and tcp6.
func Listeners(pid int) ([]Listener, error) {
	var all []Listener
	for _, name := range []string{"tcp", "tcp6"} {
		f, err := os.Open(fmt.Sprintf("/proc/%d/net/%s", pid, name))
		if err != nil {
			return nil, err
		}
		ls, err := ParseProcNetTCP(f)
		f.Close()
		if err != nil {
			return nil, fmt.Errorf("/proc/%d/net/%s: %w", pid, name, err)
		}
		all = append(all, ls...)
	}
	return all, nil
}

// ListenersOf returns the TCP sockets process pid itself listens on: those
// of its namespace whose inodes are among its open files.
func ListenersOf(pid int) ([]Listener, error) {
	fds, err := filepath.Glob(fmt.Sprintf("/proc/%d/fd/*", pid))
	if err != nil {
		return nil, err
	}
	if len(fds) == 0 {
		return nil, fmt.Errorf("no open files of process %d in /proc (gone, or not ours to read)", pid)
	}
	sockets := map[uint64]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(fd)
		if err != nil {
			continue // closed since the glob
		}
		if inode, ok := strings.CutPrefix(target, "socket:["); ok {
			if n, err := strconv.ParseUint(strings.TrimSuffix(inode, "]"), 10, 64); err == nil {
				sockets[n] = true
			}
		}
	}
	all, err := Listeners(pid)
	if err != nil {
		return nil, err
	}
	var own []Listener
	for _, l := range all {
		if sockets[l.Inode] {
			own = append(own, l)
		}
	}
	return own, nil
}

// ParseProcNetTCP reads the listening sockets of a /proc/net/tcp or tcp6
// table: local address as hex words in host byte order (little-endian
// here), state 0A for LISTEN, the socket's inode in the tenth column.
func ParseProcNetTCP(r io.Reader) ([]Listener, error) {
	var out []Listener
	sc := bufio.NewScanner(r)
	for first := true; sc.Scan(); first = false {
		f := strings.Fields(sc.Text())
		if first || len(f) < 10 || f[3] != "0A" {
			continue
		}
		hostHex, portHex, ok := strings.Cut(f[1], ":")
		raw, err := hex.DecodeString(hostHex)
		if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
			return nil, fmt.Errorf("local address %q: not an address", f[1])
		}
		for i := 0; i < len(raw); i += 4 { // each 32-bit word is in host order
			raw[i], raw[i+1], raw[i+2], raw[i+3] = raw[i+3], raw[i+2], raw[i+1], raw[i]
		}
		addr, _ := netip.AddrFromSlice(raw)
		port, err := strconv.ParseUint(portHex, 16, 16)
		if err != nil {
			return nil, fmt.Errorf("local address %q: port: %w", f[1], err)
		}
		inode, err := strconv.ParseUint(f[9], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("inode %q: %w", f[9], err)
		}
		out = append(out, Listener{Addr: netip.AddrPortFrom(addr, uint16(port)), Inode: inode})
	}
	return out, sc.Err()
}
