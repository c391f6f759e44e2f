package main

import (
	"context"
	"crypto/tls"
	"log/slog"
	"strings"

	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/remote"
)

// serveAddon is an optional part of `equeue serve` that runs beside the gRPC
// server: the web console, the Kafka listener, tracing export. Each one lives
// in its own file and registers a constructor in serveAddons from an init
// function, so serve.go does not change when one is added.
type serveAddon interface {
	// addFlags registers the add-on's flags on the serve command.
	addFlags(f *pflag.FlagSet)
	// enabled reports whether the flags given switch the add-on on.
	enabled() bool
	// ports lists the addresses the add-on listens on, by flag. serve
	// listens on them before it opens the directory and hands the
	// listeners to start in serveEnv.ports.
	ports() []servePort
	// configure adjusts the engine options before the engine is opened
	// (for example to install an observer). It may be a no-op.
	configure(opts *equeue.Options) error
	// start runs the add-on against the open engine. A failure after start
	// returned (a listener dying) is sent to env.errc. The returned stop
	// function is called once on shutdown, before the engine closes.
	start(ctx context.Context, env serveEnv) (stop func(context.Context) error, err error)
}

// flagChecker is implemented by add-ons whose flags can be refused
// without an engine: a value of the wrong form, or a flag not available
// in cluster mode. serve calls checkFlags before it takes a port or
// creates anything, so a usage error leaves nothing behind; configure,
// configureCluster and start then take the flags as checked.
type flagChecker interface {
	// checkFlags returns a usage error naming the flag refused; cluster
	// reports whether serve runs a cluster node (--cluster-id).
	checkFlags(cluster bool) error
}

// offFlagChecker is implemented by add-ons with flags that mean nothing
// while the add-on is off (--kafka-namespace without --kafka). serve calls
// checkOffFlags on each add-on that the flags given leave off, before it
// takes a port or creates anything, so such a flag is refused rather than
// silently ignored.
type offFlagChecker interface {
	// checkOffFlags returns a usage error naming a flag of f given that
	// needs the add-on on, and the flag that switches it on.
	checkOffFlags(f *pflag.FlagSet) error
}

// configReleaser is implemented by add-ons whose configure starts
// something before the engine opens (the OTLP exporters). serve calls
// release when it returns, so that a start that fails after configure, or
// before the add-on's start, leaves nothing running; after the add-on's
// stop function it does nothing.
type configReleaser interface {
	release(ctx context.Context) error
}

// clusterAddon is implemented by add-ons that also run beside a cluster
// node (serve --cluster-id). There serveEnv.eng is nil and they work through
// serveEnv.backend, the node, which serves only while it leads.
type clusterAddon interface {
	serveAddon
	// attachEngine is called with each engine the node opens when it
	// becomes the leader.
	attachEngine(e *equeue.Engine)
}

// clusterConfigurer is implemented by cluster add-ons that set options of
// the node before it opens (the Kafka listener's address).
type clusterConfigurer interface {
	configureCluster(o *cluster.Options) error
}

// serveEnv is what serve hands an add-on.
type serveEnv struct {
	eng     *equeue.Engine // nil in cluster mode
	backend remote.Backend // the engine, or the cluster node
	// grpc is the gRPC server: its tokens (remote.Server.HTTPBearer)
	// guard the add-ons' operator endpoints (pprof).
	grpc   *remote.Server
	tokens map[string]remote.Rights // nil: every caller may do everything
	// nsTokens are the tokens scoped to a namespace, by namespace. With
	// tokens but none of the whole engine, tokens above is empty, not nil.
	nsTokens map[string]map[string]remote.Rights
	tls      *tls.Config // nil: plaintext
	log      *slog.Logger
	errc     chan<- error
	// ports are the listeners serve took, by flag (see serveAddon.ports);
	// serve closes them when it stops.
	ports servePorts
	// clusterSecret is the secret of --cluster-secret-file in cluster
	// mode, nil without one.
	clusterSecret []byte
}

// serveAddons holds one constructor per add-on; each serve command gets fresh
// instances.
var serveAddons []func(a *app) serveAddon

// refuseOffFlags returns a usage error naming the first flag of f given
// whose name starts with prefix, other than on (the flag that switches its
// add-on on, shown with its argument as onArg): the add-on is off, and the
// flag would be taken and then ignored.
func refuseOffFlags(f *pflag.FlagSet, prefix, on, onArg string) error {
	var given string
	f.Visit(func(fl *pflag.Flag) {
		if given == "" && fl.Name != on && strings.HasPrefix(fl.Name, prefix) {
			given = fl.Name
		}
	})
	if given != "" {
		return usageErrorf("--%s needs --%s %s: it means nothing without it", given, on, onArg)
	}
	return nil
}
