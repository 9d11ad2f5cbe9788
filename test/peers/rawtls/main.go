// Command rawtls is the floor of what TLS costs a reader on this machine:
// a client process writes -mb MiB in 1 MiB writes over loopback, plainly
// and through crypto/tls (TLS 1.3, the cipher Go picks: AES-GCM with
// AES-NI), and the reading process reports its throughput and its own CPU
// milliseconds per MB for each, alternating -rounds times. A broker
// reading produce requests over TLS pays at least the difference between
// the two per MB on top of its plaintext cost (Go decrypts each record in
// place and copies it out), whatever it does with the bytes.
//
//	go run ./test/peers/rawtls -mb 2048 -rounds 2
package main

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"flag"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"syscall"
	"time"
)

func cpu() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

func cert() tls.Certificate {
	k, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	t := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "x"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), DNSNames: []string{"localhost"}}
	d, _ := x509.CreateCertificate(rand.Reader, t, t, &k.PublicKey, k)
	return tls.Certificate{Certificate: [][]byte{d}, PrivateKey: k}
}

func main() {
	if len(os.Args) > 3 && os.Args[1] == "client" {
		client(os.Args[2], os.Args[3], os.Args[4])
		return
	}
	mb := flag.Int("mb", 2048, "MiB sent per run")
	rounds := flag.Int("rounds", 2, "rounds of a plain and a TLS run")
	flag.Parse()
	serve(*mb, *rounds)
}

// client writes mb MiB to addr, through TLS when mode is "tls".
func client(addr, mode, mb string) {
	var total int
	fmt.Sscan(mb, &total)
	total <<= 20
	c, err := net.Dial("tcp", addr)
	if err != nil {
		panic(err)
	}
	var w io.Writer = c
	if mode == "tls" {
		// The reader's certificate is made up per run: nothing to verify.
		w = tls.Client(c, &tls.Config{InsecureSkipVerify: true, MinVersion: tls.VersionTLS13})
	}
	buf := make([]byte, 1<<20)
	for n := 0; n < total; n += len(buf) {
		if _, err := w.Write(buf); err != nil {
			panic(err)
		}
	}
}

// serve reads mb MiB from a client process per run, plain and TLS in turn.
func serve(mb, rounds int) {
	total := mb << 20
	for i := range 2 * rounds {
		mode := []string{"plain", "tls"}[i%2]
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			panic(err)
		}
		cmd := exec.Command(os.Args[0], "client", ln.Addr().String(), mode, fmt.Sprint(mb))
		if err := cmd.Start(); err != nil {
			panic(err)
		}
		c, err := ln.Accept()
		if err != nil {
			panic(err)
		}
		var r io.Reader = c
		if mode == "tls" {
			r = tls.Server(c, &tls.Config{Certificates: []tls.Certificate{cert()}})
		}
		buf := make([]byte, 1<<20)
		c0, t0 := cpu(), time.Now()
		for n := 0; n < total; n += len(buf) {
			if _, err := io.ReadFull(r, buf); err != nil {
				panic(err)
			}
		}
		c1, el := cpu()-c0, time.Since(t0).Seconds()
		cmd.Wait()
		megabytes := float64(total) / 1e6
		fmt.Printf("%-5s reader: %.0f MB/s wall, %.3f ms CPU per MB\n", mode, megabytes/el, c1*1000/megabytes)
		ln.Close()
	}
}
