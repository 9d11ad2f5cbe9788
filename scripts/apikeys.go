//go:build ignore

// apikeys prints the API keys a broker advertises in ApiVersions, one
// "key min max name" line each, so scripts can tell which features it serves.
//
// Usage: go run scripts/apikeys.go 127.0.0.1:9092
package main

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: apikeys HOST:PORT")
		os.Exit(2)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(os.Args[1]))
	if err != nil {
		fmt.Fprintln(os.Stderr, "apikeys:", err)
		os.Exit(1)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrApiVersionsRequest().RequestWith(ctx, cl)
	if err == nil && resp.ErrorCode != 0 {
		err = fmt.Errorf("ApiVersions error code %d", resp.ErrorCode)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "apikeys:", err)
		os.Exit(1)
	}
	for _, k := range resp.ApiKeys {
		fmt.Printf("%d %d %d %s\n", k.ApiKey, k.MinVersion, k.MaxVersion, kmsg.NameForKey(k.ApiKey))
	}
}
