// Command kfake runs franz-go's in-memory fake cluster with a data directory,
// the peer Gregor's benchmarks are compared against in the same run.
//
//	go run ./test/peers/kfake -port 29092 -data /tmp/kfake-data
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/twmb/franz-go/pkg/kfake"
)

func main() {
	port := flag.Int("port", 29092, "listen port on 127.0.0.1")
	data := flag.String("data", "", "kfake DataDir (persistence)")
	syncWrites := flag.Bool("sync", false, "kfake SyncWrites (fsync)")
	flag.Parse()
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.Ports(*port), kfake.AllowAutoTopicCreation()}
	if *data != "" {
		opts = append(opts, kfake.DataDir(*data))
	}
	if *syncWrites {
		opts = append(opts, kfake.SyncWrites())
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("kfake listening on", c.ListenAddrs())
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	<-sig
	c.Close()
}
