package main

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/pprof"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetricgrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.40.0"

	"github.com/equeue-go/equeue"
	eqotel "github.com/equeue-go/equeue/otel"
)

func init() {
	serveAddons = append(serveAddons, func(*app) serveAddon { return &otelAddon{} })
}

// otelEnv are the standard variables that, set, switch OTLP export on
// without --otlp-endpoint.
var otelEnv = []string{"OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT"}

// otelAddon exports the broker's own spans and metrics over OTLP/gRPC and
// serves net/http/pprof.
type otelAddon struct {
	endpoint string
	insecure bool
	interval time.Duration
	pprof    string

	tp      *sdktrace.TracerProvider
	mp      *sdkmetric.MeterProvider
	metrics *eqotel.Metrics
}

func (o *otelAddon) addFlags(f *pflag.FlagSet) {
	f.StringVar(&o.endpoint, "otlp-endpoint", "", "export the broker's spans and metrics over OTLP/gRPC to HOST:PORT or URL "+
		"(http:// is plaintext); empty: the standard OTEL_EXPORTER_OTLP_* variables, if set, else off")
	f.BoolVar(&o.insecure, "otlp-insecure", false, "send OTLP in plaintext to a HOST:PORT --otlp-endpoint")
	f.DurationVar(&o.interval, "otlp-metrics-interval", 0, "how often metrics are exported (0: OTEL_METRIC_EXPORT_INTERVAL, else 60s)")
	f.StringVar(&o.pprof, "pprof", "", "address to serve Go profiling (/debug/pprof/) on, e.g. 127.0.0.1:6060 (empty: off); with --token, one other than loopback needs an admin token, and /debug/pprof/cmdline (the command line, with the tokens) does on loopback too")
}

// exporting reports whether OTLP export is asked for.
func (o *otelAddon) exporting() bool {
	if o.endpoint != "" {
		return true
	}
	for _, k := range otelEnv {
		if os.Getenv(k) != "" {
			return true
		}
	}
	return false
}

func (o *otelAddon) enabled() bool { return o.exporting() || o.pprof != "" }

func (o *otelAddon) ports() []servePort {
	if o.pprof == "" {
		return nil
	}
	return []servePort{{"pprof", o.pprof}}
}

// configure builds the exporters and installs the engine observers: OTLP
// metrics beside any Prometheus collector, and the broker's spans.
func (o *otelAddon) configure(opts *equeue.Options) error {
	if !o.exporting() {
		return nil
	}
	ctx := context.Background()
	var (
		topts []otlptracegrpc.Option
		mopts []otlpmetricgrpc.Option
	)
	switch {
	case strings.Contains(o.endpoint, "://"):
		topts = append(topts, otlptracegrpc.WithEndpointURL(o.endpoint))
		mopts = append(mopts, otlpmetricgrpc.WithEndpointURL(o.endpoint))
	case o.endpoint != "":
		topts = append(topts, otlptracegrpc.WithEndpoint(o.endpoint))
		mopts = append(mopts, otlpmetricgrpc.WithEndpoint(o.endpoint))
		if o.insecure {
			topts = append(topts, otlptracegrpc.WithInsecure())
			mopts = append(mopts, otlpmetricgrpc.WithInsecure())
		}
	}
	// service.name defaults to "equeue"; OTEL_SERVICE_NAME and
	// OTEL_RESOURCE_ATTRIBUTES override it.
	res, err := resource.New(ctx, resource.WithAttributes(semconv.ServiceName("equeue")), resource.WithFromEnv(), resource.WithHost())
	if err != nil {
		return fmt.Errorf("otlp resource: %w", err)
	}
	texp, err := otlptracegrpc.New(ctx, topts...)
	if err != nil {
		return fmt.Errorf("otlp trace exporter: %w", err)
	}
	mexp, err := otlpmetricgrpc.New(ctx, mopts...)
	if err != nil {
		_ = texp.Shutdown(ctx)
		return fmt.Errorf("otlp metric exporter: %w", err)
	}
	var ropts []sdkmetric.PeriodicReaderOption
	if o.interval > 0 {
		ropts = append(ropts, sdkmetric.WithInterval(o.interval))
	}
	o.tp = sdktrace.NewTracerProvider(sdktrace.WithBatcher(texp), sdktrace.WithResource(res))
	o.mp = sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewPeriodicReader(mexp, ropts...)), sdkmetric.WithResource(res))
	o.metrics, err = eqotel.NewMetrics(&eqotel.MetricsOptions{MeterProvider: o.mp})
	if err != nil {
		_ = o.shutdown(ctx)
		return err
	}
	tracer := eqotel.NewTracer(&eqotel.TracerOptions{TracerProvider: o.tp})
	opts.Observer = eqotel.Observers(opts.Observer, o.metrics, tracer.Observer())
	return nil
}

// attachEngine points the engine gauges at the engine a cluster node opened
// as leader.
func (o *otelAddon) attachEngine(e *equeue.Engine) {
	if o.metrics != nil {
		o.metrics.Attach(e)
	}
}

func (o *otelAddon) start(_ context.Context, env serveEnv) (func(context.Context) error, error) {
	if o.metrics != nil && env.eng != nil {
		o.metrics.Attach(env.eng)
	}
	var srv *http.Server
	if o.pprof != "" {
		lis := env.ports["pprof"]
		mux := http.NewServeMux()
		mux.HandleFunc("/debug/pprof/", pprof.Index)
		var cmdline http.Handler = http.HandlerFunc(pprof.Cmdline)
		if env.grpc != nil {
			// The command line carries serve's --token values, the
			// admin's too: it needs the token /metrics needs, on a
			// loopback address as well (any container of the same
			// network namespace, or a web page through DNS rebinding,
			// reaches that).
			cmdline = requireOpsToken(env.grpc, cmdline)
		}
		mux.Handle("/debug/pprof/cmdline", cmdline)
		mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
		mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
		mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
		var h http.Handler = mux
		if !isLoopback(lis.Addr()) && env.grpc != nil {
			// Profiles and goroutine dumps on a network address need
			// the token /metrics needs; on a loopback address they stay
			// open to go tool pprof on this machine.
			warnOps(env.log, "pprof", lis.Addr(), env.tokens, env.tokens)
			h = requireOpsToken(env.grpc, mux)
		}
		// On a loopback address the profiles are open (with tokens
		// too): only requests to a loopback name, not a web page's
		// through DNS rebinding.
		h = onLoopbackHostsOnly(lis.Addr(), "this pprof server", h)
		srv = &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		go func() {
			if err := srv.Serve(lis); !errors.Is(err, http.ErrServerClosed) {
				env.errc <- fmt.Errorf("pprof server: %w", err)
			}
		}()
		env.log.Info("profiling", "pprof", "http://"+lis.Addr().String()+"/debug/pprof/")
	}
	if o.tp != nil {
		env.log.Info("exporting spans and metrics over OTLP", "endpoint", o.endpoint)
	}
	return func(ctx context.Context) error {
		var errs []error
		if srv != nil {
			errs = append(errs, srv.Shutdown(ctx))
		}
		return errors.Join(append(errs, o.shutdown(ctx))...)
	}, nil
}

// release shuts the exporters down when serve returns before start
// (configReleaser); once start ran, its stop function did.
func (o *otelAddon) release(ctx context.Context) error { return o.shutdown(ctx) }

// shutdown flushes and stops the exporters. A second call does nothing.
func (o *otelAddon) shutdown(ctx context.Context) error {
	// The meter provider's last export still reads the engine through
	// the Metrics callback, so it is not unregistered first.
	tp, mp := o.tp, o.mp
	o.tp, o.mp = nil, nil
	var errs []error
	if tp != nil {
		errs = append(errs, tp.Shutdown(ctx))
	}
	if mp != nil {
		errs = append(errs, mp.Shutdown(ctx))
	}
	return errors.Join(errs...)
}
