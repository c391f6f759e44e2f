package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"

	"github.com/equeue-go/equeue"
)

// benchConfig is what one bench run does.
type benchConfig struct {
	size      int
	count     int64 // 0 with duration
	duration  time.Duration
	producers int
	consumers int
	batch     int
	queues    int
	sync      string
	topic     string
	keep      bool
	baseline  bool
	asJSON    bool
}

// benchDrainTimeout bounds how long consumers may take to catch up once
// production ended.
const benchDrainTimeout = 60 * time.Second

func (a *app) benchCommand() *cobra.Command {
	var (
		c        benchConfig
		syncFlag = newChoice("always", "always", "never")
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure produce (and consume) throughput and latency",
		Long: `bench sends --count messages (or sends for --duration) of --size bytes from
--producers goroutines, each call a Send (--batch 1) or a SendBatch of
--batch messages, and reports messages per second, MB per second and the
latency of the calls (p50, p99, max). With --consumers N it also runs N
consumers in a fresh group and reports their throughput and the end-to-end
latency from send to handler.

It runs on a fresh engine in a temporary directory (removed afterwards),
on --dir DIR, or against a running broker with --server. It creates a topic
of its own (--topic, default bench-<random>) with --queues queues and
deletes it afterwards unless --keep, and so the consumers' group with its
retry topic.

For comparison it also measures a storage baseline in a temporary
directory: the same number of values of the same size written straight to
the Badger store the engine sits on (which packs consecutive values of a
queue into segments), by the same number of goroutines in batches of
--batch values, each batch fsynced when --sync is always. The ratio is the engine's messages per second over
the baseline's values per second.

A progress bar goes to stderr unless --json; --json prints one JSON object.`,
		Example: `  equeue bench --count 100000 --producers 8
  equeue bench --duration 10s --size 1024 --batch 64 --consumers 2
  equeue --server 127.0.0.1:7654 bench --count 50000 --sync never --json`,
		Args: args(cobra.NoArgs),
		RunE: runE(func(cmd *cobra.Command, _ []string) error {
			c.sync = syncFlag.value
			switch {
			case c.size < 0 || c.size > equeue.DefaultMaxMessageSize-1024:
				return usageErrorf("--size must be 0 to %d bytes", equeue.DefaultMaxMessageSize-1024)
			case c.count < 0 || c.duration < 0:
				return usageErrorf("--count and --duration must not be negative")
			case c.count > 0 && c.duration > 0:
				return usageErrorf("give --count or --duration, not both")
			case c.producers < 1:
				return usageErrorf("--producers must be at least 1")
			case c.consumers < 0:
				return usageErrorf("--consumers must not be negative")
			case c.batch < 1 || c.batch > equeue.MaxPullBatch:
				return usageErrorf("--batch must be 1 to %d", equeue.MaxPullBatch)
			case c.queues < 1 || c.queues > equeue.MaxQueuesPerTopic:
				return usageErrorf("--queues must be 1 to %d", equeue.MaxQueuesPerTopic)
			}
			if c.count == 0 && c.duration == 0 {
				c.count = 10000
			}
			if c.topic == "" {
				c.topic = "bench-" + randomHex(4)
			}
			if err := equeue.ValidateName(c.topic); err != nil {
				return usageErrorf("--topic: %v", err)
			}
			return a.bench(cmd.Context(), c)
		}),
	}
	f := cmd.Flags()
	f.IntVar(&c.size, "size", 100, "message body size in bytes")
	f.Int64Var(&c.count, "count", 0, "messages to send (default 10000 unless --duration)")
	f.DurationVar(&c.duration, "duration", 0, "send for this long instead of a fixed count")
	f.IntVar(&c.producers, "producers", 4, "concurrent producer goroutines")
	f.IntVar(&c.consumers, "consumers", 0, "consumers in a fresh group (0: produce only)")
	f.IntVar(&c.batch, "batch", 1, "messages per call: 1 uses Send, more uses SendBatch")
	f.IntVar(&c.queues, "queues", 4, "queues of the benchmark topic")
	f.Var(syncFlag, "sync", "fsync policy of the sends: always or never")
	f.StringVar(&c.topic, "topic", "", "benchmark topic (default bench-<random>)")
	f.BoolVar(&c.keep, "keep", false, "keep the benchmark topic afterwards")
	f.BoolVar(&c.baseline, "baseline", true, "also measure the raw Badger baseline")
	f.BoolVar(&c.asJSON, "json", false, "print one JSON object, no progress bar")
	return cmd
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// latencyJSON summarizes latencies in milliseconds.
type latencyJSON struct {
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

func (l latencyJSON) String() string {
	return fmt.Sprintf("p50 %.3f ms, p99 %.3f ms, max %.3f ms", l.P50, l.P99, l.Max)
}

// summarize sorts ds and returns its p50, p99 and max.
func summarize(ds []time.Duration) latencyJSON {
	if len(ds) == 0 {
		return latencyJSON{}
	}
	slices.Sort(ds)
	rank := func(p float64) time.Duration {
		i := int(p*float64(len(ds))+0.5) - 1
		return ds[min(max(i, 0), len(ds)-1)]
	}
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	return latencyJSON{P50: ms(rank(0.50)), P99: ms(rank(0.99)), Max: ms(ds[len(ds)-1])}
}

type benchJSON struct {
	Mode        string         `json:"mode"`
	Target      string         `json:"target"`
	Topic       string         `json:"topic"`
	Messages    int64          `json:"messages"`
	Size        int            `json:"size"`
	Producers   int            `json:"producers"`
	Consumers   int            `json:"consumers"`
	Batch       int            `json:"batch"`
	Queues      int            `json:"queues"`
	Sync        string         `json:"sync"`
	ElapsedSec  float64        `json:"elapsed_sec"`
	MsgsPerSec  float64        `json:"msgs_per_sec"`
	MBPerSec    float64        `json:"mb_per_sec"`
	SendLatency latencyJSON    `json:"send_latency_ms"`
	Consume     *benchConsume  `json:"consume,omitempty"`
	Baseline    *benchBaseline `json:"baseline,omitempty"`
	// Ratio is the engine's msgs_per_sec over the baseline's.
	Ratio float64 `json:"ratio,omitempty"`
}

type benchConsume struct {
	Messages   int64       `json:"messages"`
	ElapsedSec float64     `json:"elapsed_sec"`
	MsgsPerSec float64     `json:"msgs_per_sec"`
	MBPerSec   float64     `json:"mb_per_sec"`
	Latency    latencyJSON `json:"e2e_latency_ms"`
}

type benchBaseline struct {
	Store      string  `json:"store"`
	Values     int64   `json:"values"`
	Size       int     `json:"size"`
	Writers    int     `json:"writers"`
	Batch      int     `json:"batch"`
	Sync       string  `json:"sync"`
	ElapsedSec float64 `json:"elapsed_sec"`
	MsgsPerSec float64 `json:"msgs_per_sec"`
	MBPerSec   float64 `json:"mb_per_sec"`
}

func rate(n int64, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

func mbRate(n int64, size int, d time.Duration) float64 {
	return rate(n, d) * float64(size) / 1e6
}

// bench runs one benchmark and prints its result.
func (a *app) bench(ctx context.Context, c benchConfig) (err error) {
	policy := equeue.SyncAlways
	if c.sync == "never" {
		policy = equeue.SyncNever
	}
	res := benchJSON{Topic: c.topic, Size: c.size, Producers: c.producers, Consumers: c.consumers, Batch: c.batch, Queues: c.queues, Sync: c.sync}
	var (
		b        broker
		prodSync *equeue.SyncPolicy
	)
	switch {
	case a.server != "":
		cl, err := a.dialServer()
		if err != nil {
			return err
		}
		defer cl.Close()
		b, prodSync = cl, &policy
		res.Mode, res.Target = "server", a.server
	default:
		dir := a.dir
		res.Mode, res.Target = "dir", dir
		if dir != "" {
			if err := checkDir(dir, create); err != nil {
				return err
			}
		}
		if dir == "" {
			tmp, err := os.MkdirTemp("", "equeue-bench-*")
			if err != nil {
				return err
			}
			defer os.RemoveAll(tmp)
			dir, res.Target = tmp, "temporary directory"
		}
		e, err := a.openEngine(dir, &equeue.Options{Sync: policy})
		if err != nil {
			return err
		}
		defer func() {
			if cerr := e.Close(); cerr != nil && err == nil {
				err = cerr
			}
		}()
		b = e
	}

	if err := b.CreateTopic(ctx, c.topic, c.queues); err != nil {
		return fmt.Errorf("create benchmark topic: %w", err)
	}
	if !c.keep {
		defer func() {
			dctx, cancel := context.WithTimeout(context.Background(), benchCleanupWithin)
			defer cancel()
			if derr := b.DeleteTopic(dctx, c.topic); derr != nil {
				a.log.Warn("could not delete the benchmark topic", "topic", c.topic, "err", derr)
			}
		}()
	}

	// The bar redraws one line in place: only on a terminal, and not with --json.
	var progress io.Writer = a.stderr
	if c.asJSON || !isTerminal(a.stderr) {
		progress = io.Discard
	}

	// Consumers first, so they are in the group when messages arrive.
	var cons *benchConsumers
	if c.consumers > 0 {
		group := "bench-" + randomHex(4)
		if !c.keep {
			// Runs after the consumers closed (deferred below), also when
			// only some of them started.
			defer a.deleteBenchGroup(b, group)
		}
		cons, err = a.startBenchConsumers(ctx, b, c, group)
		if err != nil {
			return err
		}
		defer cons.close()
	}

	prod, err := a.runProducers(ctx, b, c, prodSync, progress)
	if err != nil {
		return err
	}
	res.Messages = prod.sent
	res.ElapsedSec = prod.elapsed.Seconds()
	res.MsgsPerSec = rate(prod.sent, prod.elapsed)
	res.MBPerSec = mbRate(prod.sent, c.size, prod.elapsed)
	res.SendLatency = summarize(prod.latencies)

	if cons != nil {
		got, last, lat, err := cons.wait(ctx, prod.sent, progress)
		if err != nil {
			return err
		}
		d := last.Sub(prod.start)
		res.Consume = &benchConsume{Messages: got, ElapsedSec: d.Seconds(), MsgsPerSec: rate(got, d), MBPerSec: mbRate(got, c.size, d), Latency: summarize(lat)}
	}

	if c.baseline && prod.sent > 0 {
		bl, err := runBaseline(ctx, prod.sent, c, progress)
		if err != nil {
			return fmt.Errorf("badger baseline: %w", err)
		}
		res.Baseline = bl
		if bl.MsgsPerSec > 0 {
			res.Ratio = res.MsgsPerSec / bl.MsgsPerSec
		}
	}

	if c.asJSON {
		return writeJSON(a.stdout, res)
	}
	w := a.stdout
	line := func(label, format string, args ...any) {
		fmt.Fprintf(w, "  %-14s %s\n", label+":", fmt.Sprintf(format, args...))
	}
	fmt.Fprintf(w, "produced %d messages of %d B in %.2fs (%s, %d producers, batch %d, %d queues, sync %s)\n",
		res.Messages, c.size, res.ElapsedSec, res.Target, c.producers, c.batch, c.queues, c.sync)
	line("throughput", "%.0f msgs/s, %.2f MB/s", res.MsgsPerSec, res.MBPerSec)
	if c.batch > 1 {
		line("batch latency", "%s", res.SendLatency)
	} else {
		line("send latency", "%s", res.SendLatency)
	}
	if r := res.Consume; r != nil {
		fmt.Fprintf(w, "consumed %d messages with %d consumers in %.2fs\n", r.Messages, c.consumers, r.ElapsedSec)
		line("throughput", "%.0f msgs/s, %.2f MB/s", r.MsgsPerSec, r.MBPerSec)
		line("end-to-end", "%s", r.Latency)
	}
	if bl := res.Baseline; bl != nil {
		fmt.Fprintf(w, "badger baseline: %d values of %d B in %.2fs (%d writers, batch %d, sync %s)\n",
			bl.Values, bl.Size, bl.ElapsedSec, bl.Writers, bl.Batch, bl.Sync)
		line("throughput", "%.0f values/s, %.2f MB/s", bl.MsgsPerSec, bl.MBPerSec)
		fmt.Fprintf(w, "engine/baseline: %.2f\n", res.Ratio)
	}
	return nil
}

// produced is the outcome of the producing phase.
type produced struct {
	sent      int64
	start     time.Time
	elapsed   time.Duration
	latencies []time.Duration
}

func (a *app) runProducers(ctx context.Context, b broker, c benchConfig, syncPolicy *equeue.SyncPolicy, progress io.Writer) (produced, error) {
	p, err := equeue.NewProducer(b, &equeue.ProducerOptions{Sync: syncPolicy, Selector: equeue.RoundRobinSelector()})
	if err != nil {
		return produced{}, err
	}
	defer p.Close()
	body := make([]byte, c.size)
	_, _ = rand.Read(body)

	var bar *progressbar.ProgressBar
	if c.count > 0 {
		bar = newBar(c.count, "produce", progress)
	} else {
		bar = newBar(c.duration.Milliseconds(), "produce (ms)", progress)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var (
		claimed, sent atomic.Int64
		firstErr      error
		errOnce       sync.Once
		wg            sync.WaitGroup
		lats          = make([][]time.Duration, c.producers)
	)
	fail := func(err error) {
		errOnce.Do(func() { firstErr = err; cancel() })
	}
	start := time.Now()
	deadline := start.Add(c.duration)
	// claim reserves up to c.batch messages; 0 means stop.
	claim := func() int {
		if ctx.Err() != nil {
			return 0
		}
		if c.count == 0 {
			if time.Now().After(deadline) {
				return 0
			}
			return c.batch
		}
		for {
			cur := claimed.Load()
			n := min(int64(c.batch), c.count-cur)
			if n <= 0 {
				return 0
			}
			if claimed.CompareAndSwap(cur, cur+n) {
				return int(n)
			}
		}
	}
	for i := 0; i < c.producers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := claim(); n > 0; n = claim() {
				msgs := make([]*equeue.Message, n)
				born := time.Now()
				for j := range msgs {
					msgs[j] = &equeue.Message{Topic: c.topic, Body: body, BornAt: born}
				}
				var err error
				if n == 1 && c.batch == 1 {
					_, err = p.Send(ctx, msgs[0])
				} else {
					_, err = p.SendBatch(ctx, msgs)
				}
				if err != nil {
					if ctx.Err() == nil {
						fail(fmt.Errorf("send: %w", err))
					}
					return
				}
				lats[i] = append(lats[i], time.Since(born))
				sent.Add(int64(n))
			}
		}()
	}
	done := make(chan struct{})
	go func() {
		wg.Wait()
		close(done)
	}()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	update := func() {
		if c.count > 0 {
			_ = bar.Set64(sent.Load())
		} else {
			_ = bar.Set64(min(time.Since(start).Milliseconds(), c.duration.Milliseconds()))
		}
	}
wait:
	for {
		select {
		case <-done:
			break wait
		case <-tick.C:
			update()
		}
	}
	elapsed := time.Since(start)
	update()
	_ = bar.Finish()
	fmt.Fprintln(progress)
	if firstErr != nil {
		return produced{}, firstErr
	}
	if err := ctx.Err(); err != nil {
		return produced{}, fmt.Errorf("interrupted: %w", err)
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	return produced{sent: sent.Load(), start: start, elapsed: elapsed, latencies: all}, nil
}

func newBar(max int64, desc string, w io.Writer) *progressbar.ProgressBar {
	return progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(w != io.Discard),
		progressbar.OptionSetVisibility(w != io.Discard),
	)
}

// benchConsumers are the consumers of a bench run.
type benchConsumers struct {
	group    string
	list     []*equeue.Consumer
	received atomic.Int64
	mu       sync.Mutex
	lat      []time.Duration
	last     time.Time
	arrived  chan struct{} // signalled on every message, capacity 1
}

// startBenchConsumers starts c.consumers consumers of c.topic in group; on
// a failure it closes those it started.
func (a *app) startBenchConsumers(ctx context.Context, b broker, c benchConfig, group string) (*benchConsumers, error) {
	bc := &benchConsumers{group: group, arrived: make(chan struct{}, 1)}
	for i := 0; i < c.consumers; i++ {
		cons, err := equeue.NewConsumer(b, equeue.ConsumerOptions{
			Group:         group,
			Subscriptions: []equeue.Subscription{{Topic: c.topic}},
			From:          equeue.ConsumeFromEarliest,
			PullBatch:     256,
			PullWait:      200 * time.Millisecond,
			Logger:        a.log,
			Handler: func(_ context.Context, m *equeue.Message) error {
				now := time.Now()
				bc.mu.Lock()
				bc.lat = append(bc.lat, now.Sub(m.BornAt))
				if now.After(bc.last) {
					bc.last = now
				}
				bc.mu.Unlock()
				bc.received.Add(1)
				select {
				case bc.arrived <- struct{}{}:
				default:
				}
				return nil
			},
		})
		if err == nil {
			err = cons.Start(ctx)
		}
		if err != nil {
			bc.close()
			return nil, fmt.Errorf("start consumer %d: %w", i+1, err)
		}
		bc.list = append(bc.list, cons)
	}
	return bc, nil
}

// wait waits until the consumers received want messages, or no message
// arrived for benchDrainTimeout.
func (bc *benchConsumers) wait(ctx context.Context, want int64, progress io.Writer) (int64, time.Time, []time.Duration, error) {
	bar := newBar(want, "consume", progress)
	idle := time.NewTimer(benchDrainTimeout)
	defer idle.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	var err error
	for bc.received.Load() < want && err == nil {
		select {
		case <-ctx.Done():
			err = fmt.Errorf("interrupted: %w", ctx.Err())
		case <-idle.C:
			err = fmt.Errorf("consumers received %d of %d messages and then nothing for %v", bc.received.Load(), want, benchDrainTimeout)
		case <-bc.arrived:
			idle.Reset(benchDrainTimeout)
		case <-tick.C:
			_ = bar.Set64(bc.received.Load())
		}
	}
	_ = bar.Set64(bc.received.Load())
	_ = bar.Finish()
	fmt.Fprintln(progress)
	bc.mu.Lock()
	defer bc.mu.Unlock()
	return bc.received.Load(), bc.last, slices.Clone(bc.lat), err
}

func (bc *benchConsumers) close() {
	var wg sync.WaitGroup
	for _, c := range bc.list {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = c.Close()
		}()
	}
	wg.Wait()
	bc.list = nil
}
