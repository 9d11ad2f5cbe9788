package e2e

import (
	"crypto/hmac"
	"crypto/sha256"
	"crypto/tls"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/plain"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/gregor-broker/gregor/internal/auth"
	"github.com/gregor-broker/gregor/internal/testpki"
)

func longOnly(t *testing.T) {
	if os.Getenv("GREGOR_LONG") == "" {
		t.Skip("a throughput measurement; set GREGOR_LONG=1 to run it")
	}
}

// perfValues are incompressible 1 KiB values (the producer compresses
// nothing either), so the runs measure moving bytes, not compressing zeros.
func perfValues(size int) [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	vals := make([][]byte, 256)
	for i := range vals {
		vals[i] = make([]byte, size)
		for j := range vals[i] {
			vals[i][j] = byte(rng.Uint32())
		}
	}
	return vals
}

// rate is one measured phase: MB/s and the broker's CPU time per MB.
type rate struct{ mbps, cpuPerMB float64 }

// throughput produces n records of the values' size to topic with a client
// made of opts, then consumes them with another, and measures both phases
// against the broker process pid.
func throughput(t *testing.T, pid int, opts []kgo.Opt, topic string, n int, vals [][]byte) (produce, consume rate) {
	t.Helper()
	ctx := testCtx(t, 5*time.Minute)
	size := len(vals[0])
	cl, err := kgo.NewClient(append(opts, kgo.DefaultProduceTopic(topic), kgo.ProducerLinger(5*time.Millisecond),
		kgo.ProducerBatchCompression(kgo.NoCompression()), kgo.MaxBufferedRecords(1<<15))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	measure := func(run func()) rate {
		cpu0, start := procCPU(t, pid), time.Now()
		run()
		elapsed, cpu := time.Since(start), procCPU(t, pid)-cpu0
		mb := float64(n*size) / 1e6
		return rate{mbps: mb / elapsed.Seconds(), cpuPerMB: cpu.Seconds() * 1e3 / mb}
	}
	var failed atomic.Int64
	produce = measure(func() {
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			cl.Produce(ctx, &kgo.Record{Value: vals[i%len(vals)]}, func(_ *kgo.Record, err error) {
				if err != nil {
					failed.Add(1)
				}
				wg.Done()
			})
		}
		wg.Wait()
	})
	if failed.Load() > 0 {
		t.Fatalf("%d records failed", failed.Load())
	}
	consumer, err := kgo.NewClient(append(opts, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.FetchMaxBytes(64<<20))...)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	consume = measure(func() {
		for got := 0; got < n; {
			f := consumer.PollFetches(ctx)
			if err := f.Err(); err != nil {
				t.Fatal(err)
			}
			got += f.NumRecords()
		}
	})
	return produce, consume
}

// Produce and consume throughput of SSL (TLS 1.3, AES-GCM) and SASL_SSL
// (SCRAM-SHA-256 over the same) against PLAINTEXT, in one run of the gregor
// binary, 1 KiB incompressible records, ACLs checked on every listener: the
// issue asks for at least 0.7x. Rounds interleave the listeners (in a
// rotating order) so that load from elsewhere on a shared machine weighs on
// all alike; the figures are medians of each round's ratios. Also reported:
// the broker's CPU milliseconds per MB, read from /proc, which a busy
// machine disturbs less than the wall clock. PLAINTEXT consumers are served with
// sendfile(2), TLS ones through the copy path.
func TestSecurityThroughputRatio(t *testing.T) {
	longOnly(t)
	dir := t.TempDir()
	ca := testpki.New(t)
	keystore, _, _ := ca.Issue(t, "broker", []string{"localhost"}).WriteFiles(t, dir, "broker")
	sslPort, saslPort := freePort(t), freePort(t)
	p := startProc(t, filepath.Join(dir, "data"),
		"--set", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:%d,SASL_SSL://127.0.0.1:%d", sslPort, saslPort),
		"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location="+keystore,
		"--set", "sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN",
		"--set", "listener.name.sasl_ssl.plain.sasl.jaas.config="+adminJAAS,
		"--set", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--set", "super.users=User:admin")
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS13}
	saslAddr := fmt.Sprintf("127.0.0.1:%d", saslPort)
	adminCl, err := kgo.NewClient(kgo.SeedBrokers(saslAddr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer adminCl.Close()
	adm := kadm.NewClient(adminCl)
	setScram(t, adm, "bench", "bench-pw", kadm.ScramSha256)
	ctx := testCtx(t, 10*time.Minute)
	// The same ACLs for the SASL user and the unauthenticated (PLAINTEXT,
	// SSL) clients, so every listener pays for the same checks.
	mustACL(t, adm, kadm.NewACLs().Allow("User:bench", "User:ANONYMOUS").Topics("perf-").ResourcePatternType(kadm.ACLPatternPrefixed).
		Groups("*").Operations(kadm.OpAll))
	mustACL(t, adm, kadm.NewACLs().Allow("User:bench", "User:ANONYMOUS").Clusters().Operations(kadm.OpIdempotentWrite))
	listeners := []struct {
		name string
		opts []kgo.Opt
	}{
		{"PLAINTEXT", []kgo.Opt{kgo.SeedBrokers(p.addr)}},
		{"SSL", []kgo.Opt{kgo.SeedBrokers(fmt.Sprintf("127.0.0.1:%d", sslPort)), kgo.DialTLSConfig(tlsCfg)}},
		{"SASL_SSL", []kgo.Opt{kgo.SeedBrokers(saslAddr), kgo.DialTLSConfig(tlsCfg),
			kgo.SASL(scram.Auth{User: "bench", Pass: "bench-pw"}.AsSha256Mechanism())}},
	}
	n, rounds := 400000, 7
	if v, err := strconv.Atoi(os.Getenv("GREGOR_PERF_RECORDS")); err == nil {
		n = v
	}
	vals := perfValues(1024)
	// got[round][listener] is the produce and consume rate of that run.
	got := make([][][2]rate, rounds)
	for round := range rounds {
		got[round] = make([][2]rate, len(listeners))
		for k := range listeners {
			i := (k + round) % len(listeners)
			l := listeners[i]
			topic := fmt.Sprintf("perf-%d-%s", round, strings.ToLower(l.name))
			if _, err := adm.CreateTopic(ctx, 1, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			pr, cr := throughput(t, p.cmd.Process.Pid, l.opts, topic, n, vals)
			t.Logf("round %d %-9s produce %6.1f MB/s (broker %.2f ms CPU/MB), consume %6.1f MB/s (broker %.2f ms CPU/MB)",
				round, l.name, pr.mbps, pr.cpuPerMB, cr.mbps, cr.cpuPerMB)
			got[round][i] = [2]rate{pr, cr}
			if _, err := adm.DeleteTopics(ctx, topic); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Each round's ratio against the PLAINTEXT run of the same round, and
	// their median: a burst of load from elsewhere spoils one round, not
	// the figure.
	median := func(f func(r [][2]rate) float64) float64 {
		v := make([]float64, rounds)
		for round := range rounds {
			v[round] = f(got[round])
		}
		slices.Sort(v)
		return v[rounds/2]
	}
	for i := 1; i < len(listeners); i++ {
		pr := median(func(r [][2]rate) float64 { return r[i][0].mbps / r[0][0].mbps })
		cr := median(func(r [][2]rate) float64 { return r[i][1].mbps / r[0][1].mbps })
		pc := median(func(r [][2]rate) float64 { return r[i][0].cpuPerMB / r[0][0].cpuPerMB })
		cc := median(func(r [][2]rate) float64 { return r[i][1].cpuPerMB / r[0][1].cpuPerMB })
		t.Logf("%s/PLAINTEXT, median of %d rounds of %d 1 KiB records: throughput produce %.2fx, consume %.2fx; broker CPU per MB produce %.2fx, consume %.2fx "+
			"(clients and broker on one 2-core machine shared with other work)", listeners[i].name, rounds, n, pr, cr, pc, cc)
		// The issue's target is for SASL_SSL; SSL pays for the same TLS
		// and is reported beside it.
		if listeners[i].name == "SASL_SSL" && (pr < 0.7 || cr < 0.7) {
			t.Errorf("%s throughput below 0.7x plaintext: produce %.2fx, consume %.2fx", listeners[i].name, pr, cr)
		}
	}
}

// New connections authenticated per second: TLS 1.3 handshake plus a
// SCRAM-SHA-256 exchange, 8 at a time, against the gregor binary. The
// clients are minimal (the salted password computed once, as a client that
// caches it would), and the broker's own CPU time (from /proc) is what
// counts: on a shared machine the wall-clock rate says more about the
// other tenants and the clients in this process than about the broker.
func TestSecurityConnectionRate(t *testing.T) {
	longOnly(t)
	dir := t.TempDir()
	ca := testpki.New(t)
	keystore, _, _ := ca.Issue(t, "broker", []string{"localhost"}).WriteFiles(t, dir, "broker")
	port := freePort(t)
	p := startProc(t, filepath.Join(dir, "data"),
		"--set", fmt.Sprintf("listeners=PLAINTEXT://127.0.0.1:0,SASL_SSL://127.0.0.1:%d", port),
		"--set", "listener.security.protocol.map=PLAINTEXT:PLAINTEXT,SASL_SSL:SASL_SSL,CONTROLLER:PLAINTEXT",
		"--set", "ssl.keystore.type=PEM", "--set", "ssl.keystore.location="+keystore,
		"--set", "sasl.enabled.mechanisms=SCRAM-SHA-256,PLAIN",
		"--set", "listener.name.sasl_ssl.plain.sasl.jaas.config="+adminJAAS,
		"--set", "authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer",
		"--set", "super.users=User:admin")
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	tlsCfg := &tls.Config{RootCAs: ca.Pool(), ServerName: "localhost", MinVersion: tls.VersionTLS12}
	admin, err := kgo.NewClient(kgo.SeedBrokers(addr), kgo.DialTLSConfig(tlsCfg),
		kgo.SASL(plain.Auth{User: "admin", Pass: "admin-secret"}.AsMechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	salt := []byte("connection-rate-salt")
	salted, err := auth.SaltPassword(auth.ScramSHA256, "bench-pw", salt, 4096)
	if err != nil {
		t.Fatal(err)
	}
	res, err := kadm.NewClient(admin).AlterUserSCRAMs(testCtx(t, 30*time.Second), nil,
		[]kadm.UpsertSCRAM{{User: "bench", Mechanism: kadm.ScramSha256, Iterations: 4096, Salt: salt, SaltedPassword: salted}})
	if err == nil {
		err = res.Error()
	}
	if err != nil {
		t.Fatal(err)
	}
	conns, parallel := 2000, 8
	if n, err := strconv.Atoi(os.Getenv("GREGOR_CONN_PARALLEL")); err == nil {
		parallel = n
	}
	var next, failed atomic.Int64
	var firstErr atomic.Value
	cpu0 := procCPU(t, p.cmd.Process.Pid)
	start := time.Now()
	var wg sync.WaitGroup
	for range parallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(conns) {
				if err := scramConnect(addr, tlsCfg, salted); err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err)
				}
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	cpu := procCPU(t, p.cmd.Process.Pid) - cpu0
	perCPUSecond := float64(conns) / cpu.Seconds()
	t.Logf("%d SASL_SSL SCRAM-SHA-256 connections in %v (%.0f per second, clients and broker on one shared 2-core machine); "+
		"the broker used %v of CPU: %.0f µs per connection, %.0f connections per broker CPU-second",
		conns, elapsed.Round(time.Millisecond), float64(conns)/elapsed.Seconds(), cpu, float64(cpu.Microseconds())/float64(conns), perCPUSecond)
	if failed.Load() > 0 {
		t.Errorf("%d connections failed, first: %v", failed.Load(), firstErr.Load())
	}
	if perCPUSecond < 1000 {
		t.Errorf("%.0f authenticated connections per broker CPU-second, want 1000", perCPUSecond)
	}
}

// procCPU is a process's user plus system CPU time, from /proc/PID/stat
// (in clock ticks of 1/100 s, Linux's USER_HZ).
func procCPU(t *testing.T, pid int) time.Duration {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command name, which is in parentheses.
	fields := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	utime, _ := strconv.ParseInt(fields[11], 10, 64)
	stime, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}

// scramConnect opens a TLS connection, authenticates with SCRAM-SHA-256
// (SaslHandshake v1, SaslAuthenticate v2) and closes it.
func scramConnect(addr string, cfg *tls.Config, salted []byte) error {
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(10 * time.Second))
	f := kmsg.NewRequestFormatter()
	var corr int32
	send := func(req kmsg.Request) (kmsg.Response, error) {
		corr++
		if _, err := c.Write(f.AppendRequest(nil, req, corr)); err != nil {
			return nil, err
		}
		var size [4]byte
		if _, err := io.ReadFull(c, size[:]); err != nil {
			return nil, err
		}
		buf := make([]byte, binary.BigEndian.Uint32(size[:]))
		if _, err := io.ReadFull(c, buf); err != nil {
			return nil, err
		}
		rd := kbin.Reader{Src: buf[4:]}
		resp := req.ResponseKind()
		resp.SetVersion(req.GetVersion())
		if resp.IsFlexible() {
			for i := rd.Uvarint(); i > 0; i-- {
				rd.Uvarint()
				rd.Span(int(rd.Uvarint()))
			}
		}
		return resp, resp.ReadFrom(rd.Src)
	}
	hs := kmsg.NewPtrSASLHandshakeRequest()
	hs.Version, hs.Mechanism = 1, "SCRAM-SHA-256"
	if r, err := send(hs); err != nil || r.(*kmsg.SASLHandshakeResponse).ErrorCode != 0 {
		return fmt.Errorf("handshake: %v %+v", err, r)
	}
	nonce := fmt.Sprintf("%x", time.Now().UnixNano())
	authReq := func(msg string) (string, error) {
		req := kmsg.NewPtrSASLAuthenticateRequest()
		req.Version, req.SASLAuthBytes = 2, []byte(msg)
		r, err := send(req)
		if err != nil {
			return "", err
		}
		if resp := r.(*kmsg.SASLAuthenticateResponse); resp.ErrorCode != 0 {
			return "", fmt.Errorf("%v: %s", kerr.ErrorForCode(resp.ErrorCode), deref(resp.ErrorMessage))
		} else {
			return string(resp.SASLAuthBytes), nil
		}
	}
	serverFirst, err := authReq("n,,n=bench,r=" + nonce)
	if err != nil {
		return err
	}
	fullNonce := strings.TrimPrefix(strings.Split(serverFirst, ",")[0], "r=")
	mac := func(key []byte, msg string) []byte {
		h := hmac.New(sha256.New, key)
		h.Write([]byte(msg))
		return h.Sum(nil)
	}
	clientKey := mac(salted, "Client Key")
	stored := sha256.Sum256(clientKey)
	withoutProof := "c=biws,r=" + fullNonce
	sig := mac(stored[:], "n=bench,r="+nonce+","+serverFirst+","+withoutProof)
	for i := range clientKey {
		clientKey[i] ^= sig[i]
	}
	_, err = authReq(withoutProof + ",p=" + base64.StdEncoding.EncodeToString(clientKey))
	return err
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
