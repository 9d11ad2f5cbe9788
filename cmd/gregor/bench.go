package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
)

// benchResult is the JSON summary of a bench run.
type benchResult struct {
	Mode         string  `json:"mode"`
	Topic        string  `json:"topic"`
	Partitions   int32   `json:"partitions"`
	RecordSize   int     `json:"record_size"`
	Records      int64   `json:"records"`
	Bytes        int64   `json:"bytes"`
	Seconds      float64 `json:"seconds"`
	RecordsPerS  float64 `json:"records_per_sec"`
	MiBPerS      float64 `json:"mib_per_sec"`
	Errors       int64   `json:"errors"`
	LatencyP50Ms float64 `json:"latency_p50_ms,omitempty"`
	LatencyP99Ms float64 `json:"latency_p99_ms,omitempty"`
	LatencyP999  float64 `json:"latency_p999_ms,omitempty"`
	LatencyMaxMs float64 `json:"latency_max_ms,omitempty"`
	// SendLag is, at a fixed rate, how late the generator handed records
	// to the client after their intended send times (its wake-ups on a
	// busy machine): part of the latency above that no broker causes.
	SendLagP50Ms float64 `json:"send_lag_p50_ms,omitempty"`
	SendLagP99Ms float64 `json:"send_lag_p99_ms,omitempty"`
	// Clients is how many clients produced or consumed at once.
	Clients int `json:"clients"`
	// The broker over the measured window, with --server-pid (its CPU
	// time and the bytes it wrote to storage) and --server-metrics (its
	// gregor_network_inflight_requests histogram).
	ServerCPUSeconds      float64 `json:"server_cpu_s,omitempty"`
	MiBPerServerCPUSecond float64 `json:"mib_per_server_cpu_s,omitempty"`
	ServerWriteBytes      int64   `json:"server_write_bytes,omitempty"`
	DiskBytesPerByte      float64 `json:"disk_bytes_per_byte,omitempty"`
	InflightRequestsAvg   float64 `json:"inflight_requests_avg,omitempty"`
	// The machine over the same window: the bench client's own CPU time,
	// how many of the machine's cores were busy on average (every process,
	// /proc/stat), and what reached the block devices (/proc/diskstats:
	// bytes written and fsynced through, not page-cache writes still
	// dirty), per second and per byte produced.
	ClientCPUSeconds        float64 `json:"client_cpu_s,omitempty"`
	MachineCores            int     `json:"machine_cores,omitempty"`
	MachineBusyCores        float64 `json:"machine_busy_cores,omitempty"`
	DeviceWriteMiBPerS      float64 `json:"device_write_mib_per_sec,omitempty"`
	DeviceWriteBytesPerByte float64 `json:"device_write_bytes_per_byte,omitempty"`
	// DeviceBusy is the share of the window (0 to 1) the busiest block
	// device, BusiestDevice, had I/O in flight (io_ticks): near 1, the
	// disk bounded the run.
	BusiestDevice string  `json:"busiest_device,omitempty"`
	DeviceBusy    float64 `json:"device_busy,omitempty"`
	// ProduceStages splits a Gregor produce request's time over the
	// window (Kafka's request stages, and the fsyncs waited for).
	ProduceStages []StageFigures `json:"produce_stages,omitempty"`
}

func benchCmd() *cobra.Command {
	cmd := &cobra.Command{Use: "bench", Short: "Load generator: produce or consume against a running broker"}
	cmd.AddCommand(benchProduceCmd(), benchConsumeCmd())
	return cmd
}

type benchFlags struct {
	brokers    string
	topic      string
	partitions int32
	output     string
	clients    int
	// serverPID and serverMetrics name the broker to measure, when it runs
	// on this machine: /proc/<pid> for CPU and written bytes, a /metrics
	// URL for gregor_network_inflight_requests.
	serverPID     int
	serverMetrics string
	security      securityFlags
}

// clientOpts are the seed brokers and the TLS and SASL options.
func (f *benchFlags) clientOpts() ([]kgo.Opt, error) {
	sec, err := f.security.opts()
	if err != nil {
		return nil, err
	}
	return append([]kgo.Opt{kgo.SeedBrokers(strings.Split(f.brokers, ",")...)}, sec...), nil
}

func (f *benchFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVarP(&f.brokers, "brokers", "b", envOr("GREGOR_BROKERS", "127.0.0.1:9092"), "bootstrap brokers (GREGOR_BROKERS)")
	cmd.Flags().StringVarP(&f.topic, "topic", "t", "gregor-bench", "topic")
	cmd.Flags().Int32VarP(&f.partitions, "partitions", "p", 1, "partitions when the topic is created")
	cmd.Flags().StringVarP(&f.output, "output", "o", "table", "table or json")
	cmd.Flags().IntVar(&f.clients, "clients", 1, "clients producing or consuming at once (each consumer reads the whole topic)")
	cmd.Flags().IntVar(&f.serverPID, "server-pid", 0, "broker process on this machine: report its CPU seconds and bytes written to storage over the measured window")
	cmd.Flags().StringVar(&f.serverMetrics, "server-metrics", "", "broker /metrics URL: report the requests in flight per connection (gregor_network_inflight_requests) and, for produce, where the broker spent each request's time (Kafka's request stages and the fsyncs waited for)")
	f.security.register(cmd.Flags())
}

// sample reads the broker named by the flags.
func (f *benchFlags) sample() serverSample { return sampleServer(f.serverPID, f.serverMetrics) }

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}

func benchProduceCmd() *cobra.Command {
	var f benchFlags
	var (
		size        int
		records     int64
		duration    time.Duration
		warmup      time.Duration
		rate        int
		acks        string
		compression string
		lingerMs    int
	)
	cmd := &cobra.Command{
		Use:   "produce",
		Short: "Produce records as fast as allowed and report throughput and latency percentiles",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			opts := []kgo.Opt{kgo.ProducerLinger(time.Duration(lingerMs) * time.Millisecond)}
			popts, err := producerOpts(acks, compression)
			if err != nil {
				return err
			}
			run := produceRun{size: size, records: records, duration: duration, warmup: warmup, rate: rate, sample: f.sample}
			return benchProduce(cmd, &f, append(opts, popts...), run)
		},
	}
	f.register(cmd)
	cmd.Flags().IntVar(&size, "record-size", 1024, "value bytes per record")
	cmd.Flags().Int64VarP(&records, "records", "n", 0, "records to produce (0: run for --duration)")
	cmd.Flags().DurationVarP(&duration, "duration", "d", 10*time.Second, "how long to measure when --records is 0")
	cmd.Flags().DurationVar(&warmup, "warmup", 0, "how long to produce before measuring when --records is 0")
	cmd.Flags().IntVar(&rate, "rate", 0, "records per second over all clients (0: unlimited); latency counts from each record's scheduled send time")
	cmd.Flags().StringVar(&acks, "acks", "all", "all, 1 or 0")
	cmd.Flags().StringVar(&compression, "compression", "none", "none, gzip, snappy, lz4 or zstd")
	cmd.Flags().IntVar(&lingerMs, "linger-ms", 0, "producer linger")
	return cmd
}

// benchProduce creates the topic if needed and runs a produce benchmark
// (runProduce) with --clients clients made of opts.
func benchProduce(cmd *cobra.Command, f *benchFlags, opts []kgo.Opt, run produceRun) error {
	base, err := f.clientOpts()
	if err != nil {
		return err
	}
	opts = append(append(base, kgo.DefaultProduceTopic(f.topic),
		kgo.MaxBufferedRecords(1<<16), kgo.AllowAutoTopicCreation()), opts...)
	ctx, stop := context.WithCancel(cmd.Context())
	defer stop()
	clients := make([]*kgo.Client, max(f.clients, 1))
	for i := range clients {
		cl, err := kgo.NewClient(opts...)
		if err != nil {
			return err
		}
		defer cl.Close()
		clients[i] = cl
	}
	if err := ensureBenchTopic(ctx, clients[0], f.topic, f.partitions); err != nil {
		return err
	}
	res := runProduce(ctx, clients, run, cmd.ErrOrStderr())
	res.Topic, res.Partitions = f.topic, f.partitions
	return printBench(cmd.OutOrStdout(), f.output, res)
}

func parseCodec(s string) (kgo.CompressionCodec, error) {
	switch s {
	case "none", "":
		return kgo.NoCompression(), nil
	case "gzip":
		return kgo.GzipCompression(), nil
	case "snappy":
		return kgo.SnappyCompression(), nil
	case "lz4":
		return kgo.Lz4Compression(), nil
	case "zstd":
		return kgo.ZstdCompression(), nil
	}
	return kgo.CompressionCodec{}, fmt.Errorf("--compression %q: want none, gzip, snappy, lz4 or zstd", s)
}

func ensureBenchTopic(ctx context.Context, cl *kgo.Client, topic string, partitions int32) error {
	adm := kadm.NewClient(cl)
	resp, err := adm.CreateTopic(ctx, partitions, 1, nil, topic)
	if err == nil {
		err = resp.Err
	}
	if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
		// The broker may still auto-create it on first produce.
		fmt.Fprintf(os.Stderr, "warning: could not create topic %s (%v); relying on auto-creation\n", topic, err)
	}
	return nil
}

func benchConsumeCmd() *cobra.Command {
	var f benchFlags
	var records int64
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "consume",
		Short: "Consume a topic from the start to its current end and report throughput",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return benchConsume(cmd, &f, records, timeout)
		},
	}
	f.register(cmd)
	cmd.Flags().Int64VarP(&records, "records", "n", 0, "stop after this many records (0: the topic's end at start)")
	cmd.Flags().DurationVar(&timeout, "timeout", 10*time.Minute, "give up after this long")
	return cmd
}

// benchConsume reads the topic from the start until records (or, with 0,
// the end offsets listed at start) with --clients clients, each reading
// all of it, and reports their combined throughput.
func benchConsume(cmd *cobra.Command, f *benchFlags, records int64, timeout time.Duration) error {
	ctx, cancel := context.WithTimeout(cmd.Context(), timeout)
	defer cancel()
	base, err := f.clientOpts()
	if err != nil {
		return err
	}
	target, err := benchConsumeTarget(ctx, base, f.topic, records)
	if err != nil {
		return err
	}
	clients := make([]*kgo.Client, max(f.clients, 1))
	for i := range clients {
		cl, err := kgo.NewClient(append(base[:len(base):len(base)], kgo.ConsumeTopics(f.topic),
			kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()), kgo.FetchMaxBytes(64<<20))...)
		if err != nil {
			return err
		}
		defer cl.Close()
		clients[i] = cl
	}
	var n, bytes atomic.Int64
	var size atomic.Int64
	from := f.sample()
	start := time.Now()
	stop := startProgress(cmd.ErrOrStderr(), start, func() (int64, int64) { return n.Load(), bytes.Load() })
	var wg sync.WaitGroup
	for _, cl := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			consumeAll(ctx, cl, target, &n, &bytes, &size, cmd.ErrOrStderr())
		}()
	}
	wg.Wait()
	elapsed := time.Since(start).Seconds()
	to := f.sample()
	stop()
	res := benchResult{Mode: "consume", Topic: f.topic, RecordSize: int(size.Load()), Clients: len(clients),
		Records: n.Load(), Bytes: bytes.Load(), Seconds: elapsed}
	res.RecordsPerS = float64(res.Records) / elapsed
	res.MiBPerS = float64(res.Bytes) / elapsed / (1 << 20)
	res.window(from, to, res.Bytes)
	return printBench(cmd.OutOrStdout(), f.output, res)
}

// consumeAll polls cl until it has read target records.
func consumeAll(ctx context.Context, cl *kgo.Client, target int64, n, bytes, size *atomic.Int64, errs io.Writer) {
	for got := int64(0); got < target; {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			return
		}
		fs.EachError(func(t string, p int32, err error) {
			fmt.Fprintf(errs, "fetch %s/%d: %v\n", t, p, err)
		})
		fs.EachRecord(func(r *kgo.Record) {
			got++
			n.Add(1)
			bytes.Add(int64(len(r.Value) + len(r.Key)))
			size.Store(int64(len(r.Value)))
		})
	}
}

// benchConsumeTarget is how many records to read: the sum of the topic's
// end offsets now, or records when fewer.
func benchConsumeTarget(ctx context.Context, base []kgo.Opt, topic string, records int64) (int64, error) {
	admCl, err := kgo.NewClient(base...)
	if err != nil {
		return 0, err
	}
	ends, err := kadm.NewClient(admCl).ListEndOffsets(ctx, topic)
	admCl.Close()
	if err != nil {
		return 0, err
	}
	var target int64
	ends.Each(func(o kadm.ListedOffset) { target += o.Offset })
	if records > 0 && records < target {
		target = records
	}
	return target, nil
}

// startProgress prints a live progress line on a terminal every second.
func startProgress(w io.Writer, start time.Time, read func() (int64, int64)) func() {
	f, ok := w.(*os.File)
	if !ok {
		return func() {}
	}
	if fi, err := f.Stat(); err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return func() {}
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				fmt.Fprint(w, "\r\033[K")
				return
			case <-t.C:
				n, b := read()
				s := time.Since(start).Seconds()
				fmt.Fprintf(w, "\r\033[K%8.1fs %12d records %10.1f rec/s %8.1f MiB/s", s, n, float64(n)/s, float64(b)/s/(1<<20))
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}

func printBench(w io.Writer, format string, r benchResult) error {
	if format == "json" {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "%s %s: %d records (%d B each) in %.2fs: %.0f records/s, %.2f MiB/s, %d errors\n",
		r.Mode, r.Topic, r.Records, r.RecordSize, r.Seconds, r.RecordsPerS, r.MiBPerS, r.Errors)
	if r.Mode == "produce" {
		fmt.Fprintf(w, "latency ms: p50 %.2f  p99 %.2f  p99.9 %.2f  max %.2f\n", r.LatencyP50Ms, r.LatencyP99Ms, r.LatencyP999, r.LatencyMaxMs)
		if r.SendLagP99Ms > 0 {
			fmt.Fprintf(w, "generator's send lag ms (in the latency, not the broker's): p50 %.2f  p99 %.2f\n", r.SendLagP50Ms, r.SendLagP99Ms)
		}
	}
	if r.ServerCPUSeconds > 0 {
		fmt.Fprintf(w, "broker: %.2f CPU-s, %.0f MiB per CPU-s, %.2f bytes written to storage per byte\n",
			r.ServerCPUSeconds, r.MiBPerServerCPUSecond, r.DiskBytesPerByte)
	}
	if r.MachineCores > 0 {
		fmt.Fprintf(w, "machine: %.2f of %d cores busy, bench client %.2f CPU-s, block devices wrote %.1f MiB/s (%.2f bytes per byte)",
			r.MachineBusyCores, r.MachineCores, r.ClientCPUSeconds, r.DeviceWriteMiBPerS, r.DeviceWriteBytesPerByte)
		if r.BusiestDevice != "" {
			fmt.Fprintf(w, ", %s busy %.0f%% of the time", r.BusiestDevice, 100*r.DeviceBusy)
		}
		fmt.Fprintln(w)
	}
	if r.InflightRequestsAvg > 0 {
		fmt.Fprintf(w, "requests in flight per connection: %.2f on average\n", r.InflightRequestsAvg)
	}
	if len(r.ProduceStages) > 0 {
		fmt.Fprintf(w, "broker's produce stages (ms):")
		for _, st := range r.ProduceStages {
			fmt.Fprintf(w, "  %s mean %.3f p99 <= %g (%d)", st.Stage, st.MeanMs, st.P99Ms, st.Count)
		}
		fmt.Fprintln(w)
	}
	return nil
}

// acksOpts turns --acks into producer options; acks 1 and 0 turn
// idempotence off, as Kafka clients require.
// producerOpts are the kgo options of --acks and --compression.
func producerOpts(acks, compression string) ([]kgo.Opt, error) {
	opts, err := acksOpts(acks)
	if err != nil {
		return nil, err
	}
	codec, err := parseCodec(compression)
	if err != nil {
		return nil, err
	}
	return append(opts, kgo.ProducerBatchCompression(codec)), nil
}

func acksOpts(acks string) ([]kgo.Opt, error) {
	switch acks {
	case "all", "-1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.AllISRAcks())}, nil
	case "1":
		return []kgo.Opt{kgo.RequiredAcks(kgo.LeaderAck()), kgo.DisableIdempotentWrite()}, nil
	case "0":
		return []kgo.Opt{kgo.RequiredAcks(kgo.NoAck()), kgo.DisableIdempotentWrite()}, nil
	}
	return nil, fmt.Errorf("--acks %q: want all, 1 or 0", acks)
}
