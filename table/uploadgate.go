package table

import (
	"context"
	"sync"
)

// gateHold is how many bytes of one data file a gated write holds in
// memory while its gate has not returned; a file that grows past it waits
// for the gate before writing on.
const gateHold = 8 << 20

// WithUploadGate lets WriteFiles (and Draft.WriteFiles, WriteFilesOf)
// encode the data files while the caller is still deciding whether they
// may be stored: the bytes of each file are held in memory (up to 8 MiB
// per file; a larger file waits there) and nothing is sent to the store
// until gate returns. gate is called at most once per write, from the
// goroutines that write the files, with the write's context; when it
// returns an error, no file is stored and the write fails with an error
// wrapping it. The streaming sink overlaps its refresh of the log with
// encoding an epoch this way, so a skipped epoch stores nothing.
func WithUploadGate(gate func(context.Context) error) WriteOption {
	return func(c *writeConfig) {
		if gate == nil {
			c.gate = nil
			return
		}
		var once sync.Once
		var err error
		c.gate = func(ctx context.Context) error {
			once.Do(func() { err = gate(ctx) })
			return err
		}
	}
}
