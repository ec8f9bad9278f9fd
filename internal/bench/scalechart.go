package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"sort"
	"time"
)

// ScaleChart draws the scale grid as a PNG: for each arrival rate, one bar
// per partition count, its height the share of the offered rate delivered
// (sustained / rate, capped at 1.1), its label the p99 enqueue-to-call
// latency ("-" when the point did not deliver).
func ScaleChart(w io.Writer, pts []ScalePoint, title string) error {
	const (
		W, H                  = 1000, 520
		left, right, top, bot = 70, 30, 60, 90
	)
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	var rates []float64
	var parts []int
	seenR, seenP := map[float64]bool{}, map[int]bool{}
	for _, pt := range pts {
		if !seenR[pt.Params.Rate] {
			seenR[pt.Params.Rate] = true
			rates = append(rates, pt.Params.Rate)
		}
		if !seenP[pt.Params.Partitions] {
			seenP[pt.Params.Partitions] = true
			parts = append(parts, pt.Params.Partitions)
		}
	}
	sort.Float64s(rates)
	sort.Ints(parts)
	cols := []color.Color{colIndex, colBase, colFloor, colStraig, colAxis}
	const maxV = 1.1
	plotH := float64(H - top - bot)
	y := func(v float64) int { return H - bot - int(v/maxV*plotH+0.5) }
	for v := 0.0; v <= 1.0001; v += 0.25 {
		hline(img, left, W-right, y(v), colGrid)
		text(img, left-40, y(v)+4, fmt.Sprintf("%3.0f%%", v*100), colAxis)
	}
	vline(img, left, top, H-bot, colAxis)
	hline(img, left, W-right, H-bot, colAxis)
	text(img, left, 22, title, colAxis)
	text(img, 8, top-14, "delivered / offered (bar), p99 enqueue-to-call (label)", colAxis)
	groupW := (W - left - right) / max(len(rates), 1)
	barW := (groupW - 30) / max(len(parts), 1)
	for gi, rate := range rates {
		x0 := left + gi*groupW + 15
		for pi, n := range parts {
			for _, pt := range pts {
				if pt.Params.Rate != rate || pt.Params.Partitions != n {
					continue
				}
				v := min(pt.Sustained/rate, maxV)
				bx := x0 + pi*barW
				fill(img, bx+2, y(v), bx+barW-2, H-bot, cols[pi%len(cols)])
				lab := "-"
				if pt.Undelivered <= pt.Arrivals/100 {
					lab = fmtDur(pt.P99.Round(10 * time.Millisecond))
				}
				text(img, bx+2, y(v)-4, lab, colAxis)
			}
		}
		text(img, x0+groupW/2-50, H-bot+20, fmt.Sprintf("%.0f actions/s", rate), colAxis)
	}
	// Legend.
	lx := left
	for pi, n := range parts {
		fill(img, lx, H-30, lx+14, H-16, cols[pi%len(cols)])
		text(img, lx+20, H-18, fmt.Sprintf("%d partitions", n), colAxis)
		lx += 150
	}
	return png.Encode(w, img)
}
