package main

import (
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
)

// progress reports the advance of long work. The terminal implementation
// draws a bar on stderr; the silent one does nothing, so that output
// redirected to a file or a pipe stays clean.
type progress interface {
	// Set sets the amount done so far.
	Set(done int64)
	// Add adds n to the amount done.
	Add(n int64)
	// Clear erases the bar from the terminal until the next update, so that
	// a line can be printed.
	Clear()
	// Finish completes the bar and erases it.
	Finish()
	// Describe replaces the text shown before the bar.
	Describe(desc string)
}

type silentProgress struct{}

func (silentProgress) Set(int64) {}
func (silentProgress) Add(int64) {}
func (silentProgress) Clear()    {}
func (silentProgress) Finish()   {}

func (silentProgress) Describe(string) {}

type barProgress struct {
	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func (p *barProgress) Set(done int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Set64(done)
}

func (p *barProgress) Add(n int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Add64(n)
}

func (p *barProgress) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Clear()
}

func (p *barProgress) Describe(desc string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.bar.Describe(desc)
}

func (p *barProgress) Finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.bar.Finish()
	_ = p.bar.Clear()
}

// newProgress returns a bar for total units (-1: unknown) described by
// desc, or a silent progress when stdout is not a terminal, --progress=false
// or -o json.
func (a *app) newProgress(total int64, desc, unit string) progress {
	if !a.tty || !a.progress || a.output == "json" {
		return silentProgress{}
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(a.stderr),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionSetPredictTime(true),
	}
	if unit != "" {
		opts = append(opts, progressbar.OptionSetItsString(unit), progressbar.OptionShowIts())
	}
	return &barProgress{bar: progressbar.NewOptions64(total, opts...)}
}
