package main

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/remote"
)

// shutdownGrace bounds how long serve waits for calls in progress when it
// stops before it cuts the connections (the server's GracefulStopTimeout),
// and how long it waits for its add-ons to stop.
const shutdownGrace = 10 * time.Second

func (a *app) serveCommand() *cobra.Command {
	var (
		listen, clientCA, metricsAddr, syncFlag string
		tokens, tokenFiles                      []string
		cl                                      clusterFlags
		limits                                  serverLimits
	)
	addons := make([]serveAddon, 0, len(serveAddons))
	for _, mk := range serveAddons {
		addons = append(addons, mk(a))
	}
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Serve an engine directory to remote producers, consumers and admins",
		Long: `serve opens the engine directory given by --dir and serves it over gRPC
on --listen, until SIGINT or SIGTERM. It then stops accepting calls, lets
calls in progress finish (up to 10 s), closes the engine cleanly and exits 0.
A second signal cuts the calls still in progress at once (exit 1). A signal
that comes while the engine closes (on a disk that does not answer) makes
serve exit 1 at once, without waiting for the close: serve, or any command
that changes the directory, recovers it. One that comes after the calls
ended but before the close began gives the close up to 5 s first.

Other equeue commands reach it with --server HOST:PORT. The directory stays
locked while serve runs.

Security: --tls-cert and --tls-key serve TLS; --client-ca also requires
clients to present a certificate signed by that CA (mutual TLS). Each --token
TOKEN=RIGHTS admits callers presenting that bearer token with the given
rights, a comma-separated list of produce, consume and admin (or all); with
no --token, every caller may do everything. TOKEN=RIGHTS@NAMESPACE scopes
the token to a namespace: its callers see and change only that namespace's
topics, groups and offsets, under their own names.

Prefer --token-file FILE (repeatable) to --token: every local user can read
a process's command line (ps, /proc), so tokens given there leak. FILE has
one TOKEN=RIGHTS[@NAMESPACE] a line; blank lines and lines that begin with
# are skipped, and the white space around a line is trimmed. Its tokens are
added to those of --token and checked as they are; an error names the file
and line, never the token. A file that cannot be read or has no token is a
usage error; serve warns about one that group or others may read or write
(chmod 600 it). Tokens are read once, when serve starts: to change them,
restart it.

The --max-* flags bound what the gRPC server takes (remote.ServerOptions):
the size of a request and of its metadata, the calls, long-polls and
append streams it holds, in all and from one connection, and the bytes of
the requests its long-polls keep; 0 is the server's default.

With --metrics ADDR, Prometheus metrics are served on http://ADDR/metrics
and a health check on http://ADDR/healthz. With tokens, /metrics shows
the whole engine only to a token of the whole engine (no @NAMESPACE) with
the admin right, sent as "Authorization: Bearer TOKEN" (401 without a
known token, 403 without that right), and so does --pprof on an address
other than loopback; /healthz stays open, and does not say why the store
failed. On a loopback address, /metrics, /healthz and --pprof answer only
requests whose Host is localhost or a loopback address (403 otherwise),
so that a web page cannot reach them through DNS rebinding.

With --cluster-id, serve runs one node of a replicated cluster (Raft) on
the directory instead of a single engine; see "equeue cluster --help".`,
		Example: `  # Plaintext on the loopback interface, metrics on port 9100:
  equeue serve --dir ./data --metrics 127.0.0.1:9100

  # TLS with two tokens read from a file only serve's user may read,
  # syncing to disk every 100 ms:
  (umask 077 && printf '%s\n' "$APP_TOKEN=produce,consume" "$OPS_TOKEN=all" > /etc/equeue/tokens)
  equeue serve --dir /var/lib/equeue --listen 0.0.0.0:7654 \
    --tls-cert server.pem --tls-key server-key.pem \
    --token-file /etc/equeue/tokens --sync interval:100ms

  # The first node of a new 3-node cluster on one machine (the others are
  # started with their own --cluster-id, --cluster-raft and --listen, then
  # added with "equeue cluster add"):
  equeue serve --dir ./n1 --listen 127.0.0.1:7651 --cluster-id n1 \
    --cluster-raft 127.0.0.1:7751 --cluster-admin 127.0.0.1:7851 --cluster-bootstrap`,
		Args: args(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			if a.server != "" {
				return usageErrorf("serve opens a directory: give --dir, not --server")
			}
			if a.dir == "" {
				return usageErrorf("serve needs --dir DIR, the engine directory to serve")
			}
			if err := checkListenAddrs(cmd.Flags()); err != nil {
				return err
			}
			if err := limits.check(); err != nil {
				return err
			}
			sync, err := parseSync(syncFlag)
			if err != nil {
				return usageErrorf("--sync: %v", err)
			}
			fromFiles, files, err := readTokenFiles(tokenFiles)
			if err != nil {
				return err
			}
			specs := append(flagTokenSpecs(tokens), fromFiles...)
			toks, err := parseTokens(specs)
			if err != nil {
				return usageErrorf("%v", err)
			}
			scoped, err := parseTokenNamespaces(specs)
			if err != nil {
				return usageErrorf("%v", err)
			}
			a.logTokenFiles(files)
			tlsConf, err := a.serverTLS(clientCA)
			if err != nil {
				return err
			}
			var on []serveAddon
			for _, ad := range addons {
				if ad.enabled() {
					on = append(on, ad)
				} else if oc, ok := ad.(offFlagChecker); ok {
					if err := oc.checkOffFlags(cmd.Flags()); err != nil {
						return err
					}
				}
			}
			if !cl.enabled() {
				if err := refuseOffFlags(cmd.Flags(), "cluster-", "cluster-id", "ID"); err != nil {
					return err
				}
			}
			cl.saltSet = cmd.Flags().Changed("cluster-salt")
			for _, ad := range on {
				if fc, ok := ad.(flagChecker); ok {
					if err := fc.checkFlags(cl.enabled()); err != nil {
						return err
					}
				}
			}
			addonToks, err := addonTokens(toks, scoped, needWholeEngineToken(on, scoped))
			if err != nil {
				return usageErrorf("%v", err)
			}
			so := &remote.ServerOptions{TLS: tlsConf, Tokens: toks, TokenNamespaces: scoped, Logger: a.log,
				GracefulStopTimeout: shutdownGrace}
			limits.apply(so)
			return a.serve(cmd.Context(), serveConfig{
				listen: listen, metrics: metricsAddr, sync: sync, tokens: toks, tls: tlsConf != nil,
				tlsConf: tlsConf, addons: on, cluster: &cl, addonTokens: addonToks, server: so,
			})
		}),
	}
	f := cmd.Flags()
	f.StringVar(&listen, "listen", "127.0.0.1:7654", "address to serve gRPC on")
	f.StringVar(&clientCA, "client-ca", "", "PEM file of the CA client certificates must be signed by (mutual TLS)")
	f.StringArrayVar(&tokens, "token", nil, "admit a bearer token with its rights, `TOKEN=RIGHTS[@NAMESPACE]` (rights: produce,consume,admin or all; @NAMESPACE scopes the token to that namespace); repeatable")
	f.StringArrayVar(&tokenFiles, "token-file", nil, "read tokens from `FILE`, one TOKEN=RIGHTS[@NAMESPACE] a line (# comments and blank lines skipped), with any --token; keeps them off the command line, which other users can read; repeatable")
	f.StringVar(&metricsAddr, "metrics", "", "address to serve Prometheus /metrics and /healthz on, e.g. 127.0.0.1:9100 (empty: off); with tokens, /metrics needs an admin token")
	f.StringVar(&syncFlag, "sync", "always", "when writes are fsynced: always, never or interval:DURATION")
	limits.addFlags(f)
	for _, ad := range addons {
		ad.addFlags(f)
	}
	cl.addFlags(f)
	return cmd
}

// listenFlags are serve's flags that name an address to listen on; all but
// --listen are off when empty.
var listenFlags = []string{"listen", "metrics", "console", "kafka", "pprof", "cluster-raft", "cluster-admin"}

// checkListenAddrs refuses an address to listen on that is not HOST:PORT
// with a port number, before serve takes a port or touches its directory
// (net.Listen would take "" for every interface at a random port).
func checkListenAddrs(f *pflag.FlagSet) error {
	for _, name := range listenFlags {
		fl := f.Lookup(name)
		if fl == nil || (fl.Value.String() == "" && name != "listen") {
			continue
		}
		if addr := fl.Value.String(); !isHostPort(addr) {
			return usageErrorf("--%s %q: want HOST:PORT with a port number, e.g. 127.0.0.1:7654", name, addr)
		}
	}
	return nil
}

// isHostPort reports whether addr is HOST:PORT with a port number (the
// host may be empty: every interface).
func isHostPort(addr string) bool {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	_, err = strconv.ParseUint(port, 10, 16)
	return err == nil
}

// dialableHost reports whether host names a host other machines can dial:
// not empty (every interface) nor an unspecified address (0.0.0.0, [::]).
func dialableHost(host string) bool {
	ip := net.ParseIP(host)
	return host != "" && (ip == nil || !ip.IsUnspecified())
}

type serveConfig struct {
	listen, metrics string
	sync            equeue.SyncPolicy
	tokens          map[string]remote.Rights
	tls             bool
	tlsConf         *tls.Config
	server          *remote.ServerOptions
	addons          []serveAddon
	cluster         *clusterFlags            // cluster mode when enabled (serve_cluster.go)
	addonTokens     map[string]remote.Rights // tokens of the whole engine
}

func (a *app) serve(ctx context.Context, c serveConfig) (err error) {
	if c.cluster.enabled() {
		return a.serveCluster(ctx, c)
	}
	// Take the ports before the directory and before the add-ons start
	// exporters, so a busy port leaves nothing behind.
	ports, err := listenPorts(c.wantedPorts())
	if err != nil {
		return err
	}
	defer ports.close()
	opts := &equeue.Options{Sync: c.sync}
	var m *metrics.Collector
	if c.metrics != "" {
		m = metrics.New()
		opts.Observer = m
	}
	defer a.releaseAddons(ctx, c.addons)
	for _, ad := range c.addons {
		if err := ad.configure(opts); err != nil {
			return err
		}
	}
	if err := checkDir(a.dir, create); err != nil {
		return err
	}
	lis := ports["listen"]
	eng, err := a.openEngine(a.dir, opts)
	if err != nil {
		return err
	}
	var closeAbort context.Context // set once the server stopped (stopServer)
	defer func() { err = joinCloseError(err, a.closeEngine(ctx, closeAbort, eng.CloseContext), "engine") }()
	srv, err := remote.NewServer(eng, c.server)
	if err != nil {
		return err
	}
	if len(c.tokens) > 0 && !c.tls && !isLoopback(lis.Addr()) {
		a.log.Warn("tokens are sent in clear text: serve TLS (--tls-cert, --tls-key) on a non-loopback address")
	}
	errc := make(chan error, 2+len(c.addons))
	var httpSrv *http.Server
	if m != nil {
		m.Attach(eng)
		warnOps(a.log, "/metrics", ports["metrics"].Addr(), c.tokens, c.addonTokens)
		httpSrv = a.serveMetrics(ports["metrics"], m, eng.StoreFailure, srv, len(c.tokens) > 0, errc)
	}
	var stops []func(context.Context) error
	defer func() {
		sctx, cancel := context.WithTimeout(forced(ctx), shutdownGrace)
		defer cancel()
		for i := len(stops) - 1; i >= 0; i-- {
			if serr := stops[i](sctx); serr != nil {
				a.log.Warn("add-on shutdown", "err", serr)
			}
		}
	}()
	for _, ad := range c.addons {
		stop, aerr := ad.start(ctx, serveEnv{eng: eng, backend: eng, grpc: srv, tokens: c.addonTokens, nsTokens: namespaceTokens(c.tokens, c.server.TokenNamespaces), tls: c.tlsConf, log: a.log, errc: errc, ports: ports})
		if aerr != nil {
			if httpSrv != nil {
				_ = httpSrv.Close()
			}
			srv.Stop() // it served nothing yet; this stops its workers
			return aerr
		}
		stops = append(stops, stop)
	}
	// Logged before Serve starts, so the log's order is always the same.
	a.log.Info("serving", "dir", a.dir, "listen", lis.Addr().String(), "tls", c.tls, "tokens", len(c.tokens),
		"sync", c.sync.String(), "metrics", c.metrics)
	go func() { errc <- srv.Serve(lis) }()

	var serveErr error
	select {
	case <-ctx.Done():
		a.log.Info("signal received, shutting down")
	case serveErr = <-errc:
		a.log.Error("server stopped", "err", serveErr)
	}
	// Calls still running after shutdownGrace are cut (GracefulStopTimeout),
	// or at once at a second signal.
	var forceErr error
	closeAbort, forceErr = a.stopServer(ctx, srv)
	if httpSrv != nil {
		sctx, cancel := context.WithTimeout(forced(ctx), 5*time.Second)
		if err := httpSrv.Shutdown(sctx); err != nil {
			_ = httpSrv.Close()
			a.log.Warn("metrics server shutdown", "err", err)
		}
		cancel()
	}
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return forceErr
}

// releaseAddons releases what the add-ons' configure started (see
// configReleaser), waiting at most shutdownGrace, or until a second signal
// (see forced) ends serveCtx's forced context.
func (a *app) releaseAddons(serveCtx context.Context, addons []serveAddon) {
	ctx, cancel := context.WithTimeout(forced(serveCtx), shutdownGrace)
	defer cancel()
	for _, ad := range addons {
		if r, ok := ad.(configReleaser); ok {
			if err := r.release(ctx); err != nil {
				a.log.Warn("add-on shutdown", "err", err)
			}
		}
	}
}

// serveMetrics serves /metrics, guarded by srv's tokens (see
// requireOpsToken), and /healthz (see healthHandler), open to every
// request, on lis; tokens reports whether serve has tokens. On a loopback
// address both answer only requests to a loopback name (see
// onLoopbackHostsOnly). A failure after it started is sent to errc.
func (a *app) serveMetrics(lis net.Listener, m *metrics.Collector, failure func() error, srv *remote.Server, tokens bool, errc chan<- error) *http.Server {
	reg := prometheus.NewRegistry()
	reg.MustRegister(m, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	mux := http.NewServeMux()
	mux.Handle("/metrics", requireOpsToken(srv, a.metricsHandler(reg)))
	mux.HandleFunc("/healthz", healthHandler(failure, !tokens))
	hs := &http.Server{Handler: onLoopbackHostsOnly(lis.Addr(), "this metrics server", mux), ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- fmt.Errorf("metrics server: %w", err)
		}
	}()
	a.log.Info("metrics", "url", "http://"+lis.Addr().String()+"/metrics")
	return hs
}

// healthHandler answers 200 "ok" while the engine writes, and 503 once an
// fsync failed and the engine stopped writing until it is restarted
// (equeue.Engine.StoreFailure), with the fsync error when cause is true.
// It answers every request, tokens or not (liveness probes carry none), so
// a server with tokens gives no cause: the error may name the directory's
// files, and the engine logs it.
func healthHandler(failure func() error, cause bool) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if err := failure(); err != nil {
			msg := "store failed, restart the server"
			if cause {
				msg += ": " + err.Error()
			}
			http.Error(w, msg, http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}

// metricsHandler serves reg's metrics. A collector that fails (the
// group listing behind the lag series timing out on a busy engine) is
// logged, and the scrape still answers every metric that was collected:
// Prometheus's default answer, HTTP 500 with nothing, would drop every
// series of the broker for that scrape.
func (a *app) metricsHandler(reg prometheus.Gatherer) http.Handler {
	return promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorLog: slogPrinter{a}, ErrorHandling: promhttp.ContinueOnError})
}

// slogPrinter lets promhttp report errors through the CLI's logger.
type slogPrinter struct{ a *app }

func (p slogPrinter) Println(v ...any) { p.a.log.Error("metrics: " + fmt.Sprint(v...)) }
