// Command gregor is the Gregor broker and its tools.
package main

import (
	"fmt"
	"os"
)

func main() {
	if err := rootCmd().Execute(); err != nil {
		fmt.Fprintln(os.Stderr, "gregor:", err)
		os.Exit(1)
	}
}
