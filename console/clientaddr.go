package console

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
)

// throttleKey is the source the login throttle counts a request's failures
// against: its client's address (clientAddr), an IPv6 address as its /64,
// the block one host or one subscriber commonly holds whole, so that
// rotating through it gains nothing. A peer address that does not parse
// (not TCP) is its own source.
func (c *Console) throttleKey(r *http.Request) string {
	a, ok := c.clientAddr(r)
	if !ok {
		return r.RemoteAddr
	}
	if a.Is6() {
		p, _ := a.Prefix(64) // 64 is in range for an IPv6 address: cannot fail
		return p.String()
	}
	return a.String()
}

// clientAddr is the address a request comes from: its peer's, or when the
// peer is one of Options.TrustedProxies, the rightmost address of
// X-Forwarded-For that is not (each proxy appends the address it was
// reached from, so the addresses left of that one are the client's say).
// When every hop is trusted it is the leftmost; a hop that does not parse
// ends the walk at the last trusted address.
func (c *Console) clientAddr(r *http.Request) (netip.Addr, bool) {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		return netip.Addr{}, false
	}
	addr := peer.Addr().Unmap().WithZone("")
	if len(c.o.TrustedProxies) == 0 {
		return addr, true
	}
	hops := forwardedFor(r)
	for i := len(hops) - 1; i >= 0 && c.trustedProxy(addr); i-- {
		h, ok := parseHop(hops[i])
		if !ok {
			break
		}
		addr = h
	}
	return addr, true
}

// viaHTTPS reports whether the browser reached the console over HTTPS: the
// request came over TLS, or from one of Options.TrustedProxies with
// X-Forwarded-Proto https. Its first value counts, the one the proxy
// facing the browser set. The header of any other peer is not believed.
func (c *Console) viaHTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !c.trustedProxy(peer.Addr().Unmap().WithZone("")) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// normalProxies returns trusted proxies as the console compares them with
// a peer's address, which it takes unmapped: a network of IPv4-mapped IPv6
// addresses (::ffff:10.0.0.0/104) becomes its IPv4 network (10.0.0.0/8),
// each network is masked, and an invalid prefix is left out. The caller's
// slice is not changed.
func normalProxies(ps []netip.Prefix) []netip.Prefix {
	out := make([]netip.Prefix, 0, len(ps))
	for _, p := range ps {
		if !p.IsValid() {
			continue
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out
}

func (c *Console) trustedProxy(a netip.Addr) bool {
	return slices.ContainsFunc(c.o.TrustedProxies, func(p netip.Prefix) bool { return p.Contains(a) })
}

// forwardedFor is the request's X-Forwarded-For list, its header lines
// taken in order as one list.
func forwardedFor(r *http.Request) []string {
	var hops []string
	for _, v := range r.Header.Values("X-Forwarded-For") {
		for h := range strings.SplitSeq(v, ",") {
			hops = append(hops, strings.TrimSpace(h))
		}
	}
	return hops
}

// parseHop reads one X-Forwarded-For entry: an address, or an address and
// port as some proxies write it.
func parseHop(s string) (netip.Addr, bool) {
	a, err := netip.ParseAddr(s)
	if err != nil {
		ap, perr := netip.ParseAddrPort(s)
		if perr != nil {
			return netip.Addr{}, false
		}
		a = ap.Addr()
	}
	return a.Unmap().WithZone(""), true
}
