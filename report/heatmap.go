package report

import (
	"fmt"
	"math"
	"slices"
	"strconv"

	"github.com/iotrace/iotrace/trace/units"
)

// heatLevels is the number of shades of the heatmap: a cell's shade is
// its bytes on a logarithmic scale from the busiest cell down by 10⁻⁶.
const heatLevels = 6

// heatmapChart draws bytes moved (read and written) per rank per time
// bin, as Darshan's heatmap does: a row per rank (or group of ranks, as
// in the timeline), a cell per bin, darker for more bytes.
func heatmapChart(id, caption string, s *Stats, span int64) *svgChart {
	rows := s.Timeline
	n := len(rows)
	rowH := min(max(math.Floor(380/float64(max(n, 1))), 4), 22)
	const plotTop = 6.0
	base := plotTop + float64(n)*rowH
	if n > 0 && rows[0].Ranks > 1 {
		caption += fmt.Sprintf(" (%d ranks per row)", rows[0].Ranks)
	}
	c := &svgChart{ID: id, Caption: caption, W: chartW, H: int(base) + 30}
	c.timeAxis(span, plotTop, base)
	labelEvery := int(math.Ceil(13 / rowH))
	// the busiest cell's bytes per ns, over every row
	sers := make([]Series, n)
	var most float64
	for i, row := range rows {
		ser := row.Series
		ser.Bins = slices.Clone(ser.Bins)
		for len(ser.Bins)*n > maxTimelineCells && len(ser.Bins) > 1 {
			ser.coarsen()
		}
		sers[i] = ser
		for _, b := range ser.Bins {
			most = max(most, (b.Read+b.Written)/float64(ser.Width)/float64(row.Ranks))
		}
	}
	for i, row := range rows {
		y := plotTop + float64(i)*rowH
		name, label := "rank "+strconv.FormatUint(uint64(row.First), 10), ""
		if row.Ranks > 1 {
			name, label = fmt.Sprintf("ranks %d–%d", row.First, row.Last), fmt.Sprintf("%d–%d", row.First, row.Last)
		}
		c.rect(plotLeft, y, plotW, rowH-1, "idle", "")
		if i%labelEvery == 0 {
			c.text(plotLeft-8, y+rowH/2+4, "end", "lab", cmp2(label, name))
		}
		ser := &sers[i]
		for k, b := range ser.Bins {
			bytes := b.Read + b.Written
			if bytes <= 0 || most <= 0 {
				continue
			}
			lo := max(ser.Start+int64(k)*ser.Width, s.Start)
			hi := min(ser.Start+int64(k+1)*ser.Width, s.End)
			if hi <= lo {
				continue
			}
			rate := bytes / float64(ser.Width) / float64(row.Ranks)
			level := heatLevels + int(math.Floor(math.Log10(rate/most)))
			level = min(max(level, 1), heatLevels)
			x0, x1 := timeX(lo-s.Start, span), timeX(hi-s.Start, span)
			tip := fmt.Sprintf("%s, %s – %s: read %s, written %s", name, units.Duration(lo-s.Start), units.Duration(hi-s.Start),
				units.Bytes(int64(b.Read)), units.Bytes(int64(b.Written)))
			c.rect(x0, y, max(x1-x0, 0.6), rowH-1, "h"+strconv.Itoa(level), tip)
		}
	}
	return c
}
