// Command deltactl inspects and maintains Delta tables on the local
// filesystem or on S3-compatible storage.
package main

import (
	"fmt"
	"os"
)

// version is the deltakit release this binary belongs to.
const version = "0.1.0-dev"

func main() {
	if len(os.Args) > 1 && os.Args[1] == "version" {
		fmt.Println("deltactl", version)
		return
	}
	fmt.Fprintln(os.Stderr, "usage: deltactl version")
	os.Exit(2)
}
