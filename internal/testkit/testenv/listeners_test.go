package testenv_test

import (
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"orderly/internal/testkit/testenv"
)

// Lines as Linux writes them: a loopback listener, a wildcard one, an
// established connection (not listed), and in tcp6 an IPv4-mapped
// loopback listener (a Java server bound to 127.0.0.1), ::1 and ::.
const procNetTCP = `  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1388 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 21345 1 0000000000000000 100 0 0 10 0
   1: 00000000:07E8 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 20001 1 0000000000000000 100 0 0 10 0
   2: 0100007F:1388 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 21999 1 0000000000000000 20 4 30 10 -1
`

const procNetTCP6 = `  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0000000000000000FFFF00000100007F:1FA4 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 30303 1 0000000000000000 100 0 0 10 0
   1: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 30304 1 0000000000000000 100 0 0 10 0
   2: 00000000000000000000000000000000:1F40 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 30305 1 0000000000000000 100 0 0 10 0
`

func TestParseProcNetTCP(t *testing.T) {
	tests := []struct {
		table string
		want  []string // address, inode, loopback
	}{
		{procNetTCP, []string{"127.0.0.1:5000 21345 true", "0.0.0.0:2024 20001 false"}},
		{procNetTCP6, []string{"[::ffff:127.0.0.1]:8100 30303 true", "[::1]:8080 30304 true", "[::]:8000 30305 false"}},
	}
	for _, tt := range tests {
		ls, err := testenv.ParseProcNetTCP(strings.NewReader(tt.table))
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, l := range ls {
			got = append(got, l.Addr.String()+" "+strconv.FormatUint(l.Inode, 10)+" "+strconv.FormatBool(l.Loopback()))
		}
		if strings.Join(got, ", ") != strings.Join(tt.want, ", ") {
			t.Errorf("got %q, want %q", got, tt.want)
		}
	}
}

// The emulators answer without authentication and hold whatever the tests
// and `make run` wrote: they must listen on loopback only, never on an
// address another machine reaches (DynamoDB Local's own default is every
// interface). Checked on the sockets of the emulators' processes (their
// pid files, under make test) and on everything listening on the ports of
// the endpoints the tests use.
func TestEmulatorsListenOnLoopbackOnly(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	if runtime.GOOS != "linux" {
		t.Skip("reads the listening sockets from Linux's /proc")
	}
	all, err := testenv.Listeners(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	for _, env := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL"} {
		u, err := url.Parse(os.Getenv(env))
		if err != nil || u.Port() == "" {
			t.Fatalf("%s=%q names no port", env, os.Getenv(env))
		}
		var on []string
		for _, l := range all {
			if strconv.Itoa(int(l.Addr.Port())) != u.Port() {
				continue
			}
			on = append(on, l.Addr.String())
			if !l.Loopback() {
				t.Errorf("%s (%s): a server listens on %s, reachable from other machines; want loopback only (restart emulators started before they were bound to 127.0.0.1: make stop emulators)", env, u.Host, l.Addr)
			}
		}
		if len(on) == 0 {
			t.Errorf("%s (%s): nothing listens on port %s in this network namespace", env, u.Host, u.Port())
		}
	}
	dir := os.Getenv("ORDERLY_EMULATOR_RUN_DIR")
	if dir == "" {
		t.Log("ORDERLY_EMULATOR_RUN_DIR unset: the emulators' own other sockets not checked")
		return
	}
	for _, name := range []string{"dynamodb", "elasticmq", "moto"} {
		raw, err := os.ReadFile(filepath.Join(dir, name+".pid"))
		if err != nil {
			t.Errorf("%s: %v", name, err)
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(raw)))
		if err != nil {
			t.Errorf("%s: pid file holds %q", name, raw)
			continue
		}
		ls, err := testenv.ListenersOf(pid)
		if err != nil {
			t.Errorf("%s (pid %d): %v", name, pid, err)
			continue
		}
		if len(ls) == 0 {
			t.Errorf("%s (pid %d) listens on nothing this test can see", name, pid)
		}
		for _, l := range ls {
			if !l.Loopback() {
				t.Errorf("%s (pid %d) listens on %s, reachable from other machines; want loopback only", name, pid, l.Addr)
			}
		}
	}
}

// Loopback is not enough against a web page open in the developer's
// browser: it reaches 127.0.0.1 too. Neither emulator may tell the
// browser that another origin can read its answers (moto's CORS allows
// every origin unless told not to).
func TestEmulatorsAllowNoOtherOrigin(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	for _, env := range []string{"AWS_ENDPOINT_URL_DYNAMODB", "AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL"} {
		endpoint := os.Getenv(env)
		for _, method := range []string{http.MethodOptions, http.MethodPost} {
			req, err := http.NewRequest(method, endpoint+"/", strings.NewReader("{}"))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Origin", "http://evil.example")
			req.Header.Set("Access-Control-Request-Method", http.MethodPost)
			req.Header.Set("Access-Control-Request-Headers", "authorization,content-type,x-amz-target")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, endpoint, err)
			}
			resp.Body.Close()
			if got := resp.Header.Get("Access-Control-Allow-Origin"); got != "" {
				t.Errorf("%s %s (%s) from http://evil.example: Access-Control-Allow-Origin %q, want none", method, endpoint, env, got)
			}
		}
	}
}
