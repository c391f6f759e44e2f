package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/cluster"
	"github.com/equeue-go/equeue/kafka"
)

// kafkaAddon serves the Kafka wire protocol beside gRPC (package kafka),
// with serve's TLS and tokens (SASL/PLAIN, the token as the password).
type kafkaAddon struct {
	addr, advertise, namespace string
	// maxInflating and maxInflatedBytes are kafka.Options.MaxInflating
	// and MaxInflatedBytes (0: the listener's defaults).
	maxInflating     int
	maxInflatedBytes int64
	// maxQueuedRequestBytes, maxConnections and requestReadTimeout are
	// kafka.Options.MaxQueuedRequestBytes, MaxConnections and
	// RequestReadTimeout (0: the listener's defaults).
	maxQueuedRequestBytes int64
	maxConnections        int
	requestReadTimeout    time.Duration
	// connectionsMaxIdle is kafka.Options.ConnectionsMaxIdle; the flag's
	// default is the listener's, and checkFlags refuses zero or less.
	connectionsMaxIdle time.Duration
	// keyFile is --kafka-record-key-file; app gives the directory that
	// keeps the key otherwise (serve_kafkakey.go).
	keyFile string
	app     *app
}

// defaultKafkaConnectionsMaxIdle is --kafka-connections-max-idle's
// default, that of kafka.Options.ConnectionsMaxIdle.
const defaultKafkaConnectionsMaxIdle = 10 * time.Minute

func init() {
	serveAddons = append(serveAddons, func(a *app) serveAddon { return &kafkaAddon{app: a} })
}

func (k *kafkaAddon) addFlags(f *pflag.FlagSet) {
	f.StringVar(&k.addr, "kafka", "", "address to serve the Kafka protocol on, e.g. 127.0.0.1:9092 (empty: off)")
	f.StringVar(&k.advertise, "kafka-advertise", "", "host:port Kafka clients are told to connect to (default: the address they reached; in cluster mode --kafka, which then needs a host)")
	f.StringVar(&k.namespace, "kafka-namespace", "", "serve only this namespace's topics and groups over Kafka, by their plain names (default: the engine's own, namespaced topics hidden)")
	f.IntVar(&k.maxInflating, "kafka-max-inflating", 0, "most compressed Kafka record batches decompressed at once, over all connections (0: the default, 2)")
	f.Int64Var(&k.maxInflatedBytes, "kafka-max-inflated-bytes", 0, "most bytes of decompressed Kafka records held until stored, over all connections (0: the default, 268435456)")
	f.Int64Var(&k.maxQueuedRequestBytes, "kafka-max-queued-request-bytes", 0, "most bytes of Kafka request frames read and not yet answered, over all connections (0: the default, 268435456)")
	f.IntVar(&k.maxConnections, "kafka-max-connections", 0, "most Kafka connections served at once; one past it is closed (0: no bound)")
	f.DurationVar(&k.requestReadTimeout, "kafka-request-read-timeout", 0, "longest wait for each 64 KiB of a Kafka request frame's body, and for a client to take each 64 KiB of an answer; past it the connection is closed (0: the default, 30s)")
	f.StringVar(&k.keyFile, "kafka-record-key-file", "", "read the key that marks idempotent producers' records from `FILE` (at least 16 bytes; one trailing newline dropped), the same on every start and node (default: a random key kept in the directory, file kafka-record-key; in cluster mode one derived from --cluster-secret-file, or without it a built-in key)")
	f.DurationVar(&k.connectionsMaxIdle, "kafka-connections-max-idle", defaultKafkaConnectionsMaxIdle, "close a Kafka connection that sent no request for this long (must be positive)")
}

func (k *kafkaAddon) enabled() bool { return k.addr != "" }

// servedNamespace is the namespace --kafka-namespace serves ("" : the whole engine).
func (k *kafkaAddon) servedNamespace() string { return k.namespace }

func (k *kafkaAddon) ports() []servePort { return []servePort{{"kafka", k.addr}} }

func (k *kafkaAddon) configure(*equeue.Options) error { return nil }

// attachEngine does nothing: in cluster mode the listener serves the node.
func (k *kafkaAddon) attachEngine(*equeue.Engine) {}

// checkOffFlags refuses a --kafka-* flag given without --kafka: with the
// listener off it would be ignored.
func (k *kafkaAddon) checkOffFlags(f *pflag.FlagSet) error {
	var given string
	f.Visit(func(fl *pflag.Flag) {
		if given == "" && strings.HasPrefix(fl.Name, "kafka-") {
			given = fl.Name
		}
	})
	if given != "" {
		return usageErrorf("--%s needs --kafka ADDR: the Kafka listener is off without it", given)
	}
	return nil
}

// checkFlags refuses, before serve takes a port or creates anything, a
// --kafka-namespace that is no namespace's name or given in cluster mode,
// a negative --kafka-max-inflating, --kafka-max-inflated-bytes,
// --kafka-max-queued-request-bytes, --kafka-max-connections or
// --kafka-request-read-timeout, a --kafka-connections-max-idle that is
// not positive, and an address to advertise that is not HOST:PORT; in cluster mode that
// address must name a host and a port (see configureCluster).
func (k *kafkaAddon) checkFlags(cluster bool) error {
	if k.maxInflating < 0 {
		return usageErrorf("--kafka-max-inflating %d: must not be negative (0: the default, 2)", k.maxInflating)
	}
	if k.maxInflatedBytes < 0 {
		return usageErrorf("--kafka-max-inflated-bytes %d: must not be negative (0: the default, 256 MiB)", k.maxInflatedBytes)
	}
	if k.maxQueuedRequestBytes < 0 {
		return usageErrorf("--kafka-max-queued-request-bytes %d: must not be negative (0: the default, 256 MiB)", k.maxQueuedRequestBytes)
	}
	if k.maxConnections < 0 {
		return usageErrorf("--kafka-max-connections %d: must not be negative (0: no bound)", k.maxConnections)
	}
	if k.requestReadTimeout < 0 {
		return usageErrorf("--kafka-request-read-timeout %v: must not be negative (0: the default, 30s)", k.requestReadTimeout)
	}
	if k.connectionsMaxIdle <= 0 {
		return usageErrorf("--kafka-connections-max-idle %v: must be positive (default %v)", k.connectionsMaxIdle, defaultKafkaConnectionsMaxIdle)
	}
	if k.namespace != "" {
		if cluster {
			return usageErrorf("--kafka-namespace is not available in cluster mode")
		}
		if !validNamespace(k.namespace) {
			return usageErrorf("--kafka-namespace %q: a namespace is 1-127 characters of [A-Za-z0-9._-]", k.namespace)
		}
	}
	if k.advertise != "" {
		if host, port, _ := net.SplitHostPort(k.advertise); !isHostPort(k.advertise) || !dialableHost(host) || port == "0" {
			return usageErrorf("--kafka-advertise %q: want HOST:PORT naming a host clients can dial, e.g. kafka.example.com:9092", k.advertise)
		}
	}
	if !cluster {
		return nil
	}
	flag, addr := "--kafka-advertise", k.advertise
	if addr == "" {
		flag, addr = "--kafka", k.addr
	}
	if host, port, _ := net.SplitHostPort(addr); !dialableHost(host) || port == "0" {
		return usageErrorf("%s %s: in cluster mode the other nodes send Kafka clients to this address; give --kafka-advertise HOST:PORT", flag, addr)
	}
	return nil
}

// configureCluster gives the node the address its Kafka listener is
// reached at, which the node writes in its tenure entry when it leads, so
// that the other nodes' listeners send Kafka clients there:
// --kafka-advertise, or --kafka, which checkFlags made sure name a host
// and a port.
func (k *kafkaAddon) configureCluster(o *cluster.Options) error {
	addr := k.advertise
	if addr == "" {
		addr = k.addr
	}
	o.KafkaAddr = addr
	k.advertise = addr
	return nil
}

func (k *kafkaAddon) start(_ context.Context, env serveEnv) (func(context.Context) error, error) {
	var tokens map[string]kafka.Rights
	if len(env.tokens) > 0 || len(env.nsTokens[k.namespace]) > 0 {
		tokens = make(map[string]kafka.Rights, len(env.tokens))
		for tok, r := range env.tokens {
			tokens[tok] = kafka.Rights(r) // the same bits
		}
		// Tokens scoped to the namespace served work here too.
		for tok, r := range env.nsTokens[k.namespace] {
			tokens[tok] = kafka.Rights(r)
		}
	}
	b, ok := env.backend.(kafka.Broker)
	if k.namespace != "" {
		// checkFlags refused both cases already; start does not rely on it.
		if env.eng == nil {
			return nil, usageErrorf("--kafka-namespace is not available in cluster mode")
		}
		ns, err := env.eng.Namespace(k.namespace)
		if err != nil {
			return nil, usageErrorf("--kafka-namespace: %v", err)
		}
		b, ok = ns, true
	}
	if !ok {
		return nil, fmt.Errorf("--kafka: this broker cannot serve the Kafka protocol")
	}
	key, err := k.recordKey(env) // serve_kafkakey.go
	if err != nil {
		return nil, err
	}
	srv, err := kafka.NewServer(b, &kafka.Options{AdvertisedAddr: k.advertise, TLS: env.tls, Tokens: tokens, Logger: env.log, ProducerRecordKey: key,
		MaxInflating: k.maxInflating, MaxInflatedBytes: k.maxInflatedBytes,
		MaxQueuedRequestBytes: k.maxQueuedRequestBytes, MaxConnections: k.maxConnections, RequestReadTimeout: k.requestReadTimeout,
		ConnectionsMaxIdle: k.connectionsMaxIdle})
	if err != nil {
		return nil, usageErrorf("--kafka: %v", err)
	}
	lis := env.ports["kafka"]
	if len(tokens) > 0 && env.tls == nil && !isLoopback(lis.Addr()) {
		env.log.Warn("Kafka SASL/PLAIN passwords are sent in clear text: serve TLS (--tls-cert, --tls-key) on a non-loopback address")
	}
	served := make(chan struct{})
	go func() {
		defer close(served)
		if err := srv.Serve(lis); !errors.Is(err, kafka.ErrServerClosed) {
			env.errc <- fmt.Errorf("kafka listener: %w", err)
		}
	}()
	env.log.Info("serving Kafka protocol", "listen", lis.Addr().String(), "tls", env.tls != nil, "sasl", len(tokens) > 0)
	return func(context.Context) error {
		err := srv.Close()
		<-served
		return err
	}, nil
}
