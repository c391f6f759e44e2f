package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"regexp"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/equeue-go/equeue"
	"github.com/equeue-go/equeue/remote"
)

// Environment variables used when the matching global flag is not given.
const (
	envDir    = "EQUEUE_DIR"
	envServer = "EQUEUE_SERVER"
	envToken  = "EQUEUE_TOKEN"
)

// app holds the global flags and the process's streams.
type app struct {
	stdin          io.Reader
	stdout, stderr io.Writer

	dir            string
	server         string
	tlsCA          string
	tlsCert        string
	tlsKey         string
	insecureSkip   bool
	token          string
	connectTimeout time.Duration
	logFormat      string
	logLevel       string

	log *slog.Logger
}

func newApp(stdin io.Reader, stdout, stderr io.Writer) *app {
	return &app{stdin: stdin, stdout: stdout, stderr: stderr, log: slog.New(slog.DiscardHandler)}
}

// cliError carries the exit code of a failed command.
type cliError struct {
	code int
	err  error
}

func (e *cliError) Error() string { return e.err.Error() }
func (e *cliError) Unwrap() error { return e.err }

// invalidInput are the broker's errors for a value it refuses as invalid:
// a name, a tag expression, an argument, a delay or an option.
var invalidInput = []error{equeue.ErrInvalidName, equeue.ErrInvalidFilter, equeue.ErrInvalidArgument,
	equeue.ErrInvalidDelay, equeue.ErrInvalidOptions}

// refusedAsInvalid reports whether the broker refused a value of the
// command as invalid. Every value a command hands the broker comes from
// its command line (names, flags, arguments), so such a refusal is a usage
// error (exit code 2), as the command's own checks are; an operation the
// broker could not carry out (not found, full, refused rights, I/O) is a
// failure (exit code 1).
func refusedAsInvalid(err error) bool {
	for _, target := range invalidInput {
		if errors.Is(err, target) {
			return true
		}
	}
	return false
}

// usageErrorf reports a command line that cannot be run (exit code 2).
func usageErrorf(format string, args ...any) error {
	return &cliError{code: exitUsage, err: fmt.Errorf(format, args...)}
}

// runE adapts a command body: errors it returns are runtime failures (exit
// code 1) unless they are already usage errors.
func runE(f func(cmd *cobra.Command, args []string) error) func(*cobra.Command, []string) error {
	return func(cmd *cobra.Command, args []string) error {
		err := f(cmd, args)
		if err == nil {
			return nil
		}
		var ce *cliError
		if errors.As(err, &ce) {
			return err
		}
		return &cliError{code: exitFailure, err: err}
	}
}

// args wraps a cobra argument validator so its errors are usage errors.
func args(v cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		if err := v(cmd, a); err != nil {
			return &cliError{code: exitUsage, err: err}
		}
		return nil
	}
}

// argCount says how many positional arguments a command takes, and names
// them in its error: argCount(1, 1, "NAME").
func argCount(lo, hi int, names string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, a []string) error {
		switch {
		case len(a) < lo:
			return &cliError{code: exitUsage, err: fmt.Errorf("missing argument: %s takes %s", cmd.CommandPath(), names)}
		case hi >= 0 && len(a) > hi:
			return &cliError{code: exitUsage, err: fmt.Errorf("too many arguments (%q...): %s takes %s", a[hi], cmd.CommandPath(), names)}
		}
		return nil
	}
}

// groupCommand returns a command that only holds subcommands: alone it
// prints its help, with an unknown subcommand it fails.
func groupCommand(use, short, long string) *cobra.Command {
	return &cobra.Command{
		Use:   use,
		Short: short,
		Long:  long,
		Args: func(cmd *cobra.Command, a []string) error {
			if len(a) > 0 {
				return &cliError{code: exitUsage, err: fmt.Errorf("unknown command %q for %q", a[0], cmd.CommandPath())}
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
}

func (a *app) rootCommand() *cobra.Command {
	root := &cobra.Command{
		Use:   "equeue",
		Short: "Run and administer equeue message queues",
		Long: `equeue runs and administers equeue engines.

Every command works either on an engine directory it opens itself (--dir, or
$EQUEUE_DIR) or through a running broker (--server, or $EQUEUE_SERVER), which
is what "equeue serve" starts. A directory can be open in one process at a
time: while "equeue serve" runs on it, use --server to reach it.`,
		Example: `  equeue --dir ./data topic create orders --queues 4
  equeue --dir ./data produce orders "hello"
  equeue --dir ./data consume orders --from earliest --count 1
  equeue serve --dir ./data --listen 127.0.0.1:7654
  equeue --server 127.0.0.1:7654 topic list`,
		SilenceErrors:     true,
		SilenceUsage:      true,
		Args:              args(cobra.NoArgs),
		PersistentPreRunE: a.setup,
		// A bare "equeue" prints its help.
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
		Version: version(),
	}
	root.SetIn(a.stdin)
	root.SetOut(a.stdout)
	root.SetErr(a.stderr)
	root.SetFlagErrorFunc(func(cmd *cobra.Command, err error) error {
		// A negative number among the arguments reads as a bundle of
		// one-letter flags ("-1"): say what is really wrong.
		if m := negativeArg.FindStringSubmatch(err.Error()); m != nil {
			err = fmt.Errorf("%s: negative numbers are not valid arguments of %s (counts, queue numbers and offsets are 0 or more)", m[1], cmd.CommandPath())
		}
		return &cliError{code: exitUsage, err: err}
	})
	root.CompletionOptions.HiddenDefaultCmd = true

	f := root.PersistentFlags()
	f.StringVar(&a.dir, "dir", "", "engine directory to open in this process (default $"+envDir+")")
	f.StringVar(&a.server, "server", "", "address host:port of a broker started with \"equeue serve\", or several comma-separated nodes of a cluster (default $"+envServer+")")
	f.StringVar(&a.tlsCA, "tls-ca", "", "PEM file of the CA that signed the server's certificate (enables TLS)")
	f.StringVar(&a.tlsCert, "tls-cert", "", "PEM certificate this process presents: the server's with serve, the client's (mutual TLS) otherwise")
	f.StringVar(&a.tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	f.BoolVar(&a.insecureSkip, "insecure-skip-verify", false, "use TLS but do not verify the server's certificate (testing only)")
	f.StringVar(&a.token, "token", "", "bearer token sent to the server (default $"+envToken+")")
	f.DurationVar(&a.connectTimeout, "connect-timeout", 5*time.Second, "how long to wait for the --server connection")
	f.StringVar(&a.logFormat, "log-format", "text", "log format on stderr: text or json")
	f.StringVar(&a.logLevel, "log-level", "", "log level: debug, info, warn or error (default info for serve, warn otherwise)")

	root.AddCommand(
		a.serveCommand(),
		a.topicCommand(),
		a.produceCommand(),
		a.consumeCommand(),
		a.groupsCommand(),
		a.resetOffsetsCommand(),
		a.dlqCommand(),
		a.statsCommand(),
		a.benchCommand(),
		a.clusterCommand(),
		a.peekCommand(),
	)
	tidyHelp(root)
	return root
}

// negativeArg matches pflag's error for an argument such as "-1".
var negativeArg = regexp.MustCompile(`^unknown shorthand flag: '[0-9]' in (-[0-9][0-9.]*)$`)

// setup validates the global flags and builds the logger.
func (a *app) setup(cmd *cobra.Command, _ []string) error {
	flags := cmd.Flags()
	envDefault := func(name string, v *string, env string) {
		if f := flags.Lookup(name); f != nil && !f.Changed && *v == "" {
			*v = os.Getenv(env)
		}
	}
	// Only fall back on the environment for an address when neither flag
	// was given, so --dir on the command line wins over $EQUEUE_SERVER.
	if !flags.Changed("dir") && !flags.Changed("server") {
		envDefault("dir", &a.dir, envDir)
		if a.dir == "" {
			envDefault("server", &a.server, envServer)
		}
	}
	if f := flags.Lookup("token"); f != nil && f.Value.Type() == "string" {
		envDefault("token", &a.token, envToken)
	}
	if a.server != "" {
		// One broker, or a cluster's nodes separated by commas.
		for _, addr := range strings.Split(a.server, ",") {
			if !isHostPort(strings.TrimSpace(addr)) {
				return usageErrorf("--server %q: want HOST:PORT (or a cluster's HOST:PORT,HOST:PORT,...), e.g. 127.0.0.1:7654", a.server)
			}
		}
	}
	if a.dir != "" && a.server != "" {
		return usageErrorf("--dir and --server are mutually exclusive: open a directory here or talk to a broker")
	}
	if (a.tlsCert == "") != (a.tlsKey == "") {
		return usageErrorf("--tls-cert and --tls-key go together")
	}
	if err := a.checkUnusedFlags(cmd); err != nil {
		return err
	}
	level := a.logLevel
	if level == "" {
		level = "warn"
		if cmd.Name() == "serve" {
			level = "info"
		}
	}
	var lv slog.Level
	if err := lv.UnmarshalText([]byte(level)); err != nil {
		return usageErrorf("--log-level %q: use debug, info, warn or error", level)
	}
	opts := &slog.HandlerOptions{Level: lv}
	switch a.logFormat {
	case "text":
		a.log = slog.New(slog.NewTextHandler(a.stderr, opts))
	case "json":
		a.log = slog.New(slog.NewJSONHandler(a.stderr, opts))
	default:
		return usageErrorf("--log-format %q: use text or json", a.logFormat)
	}
	return nil
}

// broker is what the commands need from an engine: the producer and
// consumer protocol plus administration. *equeue.Engine implements it
// in-process and *remote.Client over the network.
type broker interface {
	equeue.Broker
	remote.Admin
	ListDeadLetters(ctx context.Context, group string, req equeue.ListDeadLettersRequest) ([]equeue.DLQEntry, error)
}

var (
	_ broker = (*equeue.Engine)(nil)
	_ broker = (*remote.Client)(nil)
)

// conn is an open broker and how to let go of it.
type conn struct {
	broker
	// engine is the in-process engine with --dir; nil with --server.
	engine *equeue.Engine
	close  func() error
}

func (c *conn) Close() error { return c.close() }

// where describes the broker for messages.
func (a *app) where() string {
	if a.server != "" {
		return a.server
	}
	return a.dir
}

// connect opens the engine directory or dials the server. mode says what
// the command does to a directory: read-only commands open it without
// changing it, and only commands that make something (topic create) may
// open a directory that does not hold an engine yet; for the others a
// missing directory is most likely a typo.
func (a *app) connect(mode openMode) (*conn, error) {
	switch {
	case a.server != "":
		return a.dialServer()
	case a.dir != "":
		if err := checkDir(a.dir, mode); err != nil {
			return nil, err
		}
		var opts *equeue.Options
		if mode == readOnly {
			st, err := openReadOnly(a.dir, badgerOptions(a.log))
			if err != nil {
				return nil, a.explainOpen(a.dir, err)
			}
			opts = &equeue.Options{Store: st}
		}
		e, err := a.openEngine(a.dir, opts)
		if err != nil {
			return nil, err
		}
		return &conn{broker: e, engine: e, close: e.Close}, nil
	}
	return nil, usageErrorf("no broker: give --dir DIR (an engine directory) or --server HOST:PORT (a running \"equeue serve\"), or set $%s or $%s", envDir, envServer)
}

// openEngine opens an engine on dir with the CLI's logger; with
// opts.Store set, on that store instead.
func (a *app) openEngine(dir string, opts *equeue.Options) (*equeue.Engine, error) {
	var o equeue.Options
	if opts != nil {
		o = *opts
	}
	o.Logger = a.log
	if o.Store != nil {
		dir = ""
	} else if o.Badger == nil {
		bo := badgerOptions(a.log)
		o.Badger = &bo
	}
	if o.Store == nil && wrapEngineStore != nil {
		st, err := wrapEngineStore(dir, o.Badger)
		if err != nil {
			return nil, a.explainOpen(a.dir, err)
		}
		o.Store, o.Badger, dir = st, nil, ""
	}
	e, err := equeue.Open(dir, &o)
	if err != nil {
		if o.Store != nil {
			_ = o.Store.Close()
		}
		return nil, a.explainOpen(a.dir, err)
	}
	return e, nil
}

// explainOpen turns a failure to open dir into the command line's terms.
func (a *app) explainOpen(dir string, err error) error {
	if errors.Is(err, equeue.ErrLocked) {
		return &lockedError{dir: dir, err: err}
	}
	return err
}

// lockedError explains equeue.ErrLocked in terms of the command line.
type lockedError struct {
	dir string
	err error
}

func (e *lockedError) Error() string {
	return fmt.Sprintf("directory %s is locked by another process (a running \"equeue serve\", or another command on it): stop it, or reach a running serve with --server HOST:PORT instead of --dir", e.dir)
}

func (e *lockedError) Unwrap() error { return e.err }

// dialServer connects to --server: one broker, or a cluster's
// comma-separated nodes whose leader it follows.
func (a *app) dialServer() (*conn, error) {
	if strings.Contains(a.server, ",") {
		c, err := a.dialCluster() // cluster.go
		if err != nil {
			return nil, err
		}
		return &conn{broker: c, close: c.Close}, nil
	}
	c, err := a.dial()
	if err != nil {
		return nil, err
	}
	return &conn{broker: c, close: c.Close}, nil
}

// dial connects to --server with the TLS and token flags.
func (a *app) dial() (*remote.Client, error) {
	tlsConf, err := a.clientTLS()
	if err != nil {
		return nil, err
	}
	// A plain TCP connection first: when nothing listens there, say so at
	// once instead of waiting out the gRPC connection's state machine.
	probe, err := net.DialTimeout("tcp", a.server, a.connectTimeout)
	if err != nil {
		return nil, fmt.Errorf("nothing answers at %s (%v)\n(is \"equeue serve\" running there? check --server)", a.server, err)
	}
	_ = probe.Close()
	c, err := remote.Dial(a.server, &remote.ClientOptions{TLS: tlsConf, Token: a.token, DialTimeout: a.connectTimeout, Logger: a.log})
	if err != nil {
		return nil, fmt.Errorf("connect to %s: something listens there but did not answer as an equeue server: %w", a.server, err)
	}
	return c, nil
}

// choiceFlag is a flag value that accepts one of a fixed set of words.
type choiceFlag struct {
	value   string
	choices []string
}

func newChoice(def string, choices ...string) *choiceFlag {
	return &choiceFlag{value: def, choices: choices}
}

func (c *choiceFlag) String() string { return c.value }
func (c *choiceFlag) Type() string   { return strings.Join(c.choices, "|") }
func (c *choiceFlag) Set(s string) error {
	for _, x := range c.choices {
		if s == x {
			c.value = s
			return nil
		}
	}
	return fmt.Errorf("must be one of %s", strings.Join(c.choices, ", "))
}

var _ pflag.Value = (*choiceFlag)(nil)
