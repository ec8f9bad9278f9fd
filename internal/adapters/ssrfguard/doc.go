// Package ssrfguard keeps outbound HTTP requests made on behalf of users
// (webhooks) away from the machine's own network: loopback, private,
// link-local (the instance metadata service included), CGNAT, NAT64,
// multicast, unspecified and the other special-purpose ranges.
//
// It checks twice. A URL is checked when it is accepted (scheme, user info,
// ambiguous numeric host spellings, literal addresses, ports), and every
// address is checked again at dial time, after DNS resolution, on the exact
// address that is dialled, so DNS rebinding cannot slip a forbidden address
// past the first check. The address ranges come from code.dny.dev/ssrf, a
// maintained list generated from the IANA special-purpose registries.
package ssrfguard
