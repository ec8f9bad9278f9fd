package ssrfguard_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/ferryhq/ferry/internal/adapters/ssrfguard"
)

// recordingDialer records every address it is asked to dial and never
// connects.
type recordingDialer struct {
	mu    sync.Mutex
	dials []string
}

var errRecorded = errors.New("recording dialer: not connecting")

func (d *recordingDialer) DialContext(_ context.Context, _, address string) (net.Conn, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = append(d.dials, address)
	return nil, errRecorded
}

func (d *recordingDialer) reset() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.dials = nil
}

func (d *recordingDialer) addresses() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]string(nil), d.dials...)
}

// mapResolver answers from a fixed table, without DNS traffic.
type mapResolver map[string][]netip.Addr

func (m mapResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	if a, ok := m[strings.ToLower(host)]; ok {
		return a, nil
	}
	return nil, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

var testResolver = mapResolver{
	"public.test":          addrs("93.184.215.14"),
	"public6.test":         addrs("2606:4700::6810:84e5"),
	"loopback.test":        addrs("127.0.0.1"),
	"mapped.test":          addrs("::ffff:10.0.0.1"),
	"mapped-public.test":   addrs("::ffff:93.184.215.14"),
	"metadata.test":        addrs("169.254.169.254"),
	"mixed.test":           addrs("93.184.215.14", "10.1.2.3"),
	"nat64.test":           addrs("64:ff9b::7f00:1"),
	"metadata6.test":       addrs("fd00:ec2::254"),
	"example.com":          addrs("93.184.215.14"),
	"rebind.test":          addrs("192.168.1.1"),
	"cgnat.test":           addrs("100.64.0.1"),
	"unspecified.test":     addrs("0.0.0.0"),
	"unspecified6.test":    addrs("::"),
	"multicast.test":       addrs("224.0.0.1"),
	"linklocal6.test":      addrs("fe80::1"),
	"broadcast.test":       addrs("255.255.255.255"),
	"sitelocal-6to4.test":  addrs("2002:7f00:1::1"),
	"documentation6.test":  addrs("2001:db8::1"),
	"private172.test":      addrs("172.16.5.4"),
	"loopback6-name.test":  addrs("::1"),
	"benchmark.test":       addrs("198.18.0.1"),
	"reserved.test":        addrs("240.0.0.1"),
	"teredo.test":          addrs("2001::1"),
	"uniquelocal.test":     addrs("fc00::1"),
	"discard-only6.test":   addrs("100::1"),
	"ipv4-compatible.test": addrs("::7f00:1"),
}

func TestCheckURLRefusesForbiddenSpellings(t *testing.T) {
	t.Parallel()
	cases := []string{
		"http://127.0.0.1/",
		"http://127.0.0.1:8080/hook",
		"http://2130706433/",         // decimal
		"http://017700000001/",       // octal, whole
		"http://0177.0.0.1/",         // octal, dotted
		"http://0x7f000001/",         // hex, whole
		"http://0x7f.0x0.0x0.0x1/",   // hex, dotted
		"http://0X7F.1/",             // hex, short form
		"http://127.1/",              // short form
		"http://127.000.000.001/",    // zero-padded
		"http://0/",                  // all zero
		"http://%31%32%37.0.0.1/",    // percent-encoded
		"http://[::1]/",              // IPv6 loopback
		"http://[::]/",               // unspecified
		"http://0.0.0.0/",            // unspecified
		"http://[::ffff:127.0.0.1]/", // IPv4-mapped, dotted
		"http://[::ffff:7f00:1]/",    // IPv4-mapped, hex
		"http://[::ffff:169.254.169.254]/",
		"http://[64:ff9b::7f00:1]/",    // NAT64 of loopback
		"http://[64:ff9b::a9fe:a9fe]/", // NAT64 of the metadata address
		"http://169.254.169.254/latest/meta-data/",
		"http://[fd00:ec2::254]/latest/meta-data/",
		"http://[fe80::1%25eth0]/", // link-local with zone
		"http://10.0.0.1/",
		"http://172.16.0.1/",
		"http://192.168.0.1/",
		"http://100.64.0.1/", // CGNAT
		"http://224.0.0.1/",  // multicast
		"http://[ff02::1]/",  // IPv6 multicast
		"http://255.255.255.255/",
		"http://example.com@127.0.0.1/",    // user-info trick
		"http://user:pass@example.com/",    // credentials in the URL
		"http://example.com:80@127.0.0.1/", // user-info trick with a port
		"http://127.0.0.1#@example.com/",   // fragment trick
		"http://127.0.0.1?@example.com/",   // query trick
		"http://localhost/",                // the local name
		"http://LOCALHOST./",               // upper case, trailing dot
		"http://api.localhost/",            // RFC 6761 subdomain
		"ftp://example.com/",               // scheme
		"file:///etc/passwd",               // scheme
		"gopher://example.com/",            // scheme
		"//example.com/",                   // no scheme
		"/relative",                        // not absolute
		"http:example.com",                 // opaque
		"http://",                          // no host
		"http://example.com:0/",            // port 0
		"http://example.com:99999/",        // out of range
	}
	p := ssrfguard.Policy{}
	for _, raw := range cases {
		t.Run(raw, func(t *testing.T) {
			_, err := p.CheckURL(raw)
			require.Error(t, err, raw)
		})
	}
}

func TestCheckURLAcceptsPublicURLs(t *testing.T) {
	t.Parallel()
	p := ssrfguard.Policy{}
	for _, raw := range []string{
		"https://example.com/hook",
		"http://example.com:8080/hook?x=1",
		"https://93.184.215.14/",
		"https://[2606:4700::6810:84e5]:8443/",
		"HTTPS://Example.COM/",
		"https://1password.com/", // a name that starts with a digit
		"https://example.com./",
	} {
		_, err := p.CheckURL(raw)
		require.NoError(t, err, raw)
	}
}

func TestCheckURLOptions(t *testing.T) {
	t.Parallel()
	strict := ssrfguard.Policy{HTTPSOnly: true, StandardPortsOnly: true}
	_, err := strict.CheckURL("http://example.com/")
	require.ErrorIs(t, err, ssrfguard.ErrForbidden)
	_, err = strict.CheckURL("https://example.com:8443/")
	require.ErrorIs(t, err, ssrfguard.ErrForbidden)
	_, err = strict.CheckURL("https://example.com:443/")
	require.NoError(t, err)
	_, err = strict.CheckURL("https://example.com/")
	require.NoError(t, err)

	private := ssrfguard.Policy{AllowPrivate: true}
	for _, raw := range []string{"http://127.0.0.1:9000/", "http://localhost:9000/", "http://[::1]:9000/", "http://10.0.0.1/"} {
		_, err := private.CheckURL(raw)
		require.NoError(t, err, raw)
	}
	// Ambiguous spellings and user info stay refused even for local receivers.
	for _, raw := range []string{"http://2130706433/", "http://a@127.0.0.1/", "ftp://127.0.0.1/"} {
		_, err := private.CheckURL(raw)
		require.Error(t, err, raw)
	}
}

func TestCheckAddrRefusesSpecialPurposeRanges(t *testing.T) {
	t.Parallel()
	p := ssrfguard.Policy{}
	for _, s := range []string{
		"127.0.0.1", "127.255.255.254", "10.0.0.1", "172.31.255.255", "192.168.1.1",
		"169.254.169.254", "169.254.0.1", "100.64.0.1", "100.127.255.255", "0.0.0.0",
		"224.0.0.251", "239.255.255.250", "255.255.255.255", "240.0.0.1", "192.0.0.170",
		"198.18.0.1", "192.0.2.1",
		"::1", "::", "fe80::1", "fc00::1", "fd00:ec2::254", "ff02::1", "ff05::1:3",
		"::ffff:127.0.0.1", "::ffff:10.0.0.1", "::ffff:169.254.169.254",
		"64:ff9b::7f00:1", "64:ff9b::a9fe:a9fe", "64:ff9b:1::1", "::7f00:1",
		"2001:db8::1", "2002:7f00:1::1", "2001::1", "100::1",
	} {
		err := p.CheckAddr(netip.MustParseAddr(s))
		require.ErrorIs(t, err, ssrfguard.ErrForbidden, s)
	}
	for _, s := range []string{"93.184.215.14", "8.8.8.8", "1.1.1.1", "2606:4700::6810:84e5", "2a00:1450:4001::200e"} {
		require.NoError(t, p.CheckAddr(netip.MustParseAddr(s)), s)
	}
}

func TestControlChecksTheSocketAddress(t *testing.T) {
	t.Parallel()
	p := ssrfguard.Policy{StandardPortsOnly: true}
	require.ErrorIs(t, p.Control("tcp4", "127.0.0.1:80", nil), ssrfguard.ErrForbidden)
	require.ErrorIs(t, p.Control("tcp6", "[fd00:ec2::254]:80", nil), ssrfguard.ErrForbidden)
	require.ErrorIs(t, p.Control("udp4", "8.8.8.8:53", nil), ssrfguard.ErrForbidden)
	require.ErrorIs(t, p.Control("tcp4", "8.8.8.8:8080", nil), ssrfguard.ErrForbidden)
	require.NoError(t, p.Control("tcp4", "8.8.8.8:443", nil))
}

func TestDialerRefusesWithoutConnecting(t *testing.T) {
	t.Parallel()
	forbidden := []string{
		"loopback.test", "mapped.test", "metadata.test", "mixed.test", "nat64.test",
		"metadata6.test", "rebind.test", "cgnat.test", "unspecified.test", "unspecified6.test",
		"multicast.test", "linklocal6.test", "broadcast.test", "sitelocal-6to4.test",
		"documentation6.test", "private172.test", "loopback6-name.test", "benchmark.test",
		"reserved.test", "teredo.test", "uniquelocal.test", "discard-only6.test",
		"ipv4-compatible.test", "127.0.0.1", "::1", "2130706433", "0x7f.1", "localhost",
	}
	for _, host := range forbidden {
		t.Run(host, func(t *testing.T) {
			t.Parallel()
			rec := &recordingDialer{}
			d := &ssrfguard.Dialer{Resolver: testResolver, Next: rec}
			_, err := d.DialContext(context.Background(), "tcp", net.JoinHostPort(host, "443"))
			require.ErrorIs(t, err, ssrfguard.ErrForbidden)
			require.Empty(t, rec.addresses())
		})
	}
}

func TestDialerDialsTheCheckedAddress(t *testing.T) {
	t.Parallel()
	rec := &recordingDialer{}
	d := &ssrfguard.Dialer{Resolver: testResolver, Next: rec}
	_, err := d.DialContext(context.Background(), "tcp", "public.test:443")
	require.ErrorIs(t, err, errRecorded)
	_, err = d.DialContext(context.Background(), "tcp", "mapped-public.test:443")
	require.ErrorIs(t, err, errRecorded)
	_, err = d.DialContext(context.Background(), "tcp", "public6.test:8443")
	require.ErrorIs(t, err, errRecorded)
	require.Equal(t, []string{"93.184.215.14:443", "93.184.215.14:443", "[2606:4700::6810:84e5]:8443"}, rec.addresses())
}

func TestDialerAllowPrivate(t *testing.T) {
	t.Parallel()
	rec := &recordingDialer{}
	d := &ssrfguard.Dialer{Policy: ssrfguard.Policy{AllowPrivate: true}, Resolver: testResolver, Next: rec}
	_, err := d.DialContext(context.Background(), "tcp", "loopback.test:9000")
	require.ErrorIs(t, err, errRecorded)
	require.Equal(t, []string{"127.0.0.1:9000"}, rec.addresses())
}

// TestHTTPClientRefusesWithoutConnecting drives the URL table through a real
// http.Client whose transport dials through the guard, as the webhook
// adapter does: a user-info trick or a name resolving to loopback never
// reaches the (recording) dialer.
func TestHTTPClientRefusesWithoutConnecting(t *testing.T) {
	t.Parallel()
	rec := &recordingDialer{}
	d := &ssrfguard.Dialer{Resolver: testResolver, Next: rec}
	client := &http.Client{Transport: &http.Transport{DialContext: d.DialContext, Proxy: nil}}
	for _, raw := range []string{
		"http://loopback.test/",
		"http://example.com@loopback.test/",
		"http://metadata.test/latest/meta-data/",
		"http://rebind.test:8080/",
		"https://nat64.test/",
		"http://127.0.0.1/",
		"http://[::ffff:127.0.0.1]/",
		"http://2130706433/",
	} {
		req, err := http.NewRequest(http.MethodPost, raw, nil)
		require.NoError(t, err)
		resp, err := client.Do(req)
		if resp != nil {
			resp.Body.Close()
		}
		require.ErrorIs(t, err, ssrfguard.ErrForbidden, raw)
	}
	require.Empty(t, rec.addresses())
}
