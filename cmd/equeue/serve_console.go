package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
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
}

func init() {
	serveAddons = append(serveAddons, func(*app) serveAddon { return &consoleAddon{} })
}

func (c *consoleAddon) addFlags(f *pflag.FlagSet) {
	f.StringVar(&c.addr, "console", "", "serve the web console on this address (host:port), with the server's tokens and TLS")
	f.StringVar(&c.prefix, "console-prefix", "/", "path the console is served under")
	f.BoolVar(&c.readOnly, "console-read-only", false, "serve a console that only shows: no action is possible")
}

func (c *consoleAddon) enabled() bool { return c.addr != "" }

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
	h := console.New(env.backend, console.Options{Prefix: prefix, ReadOnly: c.readOnly, Tokens: env.tokens, Logger: env.log})
	lis, err := net.Listen("tcp", c.addr)
	if err != nil {
		return nil, fmt.Errorf("--console: listen on %s: %w", c.addr, err)
	}
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
