package bench

import (
	"fmt"
	"image"
	"image/color"
	"image/draw"
	"image/png"
	"io"
	"math"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"
)

// Reference lines of the chart (issue 8): the floor of any DynamoDB outbox
// (one put, one claim, one end) and a straightforward design with its
// indexes.
const (
	FloorWRU           = 3.0
	StraightforwardWRU = 10.2
)

var (
	colBase   = color.RGBA{0x2f, 0x6f, 0xb3, 0xff}
	colIndex  = color.RGBA{0x8c, 0xbf, 0xe6, 0xff}
	colFloor  = color.RGBA{0x2a, 0x9d, 0x3f, 0xff}
	colStraig = color.RGBA{0xc9, 0x3c, 0x2c, 0xff}
	colAxis   = color.RGBA{0x33, 0x33, 0x33, 0xff}
	colGrid   = color.RGBA{0xe4, 0xe4, 0xe4, 0xff}
)

// Chart draws write units per delivered action by workload (base table and
// indexes stacked) against the floor and the straightforward design, as a
// PNG.
func Chart(w io.Writer, cs []Cost, title string) error {
	const (
		W, H                  = 1000, 520
		left, right, top, bot = 70, 30, 60, 110
	)
	img := image.NewRGBA(image.Rect(0, 0, W, H))
	draw.Draw(img, img.Bounds(), image.White, image.Point{}, draw.Src)
	maxV := StraightforwardWRU
	for _, c := range cs {
		maxV = math.Max(maxV, c.WRU)
	}
	maxV = math.Ceil(maxV/2)*2 + 2
	plotH := float64(H - top - bot)
	y := func(v float64) int { return H - bot - int(v/maxV*plotH+0.5) }
	// Grid and axis labels.
	for v := 0.0; v <= maxV; v += 2 {
		hline(img, left, W-right, y(v), colGrid)
		text(img, left-30, y(v)+4, fmt.Sprintf("%4.0f", v), colAxis)
	}
	vline(img, left, top, H-bot, colAxis)
	hline(img, left, W-right, H-bot, colAxis)
	text(img, left, 22, title, colAxis)
	text(img, 8, top-14, "write request units per delivered action", colAxis)
	// Bars.
	n := len(cs)
	slot := float64(W-left-right) / float64(max(n, 1))
	bw := int(slot * 0.6)
	for i, c := range cs {
		x0 := left + int(slot*float64(i)+slot*0.2)
		fill(img, x0, y(c.BaseWRU), x0+bw, H-bot, colBase)
		fill(img, x0, y(c.WRU), x0+bw, y(c.BaseWRU), colIndex)
		text(img, x0, y(c.WRU)-4, fmt.Sprintf("%.1f", c.WRU), colAxis)
		// Workload name under the bar, wrapped on spaces.
		line, row := "", 0
		words := splitWords(c.Workload)
		for j, wd := range words {
			if len(line)+len(wd)+1 > bw/7+2 && line != "" {
				text(img, x0, H-bot+16+row*14, line, colAxis)
				row, line = row+1, ""
			}
			if line != "" {
				line += " "
			}
			line += wd
			if j == len(words)-1 {
				text(img, x0, H-bot+16+row*14, line, colAxis)
			}
		}
	}
	// Reference lines, dashed.
	dashed(img, left, W-right, y(FloorWRU), colFloor)
	label(img, W-right-300, y(FloorWRU)-5, fmt.Sprintf("floor of any DynamoDB outbox: %.0f", FloorWRU), colFloor)
	dashed(img, left, W-right, y(StraightforwardWRU), colStraig)
	label(img, W-right-300, y(StraightforwardWRU)-5, fmt.Sprintf("straightforward design: %.1f", StraightforwardWRU), colStraig)
	// Legend.
	fill(img, left, H-24, left+14, H-12, colBase)
	text(img, left+20, H-13, "base table", colAxis)
	fill(img, left+120, H-24, left+134, H-12, colIndex)
	text(img, left+140, H-13, "indexes (due, subject, workspace)", colAxis)
	return png.Encode(w, img)
}

func splitWords(s string) []string {
	var out []string
	cur := ""
	for _, r := range s {
		if r == ' ' {
			if cur != "" {
				out = append(out, cur)
			}
			cur = ""
			continue
		}
		cur += string(r)
	}
	if cur != "" {
		out = append(out, cur)
	}
	return out
}

func fill(img *image.RGBA, x0, y0, x1, y1 int, c color.Color) {
	draw.Draw(img, image.Rect(x0, y0, x1, y1), &image.Uniform{c}, image.Point{}, draw.Src)
}

func hline(img *image.RGBA, x0, x1, y int, c color.Color) { fill(img, x0, y, x1, y+1, c) }
func vline(img *image.RGBA, x, y0, y1 int, c color.Color) { fill(img, x, y0, x+1, y1, c) }

func dashed(img *image.RGBA, x0, x1, y int, c color.Color) {
	for x := x0; x < x1; x += 12 {
		fill(img, x, y-1, min(x+7, x1), y+1, c)
	}
}

func text(img *image.RGBA, x, y int, s string, c color.Color) {
	d := font.Drawer{Dst: img, Src: &image.Uniform{c}, Face: basicfont.Face7x13, Dot: fixed.P(x, y)}
	d.DrawString(s)
}

// label writes s on a white box, so it stays readable over bars.
func label(img *image.RGBA, x, y int, s string, c color.Color) {
	fill(img, x-3, y-11, x+7*len(s)+3, y+3, color.White)
	text(img, x, y, s, c)
}
