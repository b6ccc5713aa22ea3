package main

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"
)

// point is one sample of one process.
type point struct {
	at                   time.Duration
	phase                string
	executions, batchers int64
	dav                  int64
	sample
}

// recorder writes the samples to a CSV file as they come and keeps them
// for the plot and the verdict.
type recorder struct {
	f      *os.File
	w      *csv.Writer
	procs  []*proc
	series map[string][]point
}

func newRecorder(path string, procs []*proc) (*recorder, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	r := &recorder{f: f, w: csv.NewWriter(f), procs: procs, series: map[string][]point{}}
	err = r.w.Write([]string{"elapsed_s", "phase", "executions", "batch_items", "webdav_requests", "process", "rss_mib", "heap_inuse_mib", "goroutines"})
	return r, err
}

func (r *recorder) take(ctx context.Context, at time.Duration, phase string, l *load) error {
	for _, p := range r.procs {
		s, err := p.read(ctx)
		if err != nil {
			return err
		}
		pt := point{at: at, phase: phase, executions: l.executions.Load(), batchers: l.batchDone.Load(), dav: l.davReqs.Load(), sample: s}
		r.series[p.name] = append(r.series[p.name], pt)
		heap, gor := "", ""
		if s.Heap >= 0 {
			heap = fmt.Sprintf("%.1f", mib(s.Heap))
		}
		if s.Goroutines >= 0 {
			gor = strconv.Itoa(s.Goroutines)
		}
		if err := r.w.Write([]string{fmt.Sprintf("%.0f", at.Seconds()), phase, strconv.FormatInt(pt.executions, 10),
			strconv.FormatInt(pt.batchers, 10), strconv.FormatInt(pt.dav, 10), p.name, fmt.Sprintf("%.1f", mib(s.RSS)), heap, gor}); err != nil {
			return err
		}
		fmt.Fprintf(os.Stderr, "%6.0fs %-4s %-7s rss %6.1f MiB heap %6s MiB goroutines %5s executions %d batch items %d webdav %d\n",
			at.Seconds(), phase, p.name, mib(s.RSS), heap, gor, pt.executions, pt.batchers, pt.dav)
	}
	r.w.Flush()
	return r.w.Error()
}

func (r *recorder) close() { _ = r.f.Close() }

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// figures are one process's verdict inputs.
type figures struct {
	start, end, window, idle point
	growth, idleDiff         float64
	windowLen                time.Duration
}

// figuresOf reads the RSS at the end of the load, at the start of the
// growth window (the last 10 minutes of the load, or its last half if
// shorter) and at the end of the idle time.
func figuresOf(pts []point, o options) (figures, bool) {
	var f figures
	var load []point
	for _, p := range pts {
		if p.phase == "load" {
			load = append(load, p)
		}
	}
	if len(load) < 2 {
		return f, false
	}
	f.start, f.end = load[0], load[len(load)-1]
	f.windowLen = min(10*time.Minute, f.end.at/2)
	f.window = load[0]
	for _, p := range load {
		if p.at <= f.end.at-f.windowLen {
			f.window = p
		}
	}
	f.growth = float64(f.end.RSS-f.window.RSS) / float64(f.window.RSS)
	f.idle = pts[len(pts)-1]
	f.idleDiff = float64(f.idle.RSS-f.end.RSS) / float64(f.end.RSS)
	return f, true
}

// summary prints a Markdown table and returns an error when a target is
// missed.
func (r *recorder) summary(w io.Writer, o options) error {
	var errs []error
	fmt.Fprintf(w, "\n| process | RSS at start | RSS after %s of load | growth over the last %s | RSS after %s idle | heap in use (end) | goroutines (end) | executions | batch items | WebDAV requests |\n",
		o.duration, "half (≤ 10 min)", o.idle)
	fmt.Fprintln(w, "|---|---|---|---|---|---|---|---|---|---|")
	for _, p := range r.procs {
		f, ok := figuresOf(r.series[p.name], o)
		if !ok {
			errs = append(errs, fmt.Errorf("%s: too few samples", p.name))
			continue
		}
		heap, gor := "n/a", "n/a"
		if f.end.Heap >= 0 {
			heap = fmt.Sprintf("%.0f MiB", mib(f.end.Heap))
		}
		if f.end.Goroutines >= 0 {
			gor = strconv.Itoa(f.end.Goroutines)
		}
		fmt.Fprintf(w, "| %s | %.0f MiB | %.0f MiB | %+.1f%% (%s: %.0f → %.0f MiB) | %.0f MiB (%+.1f%%) | %s | %s | %d | %d | %d |\n",
			p.name, mib(f.start.RSS), mib(f.end.RSS), f.growth*100, f.windowLen, mib(f.window.RSS), mib(f.end.RSS),
			mib(f.idle.RSS), f.idleDiff*100, heap, gor, f.end.executions, f.end.batchers, f.end.dav)
		if f.end.RSS > o.maxRSS {
			errs = append(errs, fmt.Errorf("%s: RSS %.0f MiB > %.0f MiB", p.name, mib(f.end.RSS), mib(o.maxRSS)))
		}
		if f.growth > o.maxGrowth {
			errs = append(errs, fmt.Errorf("%s: RSS grew %.1f%% over the last %s (> %.0f%%)", p.name, f.growth*100, f.windowLen, o.maxGrowth*100))
		}
		if f.idle.phase == "idle" && (f.idleDiff > o.maxIdleDiff || f.idleDiff < -o.maxIdleDiff) {
			errs = append(errs, fmt.Errorf("%s: RSS after idle %+.1f%% of the end of the load", p.name, f.idleDiff*100))
		}
	}
	if len(r.procs) > 0 {
		if f, ok := figuresOf(r.series[r.procs[0].name], o); ok && f.end.at > 0 {
			fmt.Fprintf(w, "\nThroughput under load: %.1f executions/s, %.1f batch items/s, %.1f WebDAV requests/s.\n",
				float64(f.end.executions)/f.end.at.Seconds(), float64(f.end.batchers)/f.end.at.Seconds(), float64(f.end.dav)/f.end.at.Seconds())
		}
	}
	if len(errs) > 0 {
		var b strings.Builder
		for _, e := range errs {
			b.WriteString("\n  " + e.Error())
		}
		fmt.Fprintf(w, "\nTargets missed:%s\n", b.String())
		return errors.Join(errs...)
	}
	fmt.Fprintf(w, "\nTargets met: RSS ≤ %.0f MiB, growth ≤ %.0f%%, idle within %.0f%%.\n", mib(o.maxRSS), o.maxGrowth*100, o.maxIdleDiff*100)
	return nil
}
