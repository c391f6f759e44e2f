package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"net/netip"
	"net/url"
	"path"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/console"
)

// consoleAddon serves the web console (package console) beside the gRPC
// server: `equeue serve --console ADDR`. It uses the server's tokens (a login
// form or a bearer token; admin acts, consume looks) and its TLS
// certificate.
type consoleAddon struct {
	addr     string
	prefix   string
	readOnly bool
	// proxies is --console-trusted-proxy as given; trusted is the same
	// parsed by checkFlags.
	proxies []string
	trusted []netip.Prefix
}

func init() {
	serveAddons = append(serveAddons, func(*app) serveAddon { return &consoleAddon{} })
}

func (c *consoleAddon) addFlags(f *pflag.FlagSet) {
	f.StringVar(&c.addr, "console", "", "serve the web console on this address (host:port), with the server's tokens and TLS")
	f.StringVar(&c.prefix, "console-prefix", "/", "path the console is served under")
	f.BoolVar(&c.readOnly, "console-read-only", false, "serve a console that only shows: no action is possible")
	f.StringSliceVar(&c.proxies, "console-trusted-proxy", nil, "a reverse proxy in front of the console, an address or a CIDR network (repeatable or comma-separated): the login throttle counts its requests against the client it names in X-Forwarded-For")
}

// checkFlags parses --console-trusted-proxy, refusing a value that is no
// address or network before serve takes a port or creates anything.
func (c *consoleAddon) checkFlags(bool) error {
	trusted, err := parseTrustedProxies(c.proxies)
	if err != nil {
		return usageErrorf("--console-trusted-proxy %v", err)
	}
	c.trusted = trusted
	return nil
}

// parseTrustedProxies reads trusted proxies: networks in CIDR form, or bare
// addresses, each a network of one (/32 or /128). An IPv4-mapped IPv6
// address or network is taken as the IPv4 one and a zone is dropped, as
// the console compares the addresses requests come from.
func parseTrustedProxies(vals []string) ([]netip.Prefix, error) {
	out := make([]netip.Prefix, 0, len(vals))
	for _, v := range vals {
		p, err := netip.ParsePrefix(v)
		if err != nil {
			a, aerr := netip.ParseAddr(v)
			if aerr != nil {
				return nil, fmt.Errorf("%q: want an address or a network in CIDR form, e.g. 10.0.0.5 or 10.0.0.0/8", v)
			}
			a = a.WithZone("")
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if a := p.Addr(); a.Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(a.Unmap(), p.Bits()-96)
		}
		out = append(out, p.Masked())
	}
	return out, nil
}

func (c *consoleAddon) enabled() bool { return c.addr != "" }

// checkOffFlags refuses a --console-* flag given without --console.
func (c *consoleAddon) checkOffFlags(f *pflag.FlagSet) error {
	return refuseOffFlags(f, "console-", "console", "ADDR")
}

func (c *consoleAddon) ports() []servePort { return []servePort{{"console", c.addr}} }

func (c *consoleAddon) configure(*equeue.Options) error { return nil }

// attachEngine does nothing: the console works through the cluster node.
func (c *consoleAddon) attachEngine(*equeue.Engine) {}

func (c *consoleAddon) start(_ context.Context, env serveEnv) (func(context.Context) error, error) {
	prefix := "/"
	if p := strings.Trim(path.Clean("/"+c.prefix), "/"); p != "" {
		prefix = "/" + p + "/"
	}
	// The console's escaped path: a prefix with a space or a brace is a
	// literal in the mux's pattern, as the console escapes it too.
	pattern := (&url.URL{Path: prefix}).EscapedPath()
	h := console.New(env.backend, console.Options{Prefix: prefix, ReadOnly: c.readOnly, Tokens: env.tokens, Logger: env.log,
		TrustedProxies: c.trusted})
	lis := env.ports["console"]
	// Without tokens, on a loopback address the console answers only
	// requests to a loopback name itself (DNS rebinding).
	if len(env.tokens) == 0 && !isLoopback(lis.Addr()) {
		env.log.Warn("the console has no tokens: anyone who reaches it may act; pass --token or listen on a loopback address")
	}
	if env.tls != nil && env.tls.ClientAuth >= tls.RequireAnyClientCert {
		env.log.Warn("the console shares the server's TLS settings: browsers must present a client certificate too")
	}
	mux := http.NewServeMux()
	mux.Handle(pattern, h)
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: env.tls}
	scheme := "http"
	if env.tls != nil {
		scheme = "https"
	}
	go func() {
		var err error
		if env.tls != nil {
			err = hs.ServeTLS(lis, "", "")
		} else {
			err = hs.Serve(lis)
		}
		if err != nil && !errors.Is(err, http.ErrServerClosed) {
			env.errc <- fmt.Errorf("console server: %w", err)
		}
	}()
	env.log.Info("console", "url", scheme+"://"+lis.Addr().String()+pattern, "read-only", c.readOnly)
	return hs.Shutdown, nil
}
