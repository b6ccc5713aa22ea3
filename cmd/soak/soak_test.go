package main

import (
	"math"
	"testing"
	"time"
)

// The live heap is read from the GC trace and the trace lines are not kept
// with the other output.
func TestGCTrace(t *testing.T) {
	var g gcTrace
	if g.liveHeap() != -1 {
		t.Fatal("a heap before any GC")
	}
	g.Write([]byte("starting\ngc 1 @0.012s 2%: 0.010+1.2+0.003 ms clock, 0.020+0.5/1.0/0+0.007 ms cpu, 4->5->3 MB, 4 MB goal, 0 MB stacks, 0 MB globals, 2 P\ngc 2 @0.1s 1%: 0.1+2+0.01 ms clock, 0.2+1/2/0+0.02 ms cpu, 40->42"))
	g.Write([]byte("->21 MB, 44 MB goal, 0 MB stacks, 0 MB globals, 2 P\nother\n"))
	if got := g.liveHeap(); got != 21<<20 {
		t.Errorf("live heap %d, want 21 MiB", got)
	}
	if got := g.tail(100); got != "starting\nother\n" {
		t.Errorf("tail %q", got)
	}
}

// Growth is measured over the last 10 minutes of the load (its last half
// when shorter), idle against the end of the load.
func TestFigures(t *testing.T) {
	var pts []point
	for i := 0; i <= 120; i++ { // 20 minutes every 10 s: 400 MiB, then +1 MiB a minute from minute 10
		rss := int64(400 << 20)
		if i > 60 {
			rss += int64(i-60) << 20 / 6
		}
		pts = append(pts, point{at: time.Duration(i) * 10 * time.Second, phase: "load", sample: sample{RSS: rss}})
	}
	pts = append(pts, point{at: 21 * time.Minute, phase: "idle", sample: sample{RSS: 405 << 20}})
	f, ok := figuresOf(pts, options{})
	if !ok {
		t.Fatal("no figures")
	}
	if f.windowLen != 10*time.Minute || f.window.at != 10*time.Minute {
		t.Errorf("window %s from %s", f.windowLen, f.window.at)
	}
	if want := 10.0 / 400; math.Abs(f.growth-want) > 1e-9 {
		t.Errorf("growth %v, want %v", f.growth, want)
	}
	if want := -5.0 / 410; math.Abs(f.idleDiff-want) > 1e-9 {
		t.Errorf("idle %v, want %v", f.idleDiff, want)
	}
	short, _ := figuresOf(pts[:31], options{}) // 5 minutes
	if short.windowLen != 150*time.Second {
		t.Errorf("window of a 5-minute run: %s", short.windowLen)
	}
}
