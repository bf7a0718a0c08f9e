package engine_test

import (
	"context"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"orderly/internal/local/engine"
	"orderly/internal/testkit/enginetest"
	"orderly/internal/testkit/testenv"
)

// The local servers (API, console, simulator) act without authentication:
// they listen on loopback only, and an address that is not loopback is
// refused before the stage is provisioned.
func TestLocalServersListenOnLoopbackOnly(t *testing.T) {
	if !testenv.Enabled() {
		t.Skip("set ORDERLY_INTEGRATION=1 to run against the emulators")
	}
	for _, tt := range []struct {
		name  string
		tweak func(*engine.Config)
	}{
		{"API on every interface", func(c *engine.Config) { c.APIAddr = ":0" }},
		{"console on every interface", func(c *engine.Config) { c.ConsoleAddr = "0.0.0.0:0" }},
		{"simulator on every IPv6 interface", func(c *engine.Config) { c.SimulatorAddr = "[::]:0" }},
	} {
		cfg := enginetest.Config(t)
		tt.tweak(&cfg)
		if e, err := engine.New(context.Background(), testenv.AWS(t), cfg); err == nil || !strings.Contains(err.Error(), "not a loopback address") {
			t.Errorf("%s: engine.New() = %v, %v; want it refused as not loopback", tt.name, e, err)
		}
	}

	if runtime.GOOS != "linux" {
		t.Skip("reads the listening sockets from Linux's /proc")
	}
	e := enginetest.Start(t, func(c *engine.Config) { c.ConsoleAddr = "localhost:0" })
	ls, err := testenv.ListenersOf(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	ports := map[string]testenv.Listener{}
	for _, l := range ls {
		ports[strconv.Itoa(int(l.Addr.Port()))] = l
	}
	for name, raw := range map[string]string{"API": e.URL(), "console": e.ConsoleURL(), "simulator": e.RemoteURL()} {
		u, err := url.Parse(raw)
		if err != nil {
			t.Fatal(err)
		}
		l, ok := ports[u.Port()]
		switch {
		case !ok:
			t.Errorf("the %s (%s): no socket of this process listens on port %s", name, raw, u.Port())
		case !l.Loopback():
			t.Errorf("the %s listens on %s, want loopback only", name, l.Addr)
		}
	}
}
