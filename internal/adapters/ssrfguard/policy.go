package ssrfguard

import (
	"errors"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"strconv"
	"strings"
	"syscall"

	"code.dny.dev/ssrf"
)

// ErrForbidden is wrapped by every error that refuses a destination, so
// callers can tell "refused by policy" from a network failure with
// errors.Is, however deeply net/http wrapped it.
var ErrForbidden = errors.New("destination forbidden")

// Policy says which destinations outbound requests may reach. The zero
// Policy refuses every special-purpose address and allows http and https on
// any port.
type Policy struct {
	// AllowPrivate lets requests reach any address, loopback and private
	// ranges included. Only for local development (ferry dev
	// --allow-private-webhooks), where the receiver runs on the same machine.
	AllowPrivate bool
	// HTTPSOnly refuses plain http URLs.
	HTTPSOnly bool
	// StandardPortsOnly refuses ports other than 80 and 443.
	StandardPortsOnly bool
}

// guardian holds the address checks. The ssrf.Guardian is immutable and
// safe for concurrent use; ports are checked by Policy itself, so the
// guardian is built to allow any port and either TCP network.
var guardian = ssrf.New(ssrf.WithAnyPort(), ssrf.WithNetworks("tcp4", "tcp6"))

// CheckAddr refuses an address the policy does not allow.
func (p Policy) CheckAddr(addr netip.Addr) error {
	if p.AllowPrivate {
		return nil
	}
	if addr.Zone() != "" {
		// A zone only makes sense for link-local and other scoped addresses.
		return fmt.Errorf("%w: scoped address %s", ErrForbidden, addr)
	}
	if err := guardian.SafeAddr(addr); err != nil {
		return fmt.Errorf("%w: %w", ErrForbidden, err)
	}
	return nil
}

// CheckPort refuses a port the policy does not allow.
func (p Policy) CheckPort(port uint16) error {
	if port == 0 {
		return fmt.Errorf("%w: port 0", ErrForbidden)
	}
	if p.StandardPortsOnly && port != 80 && port != 443 {
		return fmt.Errorf("%w: port %d (only 80 and 443 are allowed)", ErrForbidden, port)
	}
	return nil
}

// CheckAddrPort refuses an address and port the policy does not allow.
func (p Policy) CheckAddrPort(ap netip.AddrPort) error {
	if err := p.CheckPort(ap.Port()); err != nil {
		return err
	}
	return p.CheckAddr(ap.Addr())
}

// Control checks the address a net.Dialer is about to connect to. Set it as
// net.Dialer.Control: it runs after DNS resolution, on the very address of
// the socket, so it also holds when resolution happened somewhere else.
func (p Policy) Control(network, address string, _ syscall.RawConn) error {
	switch network {
	case "tcp4", "tcp6":
	default:
		return fmt.Errorf("%w: network %q", ErrForbidden, network)
	}
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: unparsable address %q: %w", ErrForbidden, address, err)
	}
	return p.CheckAddrPort(ap)
}

// CheckURL parses raw and refuses it unless it is an absolute http or https
// URL (https only with HTTPSOnly) whose host the policy may reach. It
// refuses, without resolving anything:
//   - user info (http://example.com@127.0.0.1/ reads as a trick, and
//     credentials do not belong in a stored payload);
//   - hosts spelled as numbers that are not canonical IP addresses
//     (2130706433, 0x7f.1, 0177.0.0.1, 127.1): browsers and C resolvers read
//     them as IPv4 addresses while Go's resolver would send them to DNS, so
//     what they mean depends on who reads them;
//   - literal addresses the policy forbids, and localhost names;
//   - ports the policy forbids.
//
// Names are checked again, after resolution, by Dialer.
func (p Policy) CheckURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// Not the url.Error itself: it quotes the whole URL, and these
		// errors may reach logs.
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err
		}
		return nil, fmt.Errorf("unparsable URL: %w", err)
	}
	switch u.Scheme {
	case "https":
	case "http":
		if p.HTTPSOnly {
			return nil, fmt.Errorf("%w: only https URLs are allowed", ErrForbidden)
		}
	default:
		return nil, fmt.Errorf("%w: scheme %q (only http and https)", ErrForbidden, u.Scheme)
	}
	if u.Opaque != "" || u.Host == "" {
		return nil, errors.New("URL must be absolute with a host")
	}
	if u.User != nil {
		return nil, fmt.Errorf("%w: URL must not carry user info", ErrForbidden)
	}
	port, err := urlPort(u)
	if err != nil {
		return nil, err
	}
	if err := p.CheckPort(port); err != nil {
		return nil, err
	}
	host := u.Hostname()
	if host == "" {
		return nil, errors.New("URL must be absolute with a host")
	}
	if addr, err := netip.ParseAddr(host); err == nil {
		if err := p.CheckAddr(addr); err != nil {
			return nil, err
		}
		return u, nil
	}
	if strings.Contains(host, ":") || strings.Contains(host, "%") {
		return nil, fmt.Errorf("%w: malformed IPv6 host %q", ErrForbidden, host)
	}
	if endsInNumber(host) {
		return nil, fmt.Errorf("%w: numeric host %q is not a canonical IP address", ErrForbidden, host)
	}
	if !p.AllowPrivate && isLocalhostName(host) {
		return nil, fmt.Errorf("%w: %q names this machine", ErrForbidden, host)
	}
	return u, nil
}

// urlPort returns the URL's port, or the scheme's default.
func urlPort(u *url.URL) (uint16, error) {
	ps := u.Port()
	if ps == "" {
		if u.Scheme == "https" {
			return 443, nil
		}
		return 80, nil
	}
	n, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("invalid port %q", ps)
	}
	return uint16(n), nil
}

// endsInNumber reports whether the WHATWG URL standard would parse host as
// an IPv4 address: its last label (ignoring one trailing dot) is decimal
// digits or 0x followed by hex digits. No top-level domain is numeric, so
// refusing these refuses no real name.
func endsInNumber(host string) bool {
	host = strings.TrimSuffix(host, ".")
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") || strings.HasPrefix(last, "0X") {
		for _, c := range last[2:] {
			if !isHex(c) {
				return false
			}
		}
		return true
	}
	for _, c := range last {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

func isHex(c rune) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F'
}

// isLocalhostName reports names that resolve to this machine by convention
// (RFC 6761), wherever the resolver is.
func isLocalhostName(host string) bool {
	h := strings.ToLower(strings.TrimSuffix(host, "."))
	return h == "localhost" || strings.HasSuffix(h, ".localhost")
}

// splitHostPort splits a dial address into host and numeric port.
func splitHostPort(address string) (string, uint16, error) {
	host, ps, err := net.SplitHostPort(address)
	if err != nil {
		return "", 0, fmt.Errorf("%w: bad dial address %q: %w", ErrForbidden, address, err)
	}
	n, err := strconv.ParseUint(ps, 10, 16)
	if err != nil {
		return "", 0, fmt.Errorf("%w: bad port in %q", ErrForbidden, address)
	}
	return host, uint16(n), nil
}
