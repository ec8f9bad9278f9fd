package ssrfguard_test

import (
	"context"
	"net/http"
	"net/netip"
	"testing"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
)

// anyResolver resolves every name to one address chosen by the fuzzer.
type anyResolver struct{ addr netip.Addr }

func (r anyResolver) LookupNetIP(context.Context, string, string) ([]netip.Addr, error) {
	return []netip.Addr{r.addr}, nil
}

// forbiddenByOracle is an independent, hand-written statement of what must
// never be dialled, using the standard library's predicates rather than the
// guard's own list.
func forbiddenByOracle(a netip.Addr) bool {
	if a.Is4In6() {
		return true // every mapped address is refused, even a public one
	}
	if a.IsLoopback() || a.IsPrivate() || a.IsLinkLocalUnicast() || a.IsLinkLocalMulticast() ||
		a.IsMulticast() || a.IsInterfaceLocalMulticast() || a.IsUnspecified() {
		return true
	}
	for _, p := range []string{
		"0.0.0.0/8", "100.64.0.0/10", "169.254.0.0/16", "240.0.0.0/4", // this network, CGNAT, link-local, reserved
		"64:ff9b::/96", "64:ff9b:1::/48", "fc00::/7", "fe80::/10", // NAT64, unique local, link-local
		"::/96", // IPv4-compatible (deprecated)
	} {
		if netip.MustParsePrefix(p).Contains(a) {
			return true
		}
	}
	return false
}

// FuzzNoForbiddenDial checks that whatever URL the guard accepts and
// whatever its name resolves to, the address dialled is never one the
// oracle forbids.
func FuzzNoForbiddenDial(f *testing.F) {
	for _, s := range []string{
		"http://example.com/", "https://127.0.0.1/", "http://2130706433/", "http://[::ffff:127.0.0.1]/",
		"http://example.com@127.0.0.1/", "http://0x7f.1/", "http://[64:ff9b::7f00:1]/", "http://localhost/",
		"https://[fd00:ec2::254]/", "http://169.254.169.254/", "http://a.b.c:8080/x?y#z",
	} {
		f.Add(s, []byte{127, 0, 0, 1})
		f.Add(s, []byte{93, 184, 215, 14})
		f.Add(s, netip.MustParseAddr("fd00:ec2::254").AsSlice())
		f.Add(s, netip.MustParseAddr("::ffff:10.0.0.1").AsSlice())
	}
	rec := &recordingDialer{}
	var res anyResolver
	d := &ssrfguard.Dialer{Next: rec}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext}}
	f.Fuzz(func(t *testing.T, raw string, ip []byte) {
		a, ok := netip.AddrFromSlice(ip)
		if !ok {
			a = netip.MustParseAddr("93.184.215.14")
		}
		res.addr = a
		d.Resolver = res
		u, err := ssrfguard.Policy{}.CheckURL(raw)
		if err != nil {
			return
		}
		rec.reset()
		req, err := http.NewRequest(http.MethodPost, u.String(), nil)
		if err != nil {
			return
		}
		resp, err := client.Do(req)
		if err == nil {
			resp.Body.Close()
			t.Fatalf("recording dialer connected to %q", raw)
		}
		for _, dialed := range rec.addresses() {
			ap, err := netip.ParseAddrPort(dialed)
			if err != nil {
				t.Fatalf("dialled an unparsable address %q for %q", dialed, raw)
			}
			if forbiddenByOracle(ap.Addr()) {
				t.Fatalf("dialled forbidden %s for %q (resolved to %s)", dialed, raw, a)
			}
		}
	})
}
