package main

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/metrics"
	"github.com/equeue-go/equeue/remote"
)

// clusterFlags switch `equeue serve` to a node of a replicated cluster
// (package cluster): the directory then holds the node's store and Raft log,
// and --listen is the address followers name to clients.
type clusterFlags struct {
	id, raft, advertise, peers, admin string
	logStore                          string
	bootstrap                         bool
	// secretFile holds the secret that authenticates the Raft transport;
	// insecureRaft serves it without one although tokens or TLS guard
	// the other ports (raftSecret).
	secretFile   string
	insecureRaft bool
	// salt, when set, is the cluster's own salt of the key the secret is
	// proved with (cluster.NewSaltedSecureStream); saltSet says the flag
	// was given, empty or not.
	salt    string
	saltSet bool
}

func (c *clusterFlags) addFlags(f *pflag.FlagSet) {
	f.StringVar(&c.id, "cluster-id", "", "serve as the node with this ID of a replicated cluster (cluster mode)")
	f.StringVar(&c.raft, "cluster-raft", "", "HOST:PORT the node's Raft transport listens on and other nodes dial")
	f.StringVar(&c.advertise, "cluster-advertise", "", "client address (HOST:PORT) of this node told to clients (default --listen)")
	f.BoolVar(&c.bootstrap, "cluster-bootstrap", false, "start a new cluster of --cluster-peers (or of this node alone) if the directory has no Raft state")
	f.StringVar(&c.peers, "cluster-peers", "", "ID=RAFT=CLIENT,... the voters of a new cluster, with --cluster-bootstrap")
	f.StringVar(&c.admin, "cluster-admin", "", "HOST:PORT to serve cluster administration (HTTP) on, for \"equeue cluster\"; with --token it needs a token (admin right to change the cluster)")
	f.StringVar(&c.secretFile, "cluster-secret-file", "", "read the secret every node of the cluster shares from `FILE` (at least 16 bytes, 32 characters if it is text, not one byte repeated; one trailing newline dropped): the Raft transport then runs TLS and takes only peers that prove the secret; needed with --token or --tls-cert")
	f.BoolVar(&c.insecureRaft, "cluster-insecure-raft", false, "with --token or --tls-cert, serve the Raft transport without --cluster-secret-file: no authentication, no encryption (a network only the cluster's nodes reach)")
	f.StringVar(&c.salt, "cluster-salt", "", "with --cluster-secret-file, the cluster's own `SALT` (its name, or random text made once for it; no secret), the same on every node: keys computed ahead from guessed secrets for other clusters serve nothing against it; a node with another salt, or none, is refused as one with another secret is; the node keeps it in its directory from its first start, so later starts may leave it out, and refuse another; a node first started without one refuses it (stop every node, remove the file cluster-salt on each, start all with it); it must not end with a newline, unless the node keeps it so from an earlier equeue")
	f.StringVar(&c.logStore, "cluster-log-store", "", "Raft log store of a new directory: wal (raft-wal, the default: one fsync per append) or bolt (raft-boltdb: two); a directory keeps the one it was created with")
}

func (c *clusterFlags) enabled() bool { return c != nil && c.id != "" }

func parsePeers(s string) ([]cluster.Peer, error) {
	if s == "" {
		return nil, nil
	}
	var out []cluster.Peer
	for _, p := range strings.Split(s, ",") {
		f := strings.Split(p, "=")
		if len(f) < 2 || len(f) > 3 || f[0] == "" || f[1] == "" {
			return nil, fmt.Errorf("peer %q: want ID=RAFTADDR or ID=RAFTADDR=CLIENTADDR", p)
		}
		peer := cluster.Peer{ID: f[0], RaftAddr: f[1]}
		if len(f) == 3 {
			peer.ClientAddr = f[2]
		}
		out = append(out, peer)
	}
	return out, nil
}

// serveCluster is `equeue serve` in cluster mode.
func (a *app) serveCluster(ctx context.Context, c serveConfig) (err error) {
	cf := c.cluster
	if cf.raft == "" {
		return usageErrorf("--cluster-id needs --cluster-raft HOST:PORT")
	}
	// cluster.Open refuses it too, but only after serve took the ports.
	if host, _, _ := net.SplitHostPort(cf.raft); !dialableHost(host) {
		return usageErrorf("--cluster-raft %q: must name a host other nodes can dial, not every interface", cf.raft)
	}
	var addons []clusterAddon
	for _, ad := range c.addons {
		ca, ok := ad.(clusterAddon)
		if !ok {
			return usageErrorf("an add-on given is not available in cluster mode")
		}
		addons = append(addons, ca)
	}
	peers, err := parsePeers(cf.peers)
	if err != nil {
		return usageErrorf("--cluster-peers: %v", err)
	}
	advertise := cf.advertise
	if advertise == "" {
		advertise = c.listen
	}
	guarded := len(c.tokens) > 0 || c.tlsConf != nil
	secret, secretPerm, err := cf.raftSecret(guarded)
	if err != nil {
		return err
	}
	// A crash of an earlier start may have left the salt's temporary
	// file (serve_salttemp.go).
	if err := removeSaltTemps(a.dir); err != nil {
		return err
	}
	var salt []byte
	keepSalt := saltKept
	if secret != nil {
		warnSecretFile(a.log, cf.secretFile, secretPerm)
		// serve_saltkept.go
		if salt, keepSalt, err = keptSalt(a.dir, []byte(cf.salt), cf.saltSet); err != nil {
			return err
		}
		if !cf.saltSet && len(salt) > 0 {
			a.log.Info("proving the Raft secret with the cluster salt this node keeps", "file", filepath.Join(a.dir, saltFile), "fingerprint", saltFingerprint(salt))
		}
	}
	// Take the ports before the node creates its directory, so a busy
	// port leaves nothing behind.
	ports, err := listenPorts(c.wantedPorts())
	if err != nil {
		return err
	}
	defer ports.close()
	eopts := &equeue.Options{Logger: a.log}
	var m *metrics.Collector
	if c.metrics != "" {
		m = metrics.New()
		eopts.Observer = m
	}
	defer a.releaseAddons(ctx, c.addons)
	for _, ad := range addons {
		if err := ad.configure(eopts); err != nil {
			return err
		}
	}
	bo := badgerOptions(a.log)
	copts := &cluster.Options{
		ID: cf.id, RaftAddr: cf.raft, ClientAddr: advertise, Bootstrap: cf.bootstrap, Peers: peers, LogStore: cf.logStore,
		Engine: eopts, Badger: &bo, Logger: a.log,
		OnEngine: func(e *equeue.Engine) {
			if m != nil {
				m.Attach(e)
			}
			for _, ad := range addons {
				ad.attachEngine(e)
			}
		},
	}
	for _, ad := range addons {
		if cc, ok := ad.(clusterConfigurer); ok {
			if err := cc.configureCluster(copts); err != nil {
				return err
			}
		}
	}
	opened := false // the node opened: the salt kept is its own
	switch keepSalt {
	case saltRewrite:
		// A file of an earlier equeue, taken whole as the flag told:
		// kept so, with a record, for the next starts
		// (serve_saltkept.go).
		if err := replaceSalt(a.dir, salt); err != nil {
			return err
		}
	case saltFirst:
		// Before the node opens anything: a failure or a crash from here
		// on leaves the salt it was started with (serve_saltfirst.go).
		undo, err := keepSaltFirst(a.dir, salt)
		if err != nil {
			return err
		}
		defer func() {
			if !opened {
				undo()
			}
		}()
	}
	warnRaft(a.log, ports["cluster-raft"].Addr(), guarded && secret == nil)
	// The node owns its Raft listener from here, and closes it when Open
	// fails.
	rs := newRaftStream(ports.take("cluster-raft"), cf.raft)
	copts.RaftStream = rs
	if secret != nil {
		ss, serr := cluster.NewSaltedSecureStream(rs.Listener, rs.Addr(), secret, salt)
		if serr != nil {
			_ = rs.Close()
			return serr
		}
		copts.RaftStream = ss
	}
	node, err := cluster.Open(a.dir, copts)
	if err != nil {
		if errors.Is(err, equeue.ErrInvalidOptions) {
			// Every option of the node comes from the command line.
			return usageErrorf("%w", err)
		}
		return err
	}
	opened = true
	var closeAbort context.Context // set once the server stopped (stopServer)
	defer func() { err = joinCloseError(err, a.closeEngine(ctx, closeAbort, node.CloseContext), "cluster node") }()
	srv, err := remote.NewBackendServer(node, c.server)
	if err != nil {
		return err
	}
	lis := ports["listen"]
	errc := make(chan error, 3+len(addons))
	var https []*http.Server
	defer func() {
		for _, hs := range https {
			sctx, cancel := context.WithTimeout(forced(ctx), 5*time.Second)
			_ = hs.Shutdown(sctx)
			cancel()
		}
	}()
	if m != nil {
		reg := prometheus.NewRegistry()
		reg.MustRegister(m, cluster.NewCollector(node), collectors.NewGoCollector(),
			collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
		mux := http.NewServeMux()
		warnOps(a.log, "/metrics", ports["metrics"].Addr(), c.tokens, c.addonTokens)
		mux.Handle("/metrics", requireOpsToken(srv, a.metricsHandler(reg)))
		mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok\n")) })
		https = append(https, serveHTTP(ports["metrics"], onLoopbackHostsOnly(ports["metrics"].Addr(), "this metrics server", mux), errc))
	}
	if cf.admin != "" {
		var opts []cluster.AdminOption
		if len(c.tokens) > 0 {
			// The same tokens as the gRPC server: any right reads the status,
			// admin changes the cluster. Namespace-scoped tokens are left out:
			// the cluster is not theirs.
			// Matched by digest, as the gRPC server matches them, so that a
			// guess's time says nothing of how much of a token it got right.
			toks := make(map[[sha256.Size]byte]remote.Rights, len(c.addonTokens))
			for tok, r := range c.addonTokens {
				toks[sha256.Sum256([]byte(tok))] = r
			}
			opts = append(opts, cluster.WithAdminAuth(func(tok string, change bool) (bool, bool) {
				r, ok := toks[sha256.Sum256([]byte(tok))]
				if !ok || r == 0 {
					return false, false
				}
				return !change || r&remote.RightAdmin != 0, true
			}))
		}
		// On loopback it answers only loopback names, so that a web page
		// cannot read the status through DNS rebinding (changes are refused
		// to browsers by AdminHandler already).
		alis := ports["cluster-admin"]
		https = append(https, serveHTTP(alis, onLoopbackHostsOnly(alis.Addr(), "this cluster admin server", cluster.AdminHandler(node, opts...)), errc))
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
	for _, ad := range addons {
		stop, aerr := ad.start(ctx, serveEnv{backend: node, grpc: srv, tokens: c.addonTokens, tls: c.tlsConf, log: a.log, errc: errc, ports: ports, clusterSecret: secret})
		if aerr != nil {
			srv.Stop() // it served nothing yet; this stops its workers
			return aerr
		}
		stops = append(stops, stop)
	}
	go func() { errc <- srv.Serve(lis) }()
	a.log.Info("serving cluster node", "dir", a.dir, "id", cf.id, "raft", node.RaftAddr(), "listen", lis.Addr().String(),
		"admin", cf.admin, "metrics", c.metrics)
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
	if serveErr != nil {
		return fmt.Errorf("serve: %w", serveErr)
	}
	return forceErr
}

// serveHTTP serves h on lis; a failure after it started goes to errc.
func serveHTTP(lis net.Listener, h http.Handler, errc chan<- error) *http.Server {
	hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		if err := hs.Serve(lis); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errc <- err
		}
	}()
	return hs
}
