package main

import (
	"fmt"
	"math"
	"os"
	"sort"
	"strings"
)

// plot writes a small SVG of each process's RSS over time, with the RSS
// target as a dashed line and the idle time shaded.
func (r *recorder) plot(path string, o options) error {
	const (
		w, h                 = 640.0, 320.0
		left, right, top, bo = 56.0, 16.0, 28.0, 40.0
	)
	names := make([]string, 0, len(r.series))
	maxT, maxY := 60.0, float64(mib(o.maxRSS))*1.1
	for n, pts := range r.series {
		names = append(names, n)
		for _, p := range pts {
			maxT = math.Max(maxT, p.at.Seconds())
			maxY = math.Max(maxY, mib(p.RSS)*1.05)
		}
	}
	sort.Strings(names)
	maxY = math.Ceil(maxY/100) * 100
	x := func(t float64) float64 { return left + t/maxT*(w-left-right) }
	y := func(v float64) float64 { return h - bo - v/maxY*(h-top-bo) }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%.0f" height="%.0f" viewBox="0 0 %.0f %.0f" font-family="sans-serif" font-size="11">`+"\n", w, h, w, h)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%.0f" y="16" font-size="13">ontoflow %s: RSS under load (%s) and idle (%s)</text>`+"\n", left, o.mode, o.duration, o.idle)
	// Idle time.
	if o.idle > 0 {
		x0 := x(o.duration.Seconds())
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.0f" width="%.1f" height="%.0f" fill="#eee"/>`+"\n", x0, top, math.Max(0, w-right-x0), h-top-bo)
		fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" fill="#777">idle</text>`+"\n", x0+3, top+12)
	}
	// Axes and grid.
	for v := 0.0; v <= maxY; v += gridStep(maxY) {
		fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#ddd"/><text x="%.0f" y="%.1f" text-anchor="end">%.0f</text>`+"\n",
			left, w-right, y(v), y(v), left-4, y(v)+4, v)
	}
	stepT := gridStep(maxT / 60)
	for m := 0.0; m*60 <= maxT; m += stepT {
		fmt.Fprintf(&b, `<line x1="%.1f" x2="%.1f" y1="%.0f" y2="%.0f" stroke="#ddd"/><text x="%.1f" y="%.0f" text-anchor="middle">%.0f</text>`+"\n",
			x(m*60), x(m*60), top, h-bo, x(m*60), h-bo+14, m)
	}
	fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">minutes</text>`+"\n", (left+w-right)/2, h-6)
	fmt.Fprintf(&b, `<text x="12" y="%.0f" transform="rotate(-90 12 %.0f)" text-anchor="middle">RSS (MiB)</text>`+"\n", (top+h-bo)/2, (top+h-bo)/2)
	// Target.
	fmt.Fprintf(&b, `<line x1="%.0f" x2="%.0f" y1="%.1f" y2="%.1f" stroke="#c00" stroke-dasharray="6 4"/><text x="%.0f" y="%.1f" fill="#c00" text-anchor="end">target %.0f MiB</text>`+"\n",
		left, w-right, y(mib(o.maxRSS)), y(mib(o.maxRSS)), w-right-2, y(mib(o.maxRSS))-4, mib(o.maxRSS))
	// Series.
	colors := []string{"#1f77b4", "#2ca02c", "#ff7f0e", "#9467bd"}
	for i, n := range names {
		var pts []string
		for _, p := range r.series[n] {
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(p.at.Seconds()), y(mib(p.RSS))))
		}
		c := colors[i%len(colors)]
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", c, strings.Join(pts, " "))
		fmt.Fprintf(&b, `<rect x="%.0f" y="%.0f" width="10" height="10" fill="%s"/><text x="%.0f" y="%.0f">%s</text>`+"\n",
			left+10+float64(i)*90, h-bo-18, c, left+24+float64(i)*90, h-bo-9, n)
	}
	b.WriteString("</svg>\n")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return fmt.Errorf("write plot: %w", err)
	}
	return nil
}

// gridStep is a round step giving four to ten grid lines up to max.
func gridStep(max float64) float64 {
	for _, s := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000} {
		if max/s <= 10 {
			return s
		}
	}
	return 2000
}
