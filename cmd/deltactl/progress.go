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

// lateProgress is a progress bar made on the first report, when the total
// is known (the operation reports it), for vacuum, optimize and verify.
type lateProgress struct {
	a          *app
	desc, unit string
	bar        progress
}

// lateProgress returns a bar that newProgress makes on the first set.
func (a *app) lateProgress(desc, unit string) *lateProgress {
	return &lateProgress{a: a, desc: desc, unit: unit}
}

// set shows done of total, making the bar on the first call.
func (p *lateProgress) set(done, total int64) {
	if p.bar == nil {
		p.bar = p.a.newProgress(total, p.desc, p.unit)
	}
	p.bar.Set(done)
}

// setInt is set for operations counting in int.
func (p *lateProgress) setInt(done, total int) { p.set(int64(done), int64(total)) }

// Finish finishes the bar, if one was made.
func (p *lateProgress) Finish() {
	if p.bar != nil {
		p.bar.Finish()
	}
}
