package ssrfguard

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/netip"
	"time"
)

// Resolver looks up the addresses of a host. *net.Resolver implements it;
// tests inject one that answers without DNS traffic.
type Resolver interface {
	LookupNetIP(ctx context.Context, network, host string) ([]netip.Addr, error)
}

// ContextDialer opens connections. *net.Dialer implements it; tests inject
// one that records the address instead of connecting.
type ContextDialer interface {
	DialContext(ctx context.Context, network, address string) (net.Conn, error)
}

// Dialer resolves names itself, checks every address against the Policy, and
// only then dials — by address, so the address checked is the address
// connected to. Use its DialContext as http.Transport.DialContext.
type Dialer struct {
	Policy Policy
	// Resolver answers name lookups; nil means net.DefaultResolver.
	Resolver Resolver
	// Next dials the checked address; nil means a net.Dialer with Timeout
	// and the Policy's Control, which checks the socket's address once more.
	Next ContextDialer
	// Timeout bounds the default dialer's connect (not used with Next).
	Timeout time.Duration
}

// DialContext resolves address, refuses it (wrapping ErrForbidden) when any
// of its addresses is forbidden, and otherwise dials the addresses in turn
// until one connects. Refusing when any address is forbidden, rather than
// skipping it, keeps a name that mixes public and private answers from
// reaching the private one on a later attempt.
func (d *Dialer) DialContext(ctx context.Context, network, address string) (net.Conn, error) {
	switch network {
	case "tcp", "tcp4", "tcp6":
	default:
		return nil, fmt.Errorf("%w: network %q", ErrForbidden, network)
	}
	host, port, err := splitHostPort(address)
	if err != nil {
		return nil, err
	}
	if err := d.Policy.CheckPort(port); err != nil {
		return nil, err
	}
	addrs, err := d.resolve(ctx, network, host)
	if err != nil {
		return nil, err
	}
	for _, a := range addrs {
		if err := d.Policy.CheckAddr(a); err != nil {
			return nil, fmt.Errorf("host %q: %w", host, err)
		}
	}
	next := d.Next
	if next == nil {
		next = &net.Dialer{Timeout: d.Timeout, Control: d.Policy.Control}
	}
	var errs []error
	for _, a := range addrs {
		conn, err := next.DialContext(ctx, network, netip.AddrPortFrom(a, port).String())
		if err == nil {
			return conn, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return nil, errors.Join(errs...)
}

func (d *Dialer) resolve(ctx context.Context, network, host string) ([]netip.Addr, error) {
	if a, err := netip.ParseAddr(host); err == nil {
		return []netip.Addr{a}, nil
	}
	if endsInNumber(host) {
		return nil, fmt.Errorf("%w: numeric host %q is not a canonical IP address", ErrForbidden, host)
	}
	if !d.Policy.AllowPrivate && isLocalhostName(host) {
		return nil, fmt.Errorf("%w: %q names this machine", ErrForbidden, host)
	}
	r := d.Resolver
	if r == nil {
		r = net.DefaultResolver
	}
	lookup := "ip"
	switch network {
	case "tcp4":
		lookup = "ip4"
	case "tcp6":
		lookup = "ip6"
	}
	addrs, err := r.LookupNetIP(ctx, lookup, host)
	if err != nil {
		return nil, fmt.Errorf("resolving %q: %w", host, err)
	}
	if len(addrs) == 0 {
		return nil, fmt.Errorf("resolving %q: no addresses", host)
	}
	// Resolvers may hand IPv4 answers back in IPv4-mapped form; dial and
	// check them as the IPv4 addresses they are.
	// Copied, not changed in place: the slice belongs to the resolver.
	out := make([]netip.Addr, len(addrs))
	for i, a := range addrs {
		out[i] = a.Unmap()
	}
	return out, nil
}
